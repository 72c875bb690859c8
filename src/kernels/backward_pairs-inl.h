// The one-channel backward's scalar pass over a prepared block (RunPairBlock): per point,
// the corners x0 and x0 + 1 of each of its four corner rows read and accumulated as one
// pair, gradOutput and the input read where they lie, no gathers.
//
// Compiled into each SIMD target: included after foreach_target.h; Highway's per-target
// include guard.
#if defined(GS3D_KERNELS_BACKWARD_PAIRS_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef GS3D_KERNELS_BACKWARD_PAIRS_INL_H_
#undef GS3D_KERNELS_BACKWARD_PAIRS_INL_H_
#else
#define GS3D_KERNELS_BACKWARD_PAIRS_INL_H_
#endif

#include <hwy/highway.h>

#include <algorithm>
#include <cstdint>
#include <type_traits>

#include "kernels/backward_blocks-inl.h"

HWY_BEFORE_NAMESPACE();
namespace gs3d::kernels {
namespace HWY_NAMESPACE {
namespace {  // internal to each element type's kernels_*.cpp

// Whether RunPairBlock serves a problem: one channel, and the corners x0 and x0 + 1 next to
// each other in the accumulator and in the input (W stride 1), on a target with pairs.
template <typename T>
HWY_INLINE bool PairBlocksServe(const Problem<T>& pb) {
    const hn::CappedTag<ComputeType<T>, 2> pair;
    const int64_t* acc = pb.acc_geometry.corner_delta;
    const int64_t* in = pb.in_geometry.corner_delta;
    return pb.channels == 1 && hn::MaxLanes(pair) == 2 && acc[1] - acc[0] == 1 && in[1] - in[0] == 1;
}

// The one-channel block that PrepareBlock filled, point by point in the block's order (the
// order RunBlock scatters in, so inputGrad sums the same terms in the same order). A point
// with all eight corners inside and scattered reads its four corner rows (x0, x0 + 1) as four
// pair loads and adds its terms to them as four pair read-modify-writes, and its grid
// gradient is factored per axis (a difference per corner pair, then the other two axes'
// weights: 23 products instead of PyTorch's 72, rounded differently within fp32's
// tolerance); other points go corner by corner, as PyTorch skips corners outside. RunBlock
// gathers the corners and stages every term in arrays: 8-10% slower on the one-channel
// grids of bench.py. The caller checks PairBlocksServe.
template <typename T, bool kGridGrad, typename S = ComputeType<T>>
HWY_NOINLINE void RunPairBlock(const Problem<T>& pb, int64_t n, PreparedBlock<S>& block) {
    const hn::CappedTag<S, 2> pair;
    const BackwardArgs& a = pb.args;
    const BlockCells<S>& cells = block.cells;
    const int count = cells.count;
    const auto* acc_base = block.acc_base;
    const auto* in_base = pb.same_geometry ? block.acc_base : block.in_base;
    // The corner offsets in locals: the pair stores may alias anything, which would reload them.
    int64_t acc_delta[8], in_delta[8];
    std::copy(pb.acc_geometry.corner_delta, pb.acc_geometry.corner_delta + 8, acc_delta);
    std::copy(pb.in_geometry.corner_delta, pb.in_geometry.corner_delta + 8, in_delta);
    const T* HWY_RESTRICT in_n = pb.in + n * a.input.stride[0];
    S* HWY_RESTRICT acc_n = pb.acc + n * pb.acc_stride[0];
    const S(*scatter)[kBlock] = block.whole ? cells.inside : block.scatter;
    const S* every_corner = block.whole ? cells.point_inside : block.point_scatter;
    for (int i = 0; i < count; ++i) {
        const S g = LoadElement(pb.gout + block.grad_output[i]);
        const S wx[2] = {cells.wx[0][i], cells.wx[1][i]}, wy[2] = {cells.wy[0][i], cells.wy[1][i]},
                wz[2] = {cells.wz[0][i], cells.wz[1][i]};
        S gx = 0, gy = 0, gz = 0;
        // Corner k's terms of the grid gradient, in RunBlock's (PyTorch's) order.
        auto add_terms = [&](int k, S v) {
            const int kx = k & 1, ky = (k >> 1) & 1, kz = k >> 2;
            const S tx = ((v * wy[ky]) * wz[kz]) * g, ty = ((v * wx[kx]) * wz[kz]) * g, tz = ((v * wx[kx]) * wy[ky]) * g;
            gx = kx ? gx + tx : gx - tx;
            gy = ky ? gy + ty : gy - ty;
            gz = kz ? gz + tz : gz - tz;
        };
        // The scatter: in pairs where every corner is scattered (a scan task's slab may leave
        // some out, block.scatter).
        if (every_corner[i] != 0) {
            S* HWY_RESTRICT q = acc_n + acc_base[i];
#if HWY_TARGET == HWY_SCALAR  // no pairs (PairBlocksServe is false); compiled all the same
            for (int k = 0; k < 8; k += 2)
                q[acc_delta[k]] += cells.weight[k][i] * g, q[acc_delta[k] + 1] += cells.weight[k + 1][i] * g;
#else
            // The pair's weights ((wx0, wx1) * wy) * wz in registers, the products of
            // cells.weight in their order (the same bits), then times g.
            const auto wx_pair = hn::InterleaveLower(pair, hn::Set(pair, wx[0]), hn::Set(pair, wx[1]));
            const auto g_pair = hn::Set(pair, g);
            for (int k = 0; k < 8; k += 2) {
                const auto weights = hn::Mul(hn::Mul(wx_pair, hn::Set(pair, wy[(k >> 1) & 1])), hn::Set(pair, wz[k >> 2]));
                hn::StoreU(hn::Add(hn::LoadU(pair, q + acc_delta[k]), hn::Mul(weights, g_pair)), pair, q + acc_delta[k]);
            }
#endif
        } else {
            for (int k = 0; k < 8; ++k)
                if (scatter[k][i] != 0) acc_n[acc_base[i] + acc_delta[k]] += cells.weight[k][i] * g;
        }
        if constexpr (!kGridGrad) continue;
        // The grid gradient: its form depends on the corners inside the volume alone, never
        // on the slab, so that a point's value is the same however the volume is cut.
        if (cells.point_inside[i] != 0) {
            // The corner rows (y0, z0), (y0 + 1, z0), (y0, z0 + 1), (y0 + 1, z0 + 1), each as
            // (x0, x0 + 1); the derivatives factored per axis.
            const T* HWY_RESTRICT p = in_n + in_base[i];
            S v[8];
            for (int k = 0; k < 8; k += 2) {
                if constexpr (std::is_same_v<T, S> && HWY_TARGET != HWY_SCALAR) {
                    const auto corners = hn::LoadU(pair, p + in_delta[k]);
                    v[k] = hn::GetLane(corners), v[k + 1] = hn::ExtractLane(corners, 1);
                } else {
                    v[k] = LoadElement(p + in_delta[k]), v[k + 1] = LoadElement(p + in_delta[k] + 1);
                }
            }
            const S dx[4] = {v[1] - v[0], v[3] - v[2], v[5] - v[4], v[7] - v[6]};
            gx = (dx[0] * (wy[0] * wz[0]) + dx[1] * (wy[1] * wz[0])) + (dx[2] * (wy[0] * wz[1]) + dx[3] * (wy[1] * wz[1]));
            gy = ((v[2] - v[0]) * wz[0] + (v[6] - v[4]) * wz[1]) * wx[0] + ((v[3] - v[1]) * wz[0] + (v[7] - v[5]) * wz[1]) * wx[1];
            gz = ((v[4] - v[0]) * wy[0] + (v[6] - v[2]) * wy[1]) * wx[0] + ((v[5] - v[1]) * wy[0] + (v[7] - v[3]) * wy[1]) * wx[1];
            gx *= g, gy *= g, gz *= g;
        } else {
            for (int k = 0; k < 8; ++k)
                if (cells.inside[k][i] != 0) add_terms(k, LoadElement(in_n + in_base[i] + in_delta[k]));
        }
        block.gix[i] = gx, block.giy[i] = gy, block.giz[i] = gz;
    }
    if constexpr (kGridGrad) WriteBlockGridGrad(pb, block);
}

}  // namespace
}  // namespace HWY_NAMESPACE
}  // namespace gs3d::kernels
HWY_AFTER_NAMESPACE();

#endif  // GS3D_KERNELS_BACKWARD_PAIRS_INL_H_
