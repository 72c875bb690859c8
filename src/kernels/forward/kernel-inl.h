// The forward kernel: out[n, c, d, h, w] = input sampled at grid[n, d, h, w].
//
// Threads split the rows (n, d, h) of the grid; every output element is written by one
// thread, so the result does not depend on the thread count. -ffp-contract=off (see
// CMakeLists.txt) keeps a * b + c two roundings on every target, as PyTorch computes it.
//
// Compiled into each SIMD target (Google Highway's foreach_target, chosen at run time, so
// that floor, nearbyint and the channel loops use the best instructions the CPU has) of each
// element type's translation unit (kernels_float32.cpp and its siblings, through
// kernel_entry-inl.h); Highway's per-target include guard.
#if defined(GS3D_KERNELS_FORWARD_KERNEL_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef GS3D_KERNELS_FORWARD_KERNEL_INL_H_
#undef GS3D_KERNELS_FORWARD_KERNEL_INL_H_
#else
#define GS3D_KERNELS_FORWARD_KERNEL_INL_H_
#endif

#include <hwy/cache_control.h>
#include <hwy/highway.h>

#include "kernels/channels_last/copy-inl.h"
#include "kernels/row_phases/forward-inl.h"
#include "kernels/blocks/cells-inl.h"
#include "kernels/tricubic/forward-inl.h"

#include <algorithm>
#include <cstdint>
#include <type_traits>

#include "kernels/common/dispatch.h"
#include "kernels/grid_sampler3d_kernels.h"
#include "kernels/common/trilinear_corners.h"

