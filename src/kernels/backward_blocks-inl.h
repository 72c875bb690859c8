// The backward kernel's SIMD blocks: up to kBlock grid points prepared together (cells,
// weights, offsets) and run per channel (NCDHW: points in vectors) or per point (NDHWC:
// channels in vectors); chunks of blocks run channel by channel; nearest blocks.
//
// Compiled into each SIMD target: included by backward_kernel-inl.h (after
// foreach_target.h) only; Highway's per-target include guard.
#if defined(GS3D_KERNELS_BACKWARD_BLOCKS_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef GS3D_KERNELS_BACKWARD_BLOCKS_INL_H_
#undef GS3D_KERNELS_BACKWARD_BLOCKS_INL_H_
#else
#define GS3D_KERNELS_BACKWARD_BLOCKS_INL_H_
#endif

#include <hwy/cache_control.h>
#include <hwy/highway.h>

#include <algorithm>
#include <cstdint>
#include <type_traits>
#include <vector>

#include "kernels/backward_point-inl.h"
#include "kernels/channels_last_copy-inl.h"  // StreamRun
#include "kernels/simd_cells-inl.h"

HWY_BEFORE_NAMESPACE();
namespace gs3d::kernels {
namespace HWY_NAMESPACE {
namespace {  // internal to each element type's kernels_*.cpp

// Up to kBlock grid points of one batch item gathered for a block: each point's
// element offsets in the grid, in gradOutput (channel 0) and in gridGrad.
struct PointBlock {
    int count = 0;
    int64_t grid[kBlock], grad_output[kBlock], grid_grad[kBlock];
    // Whether the points are consecutive points of one row, their grid values grid_w apart
    // (SetRowSegment): PrepareBlock then loads them as a row, in vectors where the row is
    // packed (LoadGridRow), instead of one point at a time.
    bool row_segment = false;
    int64_t grid_w = 0, grad_output_w = 0, grid_grad_w = 0;

