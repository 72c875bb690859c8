// The backward kernel's SIMD blocks: up to kBlock grid points prepared together (cells,
// weights, offsets) and run per channel with the points in vectors (RunBlock); nearest
// blocks. The channels-last runs of the same blocks are in channels_last/backward-inl.h.
//
// Compiled into each SIMD target: included after foreach_target.h; Highway's per-target
// include guard.
#if defined(GS3D_KERNELS_BLOCKS_BACKWARD_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef GS3D_KERNELS_BLOCKS_BACKWARD_INL_H_
#undef GS3D_KERNELS_BLOCKS_BACKWARD_INL_H_
#else
#define GS3D_KERNELS_BLOCKS_BACKWARD_INL_H_
#endif

#include <hwy/cache_control.h>
#include <hwy/highway.h>

#include <algorithm>
#include <cstdint>
#include <type_traits>
#include <vector>

#include "kernels/backward/point-inl.h"
#include "kernels/channels_last/copy-inl.h"  // StreamRun
#include "kernels/blocks/cells-inl.h"

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

    // Each point's parity: its place in its row where known (Append(row, w)), else in the
    // block. The scatters visit even points, then odd ones (RunBlock, row_phases/backward-inl.h).
    uint8_t odd[kBlock];

    // Adds a point by its offsets; returns whether the block is full.
    bool Append(int64_t grid_offset, int64_t grad_output_offset, int64_t grid_grad_offset) {
        return Append(grid_offset, grad_output_offset, grid_grad_offset, count & 1);
    }
    // Adds point w of a row (Problem::Row).
    bool Append(const RowOffsets& row, int64_t w) {
        return Append(row.grid + w * row.grid_w, row.grad_output + w * row.grad_output_w,
                      row.grid_grad + w * row.grid_grad_w, w & 1);
    }
    bool Append(int64_t grid_offset, int64_t grad_output_offset, int64_t grid_grad_offset, int64_t parity) {
        row_segment = false;
        grid[count] = grid_offset;
        grad_output[count] = grad_output_offset;
        grid_grad[count] = grid_grad_offset;
        odd[count] = static_cast<uint8_t>(parity);
        return ++count == kBlock;
    }
    // The block becomes points w0 .. w0 + n - 1 of a row (1 <= n <= kBlock); every point's
    // offsets and parity, or (each_point false, for the row phases, which address a row
    // segment from its first point) only the first point's.
    void SetRowSegment(const RowOffsets& row, int64_t w0, int n, bool each_point = true) {
        count = 0;
        for (int i = 0; i < (each_point ? n : 1); ++i) Append(row, w0 + i);
        count = n;
        row_segment = true;
        grid_w = row.grid_w, grad_output_w = row.grad_output_w, grid_grad_w = row.grid_grad_w;
    }
};

// 0, 2, 4, ..., then 1, 3, 5, ...: the scatter's order over a full block.
struct EvenThenOdd {
    uint8_t order[kBlock];
    constexpr EvenThenOdd() : order() {
        for (int i = 0; i < kBlock; ++i) order[i] = static_cast<uint8_t>(i < kBlock / 2 ? 2 * i : 2 * (i - kBlock / 2) + 1);
    }
};

// The order in which a block's points scatter (RunBlock, row_phases/backward-inl.h): its even
// points, then its odd ones, each in block order, so that consecutive read-modify-writes of a
// smooth grid's neighbours never half overlap the pair just stored (no store-to-load
// forwarding there). A point's parity is PointBlock::odd, or in a row segment (which starts
// on an even point) its own index's. A full row segment's order is a table; others are
// written into `own` (kBlock + 1 entries: the branch-free compaction writes one past).
HWY_INLINE const uint8_t* ScatterOrder(const PointBlock& points, uint8_t* own) {
    static constexpr EvenThenOdd kFullSegment{};
    if (points.row_segment && points.count == kBlock) return kFullSegment.order;
    int placed = 0;  // each point written, kept where it belongs
    for (int parity = 0; parity < 2; ++parity)
        for (int i = 0; i < points.count; ++i) {
            own[placed] = static_cast<uint8_t>(i);
            placed += (points.row_segment ? i & 1 : points.odd[i]) == parity;
        }
    return own;
}

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
    // PrepareBlock clears it. Nothing reads gridGrad back, so its stores need not read the
    // lines first (3-5% on the one-channel backward).
    bool stream_grid_grad = false;
    // A scan task's slab (RestrictToSlab): whole, every corner inside is scattered and every
    // gridGrad written; else scatter[k][i] (1 or 0) says which corners, point_scatter[i]
    // whether all eight (inside and in the slab), owned[i] which gridGrad.
    bool whole = true;
    HWY_ALIGN S scatter[8][kBlock];
    HWY_ALIGN S point_scatter[kBlock];
    bool owned[kBlock];
    HWY_ALIGN S gix[kBlock], giy[kBlock], giz[kBlock];  // the grid gradient's sums over the channels run so far
    uint8_t order[kBlock + 1];  // the scatter's order (ScatterOrder)
};