HWY_BEFORE_NAMESPACE();
namespace gs3d::kernels {
namespace HWY_NAMESPACE {
namespace {

// One point's eight corners, every channel: corner k of channel 0 at base + offset[k], with
// weight w[k]; inside: whether each corner counts (nullptr: all eight do), the others are
// skipped as PyTorch skips them. kUnitInput: channels next to each other, in vectors of D,
// then at most one of 8 and one of 4 lanes, then scalar; each lane the scalar loop's sum,
// in its order (no fused multiply-add), so every path gives the same bits.
template <typename T, bool kUnitChannels, bool kUnitInput, typename S = ComputeType<T>>
HWY_INLINE void SampleCorners(const T* HWY_RESTRICT base, const int64_t offset[8], const bool* inside, const S* w,
                              int64_t channels, int64_t in_cs, T* HWY_RESTRICT out_p, int64_t out_cs) {
    int64_t c = 0;
    if constexpr (kUnitInput) {
        // Forced inline, as GCC otherwise called it out of line for some element types and
        // layouts (and its choice moves with unrelated edits).
        auto vectors = [&](auto dv, int64_t end) HWY_ATTR __attribute__((always_inline)) {
            const int64_t lanes = static_cast<int64_t>(hn::Lanes(dv));
            for (; c + lanes <= end; c += lanes) {
                auto value = hn::Zero(dv);
                for (int k = 0; k < 8; ++k)
                    if (inside == nullptr || inside[k])
                        value = hn::Add(value, hn::Mul(LoadLanes(dv, base + offset[k] + c), hn::Set(dv, w[k])));
                StoreRowLanes(dv, value, out_p + c * out_cs, 0, static_cast<int>(lanes), out_cs);
            }
        };
        const hn::ScalableTag<S> d;
        vectors(d, channels);
        if constexpr (hn::MaxLanes(d) > 8) vectors(hn::CappedTag<S, 8>(), channels);
        if constexpr (hn::MaxLanes(d) > 4) vectors(hn::CappedTag<S, 4>(), channels);
    }
    for (; c < channels; ++c) {
        const T* v = base + c * in_cs;
        S value = 0;
        for (int k = 0; k < 8; ++k)
            if (inside == nullptr || inside[k]) value += LoadElement(v + offset[k]) * w[k];
        StoreElement<T>(value, out_p + c * out_cs);
    }
}

// Samples one grid point into every channel. kUnitChannels: input and out have channel
// stride 1 (NDHWC), so the channel loop runs over contiguous memory and vectorises;
// kUnitInput: the input alone (a channels-last copy, SampleFromChannelsLastCopy).
// The point's source indices ix, iy, iz: from RowSourceIndices (vector form, bitwise the
// scalar SourceIndex).
template <typename T, Interpolation I, bool kUnitChannels, bool kUnitInput = kUnitChannels,
          typename S = ComputeType<T>>
HWY_INLINE void SamplePoint(const ForwardArgs& args, const T* HWY_RESTRICT in_n, S ix, S iy, S iz,
                            T* HWY_RESTRICT out_p, const TrilinearGeometry& geometry) {
    const View5& in = args.input;
    const int64_t channels = in.size[1];
    const int64_t in_cs = kUnitInput ? 1 : in.stride[1];
    const int64_t out_cs = kUnitChannels ? 1 : args.out.stride[1];
    if constexpr (I == Interpolation::kBilinear) {
        TrilinearCorners<S> corners;
        if (corners.Compute(ix, iy, iz, geometry)) {  // all eight corners inside: no tests
            const T* base = in_n + corners.z0 * geometry.stride[0] + corners.y0 * geometry.stride[1] +
                            corners.x0 * geometry.stride[2];
            SampleCorners<T, kUnitChannels, kUnitInput>(base, geometry.corner_delta, nullptr, corners.weight, channels,
                                                        in_cs, out_p, out_cs);
        } else {  // some corners outside: those are skipped
            SampleCorners<T, kUnitChannels, kUnitInput>(in_n, corners.offset, corners.inside, corners.weight, channels,
                                                        in_cs, out_p, out_cs);
        }
    } else {
        NearestCorner corner;
        corner.Compute(ix, iy, iz, geometry);
        for (int64_t c = 0; c < channels; ++c) {
            const S value = corner.inside ? LoadElement(in_n + c * in_cs + corner.offset) : S(0);
            StoreElement<T>(value, out_p + c * out_cs);
        }
    }
}

// Samples the points [w_begin, w_begin + count) of a grid row point by point (SamplePoint),
// their source indices 64 at a time in vector form (RowSourceIndices); point i's channels
// go to out(i).
template <typename T, Interpolation I, bool kUnitChannels, bool kUnitInput, typename PointOut>
HWY_INLINE void SampleRowPoints(const ForwardArgs& args, const T* in_n, const T* grid_row, int64_t w_begin,
                                int64_t count, const TrilinearGeometry& geometry, PointOut out) {
    using S = ComputeType<T>;
    HWY_ALIGN S index[3][kBlock];
    // Bilinear from channels next to each other: the block's cells, weights and first-corner
    // offsets in vector form (BlockCells, the same products as TrilinearCorners), so that the
    // loop over the points is little more than their corners' loads. Point by point, each
    // point's scalar floors, weights and offsets stood between its loads and the next
    // point's, and a noisy grid's corners (other rows and planes, mostly beyond L1) were
    // waited for a point or two at a time.
    constexpr bool kCellsInVectors = I == Interpolation::kBilinear && kUnitInput;
    const bool cells_in_vectors = kCellsInVectors && OffsetsFit<S>(geometry);
    const int64_t channels = args.input.size[1];
    const int64_t out_cs = kUnitChannels ? 1 : args.out.stride[1];
    for (int64_t b = 0; b < count; b += kBlock) {
        const int points = static_cast<int>(std::min<int64_t>(kBlock, count - b));
        RowSourceIndices<T>(args, grid_row, w_begin + b, points, index);
        if constexpr (kCellsInVectors) {
            if (cells_in_vectors) {
                BlockCells<S> cells;
                HWY_ALIGN typename BlockCells<S>::Offset base[kBlock];
                cells.ComputeWithBases(index[0], index[1], index[2], points, geometry, base);
                for (int i = 0; i < points; ++i) {
                    if (cells.point_inside[i] != 0) {
                        const S w[8] = {cells.weight[0][i], cells.weight[1][i], cells.weight[2][i], cells.weight[3][i],
                                        cells.weight[4][i], cells.weight[5][i], cells.weight[6][i], cells.weight[7][i]};
                        SampleCorners<T, kUnitChannels, kUnitInput>(in_n + base[i], geometry.corner_delta, nullptr, w,
                                                                    channels, 1, out(b + i), out_cs);
                    } else {
                        SamplePoint<T, I, kUnitChannels, kUnitInput>(args, in_n, index[0][i], index[1][i],
                                                                        index[2][i], out(b + i), geometry);
                    }
                }
                continue;
            }
        }
        for (int i = 0; i < points; ++i)
            SamplePoint<T, I, kUnitChannels, kUnitInput>(args, in_n, index[0][i], index[1][i], index[2][i],
                                                            out(b + i), geometry);
    }
}

// The same where the corners do not pair up (W = 1, or the input's W stride not 1), with the
// cells in arrays (BlockCells) and the corners gathered.
template <typename T, typename S = ComputeType<T>>
HWY_NOINLINE void BilinearForwardBlock(const ForwardArgs& args, const T* in_n, const T* grid_row, T* out_row,
                                       int64_t w_begin, int count, const TrilinearGeometry& geometry) {
    const hn::ScalableTag<S> d;
    const int lanes = static_cast<int>(hn::Lanes(d));
    const int padded = (count + lanes - 1) / lanes * lanes;
    const View5& in = args.input;
    HWY_ALIGN S index[3][kBlock], v[8][kBlock];
    HWY_ALIGN typename BlockCells<S>::Offset base[kBlock];
    BlockCells<S> cells;
    RowSourceIndices<T>(args, grid_row, w_begin, count, index);
    cells.ComputeWithBases(index[0], index[1], index[2], count, geometry, base);
    const T* in_data = static_cast<const T*>(in.data);
    const int64_t in_last = LastElementOffset(in);
    const auto zero = hn::Zero(d);
    const int64_t out_ws = args.out.stride[4];
    for (int64_t c = 0; c < in.size[1]; ++c) {
        const T* in_c = in_n + c * in.stride[1];
        cells.LoadCorners(in_c, base, geometry.corner_delta, in_last - (in_c - in_data), v);
        T* out_c = out_row + c * args.out.stride[1] + w_begin * out_ws;
        for (int i = 0; i < padded; i += lanes) {
            auto sum = zero;
            for (int k = 0; k < 8; ++k) {
                auto term = hn::Mul(hn::Load(d, v[k] + i), hn::Load(d, cells.weight[k] + i));
                if (!cells.all_inside) term = hn::IfThenElseZero(hn::Ne(hn::Load(d, cells.inside[k] + i), zero), term);
                sum = hn::Add(sum, term);
            }
            StoreRowLanes(d, sum, out_c, i, count, out_ws);
        }
    }
}

// The nearest voxels of a row segment of up to kBlock points, vectorised across points:
// source indices with SIMD, the voxel by round half to even (NearestIndex).
template <typename T, typename S = ComputeType<T>>
HWY_INLINE void NearestBlockVoxels(const ForwardArgs& args, const T* grid_row, int64_t w_begin, int count,
                                   const TrilinearGeometry& geometry, BlockVoxels<S>& voxels) {
    const int lanes = static_cast<int>(hn::Lanes(hn::ScalableTag<S>()));
    const int padded = (count + lanes - 1) / lanes * lanes;
    HWY_ALIGN S index[3][kBlock];
    RowSourceIndices<T>(args, grid_row, w_begin, count, index);
    const S* const indices[3] = {index[0], index[1], index[2]};
    voxels.Compute(indices, padded, count, geometry);
}

// One channel of a nearest block: each point's voxel gathered from in_c, or 0 outside.
template <typename T, typename S = ComputeType<T>>
HWY_INLINE void StoreNearestChannel(const BlockVoxels<S>& voxels, const T* in_c, T* out_c, int64_t out_ws) {
    const hn::ScalableTag<S> d;
    const hn::RebindToSigned<decltype(d)> di;
    const int lanes = static_cast<int>(hn::Lanes(d));
    const auto zero = hn::Zero(d);
    if constexpr (std::is_same_v<T, S>) {
        for (int i = 0; i < voxels.padded; i += lanes) {
            auto v = hn::GatherIndex(d, in_c, hn::Load(di, voxels.offset + i));  // outside: element 0
            if (!voxels.all_inside) v = hn::IfThenElseZero(hn::Ne(hn::Load(d, voxels.inside + i), zero), v);
            StoreRowLanes(d, v, out_c, i, voxels.count, out_ws);
        }
    } else {
        for (int i = 0; i < voxels.count; ++i)
            StoreElement<T>(voxels.inside[i] != 0 ? LoadElement(in_c + voxels.offset[i]) : S(0), out_c + i * out_ws);
    }
}

// Asks for the lines of a block's voxels in in_c (outside points: element 0) to be brought
// into the caches: the gathers' addresses are known a sweep step ahead, which the hardware
// prefetchers cannot guess (with a noisy grid they jump between rows and planes).
template <typename T, typename S>
HWY_INLINE void PrefetchVoxels(const BlockVoxels<S>& voxels, const T* in_c) {
    for (int i = 0; i < voxels.count; ++i) hwy::Prefetch(in_c + voxels.offset[i]);
}

// Nearest with the channels apart (NCDHW): the grid's row segments taken kNearestChunk
// blocks at a time, in grid order; the chunk's voxels found once, then channel after channel
// every block of the chunk gathered and stored, each block's voxels prefetched
// kNearestPrefetchAhead blocks before (in the sweep over channels and blocks). Why channel
// after channel: a point's channels lie in C volumes, so point by point each step touches
// C distant lines of the input and C of the output, more streams than the prefetchers
// follow; one channel over a
// chunk reads a few planes' rows of one volume and writes one run of the output. Every
// output element is still written by one thread, from the same voxel.
constexpr int kNearestChunk = 64;
// Prefetching 4 blocks ahead pays with the data cold (as right after another library's
// call): up to 40% at one thread; with the data hot it costs a few percent.
constexpr int64_t kNearestPrefetchAhead = 4;

template <typename T>
void NearestForwardInChunks(const ForwardArgs& args, const TrilinearGeometry& geometry) {
    using S = ComputeType<T>;
    const View5& in = args.input;
    const View5& grid = args.grid;
    const View5& out = args.out;
    const auto* in_data = static_cast<const T*>(in.data);
    const auto* grid_data = static_cast<const T*>(grid.data);
    auto* out_data = static_cast<T*>(out.data);
    const int64_t out_d = grid.size[1], out_h = grid.size[2], out_w = grid.size[3];
    const int64_t segments = (out_w + kBlock - 1) / kBlock;  // per row
    const int64_t blocks = in.size[0] * out_d * out_h * segments;
    const int64_t chunks = (blocks + kNearestChunk - 1) / kNearestChunk;
    const int64_t out_ws = out.stride[4];

#pragma omp parallel for schedule(static)
    for (int64_t chunk = 0; chunk < chunks; ++chunk) {
        struct Block {
            const T* in_n;
            T* out_first;  // the segment's first point in channel 0
        };
        BlockVoxels<S> voxels[kNearestChunk];
        Block block[kNearestChunk];
        const int64_t first = chunk * kNearestChunk;
        const int count = static_cast<int>(std::min<int64_t>(kNearestChunk, blocks - first));
        for (int b = 0; b < count; ++b) {
            const int64_t segment = (first + b) % segments, row = (first + b) / segments;
            const int64_t h = row % out_h, d = row / out_h % out_d, n = row / (out_h * out_d);
            const int64_t w = segment * kBlock;
            const T* g = grid_data + n * grid.stride[0] + d * grid.stride[1] + h * grid.stride[2];
            NearestBlockVoxels<T>(args, g, w, static_cast<int>(std::min<int64_t>(kBlock, out_w - w)), geometry,
                                     voxels[b]);
            block[b] = {in_data + n * in.stride[0],
                        out_data + n * out.stride[0] + d * out.stride[2] + h * out.stride[3] + w * out_ws};
        }
        // The sweep's step (c, b), and kNearestPrefetchAhead steps ahead the voxels to prefetch.
        for (int64_t c = 0; c < in.size[1]; ++c)
            for (int b = 0; b < count; ++b) {
                const int64_t ahead = c * count + b + kNearestPrefetchAhead;
                if (ahead < in.size[1] * count) {
                    const int64_t ahead_c = ahead / count, ahead_b = ahead % count;
                    PrefetchVoxels(voxels[ahead_b], block[ahead_b].in_n + ahead_c * in.stride[1]);
                }
                StoreNearestChannel<T>(voxels[b], block[b].in_n + c * in.stride[1], block[b].out_first + c * out.stride[1],
                                       out_ws);
            }
    }
}

// Batch item by batch item: the input's channels copied next to each other (D, H, W, C) into
// the workspace, then every point sampled from the copy (SamplePoint with a unit channel
// stride) into the output as it is laid out. A point's corners are then eight runs of C
// elements instead of 8 x C elements in C volumes. The sums are the same, in the same order,
// so the output is bitwise that of sampling the input where it lies.
template <typename T, Interpolation I>
void SampleFromChannelsLastCopy(const ForwardArgs& args, T* copy) {
    const View5& in = args.input;
    const int64_t channels = in.size[1], height = in.size[3], width = in.size[4];
    ForwardArgs from_copy = args;
    from_copy.input.data = copy;
    const int64_t copy_stride[5] = {0, 1, height * width * channels, width * channels, channels};
    std::copy(copy_stride, copy_stride + 5, from_copy.input.stride);
    const TrilinearGeometry geometry(from_copy.input);
    const View5& grid = args.grid;
    const View5& out = args.out;
    const int64_t out_d = grid.size[1], out_h = grid.size[2], out_w = grid.size[3];
    const int64_t piece = StagedColumns(channels);  // points per piece of a row (below)
    for (int64_t n = 0; n < in.size[0]; ++n) {
        const int64_t from_stride[4] = {in.stride[1], in.stride[2], in.stride[3], in.stride[4]};
        if (!args.input_copied)
            CopyToChannelsLast(static_cast<const T*>(in.data) + n * in.stride[0], from_stride, in.size + 1, copy);
        const T* grid_n = static_cast<const T*>(grid.data) + n * grid.stride[0];
        T* out_n = static_cast<T*>(out.data) + n * out.stride[0];
#pragma omp parallel for schedule(static)
        for (int64_t row = 0; row < out_d * out_h; ++row) {
            const int64_t d = row / out_h, h = row % out_h;
            const T* g = grid_n + d * grid.stride[1] + h * grid.stride[2];
            T* out_row = out_n + d * out.stride[2] + h * out.stride[3];
            if (out.stride[1] == 1 || channels * piece > kCopyStaged) {
                SampleRowPoints<T, I, false, true>(from_copy, copy, g, 0, out_w, geometry,
                                                      [&](int64_t w) { return out_row + w * out.stride[4]; });
                continue;
            }
            // Channels apart in the output (NCDHW): a piece of the row's points sampled into
            // L1 as (w, c), turned into (c, w), then written channel by channel in runs.
            // Point by point, each point's C stores go to C planes, whose addresses share
            // their low 12 bits where a plane is a multiple of 4 KiB (48^3 or 64^3 fp32), so
            // every store line falls in one L1 set and is evicted before the next point
            // writes it (three times slower than into an NDHWC output).
            HWY_ALIGN T by_point[kCopyStaged], by_channel[kCopyStaged];
            for (int64_t w0 = 0; w0 < out_w; w0 += piece) {
                const int64_t count = std::min(piece, out_w - w0);
                SampleRowPoints<T, I, true, true>(from_copy, copy, g, w0, count, geometry,
                                                     [&](int64_t w) { return by_point + w * channels; });
                TransposePiece<false>(by_point, by_channel, channels, count);
                for (int64_t c = 0; c < channels; ++c) {
                    T* out_c = out_row + c * out.stride[1] + w0 * out.stride[4];
                    // Streamed (non-temporal stores, StreamRun): nothing here reads the output
                    // back (5-10% faster). The block path's output (C < 4) and the nearest
                    // forward's were slower streamed, so they store as usual.
                    int64_t w = out.stride[4] == 1 ? StreamRun(by_channel + c * count, out_c, count) : 0;
                    for (; w < count; ++w) out_c[w * out.stride[4]] = by_channel[c * count + w];
                }
            }
            hwy::FlushStream();  // the row's streamed output, before the loop's closing barrier
        }
    }
}

template <typename T, Interpolation I, bool kUnitChannels>
void Forward(const ForwardArgs& args) {
    const View5& in = args.input;
    const View5& grid = args.grid;
    const View5& out = args.out;
    const auto* in_data = static_cast<const T*>(in.data);
    const auto* grid_data = static_cast<const T*>(grid.data);
    auto* out_data = static_cast<T*>(out.data);
    const int64_t out_d = grid.size[1], out_h = grid.size[2], out_w = grid.size[3];
    const int64_t rows = in.size[0] * out_d * out_h;
    // An output without elements: nothing to write, and the empty tensors' data may be null
    // (offsetting a null pointer is undefined).
    if (rows == 0 || out_w == 0 || in.size[1] == 0) return;
    const TrilinearGeometry geometry(in);
    const bool simd_offsets = OffsetsFit<ComputeType<T>>(geometry);
    [[maybe_unused]] const bool row_phases = CornerPairsServe<ComputeType<T>>(geometry);
    if constexpr (!kUnitChannels && I == Interpolation::kNearest) {
        if (simd_offsets) return NearestForwardInChunks<T>(args, geometry);
    }

#pragma omp parallel for schedule(static)
    for (int64_t row = 0; row < rows; ++row) {
        const int64_t h = row % out_h, d = row / out_h % out_d, n = row / (out_h * out_d);
        const T* in_n = in_data + n * in.stride[0];
        const T* g = grid_data + n * grid.stride[0] + d * grid.stride[1] + h * grid.stride[2];
        T* out_row = out_data + n * out.stride[0] + d * out.stride[2] + h * out.stride[3];
        if constexpr (!kUnitChannels) {
            if (simd_offsets) {
                for (int64_t w = 0; w < out_w; w += kBlock) {
                    const int count = static_cast<int>(std::min<int64_t>(kBlock, out_w - w));
                    if (row_phases)
                        RowPhasesForwardBlock<T>(args, in_n, g, out_row, w, count, geometry);
                    else
                        BilinearForwardBlock<T>(args, in_n, g, out_row, w, count, geometry);
                }
                continue;
            }
        }
        SampleRowPoints<T, I, kUnitChannels, kUnitChannels>(
            args, in_n, g, 0, out_w, geometry, [&](int64_t w) { return out_row + w * out.stride[4]; });
    }
}

// The forward of element type T, its modes dispatched.
template <typename T>
void ForwardOfType(const ForwardArgs& args, const ForwardPlan& plan, void* workspace) {
    if (args.options.interpolation == Interpolation::kTricubic) return TricubicForward<T>(args);
    DispatchInterpolation(args.options, [&](auto interpolation) {
        constexpr Interpolation I = decltype(interpolation)::value;
        if constexpr (I == Interpolation::kBilinear) {
            if (plan.from_channels_last_copy)
                return SampleFromChannelsLastCopy<T, I>(args, static_cast<T*>(workspace));
        }
        if (plan.unit_channels)
            Forward<T, I, true>(args);
        else
            Forward<T, I, false>(args);
    });
}

}  // namespace
}  // namespace HWY_NAMESPACE
}  // namespace gs3d::kernels
HWY_AFTER_NAMESPACE();

#endif  // GS3D_KERNELS_FORWARD_KERNEL_INL_H_
