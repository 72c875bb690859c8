// Entry points of the grid sampler's CPU kernels. Pure compute on strided views: no ACL
// types, no allocation, no error paths. The op layer checks everything before calling.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/sampler_options.h"

namespace gs3d::kernels {

enum class ElementType { kFloat32, kFloat16, kBFloat16, kFloat64 };

// A 5-D strided view. Tensors are always given in logical order, whatever their memory
// layout: input-like tensors as (N, C, D, H, W), grids as (N, D, H, W, 3). Strides are in
// elements and may be 0 (broadcast inputs).
struct View5 {
    void* data = nullptr;
    int64_t size[5] = {0, 0, 0, 0, 0};
    int64_t stride[5] = {0, 0, 0, 0, 0};
};

// The largest element offset of a view from its data pointer (0 when it has no elements).
inline int64_t LastElementOffset(const View5& view) {
    int64_t last = 0;
    for (int i = 0; i < 5; ++i) {
        if (view.size[i] == 0) return 0;
        last += (view.size[i] - 1) * view.stride[i];
    }
    return last;
}

struct ForwardArgs {
    ElementType type = ElementType::kFloat32;
    SamplerOptions options;
    View5 input;  // (N, C, D, H, W)
    View5 grid;   // (N, Do, Ho, Wo, 3)
    View5 out;    // (N, C, Do, Ho, Wo)
};

struct BackwardArgs {
    ElementType type = ElementType::kFloat32;
    SamplerOptions options;
    View5 grad_output;  // (N, C, Do, Ho, Wo)
    View5 input;        // (N, C, D, H, W)
    View5 grid;         // (N, Do, Ho, Wo, 3)
    View5 input_grad;   // (N, C, D, H, W); written when compute_input_grad
    View5 grid_grad;    // (N, Do, Ho, Wo, 3); written when compute_grid_grad
    bool compute_input_grad = true;
    bool compute_grid_grad = true;
};

inline size_t ElementBytes(ElementType type) {
    return type == ElementType::kFloat64 ? 8 : type == ElementType::kFloat32 ? 4 : 2;
}

// The bilinear forward samples an input laid out NCDHW with at least this many channels from
// a channels-last copy of one batch item in the workspace (forward_kernel-inl.h).
constexpr int64_t kChannelsLastCopyMinChannels = 4;  // the fewest channels where the copy paid (performance.md)

// Whether it does: bilinear (nearest reads one voxel per point and channel, too few reads for
// the copy to pay for itself); the input's strides are
// those of NCDHW with no element shared (no broadcast, no overlap), so the copy is never
// larger than the input's own storage; and there are points to sample.
inline bool SamplesFromChannelsLastCopy(const ForwardArgs& args) {
    const View5& in = args.input;
    const int64_t points = args.grid.size[0] * args.grid.size[1] * args.grid.size[2] * args.grid.size[3];
    const int64_t voxels = in.size[2] * in.size[3] * in.size[4];
    if (args.options.interpolation != Interpolation::kBilinear || in.size[1] < kChannelsLastCopyMinChannels ||
        points == 0 || voxels == 0)
        return false;
    return in.stride[4] >= 1 && in.stride[3] >= in.size[4] * in.stride[4] && in.stride[2] >= in.size[3] * in.stride[3] &&
           in.stride[1] >= in.size[2] * in.stride[2];
}

size_t ForwardWorkspaceBytes(const ForwardArgs& args);
void RunForward(const ForwardArgs& args, void* workspace);

// The bilinear backward with inputGrad laid out NCDHW (dense within each batch item) and at
// least this many channels runs batch item by batch item with channels last
// (backward_kernel-inl.h, ChannelsLastCopyBackward): the input copied into inputGrad's
// own memory as (D, H, W, C), inputGrad accumulated as (D, H, W, C) in the workspace (fp32
// for fp16 and bf16), then copied out.
constexpr int64_t kChannelsLastBackwardMinChannels = 4;  // 2 channels lose: they run one by one there

// gradOutput's channel stride as the int32 offsets of a gather of up to 16 lanes.
inline bool GatherableChannelStride(int64_t stride) {
    constexpr int64_t kMaxLanes = 16;
    return stride >= -(INT32_MAX / kMaxLanes) && stride <= INT32_MAX / kMaxLanes;
}

inline bool BackwardFromChannelsLastCopy(const BackwardArgs& args) {
    const View5& ig = args.input_grad;
    const int64_t channels = ig.size[1], voxels = ig.size[2] * ig.size[3] * ig.size[4];
    const int64_t points = args.grid.size[1] * args.grid.size[2] * args.grid.size[3];
    if (args.options.interpolation != Interpolation::kBilinear || !args.compute_input_grad ||
        channels < kChannelsLastBackwardMinChannels || voxels == 0 || points == 0 || args.grid.size[0] == 0)
        return false;
    // Offsets into the channels-last buffers as int32 (the SIMD blocks' gathers), the sorted
    // plan's point count, and gradOutput's channels gathered.
    if (channels * voxels > INT32_MAX || points >= static_cast<int64_t>(UINT32_MAX) ||
        !GatherableChannelStride(args.grad_output.stride[1]))
        return false;
    return ig.stride[4] == 1 && ig.stride[3] == ig.size[4] && ig.stride[2] == ig.size[3] * ig.size[4] &&
           ig.stride[1] == voxels;
}

// fp16 and bf16 accumulate inputGrad in an fp32 buffer of the input's element count; the
// channels-last backward in one of a batch item's.
size_t BackwardWorkspaceBytes(const BackwardArgs& args);
void RunBackward(const BackwardArgs& args, void* workspace);

// The kernels of one element type (float, double, Half, BFloat16), each type in its own
// translation unit (kernels_float32.cpp and its siblings); RunForward and RunBackward
// (kernel_entries.cpp) pick by args.type.
template <typename T>
void RunForwardOf(const ForwardArgs& args, void* workspace);
template <typename T>
void RunBackwardOf(const BackwardArgs& args, void* workspace);

}  // namespace gs3d::kernels
