// Tricubic in row phases, a block of up to kCubicBlock points of one grid row at a time:
// - phase 1 (vectors): each point's source index per axis, its first tap and the weights and
//   weight gradients of its four taps (PyTorch's formulas: CubicWeightsVector), whether every
//   tap is inside (its rows are then runs of 4 along x, read without any test), else the
//   taps' padded indices (PaddedTapLanes);
// - phase 2 (scalar moves, per channel): each point's 16 tap rows (z, y) of 4 values along x
//   into the block's buffer, laid out [row][slot][4] (Slot: an order that makes phase 3's
//   transposes cheap); a tap that reads 0 (zeros padding) gives 0, without branches;
// - phase 3 (vectors, per channel): LoadTapRow turns a row's [slot][4] into 4 vectors over the
//   points; rows along x, then planes along y, then the sample along z, each a sum in tap
//   order (and for gridGrad the same with one axis's weight gradients), or the amounts the
//   backward adds to each tap (StoreTapRow).
// Every point, inside or at the edges, goes through the same arithmetic, on every SIMD target.
//
// Compiled into each SIMD target: included by tricubic/forward-inl.h and backward-inl.h
// (after foreach_target.h) only; Highway's per-target include guard.
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

// A first tap's index as phase 1's vectors convert it: int32 for fp32, int64 for fp64.
template <typename S>
using CubicIndex = std::conditional_t<sizeof(S) == 4, int32_t, int64_t>;

template <typename S>
struct CubicBlock {
    int count = 0;                                // points in the block
    int64_t width = 0;                            // the input's size along x
    alignas(64) S weight[3][4][kCubicBlock];       // per axis (x, y, z), tap and point
    alignas(64) S weight_grad[3][4][kCubicBlock];  // minus d(weight)/d(index), as PyTorch's
    alignas(64) S first[3][kCubicBlock];           // floor(index) - 1: the first tap, unpadded
    bool inside[kCubicBlock];                      // every tap inside: no padding applies
    alignas(64) CubicIndex<S> first_index[3][kCubicBlock];  // a point inside: its first tap per axis
    int64_t index[3][4][kCubicBlock];              // a point not inside: each tap's padded index, -1: reads 0
    alignas(64) S values[16][kCubicBlock][4];      // per channel: tap rows (z * 4 + y), at each point's Slot

    int64_t TapIndex(int axis, int tap, int p) const {
        return inside[p] ? first_index[axis][p] + tap : index[axis][tap][p];
    }
    // Whether a point not inside has its four x taps in a run (each reads, one after the
    // other): its rows then move, or are added, 4 at a time as a point inside's.
    bool XRun(int p) const {
        const int64_t x0 = index[0][0][p];
        return x0 >= 0 && index[0][1][p] == x0 + 1 && index[0][2][p] == x0 + 2 && index[0][3][p] == x0 + 3;
    }
};

// Whether a vector's tap rows are turned into tap vectors by 4x4 transposes within its 128-bit
// blocks alone (TransposeBlocks4: 8 shuffles, where LoadInterleaved4 also moves whole blocks
// across the four vectors, 16 in all on AVX-512): fp32 on the fixed-width targets with whole
// blocks of 4 lanes. The points' rows are then kept in the order that makes those transposes
// give the points in order (Slot).
template <typename S>
constexpr bool kTapsInBlocks = sizeof(S) == 4 && !HWY_HAVE_SCALABLE && HWY_TARGET != HWY_SCALAR &&
                               hn::MaxLanes(hn::ScalableTag<S>()) >= 4;

// Where point p's tap rows lie in CubicBlock::values: with kTapsInBlocks, within each vector
// of L points, point q at (q % 4) * (L / 4) + q / 4, so that lane j of block m of the
// transposed vectors is point 4 m + j; else at p.
template <typename S>
HWY_INLINE int Slot(int p) {
    if constexpr (!kTapsInBlocks<S>) return p;
    const int lanes = static_cast<int>(hn::Lanes(hn::ScalableTag<S>()));
    const int q = p % lanes;
    return p - q + (q % 4) * (lanes / 4) + q / 4;
}