    // Adds a point by its offsets; returns whether the block is full.
    bool Append(int64_t grid_offset, int64_t grad_output_offset, int64_t grid_grad_offset) {
        row_segment = false;
        grid[count] = grid_offset;
        grad_output[count] = grad_output_offset;
        grid_grad[count] = grid_grad_offset;
        return ++count == kBlock;
    }
    // Adds point w of a row (Problem::Row).
    bool Append(const RowOffsets& row, int64_t w) {
        return Append(row.grid + w * row.grid_w, row.grad_output + w * row.grad_output_w,
                      row.grid_grad + w * row.grid_grad_w);
    }
    // The block becomes points w0 .. w0 + n - 1 of a row (1 <= n <= kBlock).
    void SetRowSegment(const RowOffsets& row, int64_t w0, int n) {
        count = 0;
        for (int i = 0; i < n; ++i) Append(row, w0 + i);
        row_segment = true;
        grid_w = row.grid_w, grad_output_w = row.grad_output_w, grid_grad_w = row.grid_grad_w;
    }
};

// A block of bilinear points after its per-point work (stage A below): cells,
// weights, inside masks, first-corner offsets and d(index)/d(grid value).
template <typename S>
struct PreparedBlock {
    using Offset = typename BlockCells<S>::Offset;
    BlockCells<S> cells;
    HWY_ALIGN S mx[kBlock], my[kBlock], mz[kBlock];
    HWY_ALIGN Offset acc_base[kBlock], in_base[kBlock];  // in_base: when the geometries differ
    int64_t grad_output[kBlock], grid_grad[kBlock];
    // Row segments (PointBlock::SetRowSegment) with gradOutput packed along W (unit_grad_output)
    // and a packed fp32 gridGrad (packed_grid_grad): RunBlock loads and stores them in vectors.
    bool unit_grad_output = false, packed_grid_grad = false;
    // The packed gridGrad's stores non-temporal (StreamRun), set by callers that run
    // hwy::FlushStream() before their region's closing barrier (the scan's tasks, GridGradOnly);
    // PrepareBlock clears it. Measured with bench/ab_interleave, two threads, 30-40 pairs
    // (B/A, the streamed build B; both orders): (1, 1, 128) backward 0.959 and 0.967, cold
    // 0.954, border 0.944, no noise 0.963; gridGrad alone (1, 1, 128) 0.964 and 0.956,
    // (1, 2, 64) 0.947.
    bool stream_grid_grad = false;
    // A scan task's slab (RestrictToSlab): whole, every corner inside is scattered and every
    // gridGrad written; else scatter[k][i] (1 or 0) says which corners, point_scatter[i]
    // whether all eight (inside and in the slab), owned[i] which gridGrad.
    bool whole = true;
    HWY_ALIGN S scatter[8][kBlock];
    HWY_ALIGN S point_scatter[kBlock];
    bool owned[kBlock];
    HWY_ALIGN S gix[kBlock], giy[kBlock], giz[kBlock];  // the grid gradient's sums over the channels run so far
};

// Walks a grid row in blocks of kBlock points: for each, the source indices along D (with
// the backward clip) of its points w0 .. w0 + count - 1, lanes up to `padded` from grid
// value 0, given to visit(w0, count, padded, iz). For the passes that need D alone: the
// sorted plan's keys and the scan plan's row ranges.
template <typename T, Padding P, typename Visit>
HWY_INLINE void ForEachRowBlockDepth(const Problem<T>& pb, int64_t n, int64_t d, int64_t h, Visit&& visit) {
    using S = ComputeType<T>;
    const int lanes = static_cast<int>(hn::Lanes(hn::ScalableTag<S>()));
    HWY_ALIGN S coord[kBlock], iz[kBlock], unused[kBlock];
    const int64_t gs = pb.args.grid.stride[3];
    for (int64_t w0 = 0; w0 < pb.out_w; w0 += kBlock) {
        const int count = static_cast<int>(std::min<int64_t>(kBlock, pb.out_w - w0));
        const int padded = (count + lanes - 1) / lanes * lanes;
        LoadGridRowDepth(pb.GridPoint(n, d, h, w0), gs, pb.args.grid.stride[4], count, padded, coord);
        BlockSourceIndices<S, P, true>(coord, padded, pb.args.input.size[2], pb.args.options.align_corners, iz, unused);
        visit(w0, count, padded, static_cast<S*>(iz));
    }
}

// A block of bilinear points, in structure-of-arrays form, vectorised across points:
// (A) PrepareBlock: source indices and their derivatives (simd_cells-inl.h: vector form for
//     zeros and border, PyTorch's scalar code for reflection), cells, weights, inside masks
//     and the first corners' offsets;
// (B) RunBlock, per channel: gradOutput, the corner values gathered, the grid gradient's
//     terms in vector form, in PyTorch's order, with corners outside masked out (so that NaN
//     and inf behave as in PyTorch, which skips them); w * g in vector form, then a scalar
//     scatter into inputGrad in the block's point order (corners x0 and x0 + 1 as pairs);
// (C) RunBlock: gridGrad = d(index)/d(grid) * the sums.
// The caller checks OffsetsFit for both geometries.
template <typename T, Padding P, bool kGridGrad, typename S = ComputeType<T>>
HWY_NOINLINE void PrepareBlock(const Problem<T>& pb, const PointBlock& points, PreparedBlock<S>& out) {
    const hn::ScalableTag<S> d;
    const int lanes = static_cast<int>(hn::Lanes(d));
    const BackwardArgs& a = pb.args;
    const int count = points.count;
    const int padded = (count + lanes - 1) / lanes * lanes;
    const bool align = a.options.align_corners;
    HWY_ALIGN S coord[3][kBlock], ix[kBlock], iy[kBlock], iz[kBlock];
    const int64_t cs = a.grid.stride[4];
    if (points.row_segment)
        LoadGridRow(pb.grid + points.grid[0], points.grid_w, cs, count, padded, coord);
    else
        LoadGridValues([&](int i) { return pb.grid + points.grid[i]; }, cs, count, padded, coord);
    std::copy(points.grad_output, points.grad_output + count, out.grad_output);
    std::copy(points.grid_grad, points.grid_grad + count, out.grid_grad);
    out.unit_grad_output = points.row_segment && points.grad_output_w == 1;
    out.packed_grid_grad =
        std::is_same_v<T, S> && points.row_segment && points.grid_grad_w == 3 && a.grid_grad.stride[4] == 1;
    BlockSourceIndices<S, P, true>(coord[0], padded, a.input.size[4], align, ix, out.mx);
    BlockSourceIndices<S, P, true>(coord[1], padded, a.input.size[3], align, iy, out.my);
    BlockSourceIndices<S, P, true>(coord[2], padded, a.input.size[2], align, iz, out.mz);
    out.cells.ComputeWithBases(ix, iy, iz, count, pb.acc_geometry, out.acc_base);
    out.whole = true;
    out.stream_grid_grad = false;
    if (kGridGrad && !pb.same_geometry) out.cells.Bases(pb.in_geometry.stride, out.in_base);
}

// How many of a block's points have their first corner one element from the point before's.
// In vectors (a scalar loop cost 2-3% of the (1, 1, 128) backward); where count - 1 is not a
// multiple of the lanes the last vector overlaps the one before, so a point may count twice,
// which the caller's threshold (a quarter of the block) tolerates.
template <typename Offset>
HWY_INLINE int CountBeside(const Offset* HWY_RESTRICT base, int count) {
    const hn::ScalableTag<Offset> d;
    const int lanes = static_cast<int>(hn::Lanes(d));
    int beside = 0;
    if (count <= lanes) {
        for (int i = 1; i < count; ++i) {
            const int64_t step = int64_t{base[i]} - base[i - 1];  // int32 offsets: no overflow
            beside += step == 1 || step == -1;
        }
        return beside;
    }
    const auto one = hn::Set(d, Offset(1)), minus_one = hn::Set(d, Offset(-1));
    for (int i = 1;; i += lanes) {
        const int at = std::min(i, count - lanes);  // pairs (at - 1 + l, at + l), l < lanes
        // Lanes wrap on overflow; a wrapped step of 1 would need offsets 2^32 apart.
        const auto step = hn::Sub(hn::LoadU(d, base + at), hn::LoadU(d, base + at - 1));
        beside += static_cast<int>(hn::CountTrue(d, hn::Or(hn::Eq(step, one), hn::Eq(step, minus_one))));
        if (at + lanes >= count) return beside;
    }
}

// Channels [c_begin, c_end) of a block: (B) for each, and (C) once the last is done. The
// grid gradient's sums live in the block between calls, channels taken in order.
// !kScatter: gridGrad alone (GridGradOnly); nothing is scattered and pb.acc may be null.
template <typename T, bool kGridGrad, bool kScatter = true, typename S = ComputeType<T>>
HWY_NOINLINE void RunBlock(const Problem<T>& pb, int64_t n, PreparedBlock<S>& block, int64_t c_begin, int64_t c_end) {
    const hn::ScalableTag<S> d;
    const int lanes = static_cast<int>(hn::Lanes(d));
    const BackwardArgs& a = pb.args;
    const BlockCells<S>& cells = block.cells;
    const int count = cells.count, padded = cells.padded;
    const auto* acc_base = block.acc_base;
    const auto* in_base = pb.same_geometry ? block.acc_base : block.in_base;
    HWY_ALIGN S g[kBlock], v[8][kBlock], wg[8][kBlock];
    // Corners x0 and x0 + 1 next to each other in the accumulator (its W stride 1): each
    // point's scatter as four read-modify-writes of pairs, whose values (wg[k], wg[k + 1])
    // lie side by side in wg_pairs. The same adds to the same elements in the same order.
    // Measured against the eight one by one (bench/ab_interleave, two threads, B/A per pair,
    // both orders): (1, 1, 128) 0.935 and 0.974, (2, 1, 64) 0.923 and 0.926, (1, 2, 96)
    // 0.952 and 0.953; one thread (1, 1, 128) 1.005 and 0.943.
    const int64_t* acc_delta = pb.acc_geometry.corner_delta;
    const hn::CappedTag<S, 2> pair;  // one lane on HWY_SCALAR: no pairs there
    bool x_pairs = kScatter && hn::MaxLanes(pair) == 2 && acc_delta[1] - acc_delta[0] == 1;
    if (x_pairs) {
        // Not where consecutive points' first corners lie side by side (smooth grids, the
        // identity): point i + 1's pair then half overlaps point i's, whose store is still in
        // flight, and the load waits for it (no store-to-load forwarding of a partial overlap).
        // The same sums either way. Measured (as above, (1, 1, 128)): no noise 0.879 and
        // 0.867 against pairs throughout, which had been 8-15% slower there than one by one;
        // noise 0.05 0.996 and 1.008.
        x_pairs = 4 * CountBeside(acc_base, count) < count;
    }
    HWY_ALIGN S wg_pairs[4][2 * kBlock];
    S* HWY_RESTRICT gix = block.gix;
    S* HWY_RESTRICT giy = block.giy;
    S* HWY_RESTRICT giz = block.giz;
    const auto zero = hn::Zero(d);
    if (c_begin == 0)
        for (int i = 0; i < padded; i += lanes) {
            hn::Store(zero, d, gix + i), hn::Store(zero, d, giy + i), hn::Store(zero, d, giz + i);
        }

    // (B). With C = 0 the input and the accumulator have no data to offset (the grid
    // gradient, zero, is still written below).
    const T* in_n = pb.channels ? pb.in + n * a.input.stride[0] : nullptr;
    S* acc_n = kScatter && pb.channels ? pb.acc + n * pb.acc_stride[0] : nullptr;
    auto channel_terms = [&](auto all_inside) HWY_ATTR {
        for (int i = 0; i < padded; i += lanes) {
            const auto vg = hn::Load(d, g + i);
            if constexpr (kScatter)
                for (int k = 0; k < 8; k += 2) {
                    const auto first = hn::Mul(hn::Load(d, cells.weight[k] + i), vg);
                    const auto second = hn::Mul(hn::Load(d, cells.weight[k + 1] + i), vg);
                    hn::Store(first, d, wg[k] + i), hn::Store(second, d, wg[k + 1] + i);
                    if (x_pairs) hn::StoreInterleaved2(first, second, d, wg_pairs[k / 2] + 2 * i);
                }
            if constexpr (kGridGrad) {
                auto gx = hn::Load(d, gix + i), gy = hn::Load(d, giy + i), gz = hn::Load(d, giz + i);
                const decltype(gx) wxs[2] = {hn::Load(d, cells.wx[0] + i), hn::Load(d, cells.wx[1] + i)},
                                   wys[2] = {hn::Load(d, cells.wy[0] + i), hn::Load(d, cells.wy[1] + i)},
                                   wzs[2] = {hn::Load(d, cells.wz[0] + i), hn::Load(d, cells.wz[1] + i)};
                for (int k = 0; k < 8; ++k) {
                    const int kx = k & 1, ky = (k >> 1) & 1, kz = k >> 2;
                    const auto vk = hn::Load(d, v[k] + i);
                    // PyTorch: gix -= tnw_val * (iy_bse - iy) * (iz_bse - iz) * gOut, and so on.
                    auto tx = hn::Mul(hn::Mul(hn::Mul(vk, wys[ky]), wzs[kz]), vg);
                    auto ty = hn::Mul(hn::Mul(hn::Mul(vk, wxs[kx]), wzs[kz]), vg);
                    auto tz = hn::Mul(hn::Mul(hn::Mul(vk, wxs[kx]), wys[ky]), vg);
                    if constexpr (!decltype(all_inside)::value) {
                        const auto mask = hn::Ne(hn::Load(d, cells.inside[k] + i), zero);
                        tx = hn::IfThenElseZero(mask, tx), ty = hn::IfThenElseZero(mask, ty),
                        tz = hn::IfThenElseZero(mask, tz);
                    }
                    gx = kx ? hn::Add(gx, tx) : hn::Sub(gx, tx);
                    gy = ky ? hn::Add(gy, ty) : hn::Sub(gy, ty);
                    gz = kz ? hn::Add(gz, tz) : hn::Sub(gz, tz);
                }
                hn::Store(gx, d, gix + i), hn::Store(gy, d, giy + i), hn::Store(gz, d, giz + i);
            }
        }
    };
    // Point i's eight corners from q, in pairs (x_pairs) or one by one.
    auto scatter_point = [&](S* HWY_RESTRICT q, int i) HWY_ATTR {
        if (x_pairs) {
            for (int k = 0; k < 8; k += 2) {
                S* HWY_RESTRICT to = q + acc_delta[k];
                hn::StoreU(hn::Add(hn::LoadU(pair, to), hn::LoadU(pair, wg_pairs[k / 2] + 2 * i)), pair, to);
            }
        } else {
            for (int k = 0; k < 8; ++k) q[acc_delta[k]] += wg[k][i];
        }
    };
    for (int64_t c = c_begin; c < c_end; ++c) {
        const T* gout_c = pb.gout + c * a.grad_output.stride[1];
        int loaded = 0;
        if (block.unit_grad_output)
            for (; loaded + lanes <= count; loaded += lanes)
                hn::Store(LoadLanes(d, gout_c + block.grad_output[0] + loaded), d, g + loaded);
        for (int i = loaded; i < count; ++i) g[i] = LoadElement(gout_c + block.grad_output[i]);
        for (int i = count; i < padded; ++i) g[i] = 0;
        if constexpr (kGridGrad) {
            const T* in_c = in_n + c * a.input.stride[1];
            cells.LoadCorners(in_c, in_base, pb.in_geometry.corner_delta, pb.in_last - (in_c - pb.in), v);
        }
        if (cells.all_inside)
            channel_terms(std::true_type{});
        else
            channel_terms(std::false_type{});
        if constexpr (!kScatter) continue;
        S* HWY_RESTRICT acc_c = acc_n + c * pb.acc_stride[1];
        if (cells.all_inside && block.whole) {
            for (int i = 0; i < count; ++i) scatter_point(acc_c + acc_base[i], i);
        } else {
            // Points with every corner inside and scattered (most, even in a block at the
            // border or in a row that meets two slabs) without the per-corner tests.
            const S(*scatter)[kBlock] = block.whole ? cells.inside : block.scatter;
            const S* every_corner = block.whole ? cells.point_inside : block.point_scatter;
            for (int i = 0; i < count; ++i) {
                if (every_corner[i] != 0) {
                    scatter_point(acc_c + acc_base[i], i);
                    continue;
                }
                for (int k = 0; k < 8; ++k)
                    if (scatter[k][i] != 0) acc_c[acc_base[i] + acc_delta[k]] += wg[k][i];
            }
        }
    }

    // (C)
    if (kGridGrad && c_end == pb.channels) {
        const int64_t ggs = a.grid_grad.stride[4];
        int i = 0;
        if constexpr (std::is_same_v<T, S>) {
            if (block.packed_grid_grad && block.whole) {
                T* gg = pb.ggrid + block.grid_grad[0];
                // Interleaved in an aligned block-sized buffer, then streamed where the caller
                // fences (stream_grid_grad) and gridGrad lies on vector boundaries: no read for
                // ownership of lines that nothing reads back, and the corners' lines stay in the
                // caches. At (1, 1, 128) gridGrad is 25 MiB, three times inputGrad.
                HWY_ALIGN S staged[3 * kBlock];
                T* to = block.stream_grid_grad ? staged : gg;
                for (; i + lanes <= count; i += lanes)
                    hn::StoreInterleaved3(hn::Mul(hn::Load(d, block.mx + i), hn::Load(d, gix + i)),
                                          hn::Mul(hn::Load(d, block.my + i), hn::Load(d, giy + i)),
                                          hn::Mul(hn::Load(d, block.mz + i), hn::Load(d, giz + i)), d, to + 3 * i);
                if (block.stream_grid_grad) {
                    const int64_t streamed = StreamRun(staged, gg, 3 * i);
                    std::copy(staged + streamed, staged + 3 * i, gg + streamed);
                }
            }
        }
        for (; i < count; ++i) {
            if (!block.whole && !block.owned[i]) continue;  // another slab's task writes it
            T* gg = pb.ggrid + block.grid_grad[i];
            StoreElement<T>(block.mx[i] * gix[i], gg);
            StoreElement<T>(block.my[i] * giy[i], gg + ggs);
            StoreElement<T>(block.mz[i] * giz[i], gg + 2 * ggs);
        }
    }
}

// What ChannelsLastPoint needs of a point: its gradOutput (channel c at gout[c * gout_stride];
// gout_index: lane l's offset l * gout_stride, for gathers), corners (accumulator and input;
// null where outside), which are inside and scattered, and the weights.
template <typename T, typename S>
struct ChannelsLastCorners {
    const T* gout;
    int64_t gout_stride;
    const hwy::MakeSigned<S>* gout_index;
    S* acc[8];
    const T* in[8];
    bool inside[8], scatter[8];
    S weight[8], wx[2], wy[2], wz[2];
};

// Channels [c, c + lanes) of a point's gradOutput: a load (channels next to each other,
// stride 1) or a gather (gradOutput laid out with channels apart, as NCDHW; fp16 and bf16,
// which have no 16-bit gathers, element by element). A run-time choice, not a template
// parameter: twice the instantiations of the channels-last runner made the sanitizer
// builds' compile of the backward too slow for CI.
template <class DV, typename T>
HWY_INLINE hn::Vec<DV> LoadGradOutput(DV dv, const T* gout, int64_t c, int64_t stride,
                                      const hwy::MakeSigned<hn::TFromD<DV>>* index) {
    using S = hn::TFromD<DV>;
    if (stride == 1) {
        return LoadLanes(dv, gout + c);
    } else if constexpr (std::is_same_v<T, S>) {
        return hn::GatherIndex(dv, gout + c * stride, hn::LoadU(hn::RebindToSigned<DV>(), index));
    } else {
        HWY_ALIGN S lanes[hn::MaxLanes(DV())];
        for (size_t l = 0; l < hn::Lanes(dv); ++l) lanes[l] = LoadElement(gout + (c + static_cast<int64_t>(l)) * stride);
        return hn::Load(dv, lanes);
    }
}

// One point of a channels-last block: its eight corners' scatter (where scatter[k]) and the
// grid gradient (kGridGrad) into *gix, *giy, *giz. The channels run in vectors of D, then the
// rest in at most one vector of 8 and one of 4 lanes (narrower than D), then one by one; each
// vector width's channels are summed in lanes and reduced once (an order fixed by the SIMD
// target and the channel count).
// kAllCorners: every corner is inside and scattered (the common case). The vectors' grid
// gradient then regroups PyTorch's terms (sum over corners of +-v * wy * wz * g, and so on)
// as g times differences of the corners along each axis weighted by the other two axes'
// weights: per channel vector 12 differences and 21 multiplies or fused multiply-adds
// instead of 36 multiplies and 24 adds, and six broadcasts per point.
template <bool kAllCorners, bool kGridGrad, class D, typename T, typename S>
HWY_INLINE void ChannelsLastPoint(D d, int64_t channels, const ChannelsLastCorners<T, S>& p, S* gix, S* giy, S* giz) {
    S sx = 0, sy = 0, sz = 0;
    int64_t c = 0;
    // Forced inline: GCC's choice for this lambda changed with unrelated edits to the headers,
    // and called out of line it made the (1, 32, 48) backward 15-20% slower.
    auto vectors = [&](auto dv, int64_t end) HWY_ATTR __attribute__((always_inline)) {
        const int64_t lanes = static_cast<int64_t>(hn::Lanes(dv));
        auto gx = hn::Zero(dv), gy = hn::Zero(dv), gz = hn::Zero(dv);
        for (; c < end; c += lanes) {
            const auto g = LoadGradOutput(dv, p.gout, c, p.gout_stride, p.gout_index);
            if constexpr (kAllCorners) {
                // Every corner: the sums as differences across each axis weighted by the
                // other two (v1 - v0 along x, then wy, then wz; and so on), six broadcasts.
                hn::Vec<decltype(dv)> v[8];
#pragma GCC unroll 8
                for (int k = 0; k < 8; ++k) {
                    hn::StoreU(hn::Add(hn::LoadU(dv, p.acc[k] + c), hn::Mul(hn::Set(dv, p.weight[k]), g)), dv,
                               p.acc[k] + c);
                    if constexpr (kGridGrad) v[k] = LoadLanes(dv, p.in[k] + c);
                }
                if constexpr (kGridGrad) {
                    const auto wx0 = hn::Set(dv, p.wx[0]), wx1 = hn::Set(dv, p.wx[1]), wy0 = hn::Set(dv, p.wy[0]),
                               wy1 = hn::Set(dv, p.wy[1]), wz0 = hn::Set(dv, p.wz[0]), wz1 = hn::Set(dv, p.wz[1]);
                    // Two pairs of differences, each pair weighted by a and b, then by c0 and c1.
                    auto bilinear = [&](auto d00, auto d10, auto d01, auto d11, auto a, auto b, auto c0, auto c1)
                                        HWY_ATTR {
                                            const auto low = hn::MulAdd(b, d10, hn::Mul(a, d00));
                                            const auto high = hn::MulAdd(b, d11, hn::Mul(a, d01));
                                            return hn::MulAdd(c1, high, hn::Mul(c0, low));
                                        };
                    const auto tx = bilinear(hn::Sub(v[1], v[0]), hn::Sub(v[3], v[2]), hn::Sub(v[5], v[4]),
                                             hn::Sub(v[7], v[6]), wy0, wy1, wz0, wz1);
                    const auto ty = bilinear(hn::Sub(v[2], v[0]), hn::Sub(v[3], v[1]), hn::Sub(v[6], v[4]),
                                             hn::Sub(v[7], v[5]), wx0, wx1, wz0, wz1);
                    const auto tz = bilinear(hn::Sub(v[4], v[0]), hn::Sub(v[5], v[1]), hn::Sub(v[6], v[2]),
                                             hn::Sub(v[7], v[3]), wx0, wx1, wy0, wy1);
                    gx = hn::MulAdd(g, tx, gx);
                    gy = hn::MulAdd(g, ty, gy);
                    gz = hn::MulAdd(g, tz, gz);
                }
                continue;
            }
            // Some corner outside or not scattered (points at the volume's border, a scan
            // task's slab): PyTorch's terms corner by corner, those outside skipped.
            for (int k = 0; k < 8; ++k) {
                if (!p.inside[k]) continue;
                if (p.scatter[k])
                    hn::StoreU(hn::Add(hn::LoadU(dv, p.acc[k] + c), hn::Mul(hn::Set(dv, p.weight[k]), g)), dv,
                               p.acc[k] + c);
                if constexpr (kGridGrad) {
                    const int kx = k & 1, ky = (k >> 1) & 1, kz = k >> 2;
                    const auto v = LoadLanes(dv, p.in[k] + c);
                    const auto tx = hn::Mul(hn::Mul(hn::Mul(v, hn::Set(dv, p.wy[ky])), hn::Set(dv, p.wz[kz])), g);
                    const auto ty = hn::Mul(hn::Mul(hn::Mul(v, hn::Set(dv, p.wx[kx])), hn::Set(dv, p.wz[kz])), g);
                    const auto tz = hn::Mul(hn::Mul(hn::Mul(v, hn::Set(dv, p.wx[kx])), hn::Set(dv, p.wy[ky])), g);
                    gx = kx ? hn::Add(gx, tx) : hn::Sub(gx, tx);
                    gy = ky ? hn::Add(gy, ty) : hn::Sub(gy, ty);
                    gz = kz ? hn::Add(gz, tz) : hn::Sub(gz, tz);
                }
            }
        }
        if constexpr (kGridGrad) {
            sx += hn::GetLane(hn::SumOfLanes(dv, gx));
            sy += hn::GetLane(hn::SumOfLanes(dv, gy));
            sz += hn::GetLane(hn::SumOfLanes(dv, gz));
        }
    };
    const int64_t lanes = static_cast<int64_t>(hn::Lanes(d));
    vectors(d, channels / lanes * lanes);
    if constexpr (hn::MaxLanes(D()) > 8)
        if (channels - c >= 8) vectors(hn::CappedTag<S, 8>(), c + 8);
    if constexpr (hn::MaxLanes(D()) > 4)
        if (channels - c >= 4) vectors(hn::CappedTag<S, 4>(), c + 4);
    // The last channels one by one in PyTorch's terms and order: with fewer channels than
    // vector lanes the result is bitwise that of NCDHW.
    for (; c < channels; ++c) {
        const S g = LoadElement(p.gout + c * p.gout_stride);
        for (int k = 0; k < 8; ++k) {
            if (!kAllCorners && !p.inside[k]) continue;
            if (kAllCorners || p.scatter[k]) p.acc[k][c] += p.weight[k] * g;
            if constexpr (kGridGrad) {
                const int kx = k & 1, ky = (k >> 1) & 1, kz = k >> 2;
                const S v = LoadElement(p.in[k] + c);
                const S tx = v * p.wy[ky] * p.wz[kz] * g, ty = v * p.wx[kx] * p.wz[kz] * g,
                        tz = v * p.wx[kx] * p.wy[ky] * g;
                sx = kx ? sx + tx : sx - tx;
                sy = ky ? sy + ty : sy - ty;
                sz = kz ? sz + tz : sz - tz;
            }
        }
    }
    *gix = sx, *giy = sy, *giz = sz;
}

#if HWY_TARGET != HWY_SCALAR
// Point i of a whole channels-last block (every corner scattered) whose channel count is half
// of D's lanes and whose x stride is the channel count (input and accumulator), with every
// corner inside: the corners x0 and x1 of each (y, z) lie side by side, so one vector holds
// the pair (lanes [0, C) x0's channels, [C, 2C) x1's), and a point takes four vectors
// instead of eight half-empty ones. acc and in: the point's first corner. The scatter
// computes each element as ChannelsLastPoint does (acc + w * g). The grid gradient keeps
// gradOutput out of the corner sums: per channel c, d/dx = g_c * sum over corners of
// +-v * wy * wz (and so on), the sums with fused multiply-adds, g applied once, then the
// channels summed (an order fixed by the SIMD target and the channel count).
template <bool kGridGrad, class D, typename T, typename S>
HWY_INLINE void ChannelsLastPairPoint(D d, const T* HWY_RESTRICT gout, int64_t gout_stride,
                                      const hwy::MakeSigned<S>* gout_index, S* HWY_RESTRICT acc,
                                      const T* HWY_RESTRICT in, const int64_t* acc_delta, const int64_t* in_delta,
                                      const BlockCells<S>& cells, int i, S* gix, S* giy, S* giz) {
    const hn::Half<D> dh;
    const auto gh = LoadGradOutput(dh, gout, 0, gout_stride, gout_index);
    const auto g = hn::Combine(d, gh, gh);
    const S wy[2] = {cells.wy[0][i], cells.wy[1][i]}, wz[2] = {cells.wz[0][i], cells.wz[1][i]};
    const auto wx = hn::Combine(d, hn::Set(dh, cells.wx[1][i]), hn::Set(dh, cells.wx[0][i]));
    // Per lane (x0 or x1): wx * wz for each kz, wx * wy for each ky.
    const decltype(wx) wxz[2] = {hn::Mul(wx, hn::Set(d, wz[0])), hn::Mul(wx, hn::Set(d, wz[1]))},
                       wxy[2] = {hn::Mul(wx, hn::Set(d, wy[0])), hn::Mul(wx, hn::Set(d, wy[1]))};
    auto sx = hn::Zero(d), sy = hn::Zero(d), sz = hn::Zero(d);
#pragma GCC unroll 4
    for (int k = 0; k < 8; k += 2) {
        const int ky = (k >> 1) & 1, kz = k >> 2;
        const auto w = hn::Combine(d, hn::Set(dh, cells.weight[k + 1][i]), hn::Set(dh, cells.weight[k][i]));
        S* HWY_RESTRICT a = acc + acc_delta[k];
        hn::StoreU(hn::Add(hn::LoadU(d, a), hn::Mul(w, g)), d, a);
        if constexpr (kGridGrad) {
            const auto v = LoadLanes(d, in + in_delta[k]);
            sx = hn::MulAdd(v, hn::Set(d, wy[ky] * wz[kz]), sx);
            sy = ky ? hn::MulAdd(v, wxz[kz], sy) : hn::NegMulAdd(v, wxz[kz], sy);
            sz = kz ? hn::MulAdd(v, wxy[ky], sz) : hn::NegMulAdd(v, wxy[ky], sz);
        }
    }
    if constexpr (kGridGrad) {
        // x1's lanes count +, x0's -; y and z: both halves as summed.
        const auto gx = hn::Mul(gh, hn::Sub(hn::UpperHalf(dh, sx), hn::LowerHalf(dh, sx)));
        const auto gy = hn::Mul(gh, hn::Add(hn::LowerHalf(dh, sy), hn::UpperHalf(dh, sy)));
        const auto gz = hn::Mul(gh, hn::Add(hn::LowerHalf(dh, sz), hn::UpperHalf(dh, sz)));
        *gix = hn::GetLane(hn::SumOfLanes(dh, gx));
        *giy = hn::GetLane(hn::SumOfLanes(dh, gy));
        *giz = hn::GetLane(hn::SumOfLanes(dh, gz));
    }
}
#else
// The scalar target (one lane, no Combine) has no pairs: RunPreparedBlock never asks for them.
template <bool kGridGrad, class D, typename T, typename S>
void ChannelsLastPairPoint(D d, const T* gout, int64_t gout_stride, const hwy::MakeSigned<S>* gout_index, S* acc,
                           const T* in, const int64_t* acc_delta, const int64_t* in_delta, const BlockCells<S>& cells,
                           int i, S* gix, S* giy, S* giz) = delete;
#endif

// Asks for the lines of a channels-last point's eight corners (first corner at `first`,
// corner k at first + delta[k], C elements each) to be brought into the caches: per (y, z)
// the run from corner x0's first channel to corner x1's last, a line at a time.
template <typename V>
HWY_INLINE void PrefetchCornerRows(const V* first, const int64_t* delta, int64_t channels) {
    constexpr int64_t kLine = 64 / sizeof(V);
    for (int k = 0; k < 8; k += 2) {
        const V* begin = first + delta[k];
        const int64_t span = delta[k + 1] - delta[k] + channels;  // elements, from begin
        for (int64_t o = 0; o < span; o += kLine) hwy::Prefetch(begin + o);
        hwy::Prefetch(begin + (span - 1));
    }
}

// RunBlockChannelsLast prefetches the corners of the point kChannelsLastPrefetchAhead points
// ahead, with up to kChannelsLastPrefetchMaxChannels channels. Measured, two threads, each
// call right after PyTorch's on the same data (the benchmark's state; median of 9, four runs
// alternating the builds): (2, 8, 64) 21.6-22.8 -> 19.2-19.9 ms, NDHWC 19.9-20.0 -> 18.8-19.1,
// (1, 4, 96) and (1, 32, 48) within the noise. Data hot, one thread: C = 4 (S = 96)
// 50.5-51.1 -> 48.4-48.7, two threads C = 8 (2, 8, 64) 20.1-20.4 -> 18.1-18.4; C = 16
// (S = 48) within the noise, C = 32 28.3-28.7 -> 29.5-30.7 (five lines a corner row).
constexpr int kChannelsLastPrefetchAhead = 4;
constexpr int64_t kChannelsLastPrefetchMaxChannels = 8;
// And gradOutput's channels of the point kGradOutputPrefetchAhead points ahead, where they lie
// side by side (NDHWC): the sorted plan takes a row's points slab by slab, so each slab's
// task reads a few of the row's points, lines the hardware prefetchers do not foresee (perf:
// a fifth of the runner's samples on that load). One thread, (2, 8, 64) NDHWC, best of 7,
// three runs: 34.6-36.1 ms without, 31.7-32.1 with 4 points ahead, 31.9-32.4 with 8,
// 32.2-32.8 with 16. With the channels apart (one line per channel) it measured no better.
constexpr int kGradOutputPrefetchAhead = 8;

// A prepared block with channels last (input, gradOutput and the accumulator have channel
// stride 1): per point, the channels in vectors of D (lanes <= C), the rest in narrower ones
// and one by one (ChannelsLastPoint); kPairs (C is half of D's lanes and the x stride): the
// points with every corner inside in pairs of corners (ChannelsLastPairPoint).
template <class D, typename T, bool kGridGrad, bool kPairs = false, typename S = ComputeType<T>>
HWY_NOINLINE void RunBlockChannelsLast(D d, const Problem<T>& pb, int64_t n, const PreparedBlock<S>& block) {
    const BackwardArgs& a = pb.args;
    const BlockCells<S>& cells = block.cells;
    const int64_t channels = pb.channels;
    // With C = 0 the input and the accumulator have no data to offset (gridGrad, zero, is
    // still written).
    // gridGrad alone (GridGradOnly): no accumulator, and blocks that scatter no corner.
    const T* in_n = channels ? pb.in + n * a.input.stride[0] : nullptr;
    S* acc_n = channels && pb.acc ? pb.acc + n * pb.acc_stride[0] : nullptr;
    const auto* in_base = pb.same_geometry ? block.acc_base : block.in_base;
    const int64_t* acc_delta = pb.acc_geometry.corner_delta;
    const int64_t* in_delta = pb.in_geometry.corner_delta;
    const int64_t ggs = a.grid_grad.stride[4];
    // The corner deltas as locals: the stores through acc and gridGrad cannot alias them, so
    // they stay in registers (through the Problem, every store would reload them).
    int64_t local_acc_delta[8], local_in_delta[8];
    std::copy(acc_delta, acc_delta + 8, local_acc_delta);
    std::copy(in_delta, in_delta + 8, local_in_delta);
    const int64_t gout_stride = a.grad_output.stride[1];
    HWY_ALIGN hwy::MakeSigned<S> gout_index[hn::MaxLanes(D())];
    for (size_t l = 0; l < hn::MaxLanes(D()); ++l) gout_index[l] = static_cast<hwy::MakeSigned<S>>(l * gout_stride);
    auto write_grid_grad = [&](int i, S gix, S giy, S giz) {
        T* gg = pb.ggrid + block.grid_grad[i];
        gg[0] = FromCompute<T>(block.mx[i] * gix);
        gg[ggs] = FromCompute<T>(block.my[i] * giy);
        gg[2 * ggs] = FromCompute<T>(block.mz[i] * giz);
    };
    const bool prefetch = channels > 0 && channels <= kChannelsLastPrefetchMaxChannels;
    const bool prefetch_gout = channels > 0 && gout_stride == 1;
    for (int i = 0; i < cells.count; ++i) {
        const int ahead = i + kChannelsLastPrefetchAhead;
        if (prefetch && ahead < cells.count && (cells.all_inside || cells.point_inside[ahead] != 0)) {
            if (acc_n) PrefetchCornerRows(acc_n + block.acc_base[ahead], local_acc_delta, channels);
            if (kGridGrad) PrefetchCornerRows(in_n + in_base[ahead], local_in_delta, channels);
        }
        if (prefetch_gout && i + kGradOutputPrefetchAhead < cells.count) {
            const T* g = pb.gout + block.grad_output[i + kGradOutputPrefetchAhead];
            hwy::Prefetch(g);
            hwy::Prefetch(g + (channels - 1));
        }
        // Pairs only in whole blocks (the sorted plan's, where every corner inside is
        // scattered), so that a point's gridGrad order depends on its corners being inside,
        // never on which slab's task scatters them.
        if constexpr (kPairs) {
            if (block.whole && (cells.all_inside || cells.point_inside[i] != 0)) {
                S gix, giy, giz;
                ChannelsLastPairPoint<kGridGrad>(
                    d, pb.gout + block.grad_output[i], gout_stride, gout_index, acc_n + block.acc_base[i],
                    kGridGrad ? in_n + in_base[i] : nullptr, local_acc_delta, local_in_delta, cells, i, &gix, &giy, &giz);
                if constexpr (kGridGrad) write_grid_grad(i, gix, giy, giz);
                continue;
            }
        }
        ChannelsLastCorners<T, S> p;
        p.gout = pb.gout + block.grad_output[i];
        p.gout_stride = gout_stride;
        p.gout_index = gout_index;
        p.wx[0] = cells.wx[0][i], p.wx[1] = cells.wx[1][i];
        p.wy[0] = cells.wy[0][i], p.wy[1] = cells.wy[1][i];
        p.wz[0] = cells.wz[0][i], p.wz[1] = cells.wz[1][i];
        S gix, giy, giz;
        if (block.whole && channels > 0 && (cells.all_inside || cells.point_inside[i] != 0)) {
            // Every corner inside and scattered (the common case): no per-corner tests.
            for (int k = 0; k < 8; ++k) {
                p.weight[k] = cells.weight[k][i];
                p.acc[k] = acc_n + (static_cast<int64_t>(block.acc_base[i]) + local_acc_delta[k]);
                p.in[k] = kGridGrad ? in_n + (static_cast<int64_t>(in_base[i]) + local_in_delta[k]) : nullptr;
            }
            ChannelsLastPoint<true, kGridGrad>(d, channels, p, &gix, &giy, &giz);
            if constexpr (kGridGrad) write_grid_grad(i, gix, giy, giz);
            continue;
        }
        // This task writes the point's gridGrad (a scan task: only for its own points), and
        // which corners it scatters (a scan task: those in its slab).
        const bool grid_grad = kGridGrad && (block.whole || block.owned[i]);
        bool all_inside = channels > 0, all_scatter = true;
        for (int k = 0; k < 8; ++k) {
            p.inside[k] = cells.all_inside || cells.inside[k][i] != 0;
            p.scatter[k] = block.whole ? p.inside[k] : block.scatter[k][i] != 0;
            all_inside = all_inside && p.inside[k];
            all_scatter = all_scatter && p.scatter[k];
            p.weight[k] = cells.weight[k][i];
            // Pointers only to corners inside, from the summed offset (a first corner at -1
            // along an axis is not an address in the volume); in_base is set only for gridGrad.
            const bool valid = p.inside[k] && channels;
            p.acc[k] = valid && p.scatter[k] ? acc_n + (static_cast<int64_t>(block.acc_base[i]) + acc_delta[k]) : nullptr;
            p.in[k] = kGridGrad && valid ? in_n + (static_cast<int64_t>(in_base[i]) + in_delta[k]) : nullptr;
        }
        const bool all_corners = all_inside && all_scatter;
        auto run = [&](auto all_tag, auto grid_grad_tag) HWY_ATTR {
            ChannelsLastPoint<decltype(all_tag)::value, decltype(grid_grad_tag)::value>(d, channels, p, &gix,
                                                                                                  &giy, &giz);
        };
        if (all_corners && grid_grad)
            run(std::true_type{}, std::true_type{});
        else if (all_corners && !kGridGrad)
            run(std::true_type{}, std::false_type{});
        else if (grid_grad)
            run(std::false_type{}, std::true_type{});
        else
            run(std::false_type{}, std::false_type{});
        if (grid_grad) {
            write_grid_grad(i, gix, giy, giz);
        }
    }
}

// A prepared block with channels last: the widest vector that the channel count fills, or
// pairs of corners (gradOutput's channels loaded, or gathered where they are apart).
template <typename T, bool kGridGrad, typename S = ComputeType<T>>
HWY_INLINE void RunChannelsLastBlock(const Problem<T>& pb, int64_t n, PreparedBlock<S>& block) {
    const hn::ScalableTag<S> full;
    const hn::CappedTag<S, 8> eight;
    const hn::CappedTag<S, 4> four;
    // Corner pairs in one vector where the x neighbours' channels lie side by side and fill
    // it (C = 8 with AVX-512, 4 with AVX2 or AVX-512, 2 with 128-bit vectors).
    if constexpr (hn::MaxLanes(decltype(full)()) >= 4) {
        const int64_t c = pb.channels;
        const bool side_by_side =
            pb.acc_geometry.corner_delta[1] == c && (!kGridGrad || pb.in_geometry.corner_delta[1] == c);
        if (side_by_side && 2 * c == static_cast<int64_t>(hn::Lanes(full)))
            return RunBlockChannelsLast<decltype(full), T, kGridGrad, true>(full, pb, n, block);
        if (side_by_side && 2 * c == static_cast<int64_t>(hn::Lanes(eight)) && hn::Lanes(full) > 8)
            return RunBlockChannelsLast<decltype(eight), T, kGridGrad, true>(eight, pb, n, block);
    }
    if (pb.channels >= static_cast<int64_t>(hn::Lanes(full)))
        RunBlockChannelsLast<decltype(full), T, kGridGrad>(full, pb, n, block);
    else if (pb.channels >= static_cast<int64_t>(hn::Lanes(eight)))
        RunBlockChannelsLast<decltype(eight), T, kGridGrad>(eight, pb, n, block);
    else
        RunBlockChannelsLast<decltype(four), T, kGridGrad>(four, pb, n, block);
}

// Runs a prepared block: channels in vectors (kUnitChannels: input and accumulator with
// channels last; RunChannelsLastBlock), or points in vectors (RunBlock).
template <typename T, bool kGridGrad, bool kUnitChannels, typename S = ComputeType<T>>
HWY_INLINE void RunPreparedBlock(const Problem<T>& pb, int64_t n, PreparedBlock<S>& block) {
    if constexpr (kUnitChannels) {
        RunChannelsLastBlock<T, kGridGrad>(pb, n, block);
    } else {
        RunBlock<T, kGridGrad>(pb, n, block, 0, pb.channels);
    }
}

// A task's prepared blocks (one batch item), run a chunk at a time. With channels apart
// (NCDHW) and more than one, channel by channel over the chunk: a channel's gathers and
// scatters for all the chunk's points before the next channel's, so that its lines are
// reused from L1 across the blocks instead of every channel's passing through per block.
// Each element's sum keeps its order (the chunk's points in order, per channel), and each
// point's grid gradient its channel order.
template <typename T, bool kGridGrad, bool kUnitChannels, typename S = ComputeType<T>>
class BlockChunk {
  public:
    static constexpr int kBlocks = 8;
    BlockChunk(const Problem<T>& pb, int64_t n) : pb_(pb), n_(n), blocks_(kUnitChannels || pb.channels <= 1 ? 1 : kBlocks) {}
    PreparedBlock<S>& Next() { return blocks_[used_]; }
    // Takes the block filled through Next(); runs the chunk when full. The caller runs the
    // rest at the end.
    void Add() {
        if (++used_ == static_cast<int>(blocks_.size())) Run();
    }
    void Run() {
        if (used_ == 1 || kUnitChannels) {
            for (int b = 0; b < used_; ++b) RunPreparedBlock<T, kGridGrad, kUnitChannels>(pb_, n_, blocks_[b]);
        } else if (used_ > 1) {
            for (int64_t c = 0; c < pb_.channels; ++c)
                for (int b = 0; b < used_; ++b) RunBlock<T, kGridGrad>(pb_, n_, blocks_[b], c, c + 1);
        }
        used_ = 0;
    }

