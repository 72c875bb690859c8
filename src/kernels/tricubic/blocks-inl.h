// Tricubic in row phases, a block of up to kCubicBlock points of one grid row at a time. A
// block's per-point tables and tap rows are laid out point by point, each point's 4 taps along
// x side by side (element 4 p + i), so that phase 3 works elementwise in vectors of any width.
// - phase 1 (vectors, this file): each point's source index per axis, its first tap, x's
//   weights in that layout, y's and z's weights spread over each point's 4 elements (and the
//   weight gradients for the backward; PyTorch's formulas: CubicWeightsVector), whether every
//   tap is inside (its rows are then runs of 4 along x, read without any test), else the
//   taps' padded indices (PaddedTapLanes);
// - phase 2 (scalar moves per point, per channel; moves-inl.h): each point's 16 tap rows
//   (z, y) of 4 values along x into the block's buffer; a tap that reads 0 (zeros padding)
//   gives 0, without branches; and back, the backward's scatter;
// - phase 3 (vectors, per channel; sums-inl.h): per element, the sum along y, then along z;
//   times x's weight, then each point's 4 elements summed along x; or the amounts the
//   backward adds to each tap.
// Every point, inside or at the edges, goes through the same arithmetic, on every SIMD target.
//
// Compiled into each SIMD target: included by tricubic/moves-inl.h and sums-inl.h (after
// foreach_target.h) only; Highway's per-target include guard.
#if defined(GS3D_KERNELS_TRICUBIC_BLOCKS_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef GS3D_KERNELS_TRICUBIC_BLOCKS_INL_H_
#undef GS3D_KERNELS_TRICUBIC_BLOCKS_INL_H_
#else
#define GS3D_KERNELS_TRICUBIC_BLOCKS_INL_H_
#endif

#include <hwy/highway.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>

#include "kernels/common/element_types.h"
#include "kernels/grid_sampler3d_kernels.h"
#include "kernels/blocks/cells-inl.h"
#include "kernels/common/simd_loads-inl.h"
#include "kernels/tricubic/taps.h"

HWY_BEFORE_NAMESPACE();
namespace gs3d::kernels {
namespace HWY_NAMESPACE {
namespace {

namespace hn = hwy::HWY_NAMESPACE;

constexpr int kCubicBlock = 16;  // a vector of fp32 on AVX-512; the others take several
static_assert(kCubicBlock <= 16, "CubicBlock::inside_bits and phase 1's mask bytes hold 16 points");

// A first tap's index as phase 1's vectors convert it: int32 for fp32, int64 for fp64.
template <typename S>
using CubicIndex = std::conditional_t<sizeof(S) == 4, int32_t, int64_t>;

constexpr int kCubicLanes = 4 * kCubicBlock;  // a block's points times their 4 taps along x

template <typename S>
struct CubicBlock {
    int count = 0;                                // points in the block
    int64_t width = 0;                            // the input's size along x
    // Per point p and tap i along x, at element 4 p + i: x's weights and, for gridGrad, minus
    // their derivatives (as PyTorch's); y's and z's (spread: tap j's at each of p's 4 elements).
    alignas(64) S x_weight[kCubicLanes];
    alignas(64) S x_weight_grad[kCubicLanes];
    alignas(64) S spread_weight[2][4][kCubicLanes];       // y, z; tap
    alignas(64) S spread_weight_grad[2][4][kCubicLanes];  // y, z; tap (the backward's only)
    alignas(64) S first[3][kCubicBlock];           // floor(index) - 1: the first tap, unpadded
    uint32_t inside_bits = 0;                      // bit p: point p has every tap inside (no padding applies)
    alignas(64) CubicIndex<S> first_index[3][kCubicBlock];  // a point inside: its first tap per axis
    int64_t index[3][4][kCubicBlock];              // a point not inside: each tap's padded index, -1: reads 0
    alignas(64) S values[16][kCubicLanes];         // per channel: tap rows (z * 4 + y), point p's at 4 p

