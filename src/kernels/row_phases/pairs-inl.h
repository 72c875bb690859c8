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
// Slots: along x, and along y where H >= 2, a point's two corners (i0, i0 + 1) are read
// from two slots (c, c + 1), c = clamp(i0, 0, size - 2): slot c holds corner i0 (or i0 + 1
// where i0 = -1), slot c + 1 corner i0 + 1 (or i0 where i0 = size - 1), each with that
// corner's weight. So the four corner rows of a z plane lie at base and base + the H
// stride, and a
// point needs two offsets, one per z corner. Along z (the backward's threads cut the volume
// into slabs of planes, and a slot may lie in no corner's plane) and along y where H = 1,
// each corner's index is clamped into [0, size) on its own. A slot or corner outside the
// volume reads (or, backward, is given +0 at) some element inside: its terms are masked as
// PyTorch skips them, and adding +0 leaves every element bitwise as it was (an accumulator
// that starts at +0 never holds -0). The corners inside keep PyTorch's weights and order,
// so results are bitwise those of gathering the corners.
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

#include "kernels/blocks/cells-inl.h"

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

// One axis's bounds as vectors, set once before a loop over vectors: the top slot (size - 2)
// or corner (size - 1) and the size. GCC set them per vector inside the loop where whether the
// axis has slots was a run-time value (y).
template <class D>
struct AxisBounds {
    using S = hn::TFromD<D>;
    hn::Vec<D> top, size;
    bool slots;
    HWY_INLINE AxisBounds(D d, int64_t n, bool with_slots)
        : top(hn::Set(d, static_cast<S>(with_slots ? n - 2 : n - 1))), size(hn::Set(d, static_cast<S>(n))),
          slots(with_slots) {}
};

// One axis of a vector of points' cells: PyTorch's weights of the corners floor and floor + 1
// (bit for bit as BlockCells), then the two slots (c, c + 1) or the two corners, each
// clamped into the volume, that stand for them. Every comparison is false for NaN, and NaN,
// inf and far indices clamp to slots that do not count, so slots need no guard.
template <class D>
struct AxisCell {
    using V = hn::Vec<D>;
    using M = hn::Mask<D>;
    using S = hn::TFromD<D>;
    // What phase 3 and the offsets need, per slot (or corner) k: its index, clamped into
    // the volume (for a slot, index[0] alone); its weight; whether it counts; the sign of its
    // term in d(weight)/d(index) (-1 for corner floor, +1 for floor + 1). every: both corners
    // are inside, so each slot holds its own corner.
    V index[2], weight[2], sign[2];
    M ok[2], every;

    HWY_INLINE AxisCell(D d, V i, int64_t size, bool slots) : AxisCell(d, i, AxisBounds<D>(d, size, slots)) {}
    HWY_INLINE AxisCell(D d, V i, const AxisBounds<D>& bounds) {
        const V one = hn::Set(d, S(1)), minus_one = hn::Set(d, S(-1)), zero = hn::Zero(d);
        const V floor = hn::Floor(i);
        const V w0 = hn::Sub(hn::Add(floor, one), i), w1 = hn::Sub(i, floor);
        // Clamped to [0, top]: NaN and -inf to 0 (the comparison is false for them).
        auto clamp = [&](V v) HWY_ATTR { return hn::Min(hn::IfThenElseZero(hn::Ge(v, zero), v), bounds.top); };
        if (bounds.slots) {  // size >= 2
            index[0] = clamp(floor);
            // floor - c: 0 where both corners are inside; -1 (floor = -1) where slot c holds
            // corner floor + 1 and slot c + 1 none; +1 (floor = size - 1) where slot c holds
            // none and slot c + 1 corner floor; anything else (NaN included) where none is inside.
            const V shift = hn::Sub(floor, index[0]);
            const M from_first = hn::Eq(shift, minus_one), from_second = hn::Eq(shift, one);
            every = hn::Eq(shift, zero);
            weight[0] = hn::IfThenElse(from_first, w1, w0), weight[1] = hn::IfThenElse(from_second, w0, w1);
            sign[0] = hn::IfThenElse(from_first, one, minus_one), sign[1] = hn::IfThenElse(from_second, minus_one, one);
            ok[0] = hn::Or(every, from_first), ok[1] = hn::Or(every, from_second);
        } else {
            // FloorIndex's -2 for NaN, inf and indices beyond [-1, size]: both corners then
            // clamp to plane 0, as BlockCells has them; the scan's row ranges take their
            // planes from here (BilinearPlanes), so the backward's slabs agree on each one.
            const M near = hn::And(hn::Ge(i, minus_one), hn::Le(i, bounds.size));
            const V first = hn::IfThenElse(near, floor, hn::Set(d, S(-2))), next = hn::Add(first, one);
            index[0] = clamp(first), index[1] = clamp(next);
            weight[0] = w0, weight[1] = w1;
            sign[0] = minus_one, sign[1] = one;
            ok[0] = hn::Eq(index[0], first), ok[1] = hn::Eq(index[1], next);
            every = hn::And(ok[0], ok[1]);
        }
    }
};

