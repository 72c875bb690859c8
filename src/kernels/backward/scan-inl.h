// The backward kernel's scan: one slab of the volume per thread, each task visiting the grid
// in order and writing only its slab (grids close to the identity; see ScanBackward).
//
// Compiled into each SIMD target: included by backward/kernel-inl.h (after
// foreach_target.h) only; Highway's per-target include guard.
#if defined(GS3D_KERNELS_BACKWARD_SCAN_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef GS3D_KERNELS_BACKWARD_SCAN_INL_H_
#undef GS3D_KERNELS_BACKWARD_SCAN_INL_H_
#else
#define GS3D_KERNELS_BACKWARD_SCAN_INL_H_
#endif

#include <hwy/highway.h>

#include <omp.h>

#include <algorithm>
#include <cstdint>
#include <numeric>
#include <type_traits>

#include "kernels/blocks/backward-inl.h"
#include "kernels/channels_last/backward-inl.h"
#include "kernels/plan/backward.h"
#include "kernels/plan/row_order.h"
#include "kernels/row_phases/backward-inl.h"

HWY_BEFORE_NAMESPACE();
namespace gs3d::kernels {
namespace HWY_NAMESPACE {
namespace {  // internal to each element type's kernels_*.cpp

// inputGrad by scanning, when the grid is close to the identity. A task that owns a slab of
// the volume (planes [z_begin, z_end)) visits the grid's rows in grid order and scatters only
// the corners (nearest: voxels) that lie in its slab: each element then sums its
// contributions in that order, as one thread would, bitwise, however the volume is cut. The
// cut thus follows the thread count (and the batch), and needs no keys and no sort:
// - pass 1, threads split a sample of the grid rows (kSampledRows): each one's range of
//   planes (RowPlanes);
// - the choice, from the shapes and the grid alone (never the thread count, so that the
//   result is the same for any): scan for nearest and for bilinear with one channel, when the
//   sampled rows' plane ranges average at most half of D; else the sorted slabs
//   (SlabBackward); for nearest, gridGrad (0) in grid order; where the volume is cut into
//   slabs, every row's range;
// - pass 2, one task per slab (threads / gcd(threads, batch) slabs per batch item, and no
//   thinner than a row's average range): every row whose range meets the slab, its planes
//   zeroed just before the first row that reaches them, in blocks: nearest, the
//   voxels in the slab, scattered channel by channel; bilinear, PrepareBlock, the corners in
//   the slab (RestrictToSlab), RunPreparedBlock, gridGrad written by the task of the point's
//   first corner's plane (clamped into the volume).
// A row that meets several slabs gives each task only the points its slab needs
// (AppendSlabPoints).

// A bilinear point's planes from its source index v along D: its two z corners' planes,
// clamped into [0, D), as the row phases' cells have them (AxisCell: FloorIndex's -2 for NaN,
// inf and far indices, so both at plane 0, as BlockCells), so that a block never scatters
// into a plane its row's range leaves out.
template <class D, class V = hn::Vec<D>>
HWY_INLINE void BilinearPlanes(D dv, V v, int64_t depth, V* first, V* second) {
    const AxisCell<D> z(dv, v, depth, /*slots=*/false);
    *first = z.index[0], *second = z.index[1];
}

// A grid row's range of planes along D: bilinear, from its points' first corners' planes to
// the planes after them, clamped into [0, D) (every point's gridGrad has an owner: the slab
// of its clamped first plane); nearest, its voxels' planes inside [0, D), or an empty range.
template <typename T, Interpolation I>
HWY_INLINE void RowPlanes(const Problem<T>& pb, int64_t n, int64_t d, int64_t h, uint32_t* lowest,
                          uint32_t* highest) {
    using S = ComputeType<T>;
    const hn::ScalableTag<S> dv;
    const int lanes = static_cast<int>(hn::Lanes(dv));
    const int64_t depth = pb.args.input.size[2];
    const auto neg_one = hn::Set(dv, S(-1)), extent = hn::Set(dv, static_cast<S>(depth)), zero = hn::Zero(dv);
    auto low = extent, high = neg_one;  // no plane yet
    ForEachRowBlockDepth<T>(pb, n, d, h, [&](int64_t, int count, int padded, const S* iz) HWY_ATTR {
        for (int i = 0; i < padded; i += lanes) {
            const auto v = hn::Load(dv, iz + i);
            const auto real = hn::FirstN(dv, static_cast<size_t>(count - i));
            const auto near = hn::And(hn::Ge(v, neg_one), hn::Le(v, extent));
            if constexpr (I == Interpolation::kNearest) {  // NearestIndex, as BlockVoxels
                const auto r = hn::Round(v);
                const auto valid = hn::And(real, hn::And(near, hn::And(hn::Ge(r, zero), hn::Lt(r, extent))));
                low = hn::Min(low, hn::IfThenElse(valid, r, extent));
                high = hn::Max(high, hn::IfThenElse(valid, r, neg_one));
            } else {
                hn::Vec<decltype(dv)> first, second;
                BilinearPlanes(dv, v, depth, &first, &second);
                low = hn::Min(low, hn::IfThenElse(real, first, extent));
                high = hn::Max(high, hn::IfThenElse(real, second, neg_one));
            }
        }
    });
    const S first = hn::GetLane(hn::MinOfLanes(dv, low)), last = hn::GetLane(hn::MaxOfLanes(dv, high));
    if (last < 0) {  // no plane: an empty range
        *lowest = 1, *highest = 0;
        return;
    }
    *lowest = static_cast<uint32_t>(first);
    *highest = static_cast<uint32_t>(last);
}

// Restricts a prepared block to a scan task's slab [z_begin, z_end) of a volume of `depth`
// planes: corners in other slabs are not scattered, and gridGrad is written only for the
// points whose clamped first plane lies in the slab. `whole` stays true when that changes
// nothing (every point's corners inside the volume lie in the slab, and the point is owned).
// In vectors: a row that meets two slabs gives both tasks blocks to restrict, and the
// scalar form's 8 stores per point took about a tenth of the two-thread (1, 1, 128) scan's
// own time (perf).
template <typename S>
HWY_INLINE void RestrictToSlab(PreparedBlock<S>& block, int64_t z_begin, int64_t z_end, int64_t depth) {
    const hn::ScalableTag<S> dv;
    const int lanes = static_cast<int>(hn::Lanes(dv));
    const BlockCells<S>& cells = block.cells;
    const auto begin = hn::Set(dv, static_cast<S>(z_begin)), end = hn::Set(dv, static_cast<S>(z_end)),
               one = hn::Set(dv, S(1));
    // No corner inside the volume lies below plane 0 or from plane `depth` on: a slab that
    // starts at 0 (ends at depth) has no bound there.
    const auto lowest = z_begin == 0 ? hn::Set(dv, hwy::LowestValue<S>()) : begin;
    const auto highest = z_end == depth ? hn::Set(dv, hwy::HighestValue<S>()) : end;
    bool whole = true;
    for (int i = 0; i < cells.count; i += lanes) {
        const auto z0 = hn::Load(dv, cells.z0 + i);
        const auto in_slab = hn::And(hn::Ge(z0, lowest), hn::Lt(hn::Add(z0, one), highest));
        const auto real = hn::FirstN(dv, static_cast<size_t>(cells.count - i));
        whole = whole && hn::AllTrue(dv, hn::Or(hn::Not(real), in_slab));
    }
    block.whole = whole;
    if (whole) return;
    for (int i = 0; i < cells.padded; i += lanes) {
        const auto z0 = hn::Load(dv, cells.z0 + i), z1 = hn::Add(z0, one);
        const auto first_in = hn::And(hn::Ge(z0, begin), hn::Lt(z0, end));
        const auto second_in = hn::And(hn::Ge(z1, begin), hn::Lt(z1, end));
        for (int k = 0; k < 8; ++k)
            hn::Store(hn::IfThenElseZero(k < 4 ? first_in : second_in, hn::Load(dv, cells.inside[k] + i)), dv,
                      block.scatter[k] + i);
        hn::Store(hn::IfThenElseZero(hn::And(first_in, second_in), hn::Load(dv, cells.point_inside + i)), dv,
                  block.point_scatter + i);
    }
    const S last = static_cast<S>(depth - 1);
    for (int i = 0; i < cells.padded; ++i) {
        const S clamped = std::min(std::max(cells.z0[i], S(0)), last);
        block.owned[i] = clamped >= static_cast<S>(z_begin) && clamped < static_cast<S>(z_end);
    }
}

// The points of a bilinear grid row that a scan task's slab [z_begin, z_end) needs (its first
// corner's plane or the next, clamped as RowPlanes counts them, in the slab), appended to
// `points` in row order; full() on each full block. For the rows that meet other slabs too:
// each task then prepares and runs only its points, not the whole row (rows are in order
// and so are a row's points, so every element's sum keeps its order).
template <typename T, typename Full>
HWY_INLINE void AppendSlabPoints(const Problem<T>& pb, int64_t n, int64_t d, int64_t h, const RowOffsets& offsets,
                                 int64_t z_begin, int64_t z_end, PointBlock& points, Full&& full) {
    using S = ComputeType<T>;
    const hn::ScalableTag<S> dv;
    const int lanes = static_cast<int>(hn::Lanes(dv));
    const int64_t depth = pb.args.input.size[2];
    const auto begin = hn::Set(dv, static_cast<S>(z_begin)), end = hn::Set(dv, static_cast<S>(z_end));
    ForEachRowBlockDepth<T>(pb, n, d, h, [&](int64_t w0, int count, int padded, const S* iz) HWY_ATTR {
        HWY_ALIGN S keep[kBlock];
        for (int i = 0; i < padded; i += lanes) {
            hn::Vec<decltype(dv)> first, second;
            BilinearPlanes(dv, hn::Load(dv, iz + i), depth, &first, &second);
            const auto in_slab = hn::Or(hn::And(hn::Ge(first, begin), hn::Lt(first, end)),
                                        hn::And(hn::Ge(second, begin), hn::Lt(second, end)));
            hn::Store(hn::IfThenElseZero(in_slab, hn::Set(dv, S(1))), dv, keep + i);
        }
        for (int i = 0; i < count; ++i)
            if (keep[i] != 0 && points.Append(offsets, w0 + i)) full();
        // Blocks end where the row's segments of kBlock points do, as the whole rows' blocks
        // (SetRowSegment): the pair scatter's order within a block (even points, then odd
        // ones) is then that of one thread's run, for every element.
        if (points.count) full();
    });
}

// Any channel strides: nearest addresses each channel by its stride, and bilinear with one
// channel has no channel stride to vectorise over, so the points-in-vectors blocks serve
// NDHWC as well.
template <typename T, Interpolation I, bool kGridGrad>
bool ScanBackward(const Problem<T>& pb, const BackwardWorkspace& ws) {
    using S = ComputeType<T>;
    const BackwardArgs& a = pb.args;
    const int64_t rows = pb.out_d * pb.out_h, depth = a.input.size[2];
    if (!OffsetsFit<S>(pb.acc_geometry) || !OffsetsFit<S>(pb.in_geometry) || depth == 0) return false;
    // Bilinear with more than one channel: a task's wide slab lets each channel's gathers and
    // scatters roam over all planes near a row's, and with 2 channels that no longer fits the
    // L2 cache (two channels scan a quarter slower than they sort; one channel scans a fifth
    // faster); the thin sorted slabs keep it small.
    if (I == Interpolation::kBilinear && pb.channels > 1) return false;

    // The choice, and the slabs' thickness, from the ranges of a sample of the rows: every
    // `sample`-th, fixed by the shapes alone (so the same for any thread count). Reading
    // every row's grid here would stream the whole grid from memory once more.
    const int64_t total_rows = pb.batch * rows;
    const int64_t sample = std::max<int64_t>(1, total_rows / kSampledRows);
    int64_t spans = 0, spanning_rows = 0;  // sum of the sampled rows' ranges (planes), rows with one
#pragma omp parallel for schedule(static) reduction(+ : spans, spanning_rows)
    for (int64_t task = 0; task < total_rows; task += sample) {
        const int64_t n = task / rows, row = task % rows;
        RowPlanes<T, I>(pb, n, row / pb.out_h, row % pb.out_h, &ws.row_lowest[task], &ws.row_highest[task]);
        if (ws.row_lowest[task] <= ws.row_highest[task]) {
            spans += ws.row_highest[task] - ws.row_lowest[task] + 1;
            ++spanning_rows;
        }
    }
    const int64_t average_span = spanning_rows ? (spans + spanning_rows - 1) / spanning_rows : 1;
    if (2 * average_span > depth && depth > 4 && !a.scan_any_span) return false;
    if constexpr (I == Interpolation::kNearest && kGridGrad) {  // piecewise constant: zeros
#pragma omp parallel for schedule(static)
        for (int64_t task = 0; task < total_rows; ++task) {
            const int64_t n = task / rows, row = task % rows, d = row / pb.out_h, h = row % pb.out_h;
            const View5& gg = a.grid_grad;
            if (gg.stride[4] == 1 && gg.stride[3] == 3 && pb.out_w > 0)  // a packed row: one fill
                std::fill_n(pb.GridGradPoint(n, d, h, 0), 3 * pb.out_w, FromCompute<T>(S(0)));
            else
                for (int64_t w = 0; w < pb.out_w; ++w) pb.WriteGridGrad(n, d, h, w, 0, 0, 0);
        }
    }

    // Tasks: batch x slab_count, a multiple of the threads with as few slabs per item as that
    // allows (a batch of two on two threads: one slab, the whole volume, per task), unless the
    // rows' spread leaves room for fewer slabs still (no slab thinner than it). A slab's
    // cut costs: the rows that meet two slabs are read and prepared by both tasks (whole
    // items per task were up to a sixth faster than a slab per thread and item).
    const int64_t threads = std::max(1, omp_get_max_threads());
    const int64_t per_item = threads / std::gcd(threads, std::max<int64_t>(1, pb.batch));
    const int64_t slab_count = std::max<int64_t>(1, std::min(per_item, depth / std::max<int64_t>(1, average_span)));
    const int64_t slab_depth = (depth + slab_count - 1) / slab_count;
    const int64_t slabs = (depth + slab_depth - 1) / slab_depth;
    // Every row's range: all of them before the tasks where the volume is cut (a task visits
    // only the rows that meet its slab). With one slab per item, bilinear needs none (every
    // row is the task's, and the accumulator is zeroed whole first, which costs less than
    // reading every row's grid values once more: their first reads from memory stall); nearest
    // takes each just before its row is scanned, to zero the planes just in time.
    const bool ranges_first = slabs > 1, whole_items = slabs == 1 && I == Interpolation::kBilinear;
    if (ranges_first) {
#pragma omp parallel for schedule(static)
        for (int64_t task = 0; task < total_rows; ++task) {
            const int64_t n = task / rows, row = task % rows;
            RowPlanes<T, I>(pb, n, row / pb.out_h, row % pb.out_h, &ws.row_lowest[task], &ws.row_highest[task]);
        }
    }
    const hn::ScalableTag<S> dv;
    const int lanes = static_cast<int>(hn::Lanes(dv));
#pragma omp parallel for schedule(dynamic, 1)
    for (int64_t task = 0; task < pb.batch * slabs; ++task) {
        const int64_t n = task / slabs, slab = task % slabs;
        const int64_t z_begin = slab * slab_depth, z_end = std::min(depth, z_begin + slab_depth);
        S* acc_n = pb.channels ? pb.acc + n * pb.acc_stride[0] : nullptr;  // C = 0: no data
        // The slab's planes are zeroed just before the first row that reaches them (its
        // range's highest plane), not all at the start: a row's scatters then find the lines
        // of its planes fresh in L2, where zeroing the whole slab first (a few MiB) had pushed
        // them out to L3 or memory before the scan came back. Every scatter so far went to
        // planes below zeroed_end (the rows' ranges, and chunked work is from earlier rows),
        // so no plane is zeroed after a contribution reached it; planes that no row reaches
        // are zeroed at the end (nearest gains 10-20%). A whole item is zeroed at once: it
        // then needs no row's range (above).
        int64_t zeroed_end = z_begin;  // planes [z_begin, zeroed_end) are zeroed
        if (whole_items) pb.ZeroAccumulatorPlanes(n, 0, zeroed_end = depth);
        // Nearest: the points kept, gathered over blocks and rows, then scattered channel by
        // channel (with many channels, a block's worth of points per channel would visit
        // every channel's volume between two blocks).
        constexpr int kChunk = 1024;
        typename BlockVoxels<S>::Offset voxel[I == Interpolation::kNearest ? kChunk : 1];
        int64_t gout_offset[I == Interpolation::kNearest ? kChunk : 1];
        int chunk = 0;
        auto flush = [&] {
            if (chunk == 0) return;  // also: an empty grid's gradOutput has no data to offset
            // Channels in pairs: each point's voxel and gradOutput offset loaded once for two
            // channels, whose read-modify-writes are independent; each element still sums its
            // points in chunk order (10-20% faster than one channel at a time; four at a time
            // crowd L2 with four channels' windows of planes and lose at 4 and 8 channels).
            // No prefetch: with the planes zeroed just in time (above) the accumulator's
            // lines are in L2 already.
            const int64_t gout_cs = a.grad_output.stride[1], acc_cs = pb.acc_stride[1];
            int64_t c = 0;
            auto channels = [&](auto group) {  // `group` channels from c at a time
                constexpr int kGroup = decltype(group)::value;
                for (; c + kGroup <= pb.channels; c += kGroup) {
                    const T* HWY_RESTRICT gout_c = pb.gout + c * gout_cs;
                    S* HWY_RESTRICT acc_c = acc_n + c * acc_cs;
                    for (int j = 0; j < chunk; ++j) {
                        S* HWY_RESTRICT q = acc_c + voxel[j];
                        const T* HWY_RESTRICT g = gout_c + gout_offset[j];
#pragma GCC unroll 2
                        for (int k = 0; k < kGroup; ++k) q[k * acc_cs] += LoadElement(g + k * gout_cs);
                    }
                }
            };
            channels(std::integral_constant<int, 2>{});
            channels(std::integral_constant<int, 1>{});
            chunk = 0;
        };
        HWY_ALIGN S coord[3][kBlock];
        BlockVoxels<S> voxels;
        PointBlock points;
        BlockChunk<T, kGridGrad, /*kUnitChannels=*/false> chunked(pb, n);
        const bool row_phases = I == Interpolation::kBilinear && RowPhasesServe(pb);
        // Rows plane after plane (bands as wide as a plane): the grid, gradOutput and gridGrad
        // read and written as streams. The order must not follow the cut (each element sums
        // in it for any thread count); bands of 4 rows were 4% faster on two threads with a
        // noisy grid and 10% slower on one thread with a smooth field.
        const int64_t band = pb.out_h;
        for (BandedRows row(pb.out_d, pb.out_h, band); !row.Done(); row.Next()) {
            const int64_t d = row.d, h = row.h;
            const int64_t r = n * rows + d * pb.out_h + h;
            int64_t lowest = 0, highest = depth - 1;  // the row's planes; a whole item's rows: all of them
            if (!whole_items) {
                if (!ranges_first) RowPlanes<T, I>(pb, n, d, h, &ws.row_lowest[r], &ws.row_highest[r]);
                lowest = ws.row_lowest[r], highest = ws.row_highest[r];
                if (lowest > highest || lowest >= z_end || highest < z_begin) continue;
            }
            if (highest >= zeroed_end) {
                const int64_t upto = std::min<int64_t>(z_end, highest + 1);
                pb.ZeroAccumulatorPlanes(n, zeroed_end, upto);
                zeroed_end = upto;
            }
            const auto offsets = pb.Row(n, d, h);
            if constexpr (I == Interpolation::kBilinear) {
                auto run_block = [&] {
                    if (row_phases) {  // the row's points that reach the slab, restricted to it
                        RowPhasesBackwardBlock<T, kGridGrad>(pb, n, points, z_begin, z_end);
                        points.count = 0;
                        return;
                    }
                    PreparedBlock<S>& prepared = chunked.Next();
                    PrepareBlock<T, kGridGrad>(pb, points, prepared);
                    prepared.stream_grid_grad = a.stream_grid_grad;
                    RestrictToSlab(prepared, z_begin, z_end, depth);
                    chunked.Add();
                    points.count = 0;
                };
                if (lowest < z_begin || highest >= z_end) {  // the row meets other slabs
                    points.count = 0;
                    AppendSlabPoints<T>(pb, n, d, h, offsets, z_begin, z_end, points, run_block);
                    if (points.count) run_block();
                    continue;
                }
                for (int64_t w0 = 0; w0 < pb.out_w; w0 += kBlock) {
                    points.SetRowSegment(offsets, w0, static_cast<int>(std::min<int64_t>(kBlock, pb.out_w - w0)),
                                         !row_phases);
                    if (row_phases)  // the row lies in the slab: every corner and gridGrad is the task's
                        RowPhasesBackwardBlock<T, kGridGrad>(pb, n, points, 0, depth);
                    else
                        run_block();
                }
            } else {
                for (int64_t w0 = 0; w0 < pb.out_w; w0 += kBlock) {
                    const int count = static_cast<int>(std::min<int64_t>(kBlock, pb.out_w - w0));
                    const int padded = (count + lanes - 1) / lanes * lanes;
                    LoadGridRow(pb.grid + offsets.grid + w0 * offsets.grid_w, offsets.grid_w, a.grid.stride[4], count,
                                padded, coord);
                    NearestVoxels<T>(pb, coord, count, padded, z_begin, z_end, voxels);
                    if (chunk + count > kChunk) flush();
                    for (int i = 0; i < count; ++i) {  // branch-free: in rows across two slabs, kept and not alternate
                        voxel[chunk] = voxels.offset[i];
                        gout_offset[chunk] = offsets.grad_output + (w0 + i) * offsets.grad_output_w;
                        chunk += voxels.inside[i] != 0;
                    }
                }
            }
        }
        if constexpr (I == Interpolation::kNearest) flush();
        chunked.Run();
        pb.ZeroAccumulatorPlanes(n, zeroed_end, z_end);  // planes that no row reaches
        hwy::FlushStream();  // the task's streamed gridGrad (stream_grid_grad), before the region's barrier
    }
    return true;
}

}  // namespace
}  // namespace HWY_NAMESPACE
}  // namespace gs3d::kernels
HWY_AFTER_NAMESPACE();

#endif  // GS3D_KERNELS_BACKWARD_SCAN_INL_H_