// Walks a grid row in blocks of kBlock points: for each, the source indices along D (with
// the backward clip) of its points w0 .. w0 + count - 1, lanes up to `padded` from grid
// value 0, given to visit(w0, count, padded, iz). For the passes that need D alone: the
// sorted plan's keys and the scan plan's row ranges.
template <typename T, typename Visit>
HWY_INLINE void ForEachRowBlockDepth(const Problem<T>& pb, int64_t n, int64_t d, int64_t h, Visit&& visit) {
    using S = ComputeType<T>;
    const int lanes = static_cast<int>(hn::Lanes(hn::ScalableTag<S>()));
    HWY_ALIGN S coord[kBlock], iz[kBlock], unused[kBlock];
    const int64_t gs = pb.args.grid.stride[3];
    for (int64_t w0 = 0; w0 < pb.out_w; w0 += kBlock) {
        const int count = static_cast<int>(std::min<int64_t>(kBlock, pb.out_w - w0));
        const int padded = (count + lanes - 1) / lanes * lanes;
        LoadGridRowDepth(pb.GridPoint(n, d, h, w0), gs, pb.args.grid.stride[4], count, padded, coord);
        BlockSourceIndices<S, true>(coord, padded, pb.args.input.size[2], pb.args.options, iz, unused);
        visit(w0, count, padded, static_cast<S*>(iz));
    }
}