// The source indices of a block's points, x, y, z, each kBlock long (RowCells::Compute).
template <typename S>
struct BlockIndices {
    HWY_ALIGN S axis[3][kBlock];

    template <class D>
    HWY_INLINE void Load(D d, int i, hn::Vec<D> v[3]) const {
        for (int a = 0; a < 3; ++a) v[a] = hn::Load(d, axis[a] + i);
    }
};

// The three axes' bounds in a volume of the geometry (x and, where H >= 2, y in slots, z in
// corners), and its strides for the corner rows' offsets (CornerRows::Store). The offsets are
// whole numbers: in the compute type they are exact below 2^22 (fp32; IndexToOffset's range)
// or 2^51 (fp64), where two multiply-adds and a conversion form them, against three int32
// multiplies (two micro-ops each on x86) and four conversions.
template <class D>
struct VolumeBounds {
    using S = hn::TFromD<D>;
    const TrilinearGeometry& geometry;  // the caller's, for the int32 offsets
    AxisBounds<D> axis[3];
    hn::Vec<D> stride_y, stride_z;
    int64_t y_step;            // from y slot 0 to y slot 1
    bool offsets_in_compute;   // every offset exact in the compute type
    HWY_INLINE VolumeBounds(D d, const TrilinearGeometry& g)
        : geometry(g),
          axis{{d, g.size[2], true}, {d, g.size[1], g.size[1] >= 2}, {d, g.size[0], false}},
          stride_y(hn::Set(d, static_cast<S>(g.stride[1]))), stride_z(hn::Set(d, static_cast<S>(g.stride[0]))),
          y_step((g.size[1] >= 2) * g.stride[1]),
          offsets_in_compute((g.size[0] - 1) * g.stride[0] + (g.size[1] - 1) * g.stride[1] + g.size[2] - 1 <
                             (int64_t{1} << (sizeof(S) == 4 ? 22 : 51))) {}
};

// The three axes' cells of a vector of points.
template <class D>
struct PointCells {
    AxisCell<D> axis[3];
    HWY_INLINE PointCells(D d, const hn::Vec<D> i[3], const VolumeBounds<D>& b)
        : axis{{d, i[0], b.axis[0]}, {d, i[1], b.axis[1]}, {d, i[2], b.axis[2]}} {}
};

// Each corner row's pair offset in a volume: row r (y = r & 1, z = r >> 1, PyTorch's corner
// order over pairs) of point i starts at Row(r, i).
template <typename S>
struct CornerRows {
    using Offset = hwy::MakeSigned<S>;
    HWY_ALIGN Offset base[2][kBlock];  // z corner k's row of y slot 0
    int64_t y_step = 0;                // from y slot 0 to y slot 1

    HWY_INLINE int64_t Row(int r, int i) const { return base[r >> 1][i] + (r & 1) * y_step; }

    // Lanes i .. from the cells, for the volume of the bounds (W stride 1): in the compute type
    // where VolumeBounds says they are exact there (fp64: below 2^51 elements in any volume
    // memory holds), else in int32 lanes (fp32; CornerPairsServe checks OffsetsFit).
    template <class D>
    HWY_INLINE void Store(D d, const PointCells<D>& cells, const VolumeBounds<D>& b, int i) {
        const hn::RebindToSigned<D> di;
        const AxisCell<D>* a = cells.axis;
        y_step = b.y_step;
        if constexpr (sizeof(S) == 4) {
            if (!b.offsets_in_compute) {
                const TrilinearGeometry& g = b.geometry;
                const auto yx = hn::Add(hn::Mul(IndexToOffset(d, a[1].index[0]), hn::Set(di, static_cast<Offset>(g.stride[1]))),
                                        IndexToOffset(d, a[0].index[0]));
                const auto sz = hn::Set(di, static_cast<Offset>(g.stride[0]));
                for (int k = 0; k < 2; ++k) hn::Store(hn::Add(hn::Mul(IndexToOffset(d, a[2].index[k]), sz), yx), di, base[k] + i);
                return;
            }
        }
        const auto yx = hn::MulAdd(a[1].index[0], b.stride_y, a[0].index[0]);
        for (int k = 0; k < 2; ++k) hn::Store(IndexToOffset(d, hn::MulAdd(a[2].index[k], b.stride_z, yx)), di, base[k] + i);
    }
    // Every lane of a block, for a second volume's geometry.
    HWY_INLINE void Compute(const BlockIndices<S>& index, int padded, const TrilinearGeometry& g) {
        using D = hn::ScalableTag<S>;
        const D d;
        const VolumeBounds<D> bounds(d, g);
        for (int i = 0; i < padded; i += static_cast<int>(hn::Lanes(d))) {
            hn::Vec<D> v[3];
            index.Load(d, i, v);
            Store(d, PointCells<D>(d, v, bounds), bounds, i);
        }
    }
};

