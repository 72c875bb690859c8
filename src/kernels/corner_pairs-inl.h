// Row phases' memory moves for blocks sampled one channel at a time (NCDHW): each point's four
// corner rows (y, z) read or updated as one pair of x-neighbours (x, x + 1), at addresses
// clamped into the volume, so that the scalar pass over the points has no branch and no
// arithmetic. Phase 1 (vectors, CornerRows::Compute): per point and corner row, the offset of
// its pair; phase 2 (scalar, LoadCornerPairs and the backward's scatter): the pairs moved;
// phase 3 (vectors, CornerValues): the eight corner values of each lane back from the pairs.
//
// Clamping: along y and z each corner's index is clamped into [0, size) on its own, and along
// x the pair starts at clamp(x0, 0, W - 2) (W >= 2). A corner outside the volume then reads
// (or, backward, is given a weight of +0 at) some element inside: the callers mask its terms
// as PyTorch skips it, and adding +0 leaves every element bitwise as it was (an accumulator
// that starts at +0 never holds -0). The corners inside read the same elements as the
// unclamped addresses, so results are bitwise those of gathering the corners.
//
// Compiled into each SIMD target: included after foreach_target.h; Highway's per-target
// include guard.
#if defined(GS3D_KERNELS_CORNER_PAIRS_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef GS3D_KERNELS_CORNER_PAIRS_INL_H_
#undef GS3D_KERNELS_CORNER_PAIRS_INL_H_
#else
#define GS3D_KERNELS_CORNER_PAIRS_INL_H_
#endif

#include <hwy/highway.h>

#include <cstdint>
#include <cstring>
#include <type_traits>

#include "kernels/simd_cells-inl.h"

HWY_BEFORE_NAMESPACE();
namespace gs3d::kernels {
namespace HWY_NAMESPACE {

// Whether a volume's corners can be moved as pairs: x0 and x0 + 1 side by side (W stride 1)
// and two of them (W >= 2), on a target with more than one lane.
inline bool CornerPairsServe(const TrilinearGeometry& g) {
    return g.stride[2] == 1 && g.size[2] >= 2 && hn::MaxLanes(hn::ScalableTag<float>()) > 1;
}

template <typename S>
struct CornerRows {
    using Offset = hwy::MakeSigned<S>;
    // Corner row r of point i (r = y + 2 z, PyTorch's corner order over pairs): the element
    // offset, in a volume of the geometry, of its pair's first element.
    HWY_ALIGN Offset row[4][kBlock];

    // Phase 1 from the cells' floors (-2 for NaN, inf and far outside); lanes past `count`
    // are clamped like any other (cells pad them with -4) and read element 0's row.
    HWY_INLINE void Compute(const BlockCells<S>& cells, const TrilinearGeometry& g) {
        const hn::ScalableTag<S> d;
        const int lanes = static_cast<int>(hn::Lanes(d));
        const auto zero = hn::Zero(d), one = hn::Set(d, S(1));
        const auto last_x = hn::Set(d, static_cast<S>(g.size[2] - 2)), last_y = hn::Set(d, static_cast<S>(g.size[1] - 1)),
                   last_z = hn::Set(d, static_cast<S>(g.size[0] - 1));
        auto clamp = [&](auto v, auto last) HWY_ATTR { return hn::Min(hn::Max(v, zero), last); };
        for (int i = 0; i < cells.padded; i += lanes) {
            const auto y0 = hn::Load(d, cells.y0 + i), z0 = hn::Load(d, cells.z0 + i);
            const auto x = clamp(hn::Load(d, cells.x0 + i), last_x);
            const decltype(x) y[2] = {clamp(y0, last_y), clamp(hn::Add(y0, one), last_y)};
            const decltype(x) z[2] = {clamp(z0, last_z), clamp(hn::Add(z0, one), last_z)};
            for (int r = 0; r < 4; ++r) Store(d, x, y[r & 1], z[r >> 1], g.stride, row[r] + i);
        }
    }

