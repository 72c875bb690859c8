// Row phases: the shared pieces of the kernels that sample NCDHW volumes a channel at a time
// (forward-inl.h, backward-inl.h). Per block of a grid row's points:
//   phase 1 (vectors): source indices, then each point's four corner rows (y, z) addressed as
//            one pair of x-neighbours (x, x + 1) at offsets clamped into the volume
//            (CornerRows); backward also the amounts each pair gets (PairAmounts);
//   phase 2 (scalar, no branch and no arithmetic): the pairs moved, loaded from the input
//            (LoadCornerPairs) and, backward, added into inputGrad;
//   phase 3 (vectors): each lane's cell recomputed from its source indices (LaneCells: floors,
//            PyTorch's weights and which corners are inside, as BlockCells computes them),
//            the corners taken back out of the pairs (CornerValues), the output or the grid
//            gradient in PyTorch's order.
// Recomputing the cells in phase 3 keeps phase 1's stores to the indices and offsets.
//
// Clamping: along y and z each corner's index is clamped into [0, size) on its own, and along
// x the pair starts at clamp(x0, 0, W - 2) (W >= 2). A corner outside the volume then reads
// (or, backward, is given a weight of +0 at) some element inside: its terms are masked as
// PyTorch skips it, and adding +0 leaves every element bitwise as it was (an accumulator that
// starts at +0 never holds -0). The corners inside read the same elements as the unclamped
// addresses, so results are bitwise those of gathering the corners.
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
// and two of them (W >= 2), on a target with more than one lane, with offsets that fit.
template <typename S>
inline bool CornerPairsServe(const TrilinearGeometry& g) {
    return g.stride[2] == 1 && g.size[2] >= 2 && hn::MaxLanes(hn::ScalableTag<float>()) > 1 && OffsetsFit<S>(g);
}

// The cells of a block's points, from phase 1 for phases 2 and 3: each axis's floor and its
// two weights (LaneCells), kBlock lanes each.
template <typename S>
struct BlockLanes {
    HWY_ALIGN S floor[3][kBlock];
    HWY_ALIGN S w[3][2][kBlock];
};

// One vector of points' trilinear cells from their source indices, bit for bit as BlockCells
// computes them: FloorIndex (-2 for NaN, inf and far outside), the per-axis weights
// [floor + 1 - i, i - floor], which corners are inside, and PyTorch's corner weights.
template <class D>
struct LaneCells {
    using V = hn::Vec<D>;
    using M = hn::Mask<D>;
    using S = hn::TFromD<D>;
    V floor[3];  // axis (x, y, z)
    V w[3][2];   // axis, corner (floor, floor + 1)
    M in[3][2];
    V xy[4];  // wx * wy, PyTorch's first product, for corners k and k + 4

    // i: the indices along x, y, z; size: the volume's (W, H, D).
    HWY_INLINE LaneCells(D d, const V i[3], const int64_t size[3]) {
        const V one = hn::Set(d, S(1));
        for (int a = 0; a < 3; ++a) {
            const V extent = hn::Set(d, static_cast<S>(size[a]));
            floor[a] = hn::IfThenElse(hn::And(hn::Ge(i[a], hn::Set(d, S(-1))), hn::Le(i[a], extent)), hn::Floor(i[a]),
                                      hn::Set(d, S(-2)));
            w[a][0] = hn::Sub(hn::Add(floor[a], one), i[a]), w[a][1] = hn::Sub(i[a], floor[a]);
        }
        Finish(d, size, true);
    }
    // Lanes i .. of a block's stored cells; `masks`: whether Inside is asked for.
    HWY_INLINE LaneCells(D d, const BlockLanes<S>& lanes, int i, const int64_t size[3], bool masks) {
        for (int a = 0; a < 3; ++a) {
            floor[a] = hn::Load(d, lanes.floor[a] + i);
            w[a][0] = hn::Load(d, lanes.w[a][0] + i), w[a][1] = hn::Load(d, lanes.w[a][1] + i);
        }
        Finish(d, size, masks);
    }
    HWY_INLINE void Store(D d, BlockLanes<S>& lanes, int i) const {
        for (int a = 0; a < 3; ++a) {
            hn::Store(floor[a], d, lanes.floor[a] + i);
            hn::Store(w[a][0], d, lanes.w[a][0] + i), hn::Store(w[a][1], d, lanes.w[a][1] + i);
        }
    }
    // Corner k (x = bit 0, y = bit 1, z = bit 2): (wx * wy) * wz, and whether it is inside.
    HWY_INLINE V Weight(int k) const { return hn::Mul(xy[k & 3], w[2][k >> 2]); }
    HWY_INLINE M Inside(int k) const { return hn::And(hn::And(in[0][k & 1], in[1][(k >> 1) & 1]), in[2][k >> 2]); }