// A block's masks, one per vector of points, kept from phase 1 for phase 3: on AVX-512 as
// their bits (one move each way between a mask register and memory, in a 16-bit word: bytes
// would alias everything and make the compiler reload phase 1's constants after each, wider
// words cost a move through a general register), elsewhere as vectors (masks are vectors
// there, so that costs nothing either).
template <typename S>
struct KeptMasks {
#if HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX3_DL
    uint16_t bits[kBlock];  // vector j's

    template <class D>
    HWY_INLINE void Store(D d, hn::Mask<D> m, int i) {
        bits[i / hn::Lanes(d)] = m.raw;
    }
    template <class D>
    HWY_INLINE hn::Mask<D> Load(D d, int i) const {
        hn::Mask<D> m;
        m.raw = static_cast<decltype(m.raw)>(bits[i / hn::Lanes(d)]);
        return m;
    }
#else
    HWY_ALIGN S lanes[kBlock];

    template <class D>
    HWY_INLINE void Store(D d, hn::Mask<D> m, int i) {
        hn::Store(hn::VecFromMask(d, m), d, lanes + i);
    }
    template <class D>
    HWY_INLINE hn::Mask<D> Load(D d, int i) const {
        return hn::MaskFromVec(hn::Load(d, lanes + i));
    }
#endif
};

// Phase 1 of a block's points, for phase 3 to load: per axis and slot (or corner) the weight
// and whether it counts (KeptMasks; a corner counts where its three axes' slots do, combined
// in phase 3 and only for blocks with a corner outside, since AVX-512's mask logic runs on
// one port, which phase 1's vector work also needs); along the slotted axes (x, y) the
// sign of each slot's term in d(weight)/d(index) (z's corners keep -1 and +1); the corner
// rows' offsets; and the planes of the two z corners (for the backward's slab cuts).
template <typename S>
struct RowCells {
    HWY_ALIGN S w[3][2][kBlock];
    KeptMasks<S> ok[3][2];
    HWY_ALIGN S sign[2][2][kBlock];
    HWY_ALIGN S plane[2][kBlock];
    CornerRows<S> rows;
    bool all_inside = true;  // every corner of the block's `count` points is inside

    // From `padded` points' grid values coord[axis][i] (x, y, z), in an input of size in_size
    // (N, C, D, H, W), for a volume of the geometry, in one pass with the padding mode
    // dispatched once: the source indices (SourceIndexLanes; lanes past `count` set to -4,
    // outside, never sampled, scattered or stored), then the cells. Backward: the signs and
    // planes, and the indices' derivatives into derivative[axis]. Where `indices` is given,
    // the indices into it too (for a second volume's CornerRows).
    template <bool kBackward>
    HWY_INLINE void Compute(const S (*HWY_RESTRICT coord)[kBlock], int count, int padded, const int64_t* in_size,
                            const SamplerOptions& options, const TrilinearGeometry& g,
                            S (*HWY_RESTRICT derivative)[kBlock], BlockIndices<S>* indices) {
        DispatchPadding(options.padding, [&](auto mode) HWY_ATTR {
            ComputeWith<decltype(mode)::value, kBackward>(coord, count, padded, in_size, options.align_corners, g,
                                                          derivative, indices);
        });
    }

