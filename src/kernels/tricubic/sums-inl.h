// Tricubic's phase 3 (blocks-inl.h describes the phases): elementwise over the block's tap
// rows (each point's 4 taps along x side by side), so the same code serves every vector width
// and every target sums in the same order. Per point and channel, each x tap's column is
// summed along y, the columns along z; the 4 results times x's weights are summed along x
// last, after one interleaved load has put the points in lanes.
//
// Compiled into each SIMD target: included by tricubic/forward-inl.h and backward-inl.h
// (after foreach_target.h) only; Highway's per-target include guard.
#if defined(GS3D_KERNELS_TRICUBIC_SUMS_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef GS3D_KERNELS_TRICUBIC_SUMS_INL_H_
#undef GS3D_KERNELS_TRICUBIC_SUMS_INL_H_
#else
#define GS3D_KERNELS_TRICUBIC_SUMS_INL_H_
#endif

#include <hwy/highway.h>

#include "kernels/tricubic/blocks-inl.h"

HWY_BEFORE_NAMESPACE();
namespace gs3d::kernels {
namespace HWY_NAMESPACE {
namespace {

namespace hn = hwy::HWY_NAMESPACE;

// ((v0 w0 + v1 w1) + v2 w2) + v3 w3: a sum of four taps in tap order.
template <class V>
HWY_INLINE V Dot4(const V* v, const V* w) {
    return hn::Add(hn::Add(hn::Add(hn::Mul(v[0], w[0]), hn::Mul(v[1], w[1])), hn::Mul(v[2], w[2])), hn::Mul(v[3], w[3]));
}

// Four vectors of a table's taps (table[k]: tap k's), the elements from e on.
template <class D, typename S = hn::TFromD<D>>
HWY_INLINE void LoadTaps(D d, const S (*table)[kCubicLanes], int e, hn::Vec<D>* out) {
    for (int k = 0; k < 4; ++k) out[k] = hn::Load(d, table[k] + e);
}

// Each point's 4 elements of `along_x` summed in tap order, into out[p] (any alignment).
template <class D, typename S = hn::TFromD<D>>
HWY_INLINE void SumAlongX(D d, const S* HWY_RESTRICT along_x, S* HWY_RESTRICT out) {
    const int lanes = static_cast<int>(hn::Lanes(d));
    for (int p = 0; p < kCubicBlock; p += lanes) {
        hn::Vec<D> t0, t1, t2, t3;
        hn::LoadInterleaved4(d, along_x + 4 * p, t0, t1, t2, t3);
        hn::StoreU(hn::Add(hn::Add(hn::Add(t0, t1), t2), t3), d, out + p);
    }
}

// Phase 3: without kSums, each point's sample into out[0]; with kSums, the sums whose product
// with gradOutput gives gridGrad, into out[0], out[1], out[2] (x, y, z): the same sums with
// one axis's weight gradients in place of its weights.
template <bool kSums, typename S>
HWY_INLINE void CubicPhase3(const CubicBlock<S>& b, S* const* out) {
    const hn::ScalableTag<S> d;
    using V = hn::Vec<decltype(d)>;
    constexpr int kResults = kSums ? 3 : 1;
    alignas(64) S along_x[kResults][kCubicLanes];  // per result, point and x tap: before the sum along x
    for (int e = 0; e < kCubicLanes; e += static_cast<int>(hn::Lanes(d))) {
        V wy[4], wz[4], gy[4], gz[4];
        LoadTaps(d, b.spread_weight[0], e, wy);
        LoadTaps(d, b.spread_weight[1], e, wz);
        if constexpr (kSums) {
            LoadTaps(d, b.spread_weight_grad[0], e, gy);
            LoadTaps(d, b.spread_weight_grad[1], e, gz);
        }
        V column[4], column_dy[4];  // per z tap: the sum along y, with y's weights or their gradients
        for (int k = 0; k < 4; ++k) {
            V v[4];
            for (int j = 0; j < 4; ++j) v[j] = hn::Load(d, b.values[4 * k + j] + e);
            column[k] = Dot4(v, wy);
            if constexpr (kSums) column_dy[k] = Dot4(v, gy);
        }
        const V wx = hn::Load(d, b.x_weight + e);
        const V planes = Dot4(column, wz);
        if constexpr (!kSums) {
            hn::Store(hn::Mul(planes, wx), d, along_x[0] + e);
        } else {
            hn::Store(hn::Mul(planes, hn::Load(d, b.x_weight_grad + e)), d, along_x[0] + e);
            hn::Store(hn::Mul(Dot4(column_dy, wz), wx), d, along_x[1] + e);
            hn::Store(hn::Mul(Dot4(column, gz), wx), d, along_x[2] + e);
        }
    }
    for (int r = 0; r < kResults; ++r) SumAlongX(d, along_x[r], out[r]);
}

// The amounts one channel's gradOutput (grad, per point) adds to each tap, ((grad x weight(x))
// x weight(y)) x weight(z), into the block's buffer in the layout of the values.
template <typename S>
HWY_INLINE void CubicAmounts(const S* grad, CubicBlock<S>* b) {
    const hn::ScalableTag<S> d;
    using V = hn::Vec<decltype(d)>;
    const int lanes = static_cast<int>(hn::Lanes(d));
    alignas(64) S spread_grad[kCubicLanes];
    for (int p = 0; p < kCubicBlock; p += lanes) StoreSpread(d, hn::Load(d, grad + p), spread_grad + 4 * p);
    for (int e = 0; e < kCubicLanes; e += lanes) {
        V wy[4], wz[4];
        LoadTaps(d, b->spread_weight[0], e, wy);
        LoadTaps(d, b->spread_weight[1], e, wz);
        const V gx = hn::Mul(hn::Load(d, spread_grad + e), hn::Load(d, b->x_weight + e));
        for (int k = 0; k < 4; ++k)
            for (int j = 0; j < 4; ++j) hn::Store(hn::Mul(hn::Mul(gx, wy[j]), wz[k]), d, b->values[4 * k + j] + e);
    }
}

}  // namespace
}  // namespace HWY_NAMESPACE
}  // namespace gs3d::kernels
HWY_AFTER_NAMESPACE();

#endif  // GS3D_KERNELS_TRICUBIC_SUMS_INL_H_
