// The backward kernel: inputGrad (scatter of gradOutput through the sampling weights) and
// gridGrad (derivative of the sample with respect to the grid coordinates).
//
// No races, and a result that does not depend on the thread count, by one of two plans:
// - Scan (backward_scan-inl.h; grids close to the identity, nearest or one channel): one
//   slab of the volume per thread, each task visiting the grid in order and writing only
//   its slab, so that every element sums in one visiting order whatever the cut.
// - Sorted slabs (SlabBackward, here; any grid): the input volume of each batch item is cut
//   into slabs along D (a count that depends on D only). Grid points are binned by the slab
//   of their first corner (a counting sort within each grid row, grid order kept within a
//   key); a point's corners then touch its slab and the next one only. The even slabs'
//   tasks run in parallel (each zero-fills its two slabs first), and an odd slab's task once
//   the even ones beside it are done (SlabBackward's graph): no two tasks that touch the same slab
//   run at once. Each element thus sums its contributions in a fixed order: the even
//   slab's points, then the odd one's (a slab's first plane gets both: its own points and
//   the corners z0 + 1 of the slab before), each in the order the tasks visit rows
//   (row_order.h).
// Both compute gridGrad in the same pass from the same corners (coordinates once per point,
// backward_blocks-inl.h), summing over channels in order; fp16/bf16 accumulate in an fp32
// buffer and are rounded once at the end. Point by point (backward_point-inl.h) where the
// blocks do not apply.
//
// Compiled into each SIMD target of each element type's translation unit
// (kernels_float32.cpp and its siblings, through kernel_entry-inl.h); Highway's
// per-target include guard.
#if defined(GS3D_KERNELS_BACKWARD_KERNEL_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef GS3D_KERNELS_BACKWARD_KERNEL_INL_H_
#undef GS3D_KERNELS_BACKWARD_KERNEL_INL_H_
#else
#define GS3D_KERNELS_BACKWARD_KERNEL_INL_H_
#endif

#include <hwy/cache_control.h>
#include <hwy/highway.h>

#include "kernels/channels_last_copy-inl.h"
#include "kernels/backward_blocks-inl.h"
#include "kernels/backward_point-inl.h"
#include "kernels/backward_scan-inl.h"
#include "kernels/simd_cells-inl.h"

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <thread>
#include <type_traits>
#include <vector>

#include "kernels/backward_plan.h"
#include "kernels/dispatch.h"
#include "kernels/fast_divide.h"
#include "kernels/grid_sampler3d_kernels.h"
#include "kernels/row_order.h"
#include "kernels/trilinear_corners.h"