    template <Padding P, bool kBackward>
    HWY_INLINE void ComputeWith(const S (*HWY_RESTRICT coord)[kBlock], int count, int padded, const int64_t* in_size,
                                bool align, const TrilinearGeometry& volume, S (*HWY_RESTRICT derivative)[kBlock],
                                BlockIndices<S>* indices) {
        using D = hn::ScalableTag<S>;
        const D d;
        const int lanes = static_cast<int>(hn::Lanes(d));
        using Indexer = SourceIndexLanes<D, P, kBackward>;
        const Indexer axis_index[3] = {{d, in_size[4], align}, {d, in_size[3], align}, {d, in_size[2], align}};
        const TrilinearGeometry g = volume;  // a copy that no store in the loop can change (the int32 offsets read it)
        const VolumeBounds<D> bounds(d, g);
        bool all = true;
        for (int i = 0; i < padded; i += lanes) {
            hn::Vec<D> v[3];
            for (int a = 0; a < 3; ++a) v[a] = axis_index[a].At(d, coord[a] + i, kBackward ? derivative[a] + i : nullptr);
            const auto real = hn::FirstN(d, static_cast<size_t>(count > i ? count - i : 0));
            if (i + lanes > count)
                for (int a = 0; a < 3; ++a) v[a] = hn::IfThenElse(real, v[a], hn::Set(d, S(-4)));
            if (indices != nullptr)
                for (int a = 0; a < 3; ++a) hn::Store(v[a], d, indices->axis[a] + i);
            const PointCells<D> cells(d, v, bounds);
            const AxisCell<D>* a = cells.axis;
            all = all && hn::AllTrue(d, hn::Or(hn::Not(real), hn::And(hn::And(a[0].every, a[1].every), a[2].every)));
            for (int axis = 0; axis < 3; ++axis)
                for (int k = 0; k < 2; ++k) {
                    hn::Store(a[axis].weight[k], d, w[axis][k] + i);
                    if (kBackward && axis < 2) hn::Store(a[axis].sign[k], d, sign[axis][k] + i);
                }
            for (int axis = 0; axis < 3; ++axis)
                for (int k = 0; k < 2; ++k) ok[axis][k].Store(d, a[axis].ok[k], i);
            if (kBackward) hn::Store(a[2].index[0], d, plane[0] + i), hn::Store(a[2].index[1], d, plane[1] + i);
            rows.Store(d, cells, bounds, i);
        }
        all_inside = all;
    }
};

// Lanes i .. of a block's cells, loaded for phase 3: corner k (x slot = bit 0, y = bit 1,
// z = bit 2) has weight (wx * wy) * wz, PyTorch's product, and counts where Ok(k) (its axes'
// masks loaded and combined where asked for: kept as an array of mask registers, they were
// spilled through the stack).
template <class D>
struct LaneCells {
    using V = hn::Vec<D>;
    using M = hn::Mask<D>;
    using S = hn::TFromD<D>;
    const RowCells<S>& cells;
    int i;
    V w[3][2];
    V xy[4];

    HWY_INLINE LaneCells(D d, const RowCells<S>& block, int lane) : cells(block), i(lane) {
        for (int a = 0; a < 3; ++a)
            for (int k = 0; k < 2; ++k) w[a][k] = hn::Load(d, cells.w[a][k] + i);
        for (int k = 0; k < 4; ++k) xy[k] = hn::Mul(w[0][k & 1], w[1][k >> 1]);
    }
    HWY_INLINE V Weight(int k) const { return hn::Mul(xy[k & 3], w[2][k >> 2]); }
    HWY_INLINE M Ok(int k) const {
        const D d;
        return hn::And(hn::And(cells.ok[0][k & 1].Load(d, i), cells.ok[1][(k >> 1) & 1].Load(d, i)),
                       cells.ok[2][k >> 2].Load(d, i));
    }
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
                std::memcpy(pairs[r] + 2 * i, volume + rows.Row(r, i), 2 * sizeof(S));  // one 64- or 128-bit move
        ZeroPairTails(pairs, count, padded);
    } else {
        HWY_ALIGN T raw[4][2 * kBlock];
        for (int i = 0; i < count; ++i)
            for (int r = 0; r < 4; ++r) std::memcpy(raw[r] + 2 * i, volume + rows.Row(r, i), 2 * sizeof(T));
        for (int r = 0; r < 4; ++r)
            for (int i = 2 * count; i < 2 * padded; ++i) std::memset(&raw[r][i], 0, sizeof(T));  // +0 in either type
        const hn::ScalableTag<S> d;
        const int lanes = static_cast<int>(hn::Lanes(d));
        for (int r = 0; r < 4; ++r)
            for (int i = 0; i < 2 * padded; i += lanes) hn::Store(LoadLanes(d, raw[r] + i), d, pairs[r] + i);
    }
}

// Phase 3: lanes i .. of the eight slots' values, v[k] for slot k (x slot = bit 0, y slot
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
