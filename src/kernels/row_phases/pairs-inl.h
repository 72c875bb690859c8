// Row phases: the shared pieces of the kernels that sample NCDHW volumes a channel at a time
// (forward-inl.h, backward-inl.h). Per block of a grid row's points:
//   phase 1 (vectors, once per block): source indices, then each point's cell (RowCells):
//            its four corner rows (y, z) addressed as one pair of x-neighbours, the weights
//            phase 3 needs and which corners are inside; backward also, per channel, the
//            amounts each pair gets (PairAmounts);
//   phase 2 (scalar, no branch and no arithmetic): the pairs moved, loaded from the input
//            (LoadCornerPairs) and, backward, added into inputGrad;
//   phase 3 (vectors): the pairs split back into corner values (PairValues), then the output
//            or the grid gradient from phase 1's weights, in PyTorch's order.
// Phase 1 does the cell arithmetic once; phase 3 only loads it.
//
// Clamping: along y and z each corner's index is clamped into [0, size) on its own; along x
// the pair starts at c = clamp(x0, 0, W - 2) (W >= 2), and its two slots stand for the
// corners: slot c holds corner x0 (or x0 + 1 where x0 = -1), slot c + 1 corner x0 + 1 (or x0
// where x0 = W - 1), each with that corner's weight. A slot or corner outside the volume
// reads (or, backward, is given +0 at) some element inside: its terms are masked as PyTorch
// skips them, and adding +0 leaves every element bitwise as it was (an accumulator that
// starts at +0 never holds -0). The corners inside keep PyTorch's weights and order, so
// results are bitwise those of gathering the corners.
//
// Compiled into each SIMD target: included after foreach_target.h; Highway's per-target
// include guard.
#if defined(GS3D_KERNELS_ROW_PHASES_PAIRS_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef GS3D_KERNELS_ROW_PHASES_PAIRS_INL_H_
#undef GS3D_KERNELS_ROW_PHASES_PAIRS_INL_H_
#else
#define GS3D_KERNELS_ROW_PHASES_PAIRS_INL_H_
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
// and two of them (W >= 2), on a target with more than one lane, with offsets that fit and
// axes short enough for IndexToOffset.
template <typename S>
inline bool CornerPairsServe(const TrilinearGeometry& g) {
    constexpr int64_t kLongest = int64_t{1} << 22;
    return g.stride[2] == 1 && g.size[2] >= 2 && g.size[0] < kLongest && g.size[1] < kLongest &&
           g.size[2] < kLongest && hn::MaxLanes(hn::ScalableTag<float>()) > 1 && OffsetsFit<S>(g);
}

// A whole number in [0, 2^22) held in a float (2^51 in a double) as an integer, by adding
// 2^23 (2^52) and taking the bits: two instructions where a checked conversion takes five.
template <class D, typename S = hn::TFromD<D>>
HWY_INLINE hn::Vec<hn::RebindToSigned<D>> IndexToOffset(D d, hn::Vec<D> v) {
    const hn::RebindToSigned<D> di;
    using I = hn::TFromD<decltype(di)>;
    const S shift = sizeof(S) == 4 ? S(8388608.0) : S(4503599627370496.0);
    I bits;
    std::memcpy(&bits, &shift, sizeof(bits));
    return hn::Sub(hn::BitCast(di, hn::Add(v, hn::Set(d, shift))), hn::Set(di, bits));
}

// One axis of a vector of points' cells, bit for bit as BlockCells: the floor (FloorIndex: -2
// for NaN, inf and far outside), PyTorch's weights of corners floor and floor + 1, and which
// of the two lie in [0, size).
template <class D>
struct AxisCell {
    using V = hn::Vec<D>;
    using S = hn::TFromD<D>;
    V floor, w[2];
    hn::Mask<D> in[2];

