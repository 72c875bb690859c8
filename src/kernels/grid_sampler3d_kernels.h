// Entry points of the grid sampler's CPU kernels. Pure compute on strided views: no ACL
// types, no allocation, no error paths. The op layer checks everything before calling.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/common/sampler_options.h"

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

// Batch item n of a view alone: size 1 along N, its data offset to item n (a view without
// data stays without).
inline View5 BatchItem(const View5& view, size_t element_bytes, int64_t n) {
    View5 item = view;
    if (item.data) item.data = static_cast<char*>(item.data) + n * view.stride[0] * static_cast<int64_t>(element_bytes);
    item.size[0] = 1;
    return item;
}

struct ForwardArgs {
    ElementType type = ElementType::kFloat32;
    SamplerOptions options;
    View5 input;  // (N, C, D, H, W)
    View5 grid;   // (N, Do, Ho, Wo, 3)
    View5 out;    // (N, C, Do, Ho, Wo)
    // The workspace already holds the channels-last copy of the input's one batch item (a
    // chunked caller, warps/chunks.cpp, made it on an earlier chunk of the grid).
    bool input_copied = false;
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
    // A chunked caller (warps/chunks.cpp) runs one backward per chunk of a batch item's grid,
    // with the same workspace: only the first chunk zeroes inputGrad's sum (in inputGrad, or
    // in the workspace's accumulator) and copies the input channels-last; every later one
    // adds to the sum; only the last rounds or copies the sum into inputGrad.
    bool first_chunk = true;
    bool last_chunk = true;
    // The scan (backward/scan-inl.h) takes the grid whatever its rows' reach along D: set by
    // the chunked caller, whose chunks of one smooth grid would otherwise part between the
    // scan and the sorted slabs by their own reach (a fifth slower on an affine warp).
    bool scan_any_span = false;
    // gridGrad's packed rows stored non-temporally where a task can (nothing reads them soon
    // after); off for the chunked caller, which reads each chunk's gridGrad back at once
    // (from L2: streamed stores to those cached lines cost 10% of a displacement warp's backward).
    bool stream_grid_grad = true;
};

inline size_t ElementBytes(ElementType type) {
    return type == ElementType::kFloat64 ? 8 : type == ElementType::kFloat32 ? 4 : 2;
}

// The bilinear forward samples an input laid out NCDHW with at least this many channels from
// a channels-last copy of one batch item in the workspace (forward/kernel-inl.h).
constexpr int64_t kChannelsLastCopyMinChannels = 4;  // the fewest channels where the copy paid (performance.md)

// The forward's plan, made once from the arguments' shapes, strides and options
// (GetWorkspaceSize) and held by the executor; the rows then run in parallel, a row's
// points in blocks, whatever the plan.
struct ForwardPlan {
    // Sample from a channels-last copy of each batch item in the workspace: bilinear (nearest
    // reads one voxel per point and channel, too few reads for the copy to pay for itself),
    // kChannelsLastCopyMinChannels or more, the input's strides those of NCDHW with no element
    // shared (no broadcast, no overlap, so the copy is never larger than the input's own
    // storage), and points to sample.
    bool from_channels_last_copy = false;
    bool unit_channels = false;  // the input and the output hold a point's channels side by side
    size_t workspace_bytes = 0;  // the copy of one batch item
};

ForwardPlan PlanForward(const ForwardArgs& args);
void RunForward(const ForwardArgs& args, const ForwardPlan& plan, void* workspace);

// The kernels of one element type (float, double, Half, BFloat16), each type in its own
// translation unit (kernels_float32.cpp and its siblings); RunForward and RunBackward
// (kernel_entries.cpp) pick by args.type.
template <typename T>
void RunForwardOf(const ForwardArgs& args, const ForwardPlan& plan, void* workspace);

}  // namespace gs3d::kernels