// 4x4 transposes within each 128-bit block of v[0..3]: afterwards, block m of v[i] holds lane
// i of block m of v[0], v[1], v[2], v[3] in turn. Its own inverse. (Not on the scalar target,
// which has no blocks.)
#if HWY_TARGET != HWY_SCALAR
template <class D, class V>
HWY_INLINE void TransposeBlocks4(D d, V* v) {
    const hn::Repartition<uint64_t, D> d64;
    const V t0 = hn::InterleaveLower(d, v[0], v[1]), t1 = hn::InterleaveUpper(d, v[0], v[1]);
    const V t2 = hn::InterleaveLower(d, v[2], v[3]), t3 = hn::InterleaveUpper(d, v[2], v[3]);
    v[0] = hn::BitCast(d, hn::InterleaveLower(d64, hn::BitCast(d64, t0), hn::BitCast(d64, t2)));
    v[1] = hn::BitCast(d, hn::InterleaveUpper(d64, hn::BitCast(d64, t0), hn::BitCast(d64, t2)));
    v[2] = hn::BitCast(d, hn::InterleaveLower(d64, hn::BitCast(d64, t1), hn::BitCast(d64, t3)));
    v[3] = hn::BitCast(d, hn::InterleaveUpper(d64, hn::BitCast(d64, t1), hn::BitCast(d64, t3)));
}
#endif