    HWY_INLINE AxisCell(D d, V i, int64_t size) {
        const V one = hn::Set(d, S(1)), minus_one = hn::Set(d, S(-1)), extent = hn::Set(d, static_cast<S>(size));
        floor = hn::IfThenElse(hn::And(hn::Ge(i, minus_one), hn::Le(i, extent)), hn::Floor(i), hn::Set(d, S(-2)));
        w[0] = hn::Sub(hn::Add(floor, one), i), w[1] = hn::Sub(i, floor);
        in[0] = hn::And(hn::Ge(floor, hn::Zero(d)), hn::Lt(floor, extent));
        in[1] = hn::And(hn::Ge(floor, minus_one), hn::Lt(floor, hn::Set(d, static_cast<S>(size - 1))));
    }
    // Corner k's index clamped into [0, size).
    HWY_INLINE V Clamped(D d, int k, int64_t size) const {
        const V c = k ? hn::Add(floor, hn::Set(d, S(1))) : floor;
        return hn::Min(hn::Max(c, hn::Zero(d)), hn::Set(d, static_cast<S>(size - 1)));
    }
};

// The source indices of a block's points, x, y, z, each kBlock long (lanes past `count` are
// set to -4 here: outside, never sampled, scattered or stored).
template <typename S>
struct BlockIndices {
    HWY_ALIGN S axis[3][kBlock];

    template <class D>
    HWY_INLINE void Load(D d, int i, hn::Vec<D> v[3]) const {
        for (int a = 0; a < 3; ++a) v[a] = hn::Load(d, axis[a] + i);
    }
    HWY_INLINE void PadFrom(int count, int padded) {
        for (int i = count; i < padded; ++i) axis[0][i] = axis[1][i] = axis[2][i] = -4;
    }
};

// Each corner row's pair offset in a volume: row r (y = r & 1, z = r >> 1, PyTorch's corner
// order over pairs) of point i starts at row[r][i].
template <typename S>
struct CornerRows {
    using Offset = hwy::MakeSigned<S>;
    HWY_ALIGN Offset row[4][kBlock];

    // Lanes i .. from the axes' cells, for a volume of the geometry (W stride 1): in int32
    // lanes for fp32 (CornerPairsServe checks OffsetsFit), in exact doubles for fp64 (offsets
    // below 2^51).
    template <class D>
    HWY_INLINE void Store(D d, const AxisCell<D> axis[3], const TrilinearGeometry& g, int i) {
        using S2 = hn::TFromD<D>;
        const hn::RebindToSigned<D> di;
        const auto x = hn::Min(hn::Max(axis[0].floor, hn::Zero(d)), hn::Set(d, static_cast<S2>(g.size[2] - 2)));
        const hn::Vec<D> y[2] = {axis[1].Clamped(d, 0, g.size[1]), axis[1].Clamped(d, 1, g.size[1])};
        const hn::Vec<D> z[2] = {axis[2].Clamped(d, 0, g.size[0]), axis[2].Clamped(d, 1, g.size[0])};
        if constexpr (sizeof(S2) == 4) {
            const auto sz = hn::Set(di, static_cast<Offset>(g.stride[0])), sy = hn::Set(di, static_cast<Offset>(g.stride[1]));
            const auto xi = IndexToOffset(d, x);
            const decltype(xi) yx[2] = {hn::Add(hn::Mul(IndexToOffset(d, y[0]), sy), xi),
                                        hn::Add(hn::Mul(IndexToOffset(d, y[1]), sy), xi)};
            const decltype(xi) zs[2] = {hn::Mul(IndexToOffset(d, z[0]), sz), hn::Mul(IndexToOffset(d, z[1]), sz)};
            for (int r = 0; r < 4; ++r) hn::Store(hn::Add(zs[r >> 1], yx[r & 1]), di, row[r] + i);
        } else {
            const auto sz = hn::Set(d, static_cast<S2>(g.stride[0])), sy = hn::Set(d, static_cast<S2>(g.stride[1]));
            const hn::Vec<D> yx[2] = {hn::Add(hn::Mul(y[0], sy), x), hn::Add(hn::Mul(y[1], sy), x)};
            const hn::Vec<D> zs[2] = {hn::Mul(z[0], sz), hn::Mul(z[1], sz)};
            for (int r = 0; r < 4; ++r) hn::Store(IndexToOffset(d, hn::Add(zs[r >> 1], yx[r & 1])), di, row[r] + i);
        }
    }
    // Every lane of a block, for a second volume's geometry.
    HWY_INLINE void Compute(const BlockIndices<S>& index, int padded, const TrilinearGeometry& g) {
        using D = hn::ScalableTag<S>;
        const D d;
        for (int i = 0; i < padded; i += static_cast<int>(hn::Lanes(d))) {
            hn::Vec<D> v[3];
            index.Load(d, i, v);
            const AxisCell<D> axis[3] = {{d, v[0], g.size[2]}, {d, v[1], g.size[1]}, {d, v[2], g.size[0]}};
            Store(d, axis, g, i);
        }
    }
};

