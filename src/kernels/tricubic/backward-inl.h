// Tricubic's backward. inputGrad: each thread owns a slab of the input's planes (along D) and
// visits every grid point of the batch item in order, adding only the taps that fall in its
// slab; so every inputGrad element sums its contributions in grid order (and a point's taps
// in (z, y, x) order) whatever the thread count, and no two threads write one element.
// gridGrad: each thread gathers the 64 taps of the points of its share of the grid's rows
// (sums-inl.h's sums, times gradOutput, summed over the channels), as PyTorch's 2-D bicubic
// backward does per point.
//
// Compiled into each SIMD target: included by backward/kernel-inl.h (after foreach_target.h)
// only; Highway's per-target include guard.
#if defined(GS3D_KERNELS_TRICUBIC_BACKWARD_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef GS3D_KERNELS_TRICUBIC_BACKWARD_INL_H_
#undef GS3D_KERNELS_TRICUBIC_BACKWARD_INL_H_
#else
#define GS3D_KERNELS_TRICUBIC_BACKWARD_INL_H_
#endif

#include <hwy/highway.h>
#include <omp.h>

#include <algorithm>
#include <cstdint>

#include "kernels/plan/backward.h"
#include "kernels/backward/point-inl.h"
#include "kernels/common/element_types.h"
#include "kernels/tricubic/blocks-inl.h"
#include "kernels/tricubic/moves-inl.h"
#include "kernels/tricubic/sums-inl.h"

HWY_BEFORE_NAMESPACE();
namespace gs3d::kernels {
namespace HWY_NAMESPACE {
namespace {

// One batch item's grid points, those this thread takes, in blocks of a row's points
// (blocks-inl.h): scatters into planes [z_begin, z_end) (none when z_begin == z_end) and
// writes gridGrad for rows [row_begin, row_end).
template <typename T, typename S = ComputeType<T>>
void TricubicBackwardShare(const Problem<T>& pb, int64_t n, int64_t z_begin, int64_t z_end, int64_t row_begin,
                           int64_t row_end) {
    const View5 &in = pb.args.input, &go = pb.args.grad_output;
    const int64_t rows = pb.out_d * pb.out_h;
    const int64_t in_strides[3] = {in.stride[4], in.stride[3], in.stride[2]};
    const int64_t acc_strides[3] = {pb.acc_stride[4], pb.acc_stride[3], pb.acc_stride[2]};
    const S mx = UnnormalizeDerivative<S>(in.size[4], pb.args.options.align_corners);
    const S my = UnnormalizeDerivative<S>(in.size[3], pb.args.options.align_corners);
    const S mz = UnnormalizeDerivative<S>(in.size[2], pb.args.options.align_corners);
    const bool scatters = z_begin < z_end;
    // Without channels, or for gridGrad alone, the input or inputGrad may have no data.
    const T* in_n = pb.channels > 0 ? pb.in + n * in.stride[0] : nullptr;
    S* acc_n = scatters && pb.channels > 0 ? pb.acc + n * pb.acc_stride[0] : nullptr;
    CubicBlock<S> block;
    alignas(64) S grad[kCubicBlock], dx[kCubicBlock], dy[kCubicBlock], dz[kCubicBlock];
    S* const sums[3] = {dx, dy, dz};
    alignas(64) S gix[kCubicBlock], giy[kCubicBlock], giz[kCubicBlock];
    for (int64_t row = scatters ? 0 : row_begin; row < (scatters ? rows : row_end); ++row) {
        const int64_t d = row / pb.out_h, h = row % pb.out_h;
        const bool grid_grad = pb.args.compute_grid_grad && row >= row_begin && row < row_end;
        for (int64_t w0 = 0; w0 < pb.out_w; w0 += kCubicBlock) {
            const int count = static_cast<int>(std::min<int64_t>(kCubicBlock, pb.out_w - w0));
            CubicPhase1<true, T>(pb.GridPoint(n, d, h, w0), pb.args.grid.stride[3], pb.args.grid.stride[4], count, in,
                           pb.args.options, &block);
            bool in_slab = false;
            for (int k = 0; k < 4; ++k)
                for (int p = 0; p < count; ++p)
                    in_slab = in_slab || (block.TapIndex(2, k, p) >= z_begin && block.TapIndex(2, k, p) < z_end);
            if (!in_slab && !grid_grad) continue;
            std::fill(gix, gix + kCubicBlock, S(0));
            std::fill(giy, giy + kCubicBlock, S(0));
            std::fill(giz, giz + kCubicBlock, S(0));
            const T* gout_c = pb.GradOutputPoint(n, d, h, w0);
            for (int64_t c = 0; c < pb.channels; ++c, gout_c += go.stride[1]) {
                for (int p = 0; p < kCubicBlock; ++p) grad[p] = p < count ? ToCompute(gout_c[p * go.stride[4]]) : S(0);
                if (grid_grad) {
                    CubicPhase2(in_n + c * in.stride[1], in_strides, &block);
                    CubicPhase3<true>(block, sums);
                    for (int p = 0; p < count; ++p) {
                        gix[p] -= dx[p] * grad[p];
                        giy[p] -= dy[p] * grad[p];
                        giz[p] -= dz[p] * grad[p];
                    }
                }
                if (in_slab) {
                    CubicAmounts(grad, &block);
                    CubicScatter(block, acc_n + c * pb.acc_stride[1], acc_strides, z_begin, z_end);
                }
            }
            if (grid_grad)
                for (int p = 0; p < count; ++p) pb.WriteGridGrad(n, d, h, w0 + p, mx * gix[p], my * giy[p], mz * giz[p]);
        }
    }
}

template <typename T>
void TricubicBackward(const BackwardArgs& args, const BackwardPlan& plan, void* workspace) {
    using S = ComputeType<T>;
    const bool input_grad = plan.path == BackwardPath::kTricubic;
    if (!input_grad && !args.compute_grid_grad) return;
    const BackwardWorkspace ws = WorkspaceAt(plan.workspace, workspace);
    S* acc = kAccumulatesInBuffer<T> ? reinterpret_cast<S*>(ws.accumulator) : static_cast<S*>(args.input_grad.data);
    const Problem<T> pb(args, acc, kAccumulatesInBuffer<T> ? ws.accumulator_stride : args.input_grad.stride);
    const int64_t depth = args.input.size[2], rows = pb.out_d * pb.out_h;
    for (int64_t n = 0; n < pb.batch; ++n) {
#pragma omp parallel
        {
            const int64_t threads = omp_get_num_threads(), t = omp_get_thread_num();
            const int64_t z_begin = input_grad ? depth * t / threads : 0;
            const int64_t z_end = input_grad ? depth * (t + 1) / threads : 0;
            if (input_grad) pb.ZeroAccumulatorPlanes(n, z_begin, z_end);
            if (pb.out_w > 0) TricubicBackwardShare<T>(pb, n, z_begin, z_end, rows * t / threads, rows * (t + 1) / threads);
        }
    }
    if constexpr (kAccumulatesInBuffer<T>) {
        if (input_grad && args.last_chunk) StoreAccumulator(pb);
    }
}

}  // namespace
}  // namespace HWY_NAMESPACE
}  // namespace gs3d::kernels
HWY_AFTER_NAMESPACE();

#endif  // GS3D_KERNELS_TRICUBIC_BACKWARD_INL_H_