  private:
    const Problem<T>& pb_;
    int64_t n_;
    std::vector<PreparedBlock<S>> blocks_;
    int used_ = 0;
};

// The nearest voxels of a block's points (grid values in coord, `count` real of `padded`),
// with the backward clip, as PyTorch's backward; voxels outside planes [z_begin, z_end)
// count as outside.
template <typename T, Padding P, typename S = ComputeType<T>>
HWY_INLINE void NearestVoxels(const Problem<T>& pb, S (*HWY_RESTRICT coord)[kBlock], int count, int padded,
                              int64_t z_begin, int64_t z_end, BlockVoxels<S>& voxels) {
    const BackwardArgs& a = pb.args;
    HWY_ALIGN S index[3][kBlock], unused[kBlock];
    const int64_t sizes[3] = {a.input.size[4], a.input.size[3], a.input.size[2]};  // x, y, z
    for (int axis = 0; axis < 3; ++axis)
        BlockSourceIndices<S, P, true>(coord[axis], padded, sizes[axis], a.options.align_corners, index[axis], unused);
    const S* const indices[3] = {index[0], index[1], index[2]};
    voxels.Compute(indices, padded, count, pb.acc_geometry, z_begin, z_end);
}

// A block of nearest points: source indices with SIMD (with the backward clip, as PyTorch's
// backward), each point's voxel, then per channel a scalar scatter of gradOutput into the
// voxels, in the block's point order. (gridGrad, 0, is written by SlabBackward in grid order.)
template <typename T, Padding P, typename S = ComputeType<T>>
HWY_NOINLINE void NearestBlock(const Problem<T>& pb, int64_t n, const PointBlock& points) {
    const hn::ScalableTag<S> d;
    const int lanes = static_cast<int>(hn::Lanes(d));
    const BackwardArgs& a = pb.args;
    const int count = points.count;
    const int padded = (count + lanes - 1) / lanes * lanes;
    HWY_ALIGN S coord[3][kBlock];
    LoadGridValues([&](int i) { return pb.grid + points.grid[i]; }, a.grid.stride[4], count, padded, coord);
    BlockVoxels<S> voxels;
    NearestVoxels<T, P>(pb, coord, count, padded, 0, a.input.size[2], voxels);
    // With C = 0 the accumulator has no data to offset.
    S* acc_n = pb.channels ? pb.acc + n * pb.acc_stride[0] : nullptr;
    for (int64_t c = 0; c < pb.channels; ++c) {
        const T* gout_c = pb.gout + c * a.grad_output.stride[1];
        S* HWY_RESTRICT acc_c = acc_n + c * pb.acc_stride[1];
        for (int i = 0; i < count; ++i)
            if (voxels.inside[i] != 0) acc_c[voxels.offset[i]] += LoadElement(gout_c + points.grad_output[i]);
    }
}

}  // namespace
}  // namespace HWY_NAMESPACE
}  // namespace gs3d::kernels
HWY_AFTER_NAMESPACE();

#endif  // GS3D_KERNELS_BACKWARD_BLOCKS_INL_H_