  private:
    // x * sx + y * sy + z * sz as offsets: int32 lanes for fp32 (the caller checks
    // OffsetsFit), exact doubles converted for fp64 (offsets below 2^53).
    template <class D, class V>
    static HWY_INLINE void Store(D d, V x, V y, V z, const int64_t stride[3], Offset* HWY_RESTRICT to) {
        const hn::RebindToSigned<D> di;
        if constexpr (sizeof(S) == 4) {
            const auto o = hn::Add(hn::Add(hn::Mul(hn::ConvertTo(di, z), hn::Set(di, static_cast<Offset>(stride[0]))),
                                           hn::Mul(hn::ConvertTo(di, y), hn::Set(di, static_cast<Offset>(stride[1])))),
                                   hn::Mul(hn::ConvertTo(di, x), hn::Set(di, static_cast<Offset>(stride[2]))));
            hn::Store(o, di, to);
        } else {
            const auto o = hn::Add(hn::Add(hn::Mul(z, hn::Set(d, static_cast<S>(stride[0]))),
                                           hn::Mul(y, hn::Set(d, static_cast<S>(stride[1])))),
                                   hn::Mul(x, hn::Set(d, static_cast<S>(stride[2]))));
            hn::Store(hn::ConvertTo(di, o), di, to);
        }
    }
};

// Phase 2 of a channel: each point's four corner pairs from `volume` into pairs[r][2 i],
// [2 i + 1], in the compute type; the padding lanes' pairs are 0.
template <typename T, typename S>
HWY_INLINE void LoadCornerPairs(const T* HWY_RESTRICT volume, const CornerRows<S>& rows, int count, int padded,
                                S (*HWY_RESTRICT pairs)[2 * kBlock]) {
    for (int i = 0; i < count; ++i)
        for (int r = 0; r < 4; ++r) {
            const T* HWY_RESTRICT p = volume + rows.row[r][i];
            if constexpr (std::is_same_v<T, S>) {
                std::memcpy(pairs[r] + 2 * i, p, 2 * sizeof(S));  // one 64- or 128-bit move
            } else {
                pairs[r][2 * i] = LoadElement(p), pairs[r][2 * i + 1] = LoadElement(p + 1);
            }
        }
    for (int r = 0; r < 4; ++r)
        for (int i = 2 * count; i < 2 * padded; ++i) pairs[r][i] = 0;
}

// Phase 3: lanes i .. of the eight corner values, v[k] for PyTorch's corner k, from the
// pairs: where x0 = -1 the pair started at x0 + 1 (corner x0 + 1 in its first half), where
// x0 = W - 1 at x0 - 1 (corner x0 in its second half). Corners outside hold some element's
// value: the callers mask their terms.
template <class D, typename S = hn::TFromD<D>>
HWY_INLINE void CornerValues(D d, const BlockCells<S>& cells, const S (*HWY_RESTRICT pairs)[2 * kBlock], int i,
                             hn::Vec<D> v[8]) {
    const auto x0 = hn::Load(d, cells.x0 + i);
    const auto from_second = hn::Eq(x0, hn::Set(d, static_cast<S>(cells.width - 1)));
    const auto from_first = hn::Eq(x0, hn::Set(d, S(-1)));
    for (int r = 0; r < 4; ++r) {
        hn::Vec<D> first, second;
        hn::LoadInterleaved2(d, pairs[r] + 2 * i, first, second);
        v[2 * r] = hn::IfThenElse(from_second, second, first);
        v[2 * r + 1] = hn::IfThenElse(from_first, first, second);
    }
}

// The backward's phase 1 for a channel: the amounts added to each corner row's pair,
// pairs[r][2 i], [2 i + 1], in memory order: corner k's weight * g (PyTorch's product),
// +0 for corners outside (mask: cells.inside) and for the clamped pair's element that is no
// corner.
template <typename S>
HWY_INLINE void ScatterPairs(const BlockCells<S>& cells, const S* HWY_RESTRICT g, S (*HWY_RESTRICT pairs)[2 * kBlock]) {
    const hn::ScalableTag<S> d;
    const int lanes = static_cast<int>(hn::Lanes(d));
    const auto zero = hn::Zero(d), minus_one = hn::Set(d, S(-1)), last = hn::Set(d, static_cast<S>(cells.width - 1));
    for (int i = 0; i < cells.padded; i += lanes) {
        const auto vg = hn::Load(d, g + i), x0 = hn::Load(d, cells.x0 + i);
        const auto from_first = hn::Eq(x0, minus_one), from_second = hn::Eq(x0, last);
        for (int r = 0; r < 4; ++r) {
            auto lo = hn::Mul(hn::Load(d, cells.weight[2 * r] + i), vg);
            auto hi = hn::Mul(hn::Load(d, cells.weight[2 * r + 1] + i), vg);
            if (!cells.all_inside) {
                lo = hn::IfThenElseZero(hn::Ne(hn::Load(d, cells.inside[2 * r] + i), zero), lo);
                hi = hn::IfThenElseZero(hn::Ne(hn::Load(d, cells.inside[2 * r + 1] + i), zero), hi);
            }
            // Memory order: x0 = -1 puts corner x0 + 1 first; x0 = W - 1 puts corner x0 second.
            const auto first = hn::IfThenElse(from_first, hi, hn::IfThenZeroElse(from_second, lo));
            const auto second = hn::IfThenElse(from_second, lo, hn::IfThenZeroElse(from_first, hi));
            hn::StoreInterleaved2(first, second, d, pairs[r] + 2 * i);
        }
    }
}

}  // namespace HWY_NAMESPACE
}  // namespace gs3d::kernels
HWY_AFTER_NAMESPACE();

#endif  // GS3D_KERNELS_CORNER_PAIRS_INL_H_