// A tap row of the points at p .. p + lanes - 1 (row: its values from slot p on) as four
// vectors of taps over the points, in point order; and back (StoreTapRow).
template <class D, typename S = hn::TFromD<D>>
HWY_INLINE void LoadTapRow(D d, const S* HWY_RESTRICT row, hn::Vec<D>* v) {
    if constexpr (kTapsInBlocks<S>) {
        const size_t lanes = hn::Lanes(d);
        for (size_t i = 0; i < 4; ++i) v[i] = hn::Load(d, row + i * lanes);
        TransposeBlocks4(d, v);
    } else {
        hn::LoadInterleaved4(d, row, v[0], v[1], v[2], v[3]);
    }
}
template <class D, typename S = hn::TFromD<D>>
HWY_INLINE void StoreTapRow(D d, hn::Vec<D>* v, S* HWY_RESTRICT row) {
    if constexpr (kTapsInBlocks<S>) {
        const size_t lanes = hn::Lanes(d);
        TransposeBlocks4(d, v);
        for (size_t i = 0; i < 4; ++i) hn::Store(v[i], d, row + i * lanes);
    } else {
        hn::StoreInterleaved4(v[0], v[1], v[2], v[3], d, row);
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
    for (int p = 0; p < kCubicBlock; p += lanes) {
        auto inside = hn::FirstN(d, static_cast<size_t>(std::max(0, count - p)));
        for (int a = 0; a < 3; ++a) {
            const auto index = hn::Load(d, source[a] + p);
            const auto floor = hn::Floor(index);
            const auto first = hn::Sub(floor, hn::Set(d, 1));
            hn::Store(first, d, b->first[a] + p);
            hn::Vec<decltype(d)> w[4], wg[4];
            CubicWeightsVector<kGrads>(d, hn::Sub(index, floor), w, wg);
            for (int k = 0; k < 4; ++k) hn::Store(w[k], d, b->weight[a][k] + p);
            if constexpr (kGrads)
                for (int k = 0; k < 4; ++k) hn::Store(wg[k], d, b->weight_grad[a][k] + p);
            // first >= 0 and first + 3 <= size - 1; NaN fails both; the cast sees 0 elsewhere
            inside = hn::And(inside, hn::And(hn::Ge(first, hn::Zero(d)),
                                             hn::Le(first, hn::Set(d, static_cast<S>(sizes[a] - 4)))));
            hn::Store(hn::ConvertTo(di, hn::IfThenElseZero(inside, first)), di, b->first_index[a] + p);
        }
        alignas(64) CubicIndex<S> lane_inside[kCubicBlock];
        hn::Store(hn::BitCast(di, hn::VecFromMask(d, inside)), di, lane_inside);
        for (int q = 0; q < lanes; ++q) b->inside[p + q] = vector_inside && lane_inside[q] != 0;
        if (vector_inside && !hn::AllTrue(d, hn::Or(inside, hn::Not(hn::FirstN(d, static_cast<size_t>(std::max(0, count - p)))))))
            PaddedTapLanes(d, *b, p, sizes, options, padded);
    }
    b->count = count;
    b->width = sizes[0];
    for (int p = 0; p < count; ++p) {
        if (b->inside[p]) continue;
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
        b->inside[p] = inside;
        if (inside) continue;
        for (int a = 0; a < 3; ++a) {
            for (int k = 0; k < 4; ++k)
                b->index[a][k][p] =
                    PaddedTap<S>(b->first[a][p] + static_cast<S>(k), sizes[a], options.padding, options.align_corners);
        }
    }
    for (int p = count; p < kCubicBlock; ++p)  // the lanes past count hold 0 in every phase
        for (int r = 0; r < 16; ++r) std::memset(b->values[r][Slot<S>(p)], 0, sizeof(S) * 4);
}

// Whether a vector holds a row's 4 taps (fp32 from SSE4 on, fp64 from AVX2 on), for
// PickWindowLanes.
template <typename S>
constexpr bool kWindowLanes = HWY_TARGET != HWY_SCALAR && !HWY_HAVE_SCALABLE && hn::MaxLanes(hn::CappedTag<S, 4>()) == 4;

// The 4 values of window (4 in a row) at lane[i], or 0 where lane[i] is -1, into out.
template <typename S>
HWY_INLINE void PickWindowLanes(const S* window, const CubicIndex<S>* lane, S* out) {
    const hn::CappedTag<S, 4> d4;
    const hn::RebindToSigned<decltype(d4)> di4;
    const auto li = hn::LoadU(di4, lane);
    const auto picked = hn::TableLookupLanes(hn::LoadU(d4, window), hn::IndicesFromVec(d4, hn::Max(li, hn::Zero(di4))));
    hn::StoreU(hn::IfThenZeroElse(hn::RebindMask(d4, hn::Lt(li, hn::Zero(di4))), picked), d4, out);
}

// Phase 2: one channel's tap rows (in_c: its element 0; stride: the x, y, z strides).
template <typename T, typename S>
HWY_INLINE void CubicPhase2(const T* in_c, const int64_t* stride, CubicBlock<S>* b) {
    int64_t row_offset[16];  // of a point's tap rows from its first tap
    for (int r = 0; r < 16; ++r) row_offset[r] = (r >> 2) * stride[2] + (r & 3) * stride[1];
    const bool runs = stride[0] == 1 && std::is_same_v<T, S>;  // a row's 4 taps moved as one
    const int64_t width = b->width;
    for (int p = 0; p < b->count; ++p) {
        const int slot = Slot<S>(p);
        if (b->inside[p]) {
            const T* base = in_c + b->first_index[2][p] * stride[2] + b->first_index[1][p] * stride[1] +
                            b->first_index[0][p] * stride[0];
            if (runs) {
                for (int r = 0; r < 16; ++r) std::memcpy(b->values[r][slot], base + row_offset[r], 4 * sizeof(S));
                continue;
            }
            for (int r = 0; r < 16; ++r)
                for (int i = 0; i < 4; ++i) b->values[r][slot][i] = ToCompute(base[row_offset[r] + i * stride[0]]);
            continue;
        }
        // Without branches: each tap read through a pointer, to a zero where it reads 0 (tested
        // tap by tap, the edge points took a third of the forward for a tenth of its points).
        static const T kZeros[4] = {};
        int64_t offset[3][4];
        bool reads[3][4];
        for (int a = 0; a < 3; ++a)
            for (int k = 0; k < 4; ++k) {
                const int64_t index = b->index[a][k][p];
                reads[a][k] = index >= 0;
                offset[a][k] = reads[a][k] ? index * stride[a] : 0;
            }
        const bool x_run = runs && b->XRun(p);  // a row moved as one
        // Else, where a vector holds the 4 taps, a row's window of 4 that holds every tap that
        // reads (padded taps lie at most 3 apart), its lanes picked and those that read 0 zeroed.
        CubicIndex<S> lane[4];
        int64_t window = 0;
        const bool x_window = !x_run && runs && kWindowLanes<S> && width >= 4;
        if (x_window) {
            window = width - 4;
            for (int i = 0; i < 4; ++i) window = reads[0][i] ? std::min(window, offset[0][i]) : window;
            for (int i = 0; i < 4; ++i) lane[i] = static_cast<CubicIndex<S>>(reads[0][i] ? offset[0][i] - window : -1);
        }
        for (int r = 0; r < 16; ++r) {
            const bool row_reads = reads[2][r >> 2] & reads[1][r & 3];
            const T* row = in_c + offset[2][r >> 2] + offset[1][r & 3];
            if (x_run) {
                std::memcpy(b->values[r][slot], row_reads ? row + offset[0][0] : kZeros, 4 * sizeof(S));
            } else if (x_window) {
                if constexpr (kWindowLanes<S> && std::is_same_v<T, S>) PickWindowLanes(row_reads ? row + window : kZeros, lane, b->values[r][slot]);
            } else {
                for (int i = 0; i < 4; ++i)
                    b->values[r][slot][i] = ToCompute(*((row_reads & reads[0][i]) ? row + offset[0][i] : kZeros));
            }
        }
    }
}

template <class V>
HWY_INLINE V Dot4(const V* v, const V* w) {
    return hn::Add(hn::Add(hn::Add(hn::Mul(v[0], w[0]), hn::Mul(v[1], w[1])), hn::Mul(v[2], w[2])), hn::Mul(v[3], w[3]));
}

// The weights (or weight gradients) of axis a's four taps for the points at p.
template <class D, typename S>
HWY_INLINE void LoadTapVectors(D d, const S (*table)[kCubicBlock], int p, hn::Vec<D>* out) {
    for (int k = 0; k < 4; ++k) out[k] = hn::Load(d, table[k] + p);
}

// Phase 3: the sample of each point (sample) and, with kSums, the sums whose product with
// gradOutput gives gridGrad: value x weight_grad(x) x weight(y) x weight(z), and so on.
template <bool kSums, typename S>
HWY_INLINE void CubicPhase3(const CubicBlock<S>& b, S* sample, S* dx, S* dy, S* dz) {
    const hn::ScalableTag<S> d;
    using V = hn::Vec<decltype(d)>;
    for (int p = 0; p < kCubicBlock; p += static_cast<int>(hn::Lanes(d))) {
        V wx[4], wy[4], wz[4], gx[4], gy[4], gz[4];
        LoadTapVectors(d, b.weight[0], p, wx);
        LoadTapVectors(d, b.weight[1], p, wy);
        LoadTapVectors(d, b.weight[2], p, wz);
        if constexpr (kSums) {
            LoadTapVectors(d, b.weight_grad[0], p, gx);
            LoadTapVectors(d, b.weight_grad[1], p, gy);
            LoadTapVectors(d, b.weight_grad[2], p, gz);
        }
        V plane[4], plane_dx[4], plane_dy[4];
        for (int k = 0; k < 4; ++k) {
            V row[4], row_dx[4];
            for (int j = 0; j < 4; ++j) {
                V v[4];
                LoadTapRow(d, &b.values[k * 4 + j][p][0], v);
                row[j] = Dot4(v, wx);
                if constexpr (kSums) row_dx[j] = Dot4(v, gx);
            }
            plane[k] = Dot4(row, wy);
            if constexpr (kSums) {
                plane_dx[k] = Dot4(row_dx, wy);
                plane_dy[k] = Dot4(row, gy);
            }
        }
        hn::Store(Dot4(plane, wz), d, sample + p);
        if constexpr (kSums) {
            hn::Store(Dot4(plane_dx, wz), d, dx + p);
            hn::Store(Dot4(plane_dy, wz), d, dy + p);
            hn::Store(Dot4(plane, gz), d, dz + p);
        }
    }
}

// The amounts one channel's gradOutput (grad, per point) adds to each tap, ((grad x weight(x))
// x weight(y)) x weight(z), into the block's buffer in the layout of the values.
template <typename S>
HWY_INLINE void CubicAmounts(const S* grad, CubicBlock<S>* b) {
    const hn::ScalableTag<S> d;
    using V = hn::Vec<decltype(d)>;
    for (int p = 0; p < kCubicBlock; p += static_cast<int>(hn::Lanes(d))) {
        V wx[4], wy[4], wz[4];
        LoadTapVectors(d, b->weight[0], p, wx);
        LoadTapVectors(d, b->weight[1], p, wy);
        LoadTapVectors(d, b->weight[2], p, wz);
        const V g = hn::Load(d, grad + p);
        V gx[4];
        for (int i = 0; i < 4; ++i) gx[i] = hn::Mul(g, wx[i]);
        for (int k = 0; k < 4; ++k)
            for (int j = 0; j < 4; ++j) {
                V a[4];
                for (int i = 0; i < 4; ++i) a[i] = hn::Mul(hn::Mul(gx[i], wy[j]), wz[k]);
                StoreTapRow(d, a, &b->values[k * 4 + j][p][0]);
            }
    }
}

// Adds the amounts of the block's points, in point order and each point's taps in (z, y, x)
// order, into one channel of the accumulator (acc_c: its element 0; stride: x, y, z), the
// taps in planes [z_begin, z_end) only.
template <typename S>
HWY_INLINE void CubicScatter(const CubicBlock<S>& b, S* acc_c, const int64_t* stride, int64_t z_begin, int64_t z_end) {
    int64_t row_offset[16];  // of a point's tap rows from its first tap
    for (int r = 0; r < 16; ++r) row_offset[r] = (r >> 2) * stride[2] + (r & 3) * stride[1];
    const hn::CappedTag<S, 4> d4;  // a run of 4 taps in one vector, or in two
    const int lanes = static_cast<int>(hn::Lanes(d4));
    const S(*values)[kCubicBlock][4] = b.values;
    auto add_run = [&](S* run, const S* amounts) {  // 4 taps along x, stride 1
        for (int i = 0; i < 4; i += lanes) hn::StoreU(hn::Add(hn::LoadU(d4, run + i), hn::LoadU(d4, amounts + i)), d4, run + i);
    };
    S sink[16][4] = {};
    for (int p = 0; p < b.count; ++p) {
        const int slot = Slot<S>(p);
        if (b.inside[p]) {
            const int64_t z0 = b.first_index[2][p];
            S* base = acc_c + z0 * stride[2] + b.first_index[1][p] * stride[1] + b.first_index[0][p] * stride[0];
            // the rows of the taps in this thread's planes
            const int r_begin = 4 * static_cast<int>(std::min<int64_t>(4, std::max<int64_t>(0, z_begin - z0)));
            const int r_end = 4 * static_cast<int>(std::min<int64_t>(4, std::max<int64_t>(0, z_end - z0)));
            for (int r = r_begin; r < r_end; ++r) {
                S* run = base + row_offset[r];
                if (stride[0] == 1) {
                    add_run(run, values[r][slot]);
                } else {
                    for (int i = 0; i < 4; ++i) run[i * stride[0]] += values[r][slot][i];
                }
            }
            continue;
        }
        // Without branches: a tap that takes nothing (outside, or in another thread's planes)
        // adds into a sink of its own (one sink for all would chain the adds).
        int64_t x_offset[4];
        for (int i = 0; i < 4; ++i) x_offset[i] = b.index[0][i][p] * stride[0];
        const bool x_run = stride[0] == 1 && b.XRun(p);  // a row's 4 added as one
        for (int r = 0; r < 16; ++r) {
            const int64_t z = b.index[2][r >> 2][p], y = b.index[1][r & 3][p];
            const bool row_takes = (z >= z_begin) & (z < z_end) & (y >= 0);
            S* row = acc_c + (row_takes ? z * stride[2] + y * stride[1] : 0);
            if (x_run) {
                add_run(row_takes ? row + x_offset[0] : sink[r], values[r][slot]);
                continue;
            }
            for (int i = 0; i < 4; ++i) *((row_takes & (b.index[0][i][p] >= 0)) ? row + x_offset[i] : &sink[r][i]) += values[r][slot][i];
        }
    }
}

}  // namespace
}  // namespace HWY_NAMESPACE
}  // namespace gs3d::kernels
HWY_AFTER_NAMESPACE();

#endif  // GS3D_KERNELS_TRICUBIC_BLOCKS_INL_H_