// A block of bilinear points, in structure-of-arrays form, vectorised across points:
// (A) PrepareBlock: source indices and their derivatives (blocks/cells-inl.h: vector form for
//     zeros and border, PyTorch's scalar code for reflection), cells, weights, inside masks
//     and the first corners' offsets;
// (B) RunBlock, per channel: gradOutput, the corner values gathered, the grid gradient's
//     terms in vector form, in PyTorch's order, with corners outside masked out (so that NaN
//     and inf behave as in PyTorch, which skips them); w * g in vector form, then a scalar
//     scatter into inputGrad in the block's point order (corners x0 and x0 + 1 as pairs);
// (C) RunBlock: gridGrad = d(index)/d(grid) * the sums.
// The caller checks OffsetsFit for both geometries.
template <typename T, bool kGridGrad, typename S = ComputeType<T>>
HWY_NOINLINE void PrepareBlock(const Problem<T>& pb, const PointBlock& points, PreparedBlock<S>& out) {
    const hn::ScalableTag<S> d;
    const int lanes = static_cast<int>(hn::Lanes(d));
    const BackwardArgs& a = pb.args;
    const int count = points.count;
    const int padded = (count + lanes - 1) / lanes * lanes;
    HWY_ALIGN S coord[3][kBlock], ix[kBlock], iy[kBlock], iz[kBlock];
    const int64_t cs = a.grid.stride[4];
    if (points.row_segment)
        LoadGridRow(pb.grid + points.grid[0], points.grid_w, cs, count, padded, coord);
    else
        LoadGridValues([&](int i) { return pb.grid + points.grid[i]; }, cs, count, padded, coord);
    std::copy(points.grad_output, points.grad_output + count, out.grad_output);
    std::copy(points.grid_grad, points.grid_grad + count, out.grid_grad);
    const uint8_t* order = ScatterOrder(points, out.order);
    if (order != out.order) std::copy(order, order + count, out.order);
    out.unit_grad_output = points.row_segment && points.grad_output_w == 1;
    out.packed_grid_grad =
        std::is_same_v<T, S> && points.row_segment && points.grid_grad_w == 3 && a.grid_grad.stride[4] == 1;
    BlockSourceIndices3<S, true>(coord, padded, a.input.size, a.options, ix, iy, iz, out.mx, out.my, out.mz);
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

// (C) of a block whose grid gradient's sums are complete (gix, giy, giz): gridGrad =
// d(index)/d(grid) * the sums, for the points it owns.
template <typename T, typename S = ComputeType<T>>
HWY_INLINE void WriteBlockGridGrad(const Problem<T>& pb, const PreparedBlock<S>& block) {
    const hn::ScalableTag<S> d;
    const int lanes = static_cast<int>(hn::Lanes(d));
    const int count = block.cells.count;
    const S* HWY_RESTRICT gix = block.gix;
    const S* HWY_RESTRICT giy = block.giy;
    const S* HWY_RESTRICT giz = block.giz;
    const int64_t ggs = pb.args.grid_grad.stride[4];
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
    // lie side by side in wg_pairs. The same adds to the same elements in the same order, with
    // half the memory operations (5-8% faster on noisy grids).
    const int64_t* acc_delta = pb.acc_geometry.corner_delta;
    const hn::CappedTag<S, 2> pair;  // one lane on HWY_SCALAR: no pairs there
    bool x_pairs = kScatter && hn::MaxLanes(pair) == 2 && acc_delta[1] - acc_delta[0] == 1;
    if (x_pairs) {
        // Not where consecutive points' first corners lie side by side (smooth grids, the
        // identity): point i + 1's pair then half overlaps point i's, whose store is still in
        // flight, and the load waits for it (no store-to-load forwarding of a partial overlap).
        // The same sums either way; on such grids one by one is about 12% faster.
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
        // In the block's order (even points, then odd ones), as the row phases scatter, so that
        // every SIMD target and layout sums each element in one order.
        if (cells.all_inside && block.whole) {
            for (int j = 0; j < count; ++j) scatter_point(acc_c + acc_base[block.order[j]], block.order[j]);
        } else {
            // Points with every corner inside and scattered (most, even in a block at the
            // border or in a row that meets two slabs) without the per-corner tests.
            const S(*scatter)[kBlock] = block.whole ? cells.inside : block.scatter;
            const S* every_corner = block.whole ? cells.point_inside : block.point_scatter;
            for (int j = 0; j < count; ++j) {
                const int i = block.order[j];
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
    if (kGridGrad && c_end == pb.channels) WriteBlockGridGrad(pb, block);
}

// The nearest voxels of a block's points (grid values in coord, `count` real of `padded`),
// with the backward clip, as PyTorch's backward; voxels outside planes [z_begin, z_end)
// count as outside.
template <typename T, typename S = ComputeType<T>>
HWY_INLINE void NearestVoxels(const Problem<T>& pb, S (*HWY_RESTRICT coord)[kBlock], int count, int padded,
                              int64_t z_begin, int64_t z_end, BlockVoxels<S>& voxels) {
    const BackwardArgs& a = pb.args;
    HWY_ALIGN S index[3][kBlock], unused[3][kBlock];
    BlockSourceIndices3<S, true>(coord, padded, a.input.size, a.options, index[0], index[1], index[2], unused[0],
                                 unused[1], unused[2]);
    const S* const indices[3] = {index[0], index[1], index[2]};
    voxels.Compute(indices, padded, count, pb.acc_geometry, z_begin, z_end);
}

// A block of nearest points: source indices with SIMD (with the backward clip, as PyTorch's
// backward), each point's voxel, then per channel a scalar scatter of gradOutput into the
// voxels, in the block's point order. (gridGrad, 0, is written by SlabBackward in grid order.)
template <typename T, typename S = ComputeType<T>>
HWY_NOINLINE void NearestBlock(const Problem<T>& pb, int64_t n, const PointBlock& points) {
    const hn::ScalableTag<S> d;
    const int lanes = static_cast<int>(hn::Lanes(d));
    const BackwardArgs& a = pb.args;
    const int count = points.count;
    const int padded = (count + lanes - 1) / lanes * lanes;
    HWY_ALIGN S coord[3][kBlock];
    LoadGridValues([&](int i) { return pb.grid + points.grid[i]; }, a.grid.stride[4], count, padded, coord);
    BlockVoxels<S> voxels;
    NearestVoxels<T>(pb, coord, count, padded, 0, a.input.size[2], voxels);
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

#endif  // GS3D_KERNELS_BLOCKS_BACKWARD_INL_H_
