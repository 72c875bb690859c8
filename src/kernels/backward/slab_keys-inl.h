// The sorted plan's keys (backward/kernel-inl.h, SlabBackward): each grid point's slab,
// computed row by row, and each row's points sorted by key within segments (a stable
// counting sort), so that a slab's task finds its points as one run per segment.
//
// Compiled into each SIMD target: Highway's per-target include guard, included after
// foreach_target.h.
#if defined(GS3D_KERNELS_BACKWARD_SLAB_KEYS_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef GS3D_KERNELS_BACKWARD_SLAB_KEYS_INL_H_
#undef GS3D_KERNELS_BACKWARD_SLAB_KEYS_INL_H_
#else
#define GS3D_KERNELS_BACKWARD_SLAB_KEYS_INL_H_
#endif

#include <hwy/highway.h>

#include <algorithm>
#include <cstdint>

#include "kernels/plan/backward.h"
#include "kernels/backward/point-inl.h"
#include "kernels/common/fast_divide.h"
#include "kernels/blocks/cells-inl.h"

HWY_BEFORE_NAMESPACE();
namespace gs3d::kernels {
namespace HWY_NAMESPACE {
namespace {  // internal to each element type's kernels_*.cpp

// The slab keys of a grid row: each point's slab of its first corner along D (nearest: its
// voxel), clamped into the volume (a point that touches no voxel may go to any slab; it
// writes only its gridGrad). The source index comes from the same vector code as the
// blocks', and the floor (nearest: round half to even) is FloorIndex's (NearestIndex's), so
// the corners of a point lie in its key's slab and the next.
template <typename T, Interpolation I>
HWY_INLINE void RowKeys(const Problem<T>& pb, const FastDivider32& by_slab_depth, int64_t n, int64_t d, int64_t h,
                        uint8_t* HWY_RESTRICT keys) {
    using S = ComputeType<T>;
    const hn::ScalableTag<S> dv;
    const int lanes = static_cast<int>(hn::Lanes(dv));
    const int64_t depth = pb.args.input.size[2];
    const auto low = hn::Set(dv, S(-1)), high = hn::Set(dv, static_cast<S>(depth)), zero = hn::Zero(dv),
               last = hn::Set(dv, static_cast<S>(depth - 1));
    ForEachRowBlockDepth<T>(pb, n, d, h, [&](int64_t w0, int count, int padded, S* iz) HWY_ATTR {
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

}  // namespace
}  // namespace HWY_NAMESPACE
}  // namespace gs3d::kernels
HWY_AFTER_NAMESPACE();

#endif  // GS3D_KERNELS_BACKWARD_SLAB_KEYS_INL_H_
