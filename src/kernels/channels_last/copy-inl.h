// Copies of one batch item between its own layout (any strides) and a dense channels-last
// buffer (D, H, W, C): the forward samples from such a copy of the input, and the backward
// reads one and accumulates inputGrad into another (backward/kernel-inl.h). Threads
// split the (d, h) rows. Each row goes through a block of L1 in pieces of whole columns
// (`staged`, channel by channel), so that the strided side is read or written in runs and
// the channels-last side in order; between the two, 4 x 4 tiles are transposed in 128-bit
// registers (4-byte elements; others and the scalar target element by element).
//
// Compiled into each SIMD target: included by the kernels' .cpp files (after
// foreach_target.h) only; Highway's per-target include guard.
#if defined(GS3D_KERNELS_CHANNELS_LAST_COPY_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef GS3D_KERNELS_CHANNELS_LAST_COPY_INL_H_
#undef GS3D_KERNELS_CHANNELS_LAST_COPY_INL_H_
#else
#define GS3D_KERNELS_CHANNELS_LAST_COPY_INL_H_
#endif

#include <hwy/cache_control.h>
#include <hwy/highway.h>

#include <algorithm>
#include <cstdint>
#include <type_traits>

#include "kernels/common/element_types.h"

HWY_BEFORE_NAMESPACE();
namespace gs3d::kernels {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// Elements per staged piece of a row: 16 KiB of fp32, which stays in L1 while the C runs
// are interleaved (twice as fast as reading the C runs element by element).
constexpr int64_t kCopyStaged = 4096;

// Columns (w) per staged piece for C channels: a multiple of 4 (whole tiles) where C allows.
inline int64_t StagedColumns(int64_t channels) {
    const int64_t columns = kCopyStaged / std::max<int64_t>(1, channels);
    return columns >= 4 ? columns / 4 * 4 : std::max<int64_t>(1, columns);
}

// Whether 4 x 4 tiles of T go through 128-bit registers on this target.
template <typename T>
constexpr bool kTransposesTiles = sizeof(T) == 4 && HWY_TARGET != HWY_SCALAR;

#if HWY_TARGET != HWY_SCALAR
// Rows r[k] = (a[k][0..3]) to columns: out[j] = (a[0][j], a[1][j], a[2][j], a[3][j]).
template <class D, class V = hn::Vec<D>>
HWY_INLINE void Transpose4x4(D d, const V r[4], V out[4]) {
    const V t0 = hn::InterleaveLower(d, r[0], r[1]), t1 = hn::InterleaveLower(d, r[2], r[3]);
    const V t2 = hn::InterleaveUpper(d, r[0], r[1]), t3 = hn::InterleaveUpper(d, r[2], r[3]);
    out[0] = hn::ConcatLowerLower(d, t1, t0);
    out[1] = hn::ConcatUpperUpper(d, t1, t0);
    out[2] = hn::ConcatLowerLower(d, t3, t2);
    out[3] = hn::ConcatUpperUpper(d, t3, t2);
}
#endif

// A piece of `count` columns of `channels` rows: channel rows (c * count + w) to
// interleaved columns (w * channels + c), kToChannelsLast; else the other way.
template <bool kToChannelsLast, typename T>
HWY_INLINE void TransposePiece(const T* HWY_RESTRICT from, T* HWY_RESTRICT to, int64_t channels, int64_t count) {
    // Element (c, w) of the source and of the destination.
    auto source = [&](int64_t c, int64_t w) { return kToChannelsLast ? c * count + w : w * channels + c; };
    auto target = [&](int64_t c, int64_t w) { return kToChannelsLast ? w * channels + c : c * count + w; };
    // Whole tiles: channels [0, tiled_c) x columns [0, tiled_w); the rest element by element.
    int64_t tiled_c = 0, tiled_w = 0;
#if HWY_TARGET != HWY_SCALAR
    if constexpr (kTransposesTiles<T>) {
        using U = hwy::MakeUnsigned<T>;  // the bits, whatever the element type
        const hn::CappedTag<U, 4> d;
        const U* HWY_RESTRICT s = reinterpret_cast<const U*>(from);
        U* HWY_RESTRICT t = reinterpret_cast<U*>(to);
        tiled_c = channels / 4 * 4, tiled_w = count / 4 * 4;
        for (int64_t c0 = 0; c0 < tiled_c; c0 += 4)
            for (int64_t w0 = 0; w0 < tiled_w; w0 += 4) {
                // The tile's four source vectors: channels c0.. at column w0.., or columns w0..
                // at channel c0..; transposed, they are the destination's.
                hn::Vec<decltype(d)> in[4], out[4];
                for (int k = 0; k < 4; ++k)
                    in[k] = hn::LoadU(d, s + (kToChannelsLast ? source(c0 + k, w0) : source(c0, w0 + k)));
                Transpose4x4(d, in, out);
                for (int k = 0; k < 4; ++k)
                    hn::StoreU(out[k], d, t + (kToChannelsLast ? target(c0, w0 + k) : target(c0 + k, w0)));
            }
    }
#endif
    for (int64_t w = 0; w < count; ++w)
        for (int64_t c = w < tiled_w ? tiled_c : 0; c < channels; ++c) to[target(c, w)] = from[source(c, w)];
}

// from: the batch item's element (c, d, h, w) at from[c * stride[0] + d * stride[1] +
// h * stride[2] + w * stride[3]]; size: (C, D, H, W). to: C * D * H * W elements.
template <typename T>
void CopyToChannelsLast(const T* from, const int64_t stride[4], const int64_t size[4], T* to) {
    const int64_t channels = size[0], depth = size[1], height = size[2], width = size[3];
    const int64_t block_w = StagedColumns(channels);
#pragma omp parallel for schedule(static)
    for (int64_t row = 0; row < depth * height; ++row) {
        const T* from_row = from + row / height * stride[1] + row % height * stride[2];
        T* to_row = to + row * width * channels;
        HWY_ALIGN T staged[kCopyStaged];
        for (int64_t w0 = 0; w0 < width; w0 += block_w) {
            const int64_t count = std::min(block_w, width - w0);
            if (channels * count > kCopyStaged) {  // more than kCopyStaged channels: element by element
                for (int64_t c = 0; c < channels; ++c) to_row[w0 * channels + c] = from_row[c * stride[0] + w0 * stride[3]];
                continue;
            }
            for (int64_t c = 0; c < channels; ++c)
                for (int64_t w = 0; w < count; ++w) staged[c * count + w] = from_row[c * stride[0] + (w0 + w) * stride[3]];
            TransposePiece<true>(staged, to_row + w0 * channels, channels, count);
        }
    }
}

// Copies from[0, count) to to[0, count) with non-temporal stores where whole aligned vectors
// fit; returns the count copied, from the start (the caller copies the rest and fences with
// hwy::FlushStream). For outputs that nothing here reads again (the way back, below, the
// forward's NCDHW output from a copy, and the backward's packed gridGrad in RunBlock): a
// plain store first reads each line it writes (the read for ownership) and keeps it in the
// caches: streamed, the way back is 2-7% faster. The way there (the copy that the kernels
// then read) is not streamed: its reads would then come from memory (a third slower).
// Only a copy without conversion of fp32 or fp64 streams (0 for the others: the caller
// converts element by element).
template <typename From, typename To>
HWY_INLINE int64_t StreamRun(const From* HWY_RESTRICT from, To* HWY_RESTRICT to, int64_t count) {
    if constexpr (std::is_same_v<From, To> && (std::is_same_v<To, float> || std::is_same_v<To, double>)) {
        const hn::ScalableTag<To> d;
        const int64_t lanes = static_cast<int64_t>(hn::Lanes(d));
        if (reinterpret_cast<uintptr_t>(to) % (lanes * sizeof(To)) != 0) return 0;
        int64_t w = 0;
        for (; w + lanes <= count; w += lanes) hn::Stream(hn::LoadU(d, from + w), d, to + w);
        return w;
    } else {
        return 0;
    }
}

// The way back: from a dense channels-last buffer (compute type S) into the batch item's
// layout (element type T, rounded by FromCompute).
template <typename S, typename T>
void CopyFromChannelsLast(const S* from, const int64_t stride[4], const int64_t size[4], T* to) {
    const int64_t channels = size[0], depth = size[1], height = size[2], width = size[3];
    const int64_t block_w = StagedColumns(channels);
#pragma omp parallel
    {
#pragma omp for schedule(static) nowait
    for (int64_t row = 0; row < depth * height; ++row) {
        const S* from_row = from + row * width * channels;
        T* to_row = to + row / height * stride[1] + row % height * stride[2];
        HWY_ALIGN S staged[kCopyStaged];
        for (int64_t w0 = 0; w0 < width; w0 += block_w) {
            const int64_t count = std::min(block_w, width - w0);
            if (channels * count > kCopyStaged) {
                for (int64_t c = 0; c < channels; ++c)
                    to_row[c * stride[0] + w0 * stride[3]] = FromCompute<T>(from_row[w0 * channels + c]);
                continue;
            }
            TransposePiece<false>(from_row + w0 * channels, staged, channels, count);
            for (int64_t c = 0; c < channels; ++c) {
                T* run = to_row + c * stride[0] + w0 * stride[3];
                int64_t w = stride[3] == 1 ? StreamRun(staged + c * count, run, count) : 0;
                for (; w < count; ++w) run[w * stride[3]] = FromCompute<T>(staged[c * count + w]);
            }
        }
    }
    hwy::FlushStream();  // this thread's streamed stores, before the region's closing barrier
    }
}

}  // namespace HWY_NAMESPACE
}  // namespace gs3d::kernels
HWY_AFTER_NAMESPACE();

#endif  // GS3D_KERNELS_CHANNELS_LAST_COPY_INL_H_