  private:
    HWY_INLINE void Finish(D d, const int64_t size[3], bool masks) {
        if (masks) {
            const V zero = hn::Zero(d), one = hn::Set(d, S(1));
            for (int a = 0; a < 3; ++a) {
                const V extent = hn::Set(d, static_cast<S>(size[a])), next = hn::Add(floor[a], one);
                in[a][0] = hn::And(hn::Ge(floor[a], zero), hn::Lt(floor[a], extent));
                in[a][1] = hn::And(hn::Ge(next, zero), hn::Lt(next, extent));
            }
        }
        for (int k = 0; k < 4; ++k) xy[k] = hn::Mul(w[0][k & 1], w[1][k >> 1]);
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

template <typename S>
struct CornerRows {
    using Offset = hwy::MakeSigned<S>;
    // Corner row r of point i (r = y + 2 z, PyTorch's corner order over pairs): the element
    // offset, in a volume of the geometry, of its pair's first element.
    HWY_ALIGN Offset row[4][kBlock];

    // Phase 1 from `padded` points' source indices; returns whether all eight corners of each
    // of the first `count` points are inside.
    HWY_INLINE bool Compute(const BlockIndices<S>& index, int count, int padded, const TrilinearGeometry& g,
                            BlockLanes<S>* lanes_out = nullptr) {
        const hn::ScalableTag<S> d;
        const int lanes = static_cast<int>(hn::Lanes(d));
        const int64_t size[3] = {g.size[2], g.size[1], g.size[0]};
        const auto zero = hn::Zero(d);
        const decltype(zero) last[3] = {hn::Set(d, static_cast<S>(size[0] - 2)), hn::Set(d, static_cast<S>(size[1] - 1)),
                                        hn::Set(d, static_cast<S>(size[2] - 1))};
        auto clamp = [&](auto v, int a) HWY_ATTR { return hn::Min(hn::Max(v, zero), last[a]); };
        bool all = true;
        for (int i = 0; i < padded; i += lanes) {
            hn::Vec<decltype(d)> v[3];
            index.Load(d, i, v);
            const LaneCells<decltype(d)> c(d, v, size);
            if (lanes_out) c.Store(d, *lanes_out, i);
            const auto real = hn::FirstN(d, static_cast<size_t>(count > i ? count - i : 0));
            const auto every = hn::And(hn::And(hn::And(c.in[0][0], c.in[0][1]), hn::And(c.in[1][0], c.in[1][1])),
                                       hn::And(c.in[2][0], c.in[2][1]));
            all = all && hn::AllTrue(d, hn::Or(hn::Not(real), every));
            const auto one = hn::Set(d, S(1));
            const auto x = clamp(c.floor[0], 0);
            const decltype(x) y[2] = {clamp(c.floor[1], 1), clamp(hn::Add(c.floor[1], one), 1)};
            const decltype(x) z[2] = {clamp(c.floor[2], 2), clamp(hn::Add(c.floor[2], one), 2)};
            StoreRows(d, x, y, z, g.stride, i);
        }
        return all;
    }

  private:
    // Row r's offset z[r >> 1] * sz + y[r & 1] * sy + x (the W stride is 1: CornerPairsServe),
    // into row[r][i ..]: in int32 lanes for fp32 (CornerPairsServe checks OffsetsFit), each
    // product once; exact doubles converted for fp64 (offsets below 2^53).
    template <class D, class V>
    HWY_INLINE void StoreRows(D d, V x, const V y[2], const V z[2], const int64_t stride[3], int i) {
        const hn::RebindToSigned<D> di;
        if constexpr (sizeof(S) == 4) {
            const auto sz = hn::Set(di, static_cast<Offset>(stride[0])), sy = hn::Set(di, static_cast<Offset>(stride[1]));
            const auto xi = hn::ConvertTo(di, x);
            const decltype(xi) yx[2] = {hn::Add(hn::Mul(hn::ConvertTo(di, y[0]), sy), xi),
                                        hn::Add(hn::Mul(hn::ConvertTo(di, y[1]), sy), xi)};
            const decltype(xi) zs[2] = {hn::Mul(hn::ConvertTo(di, z[0]), sz), hn::Mul(hn::ConvertTo(di, z[1]), sz)};
            for (int r = 0; r < 4; ++r) hn::Store(hn::Add(zs[r >> 1], yx[r & 1]), di, row[r] + i);
        } else {
            const V sz = hn::Set(d, static_cast<S>(stride[0])), sy = hn::Set(d, static_cast<S>(stride[1]));
            const V yx[2] = {hn::Add(hn::Mul(y[0], sy), x), hn::Add(hn::Mul(y[1], sy), x)};
            const V zs[2] = {hn::Mul(z[0], sz), hn::Mul(z[1], sz)};
            for (int r = 0; r < 4; ++r) hn::Store(hn::ConvertTo(di, hn::Add(zs[r >> 1], yx[r & 1])), di, row[r] + i);
        }
    }
};

// Phase 2 of a channel: each point's four corner pairs from `volume` into pairs[r][2 i],
// [2 i + 1], in the compute type; the padding lanes' pairs are 0.
// The padding lanes' pairs (points count .. padded - 1) set to 0.
template <typename S>
HWY_INLINE void ZeroPairTails(S (*HWY_RESTRICT pairs)[2 * kBlock], int count, int padded) {
    for (int r = 0; r < 4; ++r)
        for (int i = 2 * count; i < 2 * padded; ++i) pairs[r][i] = 0;
}

// fp16 and bf16 pairs are moved as they are (one 32-bit move each) and converted afterwards
// in vectors (LoadLanes), rather than element by element in the scalar pass.
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

// Phase 3: lanes i .. of the eight corner values, v[k] for PyTorch's corner k, from the
// pairs: where x0 = -1 the pair started at x0 + 1 (corner x0 + 1 in its first half), where
// x0 = W - 1 at x0 - 1 (corner x0 in its second half). Corners outside hold some element's
// value: the callers mask their terms.
template <class D, typename S = hn::TFromD<D>>
HWY_INLINE void CornerValues(D d, hn::Vec<D> x0, int64_t width, const S (*HWY_RESTRICT pairs)[2 * kBlock], int i,
                             hn::Vec<D> v[8]) {
    const auto from_second = hn::Eq(x0, hn::Set(d, static_cast<S>(width - 1)));
    const auto from_first = hn::Eq(x0, hn::Set(d, S(-1)));
    for (int r = 0; r < 4; ++r) {
        hn::Vec<D> first, second;
        hn::LoadInterleaved2(d, pairs[r] + 2 * i, first, second);
        v[2 * r] = hn::IfThenElse(from_second, second, first);
        v[2 * r + 1] = hn::IfThenElse(from_first, first, second);
    }
}

}  // namespace HWY_NAMESPACE
}  // namespace gs3d::kernels
HWY_AFTER_NAMESPACE();

#endif  // GS3D_KERNELS_ROW_PHASES_PAIRS_INL_H_
