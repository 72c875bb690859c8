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

size_t ForwardWorkspaceBytes(const ForwardArgs& args);
void RunForward(const ForwardArgs& args, void* workspace);

// fp16 and bf16 accumulate inputGrad in an fp32 buffer of the input's element count.
size_t BackwardWorkspaceBytes(const BackwardArgs& args);
void RunBackward(const BackwardArgs& args, void* workspace);

}  // namespace gs3d::kernels