// Phase 1's cells of a block's points, for phase 3 to load: per axis and slot (x) or corner
// (y, z) the weight and whether it counts (a mask as a vector); along x also the sign of the
// slot's corner in d(weight)/dx (-1 for corner x0, +1 for x0 + 1); the corner rows' offsets;
// and the planes of the two z corners, clamped (for the backward's slab cuts).
template <typename S>
struct RowCells {
    HWY_ALIGN S w[3][2][kBlock];
    HWY_ALIGN S ok[3][2][kBlock];
    HWY_ALIGN S sign[2][kBlock];
    HWY_ALIGN S plane[2][kBlock];
    CornerRows<S> rows;
    bool all_inside = true;  // every corner of the block's `count` points is inside

    // From `padded` points' source indices, for a volume of the geometry.
    HWY_INLINE void Compute(const BlockIndices<S>& index, int count, int padded, const TrilinearGeometry& g) {
        using D = hn::ScalableTag<S>;
        const D d;
        const int lanes = static_cast<int>(hn::Lanes(d));
        const auto one = hn::Set(d, S(1)), minus_one = hn::Set(d, S(-1)), last_x = hn::Set(d, static_cast<S>(g.size[2] - 1));
        bool all = true;
        for (int i = 0; i < padded; i += lanes) {
            hn::Vec<D> v[3];
            index.Load(d, i, v);
            const AxisCell<D> axis[3] = {{d, v[0], g.size[2]}, {d, v[1], g.size[1]}, {d, v[2], g.size[0]}};
            const auto& x = axis[0];
            const auto every = hn::And(hn::And(hn::And(x.in[0], x.in[1]), hn::And(axis[1].in[0], axis[1].in[1])),
                                       hn::And(axis[2].in[0], axis[2].in[1]));
            all = all && hn::AllTrue(d, hn::Or(hn::Not(hn::FirstN(d, static_cast<size_t>(count > i ? count - i : 0))), every));
            // x0 = -1: slot c holds corner x0 + 1 and slot c + 1 none; x0 = W - 1: slot c none
            // and slot c + 1 corner x0. So slot c counts where corner x0 + 1 is inside, slot
            // c + 1 where corner x0 is.
            const auto from_first = hn::Eq(x.floor, minus_one), from_second = hn::Eq(x.floor, last_x);
            hn::Store(hn::IfThenElse(from_first, x.w[1], x.w[0]), d, w[0][0] + i);
            hn::Store(hn::IfThenElse(from_second, x.w[0], x.w[1]), d, w[0][1] + i);
            hn::Store(hn::IfThenElse(from_first, one, minus_one), d, sign[0] + i);
            hn::Store(hn::IfThenElse(from_second, minus_one, one), d, sign[1] + i);
            hn::Store(hn::VecFromMask(d, x.in[1]), d, ok[0][0] + i);
            hn::Store(hn::VecFromMask(d, x.in[0]), d, ok[0][1] + i);
            for (int a = 1; a < 3; ++a)
                for (int k = 0; k < 2; ++k) {
                    hn::Store(axis[a].w[k], d, w[a][k] + i);
                    hn::Store(hn::VecFromMask(d, axis[a].in[k]), d, ok[a][k] + i);
                }
            hn::Store(axis[2].Clamped(d, 0, g.size[0]), d, plane[0] + i);
            hn::Store(axis[2].Clamped(d, 1, g.size[0]), d, plane[1] + i);
            rows.Store(d, axis, g, i);
        }
        all_inside = all;
    }
};

