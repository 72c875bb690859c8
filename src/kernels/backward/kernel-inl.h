// The backward kernel: inputGrad (scatter of gradOutput through the sampling weights) and
// gridGrad (derivative of the sample with respect to the grid coordinates).
//
// No races, and a result that does not depend on the thread count, by one of two plans:
// - Scan (backward/scan-inl.h; grids close to the identity, nearest or one channel): one
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
//   (plan/row_order.h).
// Both compute gridGrad in the same pass from the same corners (coordinates once per point,
// blocks/backward-inl.h), summing over channels in order; fp16/bf16 accumulate in an fp32
// buffer and are rounded once at the end. Point by point (backward/point-inl.h) where the
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

#include "kernels/channels_last/copy-inl.h"
#include "kernels/blocks/backward-inl.h"
#include "kernels/channels_last/backward-inl.h"
#include "kernels/backward/point-inl.h"
#include "kernels/backward/slab_keys-inl.h"
#include "kernels/backward/scan-inl.h"
#include "kernels/blocks/cells-inl.h"
#include "kernels/tricubic/backward-inl.h"

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <thread>
#include <type_traits>
#include <vector>

#include "kernels/plan/backward.h"
#include "kernels/common/dispatch.h"
#include "kernels/common/fast_divide.h"
#include "kernels/grid_sampler3d_kernels.h"
#include "kernels/plan/row_order.h"
#include "kernels/row_phases/backward-inl.h"
#include "kernels/common/trilinear_corners.h"

HWY_BEFORE_NAMESPACE();
namespace gs3d::kernels {
namespace HWY_NAMESPACE {
namespace {

// inputGrad (and gridGrad, kGridGrad) by slabs:
// - keys: every point's slab; each grid row's points sorted by key within segments of up to
//   kSegmentPoints (SortSegment), with each segment's smallest and largest key;
// - the even slabs' tasks in parallel, each odd slab's once the even ones beside it are
//   done (a graph, below). An even slab's task zero-fills its slab and the next; then a task
//   takes, from each segment whose key range holds its slab, the run of that segment's points
//   with its key, in grid order within the row; the rows in bands (plan/row_order.h), the same
//   order for every task.
// Every element thus sums its contributions in a fixed order: the even slab's points, then
// the odd one's (a plane gets both where it is the first of a slab: the corners z0 + 1 of
// the slab before), each in that order; whatever the thread count.
// A slab task prefetches the keys and order of the row kKeysAhead rows ahead of it (band
// order), when that row (of one segment) meets its slab: a row's lines are read by the 5-6
// tasks whose slabs it meets, each at another time, so they had left the caches, and their
// loads were the walk's hottest instructions (perf, (2, 8, 64)).
constexpr int kKeysAhead = 8;
template <typename T, Interpolation I, bool kGridGrad, bool kUnitChannels>
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
        RowKeys<T, I>(pb, by_slab_depth, n, d, h, keys);
        for (int64_t s = 0; s < segments; ++s) {
            const int64_t first = s * kSegmentPoints;
            SortSegment(keys + first, order + first, std::min(kSegmentPoints, pb.out_w - first),
                        &ws.row_lowest[task * segments + s], &ws.row_highest[task * segments + s]);
        }
    }