HWY_BEFORE_NAMESPACE();
namespace gs3d::kernels {
namespace HWY_NAMESPACE {
namespace {

// The slab keys of a grid row: each point's slab of its first corner along D (nearest: its
// voxel), clamped into the volume (a point that touches no voxel may go to any slab; it
// writes only its gridGrad). The source index comes from the same vector code as the
// blocks', and the floor (nearest: round half to even) is FloorIndex's (NearestIndex's), so
// the corners of a point lie in its key's slab and the next.
template <typename T, Interpolation I, Padding P>
HWY_INLINE void RowKeys(const Problem<T>& pb, const FastDivider32& by_slab_depth, int64_t n, int64_t d, int64_t h,
                        uint8_t* HWY_RESTRICT keys) {
    using S = ComputeType<T>;
    const hn::ScalableTag<S> dv;
    const int lanes = static_cast<int>(hn::Lanes(dv));
    const int64_t depth = pb.args.input.size[2];
    const auto low = hn::Set(dv, S(-1)), high = hn::Set(dv, static_cast<S>(depth)), zero = hn::Zero(dv),
               last = hn::Set(dv, static_cast<S>(depth - 1));
    ForEachRowBlockDepth<T, P>(pb, n, d, h, [&](int64_t w0, int count, int padded, S* iz) HWY_ATTR {
        for (int i = 0; i < padded; i += lanes) {
            const auto v = hn::Load(dv, iz + i);
            const auto z = I == Interpolation::kNearest ? hn::Round(v) : hn::Floor(v);
            // Outside [-1, depth], NaN and inf: slab 0; then clamped to [0, depth - 1].
            const auto valid = hn::And(hn::Ge(v, low), hn::Le(v, high));
            hn::Store(hn::Min(hn::Max(hn::IfThenElseZero(valid, z), zero), last), dv, iz + i);
        }
        for (int i = 0; i < count; ++i)
            keys[w0 + i] = static_cast<uint8_t>(by_slab_depth.Divide(static_cast<uint32_t>(iz[i])));
    });
}

// Few keys in a segment (with a noisy grid a row's points fall in a handful of slabs): each
// key's points found in vectors, a compare and a compress of the points' indices per vector
// of keys, key after key, so the order is the counting sort's. The counting sort's scalar
// loops carry a chain through memory (start[key]++) at every point; perf put most of the
// keys pass there at (2, 8, 64).
template <class D16>
HWY_INLINE void SortSegmentFewKeys(D16 d16, uint8_t* HWY_RESTRICT keys, uint16_t* HWY_RESTRICT order, int64_t count,
                                   uint32_t low, uint32_t high) {
    const hn::Rebind<uint8_t, D16> d8;
    const int64_t lanes = static_cast<int64_t>(hn::Lanes(d16)), body = count / lanes * lanes;
    uint32_t end[kMaxSlabs];  // end of key k's run in order[]
    int64_t position = 0;
    for (uint32_t k = low; k <= high; ++k) {
        const auto key = hn::Set(d16, static_cast<uint16_t>(k));
        for (int64_t w = 0; w < body; w += lanes) {
            const auto same = hn::Eq(hn::PromoteTo(d16, hn::LoadU(d8, keys + w)), key);
            // Blended: writes only the indices kept, never past them into the next segment.
            position += static_cast<int64_t>(
                hn::CompressBlendedStore(hn::Iota(d16, static_cast<uint16_t>(w)), same, d16, order + position));
        }
        for (int64_t w = body; w < count; ++w)
            if (keys[w] == k) order[position++] = static_cast<uint16_t>(w);
        end[k] = static_cast<uint32_t>(position);
    }
    uint32_t begin = 0;  // keys[] becomes the sorted keys, once every key has been read
    for (uint32_t k = low; k <= high; ++k) {
        std::fill(keys + begin, keys + end[k], static_cast<uint8_t>(k));
        begin = end[k];
    }
}

// Sorts one row segment's points by key (a stable counting sort): order[] becomes the
// points (from the segment's first) in key order, keys[] the sorted keys, with the smallest
// and largest key.
inline void SortSegment(uint8_t* HWY_RESTRICT keys, uint16_t* HWY_RESTRICT order, int64_t count, uint32_t* lowest,
                        uint32_t* highest) {
    uint8_t low = UINT8_MAX, high = 0;
    for (int64_t w = 0; w < count; ++w) {
        low = std::min(low, keys[w]);
        high = std::max(high, keys[w]);
    }
    *lowest = low;
    *highest = high;
    if (low == high) {  // one slab (the common case): grid order is key order
        for (int64_t w = 0; w < count; ++w) order[w] = static_cast<uint16_t>(w);
        return;
    }
    // A key costs the vector path a pass over the segment: there while the keys are at most
    // a quarter of the lanes of 16 bits (AVX-512: 8 keys, so every row with kMaxSlabs = 8;
    // AVX2: 4).
    const hn::ScalableTag<uint16_t> d16;
    if (4 * (high - low + 1) <= static_cast<int>(hn::Lanes(d16)))
        return SortSegmentFewKeys(d16, keys, order, count, low, high);
    uint32_t start[kMaxSlabs + 1] = {};
    for (int64_t w = 0; w < count; ++w) ++start[keys[w] + 1];
    for (int k = low + 1; k <= high; ++k) start[k] += start[k - 1];
    for (int64_t w = 0; w < count; ++w) order[start[keys[w]]++] = static_cast<uint16_t>(w);
    // keys[] becomes the sorted keys: after the pass start[k] is the end of key k's run.
    uint32_t position = 0;
    for (int k = low; k <= high; ++k)
        for (; position < start[k]; ++position) keys[position] = static_cast<uint8_t>(k);
}

// The run [begin, end) of `key` in a segment's sorted keys. Short segments (a row of up to
// four vectors of keys) count the keys below and equal to it in vectors, with no branch to
// mispredict: a binary search's branches go either way at random, twice per row that meets
// the slab (2 or 3 of the 8 slabs per row at (2, 8, 64)).
HWY_INLINE void KeyRun(const uint8_t* HWY_RESTRICT keys, int64_t count, uint8_t key, int64_t* begin, int64_t* end) {
    const hn::ScalableTag<uint8_t> d8;
    const int64_t lanes = static_cast<int64_t>(hn::Lanes(d8));
    if (count > 4 * lanes) {
        *begin = std::lower_bound(keys, keys + count, key) - keys;
        *end = std::upper_bound(keys + *begin, keys + count, key) - keys;
        return;
    }
    const auto k = hn::Set(d8, key);
    int64_t below = 0, equal = 0, w = 0;
    for (; w + lanes <= count; w += lanes) {
        const auto v = hn::LoadU(d8, keys + w);
        below += static_cast<int64_t>(hn::CountTrue(d8, hn::Lt(v, k)));
        equal += static_cast<int64_t>(hn::CountTrue(d8, hn::Eq(v, k)));
    }
    for (; w < count; ++w) {
        below += keys[w] < key;
        equal += keys[w] == key;
    }
    *begin = below;
    *end = below + equal;
}

// inputGrad (and gridGrad, kGridGrad) by slabs:
// - keys: every point's slab; each grid row's points sorted by key within segments of up to
//   kSegmentPoints (SortSegment), with each segment's smallest and largest key;
// - the even slabs' tasks in parallel, each odd slab's once the even ones beside it are
//   done (a graph, below). An even slab's task zero-fills its slab and the next; then a task
//   takes, from each segment whose key range holds its slab, the run of that segment's points
//   with its key, in grid order within the row; the rows in bands (row_order.h), the same
//   order for every task.
// Every element thus sums its contributions in a fixed order: the even slab's points, then
// the odd one's (a plane gets both where it is the first of a slab: the corners z0 + 1 of
// the slab before), each in that order; whatever the thread count.
// A slab task prefetches the keys and order of the row kKeysAhead rows ahead of it (band
// order), when that row (of one segment) meets its slab: a row's lines are read by the 5-6
// tasks whose slabs it meets, each at another time, so they had left the caches, and their
// loads were the walk's hottest instructions (perf, (2, 8, 64)).
constexpr int kKeysAhead = 8;
template <typename T, Interpolation I, Padding P, bool kGridGrad, bool kUnitChannels>
void SlabBackward(const Problem<T>& pb, const SlabPlan& plan, const BackwardWorkspace& ws) {
    static_assert(kMaxSlabs <= UINT8_MAX + 1, "keys are 8 bits");
    using S = ComputeType<T>;
    const BackwardArgs& a = pb.args;
    const int64_t rows = pb.out_d * pb.out_h, slabs = plan.slabs, segments = SegmentsPerRow(pb.out_w);
    const FastDivider32 by_slab_depth(static_cast<uint32_t>(plan.slab_depth));

#pragma omp parallel for schedule(static)
    for (int64_t task = 0; task < pb.batch * rows; ++task) {
        const int64_t n = task / rows, row = task % rows, d = row / pb.out_h, h = row % pb.out_h;
        uint8_t* keys = ws.keys + task * pb.out_w;
        uint16_t* order = ws.order + task * pb.out_w;
        RowKeys<T, I, P>(pb, by_slab_depth, n, d, h, keys);
        for (int64_t s = 0; s < segments; ++s) {
            const int64_t first = s * kSegmentPoints;
            SortSegment(keys + first, order + first, std::min(kSegmentPoints, pb.out_w - first),
                        &ws.row_lowest[task * segments + s], &ws.row_highest[task * segments + s]);
        }
    }

    const bool blocks = OffsetsFit<S>(pb.acc_geometry) && OffsetsFit<S>(pb.in_geometry);
    if constexpr (I == Interpolation::kNearest && kGridGrad) {
        // The sample is piecewise constant: gridGrad is 0, written here in grid order rather
        // than point by point in slab order (which would write each line several times).
#pragma omp parallel for schedule(static)
        for (int64_t task = 0; task < pb.batch * rows; ++task) {
            const int64_t n = task / rows, row = task % rows;
            for (int64_t w = 0; w < pb.out_w; ++w) pb.WriteGridGrad(n, row / pb.out_h, row % pb.out_h, w, 0, 0, 0);
        }
    }
    const int64_t vol_d = a.input.size[2];
    // Rows in bands (row_order.h); a slab is thin, so a band may be wide (measured, (1, 4, 96)
    // channels last, one thread: 8-16 rows 50-52 ms, plane after plane 62-85).
    const int64_t row_bytes = a.input.size[4] * pb.channels * static_cast<int64_t>(sizeof(ComputeType<T>));
    const int64_t band = BandRows(row_bytes, kSortedBandBytes);
    auto run_slab = [&](int64_t n, int64_t slab) {
        if (slab % 2 == 0)  // zero this slab and the next: no task has written them yet
            pb.ZeroAccumulatorPlanes(n, slab * plan.slab_depth, std::min(vol_d, (slab + 2) * plan.slab_depth));
        PointBlock block;
        BlockChunk<T, kGridGrad, kUnitChannels> chunked(pb, n);
        auto submit = [&] {
            if constexpr (I == Interpolation::kNearest) {
                NearestBlock<T, P>(pb, n, block);
            } else {
                PrepareBlock<T, P, kGridGrad>(pb, block, chunked.Next());
                chunked.Add();
            }
            block.count = 0;
        };
        const auto key = static_cast<uint8_t>(slab);
        BandedRows ahead(pb.out_d, pb.out_h, band);
        for (int i = 0; i < kKeysAhead && !ahead.Done(); ++i) ahead.Next();
        for (BandedRows row(pb.out_d, pb.out_h, band); !row.Done(); row.Next()) {
            const int64_t d = row.d, h = row.h;
            const int64_t r = n * rows + d * pb.out_h + h;
            if (!ahead.Done()) {
                const int64_t later = n * rows + ahead.d * pb.out_h + ahead.h;
                if (segments == 1 && ws.row_lowest[later] <= slab && ws.row_highest[later] >= slab) {
                    hwy::Prefetch(ws.keys + later * pb.out_w);
                    hwy::Prefetch(ws.order + later * pb.out_w);
                }
                ahead.Next();
            }
            for (int64_t s = 0; s < segments; ++s) {
                const int64_t segment = r * segments + s;
                if (ws.row_lowest[segment] > slab || ws.row_highest[segment] < slab) continue;
                const int64_t first = s * kSegmentPoints, count = std::min(kSegmentPoints, pb.out_w - first);
                const uint8_t* keys = ws.keys + r * pb.out_w + first;
                const uint16_t* order = ws.order + r * pb.out_w + first;
                int64_t begin, end;
                KeyRun(keys, count, key, &begin, &end);
                if (blocks) {
                    const auto offsets = pb.Row(n, d, h);
                    for (int64_t i = begin; i < end; ++i)
                        if (block.Append(offsets, first + order[i])) submit();
                    continue;
                }
                for (int64_t i = begin; i < end; ++i)
                    BackwardPoint<T, I, P, true, kGridGrad, kUnitChannels>(pb, n, d, h, first + order[i]);
            }
        }
        if (block.count) submit();
        chunked.Run();
    };
    // The slab tasks as a graph, not two phases with a barrier between: an odd slab's task
    // waits only for the even tasks beside it (the one before zeroes its planes and writes
    // their first one; the one after zeroes and writes the plane past its end, where it
    // writes too), so each element still sums the even task's contributions before the odd
    // one's, and a thread that finishes early goes on to an odd task instead of waiting for
    // the last even task (perf: 6-7% of the (2, 8, 64) and (1, 4, 96) backward's samples in
    // libgomp's wait, two threads, with the barrier).
    // Threads claim tasks from one counter, every even slab (item by item) before any odd
    // one, so the even tasks an odd one waits for are already claimed by threads that wait
    // for nothing: no deadlock, with any team size. The waits are release/acquire atomics,
    // which ThreadSanitizer sees. (OpenMP tasks with `depend` did the same, but libomp hands
    // a finished task's descriptor to the next task created, in another thread, through its
    // own allocator: ThreadSanitizer with Archer then reported the reuse of the firstprivate
    // copies as a race, intermittently, in CI's concurrency_test.)
    const int64_t evens = (slabs + 1) / 2, odds = slabs / 2, tasks = pb.batch * slabs;
    std::vector<std::atomic<int>> slab_done(static_cast<size_t>(tasks));
    for (auto& done : slab_done) done.store(0, std::memory_order_relaxed);
    std::atomic<int64_t> next_task{0};
    auto wait_for = [&](int64_t task) {
        while (slab_done[static_cast<size_t>(task)].load(std::memory_order_acquire) == 0) std::this_thread::yield();
    };
#pragma omp parallel
    for (int64_t k = next_task.fetch_add(1, std::memory_order_relaxed); k < tasks;
         k = next_task.fetch_add(1, std::memory_order_relaxed)) {
        int64_t n, slab;
        if (k < pb.batch * evens) {
            n = k / evens, slab = 2 * (k % evens);
        } else {
            const int64_t odd = k - pb.batch * evens;  // the odd slabs' own count, item by item
            n = odd / odds, slab = 2 * (odd % odds) + 1;
            wait_for(n * slabs + slab - 1);
            if (slab + 1 < slabs) wait_for(n * slabs + slab + 1);
        }
        run_slab(n, slab);
        slab_done[static_cast<size_t>(n * slabs + slab)].store(1, std::memory_order_release);
    }
}

// gridGrad alone (outputMask {false, true}): threads split the rows of the grid. Bilinear
// in blocks, as the full backward computes gridGrad (PrepareBlock, then RunBlock without the
// scatter, or with 8 channels or more last RunChannelsLastBlock on blocks that scatter no corner;
// the cells' geometry the input's, since inputGrad's view need not be given). Point by
// point, one thread, (1, 1, 128) took 61 ms, about the full backward's time, (1, 8, 64)
// 27.7 ms against its 20.5, and NDHWC (1, 8, 64) 31 ms against 19. Nearest point by point.
// With the channels last, RunBlock (points in vectors, a channel at a time) serves fewer
// channels better than the channels-last runner (channels in vectors). A/B, one thread,
// S = 48, best of 5: C = 4 3.2-4.9 ms against 9.0-9.2, C = 6 5.3-5.6 against 8.3-8.8,
// C = 8 5.5-8.2 against 5.5-7.2, C = 16 12.2-12.7 against 6.9-7.3.
constexpr int64_t kGridGradOnlyChannelsLastMin = 8;

template <typename T, Interpolation I, Padding P, bool kUnitChannels>
void GridGradOnly(const Problem<T>& pb) {
    const int64_t rows = pb.batch * pb.out_d * pb.out_h;
    if constexpr (I == Interpolation::kBilinear) {
        BackwardArgs args = pb.args;
        args.input_grad = args.input;  // its geometry only: nothing is written through it
        const Problem<T> input_only(args, nullptr, args.input.stride);
        if (OffsetsFit<ComputeType<T>>(input_only.in_geometry)) {
#pragma omp parallel
            {
#pragma omp for schedule(static) nowait
            for (int64_t row = 0; row < rows; ++row) {
                const int64_t h = row % pb.out_h, d = row / pb.out_h % pb.out_d, n = row / (pb.out_h * pb.out_d);
                const auto offsets = input_only.Row(n, d, h);
                PointBlock points;
                PreparedBlock<ComputeType<T>> prepared;
                if constexpr (kUnitChannels) {  // no corner scattered, every point's gridGrad written
                    std::fill(&prepared.scatter[0][0], &prepared.scatter[0][0] + 8 * kBlock, ComputeType<T>(0));
                    std::fill(prepared.owned, prepared.owned + kBlock, true);
                }
                for (int64_t w0 = 0; w0 < pb.out_w; w0 += kBlock) {
                    points.SetRowSegment(offsets, w0, static_cast<int>(std::min<int64_t>(kBlock, pb.out_w - w0)));
                    PrepareBlock<T, P, true>(input_only, points, prepared);
                    if (kUnitChannels && pb.channels >= kGridGradOnlyChannelsLastMin) {
                        prepared.whole = false;
                        RunChannelsLastBlock<T, true>(input_only, n, prepared);
                    } else {
                        prepared.stream_grid_grad = true;
                        RunBlock<T, true, false>(input_only, n, prepared, 0, input_only.channels);
                    }
                }
            }
            hwy::FlushStream();  // this thread's streamed gridGrad, before the region's closing barrier
            }
            return;
        }
    }
#pragma omp parallel for schedule(static)
    for (int64_t row = 0; row < rows; ++row) {
        const int64_t h = row % pb.out_h, d = row / pb.out_h % pb.out_d, n = row / (pb.out_h * pb.out_d);
        for (int64_t w = 0; w < pb.out_w; ++w) BackwardPoint<T, I, P, false, true, kUnitChannels>(pb, n, d, h, w);
    }
}

// inputGrad when the slab plan does not apply (more than 2^32 points per batch item):
// tasks own whole (n, c) volumes and visit every point of n in order.
template <typename T, Interpolation I, Padding P, bool kGridGrad>
void PerChannelBackward(const Problem<T>& pb) {
#pragma omp parallel for schedule(dynamic, 1)
    for (int64_t task = 0; task < pb.batch * pb.channels; ++task) {
        const int64_t n = task / pb.channels, c = task % pb.channels;
        Problem<T> one = pb;  // a view of channel c alone
        one.channels = 1;
        one.in += c * pb.args.input.stride[1];
        one.gout += c * pb.args.grad_output.stride[1];
        one.acc += c * pb.acc_stride[1];
        one.ZeroAccumulatorPlanes(n, 0, pb.args.input.size[2]);
        for (int64_t d = 0; d < pb.out_d; ++d)
            for (int64_t h = 0; h < pb.out_h; ++h)
                for (int64_t w = 0; w < pb.out_w; ++w)
                    BackwardPoint<T, I, P, true, false, false>(one, n, d, h, w);
    }
    if constexpr (kGridGrad) GridGradOnly<T, I, P, false>(pb);
}

// Rounds the fp32 accumulator into the fp16/bf16 inputGrad.
template <typename T>
void StoreAccumulator(const Problem<T>& pb) {
    const View5& out = pb.args.input_grad;
    const int64_t planes = out.size[0] * out.size[1] * out.size[2];
#pragma omp parallel for schedule(static)
    for (int64_t plane = 0; plane < planes; ++plane) {
        const int64_t z = plane % out.size[2], c = plane / out.size[2] % out.size[1], n = plane / (out.size[2] * out.size[1]);
        const float* from = pb.acc + n * pb.acc_stride[0] + c * pb.acc_stride[1] + z * pb.acc_stride[2];
        T* to = static_cast<T*>(out.data) + n * out.stride[0] + c * out.stride[1] + z * out.stride[2];
        for (int64_t y = 0; y < out.size[3]; ++y)
            for (int64_t x = 0; x < out.size[4]; ++x)
                StoreElement<T>(from[y * pb.acc_stride[3] + x * pb.acc_stride[4]], to + y * out.stride[3] + x * out.stride[4]);
    }
}

// Bilinear, inputGrad dense NCDHW, many channels (BackwardFromChannelsLastCopy):
// batch item by batch item, the input copied as (D, H, W, C) into inputGrad's own memory
// (with gridGrad; nothing else reads it), inputGrad accumulated as (D, H, W, C) in the
// workspace (fp32 for fp16 and bf16, rounded once as it is copied out) by the sorted slabs
// with channels in vectors (RunChannelsLastBlock; gradOutput's channels gathered), then copied
// into inputGrad over the input's copy. A point's corners are then eight runs of C elements
// in each volume instead of 8 x C lines. A/B alternating on Zen 4, 2 threads, noise 0.05:
// (1, 4, 96) 38 -> 28 ms, (1, 8, 64) 17.7 -> 11.3, (1, 32, 48) 25.8 -> 15.9; with 2
// channels slower (22.7 -> 34: its channels go one by one).
// The plan, and so the result, depends on the shapes only.
template <typename T, Padding P>
void ChannelsLastCopyBackward(const BackwardArgs& args, void* workspace) {
    using S = ComputeType<T>;
    const View5& in = args.input;
    const View5& ig = args.input_grad;
    const BackwardWorkspace ws = LayOutWorkspace(args, workspace);  // the plan's parts: one item's
    S* acc = reinterpret_cast<S*>(ws.accumulator);
    const int64_t* channels_last = ws.accumulator_stride;  // (D, H, W, C), also the input's copy
    for (int64_t n = 0; n < in.size[0]; ++n) {
        BackwardArgs item = OneBatchItem(args, n);
        T* input_grad_n = static_cast<T*>(item.input_grad.data);
        if (args.compute_grid_grad) {
            CopyToChannelsLast(static_cast<const T*>(item.input.data), in.stride + 1, in.size + 1, input_grad_n);
            item.input.data = input_grad_n;
            std::copy(channels_last, channels_last + 5, item.input.stride);
        }
        item.input_grad.data = acc;  // the accumulator's shape and strides (pb writes through acc)
        std::copy(channels_last, channels_last + 5, item.input_grad.stride);
        const Problem<T> pb(item, acc, channels_last);
        const SlabPlan plan = PlanSlabs(item);
        if (args.compute_grid_grad)
            SlabBackward<T, Interpolation::kBilinear, P, true, true>(pb, plan, ws);
        else
            SlabBackward<T, Interpolation::kBilinear, P, false, true>(pb, plan, ws);
        CopyFromChannelsLast(acc, ig.stride + 1, ig.size + 1, input_grad_n);
    }
}

template <typename T, Interpolation I, Padding P>
void Backward(const BackwardArgs& args, void* workspace) {
    using S = ComputeType<T>;
    if constexpr (I == Interpolation::kBilinear) {
        if (BackwardFromChannelsLastCopy(args)) return ChannelsLastCopyBackward<T, P>(args, workspace);
    }
    const BackwardWorkspace ws = LayOutWorkspace(args, workspace);
    int64_t acc_strides[5];
    S* acc;
    if constexpr (kAccumulatesInBuffer<T>) {
        acc = reinterpret_cast<S*>(ws.accumulator);
        for (int i = 0; i < 5; ++i) acc_strides[i] = ws.accumulator_stride[i];
    } else {
        acc = static_cast<S*>(args.input_grad.data);
        for (int i = 0; i < 5; ++i) acc_strides[i] = args.input_grad.stride[i];
    }
    const Problem<T> pb(args, acc, acc_strides);
    // Channels in vectors where the input and the accumulator have them next to each other
    // (gradOutput's are gathered where they are apart).
    const bool unit_channels =
        args.input.stride[1] == 1 && acc_strides[1] == 1 && GatherableChannelStride(args.grad_output.stride[1]);
    if (!args.compute_input_grad) {
        if (!args.compute_grid_grad) return;
        if (unit_channels)
            GridGradOnly<T, I, P, true>(pb);
        else
            GridGradOnly<T, I, P, false>(pb);
        return;
    }
    const SlabPlan plan = PlanSlabs(args);
    if (!plan.usable) {
        if (args.compute_grid_grad)
            PerChannelBackward<T, I, P, true>(pb);
        else
            PerChannelBackward<T, I, P, false>(pb);
    } else if (args.compute_grid_grad ? ScanBackward<T, I, P, true>(pb, ws) : ScanBackward<T, I, P, false>(pb, ws)) {
        // done by scanning
    } else if (args.compute_grid_grad) {
        if (unit_channels)
            SlabBackward<T, I, P, true, true>(pb, plan, ws);
        else
            SlabBackward<T, I, P, true, false>(pb, plan, ws);
    } else {
        if (unit_channels)
            SlabBackward<T, I, P, false, true>(pb, plan, ws);
        else
            SlabBackward<T, I, P, false, false>(pb, plan, ws);
    }
    if constexpr (kAccumulatesInBuffer<T>) StoreAccumulator(pb);
}

// The backward of element type T, its modes dispatched.
template <typename T>
void BackwardOfType(const BackwardArgs& args, void* workspace) {
    DispatchModes(args.options, [&](auto interpolation, auto padding) {
        Backward<T, decltype(interpolation)::value, decltype(padding)::value>(args, workspace);
    });
}

}  // namespace
}  // namespace HWY_NAMESPACE
}  // namespace gs3d::kernels
HWY_AFTER_NAMESPACE();

#endif  // GS3D_KERNELS_BACKWARD_KERNEL_INL_H_
