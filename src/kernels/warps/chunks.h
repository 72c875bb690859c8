// Fused warps: an affine map (theta) or a displacement field (flow) turned into sampling
// coordinates chunk by chunk of the output's rows (warps/rows.h), each chunk sampled by the grid
// sampler's kernels. No grid of the whole output is ever built: the workspace holds one
// chunk's coordinates (and their gradient), whatever the output's size.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/plan/backward.h"
#include "kernels/grid_sampler3d_kernels.h"

namespace gs3d::kernels {

enum class WarpKind {
    // theta (N, 3, 4), as View5 (N, 3, 4, 1, 1): the point of output voxel (d, h, w) is
    // theta[n] x (x_w, y_h, z_d, 1) with F.affine_grid's base coordinates (align_corners).
    kAffine,
    // flow (N, 3, Do, Ho, Wo) in voxels along (D, H, W): the point of output voxel (d, h, w)
    // is (d, h, w) + flow[n, :, d, h, w], normalized by the flow's size as VoxelMorph's
    // SpatialTransformer does (align_corners = true).
    kDisplacement,
};

struct WarpForwardArgs {
    ElementType type = ElementType::kFloat32;
    SamplerOptions options;
    WarpKind kind = WarpKind::kAffine;
    View5 input;       // (N, C, D, H, W)
    View5 parameters;  // theta or flow, in the input's element type
    View5 out;         // (N, C, Do, Ho, Wo)
};

struct WarpBackwardArgs {
    ElementType type = ElementType::kFloat32;
    SamplerOptions options;
    WarpKind kind = WarpKind::kAffine;
    View5 grad_output;      // (N, C, Do, Ho, Wo)
    View5 input;            // (N, C, D, H, W)
    View5 parameters;       // theta or flow
    View5 input_grad;       // written when compute_input_grad
    View5 parameters_grad;  // thetaGrad or flowGrad, the parameters' shape; written when compute_parameters_grad
    bool compute_input_grad = true;
    bool compute_parameters_grad = true;
};

// Points per chunk, about (at least one row of the output).
constexpr int64_t kWarpChunkPoints = int64_t{1} << 16;

// Made once (GetWorkspaceSize) from the shapes; the workspace is the kernels' part first
// (its accumulator, if any, at offset 0, so that it persists from chunk to chunk), then
// F.affine_grid's base coordinates of each axis, the chunk's coordinates, their gradient
// and, for theta, the per-row partial sums.
struct WarpPlan {
    int64_t chunks = 1;   // per batch item
    ForwardPlan forward;  // a chunk's forward (every chunk: the same plan)
    // A chunk's backward by its shape: full (0), the last along H (1), along D (2), both (3).
    BackwardPlan backward[4];
    size_t base_offset = 0, grid_offset = 0, grid_grad_offset = 0, partials_offset = 0;
    size_t bytes = 0;
};

WarpPlan PlanWarpForward(const WarpForwardArgs& args);
WarpPlan PlanWarpBackward(const WarpBackwardArgs& args);
void RunWarpForward(const WarpForwardArgs& args, const WarpPlan& plan, void* workspace);
void RunWarpBackward(const WarpBackwardArgs& args, const WarpPlan& plan, void* workspace);

}  // namespace gs3d::kernels
