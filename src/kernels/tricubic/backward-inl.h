// Tricubic's backward. inputGrad: each thread owns a slab of the input's planes (along D) and
// visits every grid point of the batch item in order, adding only the taps that fall in its
// slab; so every inputGrad element sums its contributions in grid order (and a point's taps
// in (z, y, x) order) whatever the thread count, and no two threads write one element.
// gridGrad: each thread gathers the 64 taps of the points of its share of the grid's rows
// (sample-inl.h's sums, times gradOutput, summed over the channels), as PyTorch's 2-D bicubic
// backward does per point.
//
// Compiled into each SIMD target: included by backward_kernel-inl.h (after foreach_target.h)
// only; Highway's per-target include guard.
#if defined(GS3D_KERNELS_TRICUBIC_BACKWARD_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef GS3D_KERNELS_TRICUBIC_BACKWARD_INL_H_
#undef GS3D_KERNELS_TRICUBIC_BACKWARD_INL_H_
#else
#define GS3D_KERNELS_TRICUBIC_BACKWARD_INL_H_
#endif

#include <hwy/highway.h>
#include <omp.h>

#include <cstdint>

#include "kernels/backward_plan.h"
#include "kernels/backward_point-inl.h"
#include "kernels/element_types.h"
#include "kernels/tricubic/sample-inl.h"

HWY_BEFORE_NAMESPACE();
namespace gs3d::kernels {
namespace HWY_NAMESPACE {
namespace {

// Adds gradOutput times the tap weights of point p into the accumulator's planes
// [z_begin, z_end) of one channel (acc_c: its element 0).
template <typename S>
HWY_INLINE void ScatterCubic(S* acc_c, const int64_t* acc_stride, const CubicPoint<S>& p, S grad, int64_t z_begin,
                             int64_t z_end) {
    for (int k = 0; k < 4; ++k) {
        const int64_t z = p.z.index[k];
        if (z < z_begin || z >= z_end) continue;  // another thread's slab, or outside (-1)
        for (int j = 0; j < 4; ++j) {
            if (p.y.index[j] < 0) continue;
            S* line = acc_c + z * acc_stride[2] + p.y.index[j] * acc_stride[3];
            for (int i = 0; i < 4; ++i)
                if (p.x.index[i] >= 0) line[p.x.index[i] * acc_stride[4]] += grad * p.x.weight[i] * p.y.weight[j] * p.z.weight[k];
        }
    }
}

// One batch item's grid points, those this thread takes: scatters into planes [z_begin,
// z_end) (none when z_begin == z_end) and writes gridGrad for rows [row_begin, row_end).
template <typename T, typename S = ComputeType<T>>
void TricubicBackwardShare(const Problem<T>& pb, int64_t n, int64_t z_begin, int64_t z_end, int64_t row_begin,
                           int64_t row_end) {
    const View5& in = pb.args.input;
    const int64_t rows = pb.out_d * pb.out_h;
    const T* in_n = pb.in + n * in.stride[0];
    S* acc_n = pb.acc + n * pb.acc_stride[0];
    const bool scatters = z_begin < z_end;
    for (int64_t row = scatters ? 0 : row_begin; row < (scatters ? rows : row_end); ++row) {
        const int64_t d = row / pb.out_h, h = row % pb.out_h;
        const bool grid_grad = pb.args.compute_grid_grad && row >= row_begin && row < row_end;
        for (int64_t w = 0; w < pb.out_w; ++w) {
            const T* g = pb.GridPoint(n, d, h, w);
            CubicPoint<S> p;
            ComputeCubicAxis<S>(ToCompute(g[2 * pb.args.grid.stride[4]]), in.size[2], in.stride[2], pb.args.options, &p.z);
            bool in_slab = false;
            for (int k = 0; k < 4; ++k) in_slab = in_slab || (p.z.index[k] >= z_begin && p.z.index[k] < z_end);
            if (!in_slab && !grid_grad) continue;
            CompleteCubicPoint<T>(g, pb.args.grid.stride[4], in, pb.args.options, &p);
            const T* gout_c = pb.GradOutputPoint(n, d, h, w);
            S gix = 0, giy = 0, giz = 0;
            for (int64_t c = 0; c < pb.channels; ++c, gout_c += pb.args.grad_output.stride[1]) {
                const S grad = ToCompute(*gout_c);
                if (grid_grad) {
                    const CubicSums<S> sums = GatherCubic<true>(in_n + c * in.stride[1], p);
                    gix -= sums.dx * grad;
                    giy -= sums.dy * grad;
                    giz -= sums.dz * grad;
                }
                if (in_slab) ScatterCubic(acc_n + c * pb.acc_stride[1], pb.acc_stride, p, grad, z_begin, z_end);
            }
            if (grid_grad)
                pb.WriteGridGrad(n, d, h, w, p.x.index_derivative * gix, p.y.index_derivative * giy,
                                 p.z.index_derivative * giz);
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