    bool Inside(int p) const { return (inside_bits >> p) & 1; }
    // The points not inside, a bit each.
    uint32_t EdgeBits() const { return ~inside_bits & ((uint32_t{1} << count) - 1); }
    int64_t TapIndex(int axis, int tap, int p) const {
        return Inside(p) ? first_index[axis][p] + tap : index[axis][tap][p];
    }
    // Whether a point not inside has its four x taps in a run (each reads, one after the
    // other): its rows then move, or are added, 4 at a time as a point inside's.
    bool XRun(int p) const {
        const int64_t x0 = index[0][0][p];
        return x0 >= 0 && index[0][1][p] == x0 + 1 && index[0][2][p] == x0 + 2 && index[0][3][p] == x0 + 3;
    }
};

// The points p .. p + lanes - 1 of v, each spread over its 4 elements, from out[4 p] on.
template <class D, class V = hn::Vec<D>, typename S = hn::TFromD<D>>
HWY_INLINE void StoreSpread(D d, V v, S* HWY_RESTRICT out) {
    const hn::RebindToSigned<D> di;
    using TI = hn::TFromD<decltype(di)>;
    const size_t lanes = hn::Lanes(d);
    for (size_t o = 0; o < 4; ++o) {  // the vector o lanes on holds points (o lanes + lane) / 4
        const auto points = hn::ShiftRight<2>(hn::Add(hn::Iota(di, 0), hn::Set(di, static_cast<TI>(o * lanes))));
        hn::Store(hn::TableLookupLanes(v, hn::IndicesFromVec(d, points)), d, out + o * lanes);
    }
}

// The weights of the four taps (w) and, with kGrads, minus their derivatives (g), PyTorch's
// get_cubic_upsample_coefficients and get_cubic_coefficients_grad, on a vector of fractions t.
template <bool kGrads, class D, class V>
HWY_INLINE void CubicWeightsVector(D d, V t, V* w, V* g) {
    using S = hn::TFromD<D>;
    constexpr S A = static_cast<S>(-0.75);
    const V one = hn::Set(d, 1), a = hn::Set(d, A);
    auto outer = [&](V x) {  // ((A x - 5 A) x + 8 A) x - 4 A
        return hn::Sub(hn::Mul(hn::Add(hn::Mul(hn::Sub(hn::Mul(a, x), hn::Set(d, 5 * A)), x), hn::Set(d, 8 * A)), x),
                       hn::Set(d, 4 * A));
    };
    auto inner = [&](V x) {  // ((A + 2) x - (A + 3)) x x + 1
        return hn::Add(hn::Mul(hn::Mul(hn::Sub(hn::Mul(hn::Set(d, A + 2), x), hn::Set(d, A + 3)), x), x), one);
    };
    w[0] = outer(hn::Add(t, one));
    w[1] = inner(t);
    w[2] = inner(hn::Sub(one, t));
    w[3] = outer(hn::Sub(hn::Set(d, 2), t));
    if constexpr (!kGrads) return;
    V x = hn::Sub(hn::Set(d, -1), t);
    g[0] = hn::Sub(hn::Mul(hn::Sub(hn::Mul(hn::Set(d, -3 * A), x), hn::Set(d, 10 * A)), x), hn::Set(d, 8 * A));
    x = hn::Sub(hn::Zero(d), t);
    g[1] = hn::Mul(hn::Sub(hn::Mul(hn::Set(d, -3 * (A + 2)), x), hn::Set(d, 2 * (A + 3))), x);
    x = hn::Sub(one, t);
    g[2] = hn::Mul(hn::Sub(hn::Mul(hn::Set(d, 3 * (A + 2)), x), hn::Set(d, 2 * (A + 3))), x);
    x = hn::Sub(hn::Set(d, 2), t);
    g[3] = hn::Add(hn::Mul(hn::Sub(hn::Mul(hn::Set(d, 3 * A), x), hn::Set(d, 10 * A)), x), hn::Set(d, 8 * A));
}

// The padded index of each tap of the points at p (PaddedTap in vectors: the padding of
// SourceIndexLanes::Pad, then -1 for a tap that reads 0), into padded[axis][tap]; the lanes
// that reflection leaves to the scalar code, and every lane where a target reflects in
// scalar code only, by PaddedTap.
template <class D, typename S = hn::TFromD<D>>
HWY_INLINE void PaddedTapLanes(D d, const CubicBlock<S>& b, int p, const int64_t* sizes, const SamplerOptions& options,
                               S (*padded)[4][kCubicBlock]) {
    DispatchPadding(options.padding, [&](auto mode) HWY_ATTR {
        using Indexer = SourceIndexLanes<D, decltype(mode)::value, false>;
        for (int a = 0; a < 3; ++a) {
            const Indexer indexer(d, sizes[a], options.align_corners);
            for (int k = 0; k < 4; ++k) {
                const auto tap = hn::Add(hn::Load(d, b.first[a] + p), hn::Set(d, static_cast<S>(k)));
                auto scalar = hn::FirstN(d, hn::Lanes(d));
                auto v = tap;
                if constexpr (Indexer::kVectors) v = indexer.Pad(d, tap, nullptr, &scalar);
                // zeros: a tap outside reads 0; NaN fails both comparisons
                const auto reads = hn::And(hn::Ge(v, hn::Zero(d)), hn::Le(v, indexer.last));
                hn::Store(hn::IfThenElse(reads, v, hn::Set(d, S(-1))), d, padded[a][k] + p);
                if (Indexer::kMarksLanes && !hn::AllFalse(d, scalar))
                    for (size_t j = 0; j < hn::Lanes(d); ++j)
                        padded[a][k][p + j] = static_cast<S>(PaddedTap<S>(b.first[a][p + j] + static_cast<S>(k), sizes[a],
                                                                          options.padding, options.align_corners));
            }
        }
    });
}

// Phase 1 for `count` points of a grid row from g (point p's x at g[p * point_stride], y and z
// coord_stride further on); kGrads: the weight gradients too (the backward's gridGrad).
template <bool kGrads, typename T, typename S>
HWY_INLINE void CubicPhase1(const T* g, int64_t point_stride, int64_t coord_stride, int count, const View5& in,
                            const SamplerOptions& options, CubicBlock<S>* b) {
    const hn::ScalableTag<S> d;
    const int lanes = static_cast<int>(hn::Lanes(d));
    const int64_t sizes[3] = {in.size[4], in.size[3], in.size[2]};
    alignas(64) S coord[3][kCubicBlock];
    LoadGridRow(g, point_stride, coord_stride, count, kCubicBlock, coord);
    // The source indices, unnormalized and not clipped: the zeros mode's (the padding goes to
    // each tap, PaddedTap).
    alignas(64) S source[3][kCubicBlock];
    for (int a = 0; a < 3; ++a)
        BlockSourceIndicesOf<S, Padding::kZeros, false>(coord[a], kCubicBlock, sizes[a], options.align_corners,
                                                          source[a], nullptr);
    // Whether every tap is inside, in vectors where the sizes are exact in S and the first taps
    // fit its integers (else below, point by point, exactly in int64).
    const hn::RebindToSigned<decltype(d)> di;
    constexpr int64_t kExact = int64_t{1} << (std::numeric_limits<S>::digits < 31 ? std::numeric_limits<S>::digits : 31);
    const bool vector_inside = sizes[0] < kExact && sizes[1] < kExact && sizes[2] < kExact;
    // a tap's padded index, -1: reads 0; with vector_inside, for every point not inside
    alignas(64) S padded[3][4][kCubicBlock];
    b->count = count;
    b->inside_bits = 0;
    for (int p = 0; p < kCubicBlock; p += lanes) {
        auto inside = hn::FirstN(d, static_cast<size_t>(std::max(0, count - p)));
        for (int a = 0; a < 3; ++a) {
            const auto index = hn::Load(d, source[a] + p);
            const auto floor = hn::Floor(index);
            const auto first = hn::Sub(floor, hn::Set(d, 1));
            hn::Store(first, d, b->first[a] + p);
            hn::Vec<decltype(d)> w[4], wg[4];
            CubicWeightsVector<kGrads>(d, hn::Sub(index, floor), w, wg);
            if (a == 0) {
                hn::StoreInterleaved4(w[0], w[1], w[2], w[3], d, b->x_weight + 4 * p);
                if constexpr (kGrads) hn::StoreInterleaved4(wg[0], wg[1], wg[2], wg[3], d, b->x_weight_grad + 4 * p);
            } else {
                for (int k = 0; k < 4; ++k) StoreSpread(d, w[k], b->spread_weight[a - 1][k] + 4 * p);
                if constexpr (kGrads)
                    for (int k = 0; k < 4; ++k) StoreSpread(d, wg[k], b->spread_weight_grad[a - 1][k] + 4 * p);
            }
            // first >= 0 and first + 3 <= size - 1; NaN fails both; the cast sees 0 elsewhere
            inside = hn::And(inside, hn::And(hn::Ge(first, hn::Zero(d)),
                                             hn::Le(first, hn::Set(d, static_cast<S>(sizes[a] - 4)))));
            hn::Store(hn::ConvertTo(di, hn::IfThenElseZero(inside, first)), di, b->first_index[a] + p);
        }
        uint8_t bits[(kCubicBlock + 7) / 8] = {};
        hn::StoreMaskBits(d, inside, bits);
        if (vector_inside) b->inside_bits |= (uint32_t{bits[0]} | uint32_t{bits[1]} << 8) << p;
        if (vector_inside && !hn::AllTrue(d, hn::Or(inside, hn::Not(hn::FirstN(d, static_cast<size_t>(std::max(0, count - p)))))))
            PaddedTapLanes(d, *b, p, sizes, options, padded);
    }
    b->width = sizes[0];
    for (uint32_t edge = b->EdgeBits(); edge != 0; edge &= edge - 1) {
        const int p = static_cast<int>(hwy::Num0BitsBelowLS1Bit_Nonzero32(edge));
        if (vector_inside) {  // every size exact in S: the padded taps are exact integers
            for (int a = 0; a < 3; ++a)
                for (int k = 0; k < 4; ++k) b->index[a][k][p] = static_cast<int64_t>(padded[a][k][p]);
            continue;
        }
        bool inside = true;                      // sizes past S's exact integers
        for (int a = 0; a < 3 && inside; ++a) {  // exactly, for sizes the floats do not hold
            const S first = b->first[a][p];      // tested in float first: NaN, inf and huge values never reach the cast
            inside = first >= 0 && first <= static_cast<S>(sizes[a]) && first < static_cast<S>(kExact);
            b->first_index[a][p] = inside ? static_cast<CubicIndex<S>>(first) : 0;
            inside = inside && b->first_index[a][p] + int64_t{3} <= sizes[a] - 1;
        }
        b->inside_bits |= uint32_t{inside} << p;
        if (inside) continue;
        for (int a = 0; a < 3; ++a) {
            for (int k = 0; k < 4; ++k)
                b->index[a][k][p] =
                    PaddedTap<S>(b->first[a][p] + static_cast<S>(k), sizes[a], options.padding, options.align_corners);
        }
    }
    for (int p = count; p < kCubicBlock; ++p)  // the lanes past count hold 0 in every phase
        for (int r = 0; r < 16; ++r) std::memset(b->values[r] + 4 * p, 0, sizeof(S) * 4);
}

}  // namespace
}  // namespace HWY_NAMESPACE
}  // namespace gs3d::kernels
HWY_AFTER_NAMESPACE();

#endif  // GS3D_KERNELS_TRICUBIC_BLOCKS_INL_H_