// Lanes i .. of a block's cells, loaded for phase 3: corner k (x slot = bit 0, y = bit 1,
// z = bit 2) has weight (wx * wy) * wz, PyTorch's product, and counts where Ok(k).
template <class D>
struct LaneCells {
    using V = hn::Vec<D>;
    using M = hn::Mask<D>;
    V w[3][2];
    V xy[4];
    M ok[3][2];

    // `masks`: whether Ok is asked for.
    HWY_INLINE LaneCells(D d, const RowCells<hn::TFromD<D>>& cells, int i, bool masks) {
        for (int a = 0; a < 3; ++a)
            for (int k = 0; k < 2; ++k) {
                w[a][k] = hn::Load(d, cells.w[a][k] + i);
                if (masks) ok[a][k] = hn::MaskFromVec(hn::Load(d, cells.ok[a][k] + i));
            }
        for (int k = 0; k < 4; ++k) xy[k] = hn::Mul(w[0][k & 1], w[1][k >> 1]);
    }
    HWY_INLINE V Weight(int k) const { return hn::Mul(xy[k & 3], w[2][k >> 2]); }
    HWY_INLINE M Ok(int k) const { return hn::And(hn::And(ok[0][k & 1], ok[1][(k >> 1) & 1]), ok[2][k >> 2]); }
};

// The padding lanes' pairs (points count .. padded - 1) set to 0.
template <typename S>
HWY_INLINE void ZeroPairTails(S (*HWY_RESTRICT pairs)[2 * kBlock], int count, int padded) {
    for (int r = 0; r < 4; ++r)
        for (int i = 2 * count; i < 2 * padded; ++i) pairs[r][i] = 0;
}

// Phase 2 of a channel: each point's four corner pairs from `volume` into pairs[r][2 i],
// [2 i + 1], in the compute type; the padding lanes' pairs are 0. fp16 and bf16 pairs are
// moved as they are (one 32-bit move each) and converted afterwards in vectors (LoadLanes),
// rather than element by element in the scalar pass.
template <typename T, typename S>
HWY_INLINE void LoadCornerPairs(const T* HWY_RESTRICT volume, const CornerRows<S>& rows, int count, int padded,
                                S (*HWY_RESTRICT pairs)[2 * kBlock]) {
    if constexpr (std::is_same_v<T, S>) {
        for (int i = 0; i < count; ++i)
            for (int r = 0; r < 4; ++r)
                std::memcpy(pairs[r] + 2 * i, volume + rows.row[r][i], 2 * sizeof(S));  // one 64- or 128-bit move
        ZeroPairTails(pairs, count, padded);
    } else {
        HWY_ALIGN T raw[4][2 * kBlock];
        for (int i = 0; i < count; ++i)
            for (int r = 0; r < 4; ++r) std::memcpy(raw[r] + 2 * i, volume + rows.row[r][i], 2 * sizeof(T));
        for (int r = 0; r < 4; ++r)
            for (int i = 2 * count; i < 2 * padded; ++i) std::memset(&raw[r][i], 0, sizeof(T));  // +0 in either type
        const hn::ScalableTag<S> d;
        const int lanes = static_cast<int>(hn::Lanes(d));
        for (int r = 0; r < 4; ++r)
            for (int i = 0; i < 2 * padded; i += lanes) hn::Store(LoadLanes(d, raw[r] + i), d, pairs[r] + i);
    }
}

// Phase 3: lanes i .. of the eight slots' values, v[k] for slot k (x slot = bit 0, y corner
// = bit 1, z corner = bit 2), from the pairs. Slots that do not count hold some element's
// value: the callers mask their terms.
template <class D, typename S = hn::TFromD<D>>
HWY_INLINE void PairValues(D d, const S (*HWY_RESTRICT pairs)[2 * kBlock], int i, hn::Vec<D> v[8]) {
    for (int r = 0; r < 4; ++r) hn::LoadInterleaved2(d, pairs[r] + 2 * i, v[2 * r], v[2 * r + 1]);
}

}  // namespace HWY_NAMESPACE
}  // namespace gs3d::kernels
HWY_AFTER_NAMESPACE();

#endif  // GS3D_KERNELS_ROW_PHASES_PAIRS_INL_H_
