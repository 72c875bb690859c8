// Tricubic's forward: out[n, c, d, h, w] = the 64-tap cubic convolution of the input at
// grid[n, d, h, w], in blocks of a grid row's points (blocks-inl.h). Threads split the grid's
// rows; every output element is written by one thread, so the result does not depend on the
// thread count.
//
// Compiled into each SIMD target: included by forward/kernel-inl.h (after foreach_target.h)
// only; Highway's per-target include guard.
#if defined(GS3D_KERNELS_TRICUBIC_FORWARD_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef GS3D_KERNELS_TRICUBIC_FORWARD_INL_H_
#undef GS3D_KERNELS_TRICUBIC_FORWARD_INL_H_
#else
#define GS3D_KERNELS_TRICUBIC_FORWARD_INL_H_
#endif

#include <hwy/highway.h>

#include <algorithm>
#include <cstdint>
#include <type_traits>

#include "kernels/common/element_types.h"
#include "kernels/grid_sampler3d_kernels.h"
#include "kernels/tricubic/blocks-inl.h"
#include "kernels/tricubic/moves-inl.h"
#include "kernels/tricubic/sums-inl.h"

HWY_BEFORE_NAMESPACE();
namespace gs3d::kernels {
namespace HWY_NAMESPACE {
namespace {

template <typename T>
void TricubicForward(const ForwardArgs& args) {
    using S = ComputeType<T>;
    const View5 &in = args.input, &grid = args.grid, &out = args.out;
    const int64_t out_d = grid.size[1], out_h = grid.size[2], out_w = grid.size[3];
    const int64_t rows = in.size[0] * out_d * out_h;
    if (rows == 0 || out_w == 0 || in.size[1] == 0) return;  // no element to write; data may be null
    const auto* in_data = static_cast<const T*>(in.data);
    const auto* grid_data = static_cast<const T*>(grid.data);
    auto* out_data = static_cast<T*>(out.data);
    const int64_t strides[3] = {in.stride[4], in.stride[3], in.stride[2]};
#pragma omp parallel
    {
        CubicBlock<S> block;
        alignas(64) S sample[kCubicBlock];
#pragma omp for schedule(static)
        for (int64_t row = 0; row < rows; ++row) {
            const int64_t h = row % out_h, d = row / out_h % out_d, n = row / (out_h * out_d);
            const T* g = grid_data + n * grid.stride[0] + d * grid.stride[1] + h * grid.stride[2];
            T* out_row = out_data + n * out.stride[0] + d * out.stride[2] + h * out.stride[3];
            for (int64_t w0 = 0; w0 < out_w; w0 += kCubicBlock) {
                const int count = static_cast<int>(std::min<int64_t>(kCubicBlock, out_w - w0));
                CubicPhase1<false, T>(g + w0 * grid.stride[3], grid.stride[3], grid.stride[4], count, in, args.options, &block);
                const T* in_c = in_data + n * in.stride[0];
                T* out_c = out_row + w0 * out.stride[4];
                for (int64_t c = 0; c < in.size[1]; ++c, in_c += in.stride[1], out_c += out.stride[1]) {
                    CubicPhase2(in_c, strides, &block);
                    // a whole block of a packed output row of the compute type takes the samples
                    // directly (the copy through `sample` measured slower, not only by its moves)
                    const bool direct = std::is_same_v<T, S> && count == kCubicBlock && out.stride[4] == 1;
                    S* const results[1] = {direct ? reinterpret_cast<S*>(out_c) : sample};
                    CubicPhase3<false, S>(block, results);
                    if (!direct)
                        for (int p = 0; p < count; ++p) out_c[p * out.stride[4]] = FromCompute<T>(sample[p]);
                }
            }
        }
    }
}

}  // namespace
}  // namespace HWY_NAMESPACE
}  // namespace gs3d::kernels
HWY_AFTER_NAMESPACE();

#endif  // GS3D_KERNELS_TRICUBIC_FORWARD_INL_H_