    const bool blocks = OffsetsFit<S>(pb.acc_geometry) && OffsetsFit<S>(pb.in_geometry);
    const bool row_phases = !kUnitChannels && RowPhasesServe(pb);
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
    // Rows in bands (plan/row_order.h); a slab is thin, so a band may be wide.
    const int64_t row_bytes = a.input.size[4] * pb.channels * static_cast<int64_t>(sizeof(ComputeType<T>));
    const int64_t band = BandRows(row_bytes, kSortedBandBytes);
    auto run_slab = [&](int64_t n, int64_t slab) {
        if (slab % 2 == 0)  // zero this slab and the next: no task has written them yet
            pb.ZeroAccumulatorPlanes(n, slab * plan.slab_depth, std::min(vol_d, (slab + 2) * plan.slab_depth));
        PointBlock block;
        BlockChunk<T, kGridGrad, kUnitChannels> chunked(pb, n);
        auto submit = [&] {
            if constexpr (I == Interpolation::kNearest) {
                NearestBlock<T>(pb, n, block);
            } else if (row_phases) {
                RowPhasesBackwardBlock<T, kGridGrad>(pb, n, block, 0, vol_d);
            } else {
                PrepareBlock<T, kGridGrad>(pb, block, chunked.Next());
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
                    BackwardPoint<T, I, true, kGridGrad, kUnitChannels>(pb, n, d, h, first + order[i]);
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
// the cells' geometry the input's, since inputGrad's view need not be given); point by
// point it took as long as the full backward. Nearest point by point.
// With the channels last, RunBlock (points in vectors, a channel at a time) serves fewer
// than 8 channels better than the channels-last runner (channels in vectors), which wins
// from 8 on.
constexpr int64_t kGridGradOnlyChannelsLastMin = 8;

template <typename T, Interpolation I, bool kUnitChannels>
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
                    PrepareBlock<T, true>(input_only, points, prepared);
                    if (kUnitChannels && pb.channels >= kGridGradOnlyChannelsLastMin) {
                        prepared.whole = false;
                        RunChannelsLastBlock<T, true>(input_only, n, prepared);
                    } else {
                        prepared.stream_grid_grad = pb.args.stream_grid_grad;
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
        for (int64_t w = 0; w < pb.out_w; ++w) BackwardPoint<T, I, false, true, kUnitChannels>(pb, n, d, h, w);
    }
}

// inputGrad when the slab plan does not apply (more than 2^32 points per batch item):
// tasks own whole (n, c) volumes and visit every point of n in order.
template <typename T, Interpolation I, bool kGridGrad>
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
                    BackwardPoint<T, I, true, false, false>(one, n, d, h, w);
    }
    if constexpr (kGridGrad) GridGradOnly<T, I, false>(pb);
}

// BackwardPath::kChannelsLastCopy: batch item by batch item, the input copied as
// (D, H, W, C) into inputGrad's own memory (with gridGrad; nothing else reads it), inputGrad
// accumulated as (D, H, W, C) in the workspace (fp32 for fp16 and bf16, rounded once as it
// is copied out) by the sorted slabs with channels in vectors (RunChannelsLastBlock;
// gradOutput's channels gathered), then copied into inputGrad over the input's copy. A
// point's corners are then eight runs of C elements in each volume instead of 8 x C lines
// (a third faster from 4 channels; 2 channels lose, as they go one by one).
template <typename T>
void ChannelsLastCopyBackward(const BackwardArgs& args, const BackwardPlan& plan, const BackwardWorkspace& ws) {
    using S = ComputeType<T>;
    const View5& in = args.input;
    const View5& ig = args.input_grad;
    S* acc = reinterpret_cast<S*>(ws.accumulator);
    const int64_t* channels_last = ws.accumulator_stride;  // (D, H, W, C), also the input's copy
    for (int64_t n = 0; n < in.size[0]; ++n) {
        BackwardArgs item = OneBatchItem(args, n);
        T* input_grad_n = static_cast<T*>(item.input_grad.data);
        if (args.compute_grid_grad) {
            if (args.first_chunk)  // later chunks find the copy there (BackwardArgs)
                CopyToChannelsLast(static_cast<const T*>(item.input.data), in.stride + 1, in.size + 1, input_grad_n);
            item.input.data = input_grad_n;
            std::copy(channels_last, channels_last + 5, item.input.stride);
        }
        item.input_grad.data = acc;  // the accumulator's shape and strides (pb writes through acc)
        std::copy(channels_last, channels_last + 5, item.input_grad.stride);
        const Problem<T> pb(item, acc, channels_last);
        if (plan.grid_grad)
            SlabBackward<T, Interpolation::kBilinear, true, true>(pb, plan.slabs, ws);
        else
            SlabBackward<T, Interpolation::kBilinear, false, true>(pb, plan.slabs, ws);
        if (args.last_chunk) CopyFromChannelsLast(acc, ig.stride + 1, ig.size + 1, input_grad_n);
    }
}

// The scan where it takes the grid, else the sorted slabs (BackwardPath::kScanElseSortedSlabs).
template <typename T, Interpolation I, bool kGridGrad>
void ScanElseSortedSlabs(const Problem<T>& pb, const BackwardPlan& plan, const BackwardWorkspace& ws) {
    if (ScanBackward<T, I, kGridGrad>(pb, ws)) return;
    if (plan.unit_channels)
        SlabBackward<T, I, kGridGrad, true>(pb, plan.slabs, ws);
    else
        SlabBackward<T, I, kGridGrad, false>(pb, plan.slabs, ws);
}

template <typename T, Interpolation I>
void Backward(const BackwardArgs& args, const BackwardPlan& plan, void* workspace) {
    using S = ComputeType<T>;
    const BackwardWorkspace ws = WorkspaceAt(plan.workspace, workspace);
    if constexpr (I == Interpolation::kBilinear) {
        if (plan.path == BackwardPath::kChannelsLastCopy) return ChannelsLastCopyBackward<T>(args, plan, ws);
    }
    // inputGrad sums in place, or in the workspace's fp32 copy for fp16 and bf16.
    S* acc = kAccumulatesInBuffer<T> ? reinterpret_cast<S*>(ws.accumulator) : static_cast<S*>(args.input_grad.data);
    const Problem<T> pb(args, acc, kAccumulatesInBuffer<T> ? ws.accumulator_stride : args.input_grad.stride);
    switch (plan.path) {
        case BackwardPath::kNothing:
        case BackwardPath::kChannelsLastCopy:  // bilinear only (above)
        case BackwardPath::kTricubic:          // tricubic only (BackwardOfType)
            return;
        case BackwardPath::kGridGradOnly:
            return plan.unit_channels ? GridGradOnly<T, I, true>(pb) : GridGradOnly<T, I, false>(pb);
        case BackwardPath::kPerChannel:
            if (plan.grid_grad)
                PerChannelBackward<T, I, true>(pb);
            else
                PerChannelBackward<T, I, false>(pb);
            break;
        case BackwardPath::kScanElseSortedSlabs:
            if (plan.grid_grad)
                ScanElseSortedSlabs<T, I, true>(pb, plan, ws);
            else
                ScanElseSortedSlabs<T, I, false>(pb, plan, ws);
            break;
    }
    if constexpr (kAccumulatesInBuffer<T>) {
        if (args.last_chunk) StoreAccumulator(pb);
    }
}

// The backward of element type T, its modes dispatched.
template <typename T>
void BackwardOfType(const BackwardArgs& args, const BackwardPlan& plan, void* workspace) {
    if (args.options.interpolation == Interpolation::kTricubic) return TricubicBackward<T>(args, plan, workspace);
    DispatchInterpolation(args.options, [&](auto interpolation) {
        Backward<T, decltype(interpolation)::value>(args, plan, workspace);
    });
}

}  // namespace
}  // namespace HWY_NAMESPACE
}  // namespace gs3d::kernels
HWY_AFTER_NAMESPACE();

#endif  // GS3D_KERNELS_BACKWARD_KERNEL_INL_H_
