// The trilinear cells of a block of grid points, computed across points with SIMD: source
// indices (common/source_indices-inl.h), floors, per-axis
// weights, the eight corner weights ((wx * wy) * wz, PyTorch's products), which corners lie
// inside the volume, the first corner's offset and the corner values (hardware gathers; for
// fp16/bf16 on x86 AVX2/AVX-512, gathers of element pairs); the nearest voxels. Shared by
// the forward and backward kernels; element and grid loads are in common/simd_loads-inl.h.
//
// Compiled into each SIMD target: Highway's per-target include guard, included after
// foreach_target.h.
#if defined(GS3D_KERNELS_BLOCKS_CELLS_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef GS3D_KERNELS_BLOCKS_CELLS_INL_H_
#undef GS3D_KERNELS_BLOCKS_CELLS_INL_H_
#else
#define GS3D_KERNELS_BLOCKS_CELLS_INL_H_
#endif

#include <hwy/highway.h>

#include <algorithm>
#include <cstdint>
#include <type_traits>

#include "kernels/common/coordinates.h"
#include "kernels/common/dispatch.h"
#include "kernels/common/element_types.h"
#include "kernels/common/sampler_options.h"
#include "kernels/common/simd_loads-inl.h"
#include "kernels/common/source_indices-inl.h"
#include "kernels/common/trilinear_corners.h"

HWY_BEFORE_NAMESPACE();
namespace gs3d::kernels {
namespace HWY_NAMESPACE {

namespace hn = hwy::HWY_NAMESPACE;

template <typename S>
struct BlockCells {
    using Offset = hwy::MakeSigned<S>;  // the gathers' index type: int32 for fp32, int64 for double

    HWY_ALIGN S x0[kBlock], y0[kBlock], z0[kBlock];  // floors; -2 for NaN, inf and far outside
    HWY_ALIGN S wx[2][kBlock], wy[2][kBlock], wz[2][kBlock];
    HWY_ALIGN S weight[8][kBlock];
    HWY_ALIGN S inside[8][kBlock];  // 1 or 0
    HWY_ALIGN S point_inside[kBlock];  // 1: all eight corners of the point are inside; else 0
    bool all_inside = false;        // every corner of the block's `count` points is inside
    int count = 0, padded = 0;
    int64_t width = 0;              // the volume's W (LoadCornerPairs needs 2 or more)

    // ix, iy, iz: source indices of `padded` points (a multiple of the lane count), of which
    // the first `count` are real.
    HWY_INLINE void Compute(const S* ix, const S* iy, const S* iz, int padded_points, int points,
                            const TrilinearGeometry& g) {
        const hn::ScalableTag<S> d;
        const int lanes = static_cast<int>(hn::Lanes(d));
        count = points;
        padded = padded_points;
        width = g.size[2];
        const auto one = hn::Set(d, S(1)), zero = hn::Zero(d), sentinel = hn::Set(d, S(-2)), neg_one = hn::Set(d, S(-1));
        const auto size_x = hn::Set(d, static_cast<S>(g.size[2])), size_y = hn::Set(d, static_cast<S>(g.size[1])),
                   size_z = hn::Set(d, static_cast<S>(g.size[0]));
        bool all = true;
        for (int i = 0; i < padded; i += lanes) {
            // FloorIndex: NaN, inf and far-out indices give -2 (both corners outside).
            const auto vix = hn::Load(d, ix + i), viy = hn::Load(d, iy + i), viz = hn::Load(d, iz + i);
            const auto vx0 = hn::IfThenElse(hn::And(hn::Ge(vix, neg_one), hn::Le(vix, size_x)), hn::Floor(vix), sentinel);
            const auto vy0 = hn::IfThenElse(hn::And(hn::Ge(viy, neg_one), hn::Le(viy, size_y)), hn::Floor(viy), sentinel);
            const auto vz0 = hn::IfThenElse(hn::And(hn::Ge(viz, neg_one), hn::Le(viz, size_z)), hn::Floor(viz), sentinel);
            hn::Store(vx0, d, x0 + i);
            hn::Store(vy0, d, y0 + i);
            hn::Store(vz0, d, z0 + i);
            const auto vx1 = hn::Add(vx0, one), vy1 = hn::Add(vy0, one), vz1 = hn::Add(vz0, one);
            const decltype(vx0) wxs[2] = {hn::Sub(vx1, vix), hn::Sub(vix, vx0)},
                                wys[2] = {hn::Sub(vy1, viy), hn::Sub(viy, vy0)},
                                wzs[2] = {hn::Sub(vz1, viz), hn::Sub(viz, vz0)};
            for (int k = 0; k < 2; ++k) {
                hn::Store(wxs[k], d, wx[k] + i);
                hn::Store(wys[k], d, wy[k] + i);
                hn::Store(wzs[k], d, wz[k] + i);
            }
            const decltype(hn::Lt(vx0, size_x)) bx[2] = {hn::And(hn::Ge(vx0, zero), hn::Lt(vx0, size_x)),
                                                        hn::And(hn::Ge(vx1, zero), hn::Lt(vx1, size_x))},
                                               by[2] = {hn::And(hn::Ge(vy0, zero), hn::Lt(vy0, size_y)),
                                                        hn::And(hn::Ge(vy1, zero), hn::Lt(vy1, size_y))},
                                               bz[2] = {hn::And(hn::Ge(vz0, zero), hn::Lt(vz0, size_z)),
                                                        hn::And(hn::Ge(vz1, zero), hn::Lt(vz1, size_z))};
            const auto point_all = hn::And(hn::And(hn::And(bx[0], bx[1]), hn::And(by[0], by[1])), hn::And(bz[0], bz[1]));
            hn::Store(hn::IfThenElseZero(point_all, one), d, point_inside + i);
            // Lanes past `count` do not count against all_inside.
            const auto past_count = hn::Not(hn::FirstN(d, static_cast<size_t>(count > i ? count - i : 0)));
            all = all && hn::AllTrue(d, hn::Or(past_count, point_all));
            for (int k = 0; k < 8; ++k) {
                const int kx = k & 1, ky = (k >> 1) & 1, kz = k >> 2;
                hn::Store(hn::Mul(hn::Mul(wxs[kx], wys[ky]), wzs[kz]), d, weight[k] + i);
                hn::Store(hn::IfThenElseZero(hn::And(hn::And(bx[kx], by[ky]), bz[kz]), one), d, inside[k] + i);
            }
        }
        all_inside = all;
    }

    // Each point's first-corner offset for the strides (D, H, W order); lanes past `count`
    // get 0. fp32 offsets are int32: the caller checks OffsetsFit for the geometry.
    HWY_INLINE void Bases(const int64_t stride[3], Offset* HWY_RESTRICT base) const {
        if constexpr (sizeof(S) == 4) {
            const hn::ScalableTag<S> d;
            const hn::RebindToSigned<decltype(d)> di;
            const auto sz = hn::Set(di, static_cast<Offset>(stride[0])), sy = hn::Set(di, static_cast<Offset>(stride[1])),
                       sx = hn::Set(di, static_cast<Offset>(stride[2]));
            for (int i = 0; i < padded; i += static_cast<int>(hn::Lanes(d))) {
                const auto b = hn::Add(hn::Add(hn::Mul(hn::ConvertTo(di, hn::Load(d, z0 + i)), sz),
                                               hn::Mul(hn::ConvertTo(di, hn::Load(d, y0 + i)), sy)),
                                       hn::Mul(hn::ConvertTo(di, hn::Load(d, x0 + i)), sx));
                hn::Store(b, di, base + i);
            }
        } else {
            for (int i = 0; i < padded; ++i)
                base[i] = static_cast<Offset>(z0[i]) * stride[0] + static_cast<Offset>(y0[i]) * stride[1] +
                          static_cast<Offset>(x0[i]) * stride[2];
        }
        for (int i = count; i < padded; ++i) base[i] = 0;
    }

    // The cells of `points` points from their source indices, whose arrays hold them padded
    // to a multiple of the lane count: the lanes past `points` set to -4 (outside: never
    // sampled, scattered or stored), Compute, then each point's first-corner offset for the
    // geometry's strides (Bases). The forward's and the backward's blocks both start so.
    HWY_INLINE void ComputeWithBases(S* HWY_RESTRICT ix, S* HWY_RESTRICT iy, S* HWY_RESTRICT iz, int points,
                                     const TrilinearGeometry& g, Offset* HWY_RESTRICT base) {
        const int lanes = static_cast<int>(hn::Lanes(hn::ScalableTag<S>()));
        const int padded_points = (points + lanes - 1) / lanes * lanes;
        for (int i = points; i < padded_points; ++i) ix[i] = iy[i] = iz[i] = -4;
        Compute(ix, iy, iz, padded_points, points, g);
        Bases(g.stride, base);
    }

    // The eight corner values of each point of a volume (one channel) into v[k][i]. Corners
    // outside hold an unspecified value (0 or the volume's first element): the callers mask
    // their terms, as PyTorch skips them. base: from Bases; delta: the geometry's corner_delta;
    // last: the largest element offset from `volume` that belongs to the tensor.
    template <typename T>
    HWY_INLINE void LoadCorners(const T* HWY_RESTRICT volume, const Offset* HWY_RESTRICT base, const int64_t* delta,
                                int64_t last, S (*HWY_RESTRICT v)[kBlock]) const {
        constexpr bool kHalfWidth = std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>;
        constexpr bool kGathers = std::is_same_v<T, S> || (kHalfWidth && GS3D_HARDWARE_F16);
        // Every corner inside and the corners x0, x0 + 1 side by side: each point's four
        // corner pairs read by plain loads, no gathers. Faster than LoadCornerPairs' 64-bit
        // gathers on every grid measured (the forward 4-8% at 128^3 with one or two threads,
        // fp64 5-10%; bitwise the same values).
        if constexpr (std::is_same_v<T, S>) {
            if (all_inside && width >= 2 && delta[1] - delta[0] == 1 && delta[3] - delta[2] == 1 &&
                delta[5] - delta[4] == 1 && delta[7] - delta[6] == 1) {
                for (int i = 0; i < count; ++i) {
                    const T* HWY_RESTRICT p = volume + base[i];
                    for (int k = 0; k < 8; k += 2) v[k][i] = p[delta[k]], v[k + 1][i] = p[delta[k] + 1];
                }
                for (int k = 0; k < 8; ++k)
                    for (int i = count; i < padded; ++i) v[k][i] = 0;
                return;
            }
        }
#if HWY_TARGET <= HWY_AVX2  // LoadCornerPairs: fp32, where gathers are hardware ones
        if constexpr (std::is_same_v<T, float>) {
            if (width >= 2 && delta[1] - delta[0] == 1 && delta[3] - delta[2] == 1 && delta[5] - delta[4] == 1 &&
                delta[7] - delta[6] == 1)
                return LoadCornerPairs(volume, base, delta, v);
        }
#endif
        if (kGathers && (std::is_same_v<T, S> || last >= 1)) {
            const hn::ScalableTag<S> d;
            const hn::RebindToSigned<decltype(d)> di;
            for (int k = 0; k < 8; ++k) {
                const auto dk = hn::Set(di, static_cast<Offset>(delta[k]));
                for (int i = 0; i < padded; i += static_cast<int>(hn::Lanes(d))) {
                    auto index = hn::Add(hn::Load(di, base + i), dk);
                    if (!all_inside)  // outside corners (and lanes past count) read element 0
                        index = hn::IfThenElseZero(hn::RebindMask(di, hn::Ne(hn::Load(d, inside[k] + i), hn::Zero(d))),
                                                   index);
                    else if (i + static_cast<int>(hn::Lanes(d)) > count)
                        index = hn::IfThenElseZero(hn::FirstN(di, static_cast<size_t>(count - i)), index);
                    if constexpr (std::is_same_v<T, S>)
                        hn::Store(hn::GatherIndex(d, volume, index), d, v[k] + i);
                    else if constexpr (kGathers)
                        hn::Store(GatherHalfWidth(d, volume, index, last), d, v[k] + i);
                }
            }
        } else {
            for (int k = 0; k < 8; ++k) {
                const T* HWY_RESTRICT q = volume + delta[k];
                if (all_inside) {
                    for (int i = 0; i < count; ++i) v[k][i] = LoadElement(q + base[i]);
                } else {
                    for (int i = 0; i < count; ++i) v[k][i] = inside[k][i] != 0 ? LoadElement(q + base[i]) : S(0);
                }
                for (int i = count; i < padded; ++i) v[k][i] = 0;
            }
        }
    }

#if HWY_TARGET <= HWY_AVX2
    // Only on AVX2 and AVX-512: the other targets emulate gathers element by element, where
    // pairs would only add shuffles (and the portable targets lack ConcatEven and UpperHalf).
    //
    // Corners k and k + 1 (x0 and x0 + 1, next to each other: the volume's x stride is 1, and
    // W >= 2) of every point as one 64-bit gather lane each: half the lanes of LoadCorners'
    // gathers, which cost per lane (Zen 4: a 16-lane fp32 gather 6-9 ns, an 8-lane 64-bit one
    // 3.3-5 ns, in L1 and L2), then split into the two corners' vectors. Where one corner of
    // a pair is outside along x (x0 = -1, or x0 + 1 = W), the lane reads the pair of elements
    // x0 + 1, x0 + 2 or x0 - 1, x0 instead: both in the row, and the inside corner's value
    // taken from its half. Pairs with both corners outside (and lanes past `count`) read
    // elements 0 and 1, which exist (W >= 2), and their values are masked by the callers as
    // LoadCorners' are. The inside corners' values are the same elements as LoadCorners', so
    // the results are bitwise the same.
    template <typename T>
    HWY_INLINE void LoadCornerPairs(const T* HWY_RESTRICT volume, const Offset* HWY_RESTRICT base, const int64_t* delta,
                                    S (*HWY_RESTRICT v)[kBlock]) const {
        const hn::ScalableTag<S> d;
        const hn::RebindToSigned<decltype(d)> di;
        const hn::Half<decltype(di)> dhalf;
        const hn::Rebind<int64_t, decltype(dhalf)> d64;
        const hn::Rebind<double, decltype(dhalf)> dpair;
        const auto* pairs = reinterpret_cast<const double*>(volume);
        const auto one = hn::Set(di, 1);
        const auto zero = hn::Zero(d);
        for (int k = 0; k < 8; k += 2) {
            const auto dk = hn::Set(di, static_cast<Offset>(delta[k]));
            for (int i = 0; i < padded; i += static_cast<int>(hn::Lanes(d))) {
                auto index = hn::Add(hn::Load(di, base + i), dk);
                auto only_second = hn::FirstN(d, 0), only_first = hn::FirstN(d, 0);
                if (!all_inside) {
                    const auto in_first = hn::Ne(hn::Load(d, inside[k] + i), zero);
                    const auto in_second = hn::Ne(hn::Load(d, inside[k + 1] + i), zero);
                    only_second = hn::AndNot(in_first, in_second);  // x0 = -1: the pair from x0 + 1
                    only_first = hn::AndNot(in_second, in_first);   // x0 + 1 = W: the pair up to x0
                    index = hn::IfThenElse(hn::RebindMask(di, only_second), hn::Add(index, one), index);
                    index = hn::IfThenElse(hn::RebindMask(di, only_first), hn::Sub(index, one), index);
                    index = hn::IfThenElseZero(hn::RebindMask(di, hn::Or(in_first, in_second)), index);
                } else if (i + static_cast<int>(hn::Lanes(d)) > count) {
                    index = hn::IfThenElseZero(hn::FirstN(di, static_cast<size_t>(count - i)), index);
                }
                // Byte offsets in 64 bits: an element index times 4 may pass int32.
                const auto low = hn::ShiftLeft<2>(hn::PromoteTo(d64, hn::LowerHalf(dhalf, index)));
                const auto high = hn::ShiftLeft<2>(hn::PromoteTo(d64, hn::UpperHalf(dhalf, index)));
                const auto pairs_low = hn::BitCast(d, hn::GatherOffset(dpair, pairs, low));
                const auto pairs_high = hn::BitCast(d, hn::GatherOffset(dpair, pairs, high));
                const auto first = hn::ConcatEven(d, pairs_high, pairs_low);
                const auto second = hn::ConcatOdd(d, pairs_high, pairs_low);
                hn::Store(hn::IfThenElse(only_first, second, first), d, v[k] + i);
                hn::Store(hn::IfThenElse(only_second, first, second), d, v[k + 1] + i);
            }
        }
    }
#endif

    // fp16 or bf16 elements volume[index] as fp32, by 32-bit gathers: each reads the element
    // and the next one, or, at the tensor's last element (`last`, at least 1), the one before
    // and the element: never outside the tensor's span.
    template <class D, typename T>
    static HWY_INLINE hn::Vec<D> GatherHalfWidth(D d, const T* volume, hn::Vec<hn::RebindToSigned<D>> index,
                                                 int64_t last) {
        const hn::RebindToSigned<D> di;
        const hn::RebindToUnsigned<D> du;
        const auto at_end = hn::Eq(index, hn::Set(di, static_cast<int32_t>(std::min<int64_t>(last, INT32_MAX))));
        const auto start = hn::IfThenElse(at_end, hn::Sub(index, hn::Set(di, 1)), index);
        const auto words = hn::BitCast(du, hn::GatherOffset(di, reinterpret_cast<const int32_t*>(volume), hn::Add(start, start)));
        const auto bits = hn::IfThenElse(hn::RebindMask(du, at_end), hn::ShiftRight<16>(words),
                                         hn::And(words, hn::Set(du, 0xFFFFu)));
        if constexpr (std::is_same_v<T, BFloat16>) {
            return hn::BitCast(d, hn::ShiftLeft<16>(bits));
        } else {
            const hn::Rebind<uint16_t, D> du16;
            const hn::Rebind<hwy::float16_t, D> df16;
            return hn::PromoteTo(d, hn::BitCast(df16, hn::DemoteTo(du16, hn::BitCast(di, bits))));
        }
    }
};

// The nearest voxel of each point of a block (NearestIndex: round half to even; NaN, inf and
// indices outside [-1, size] are outside): its offset (0 when outside) and whether inside.
template <typename S>
struct BlockVoxels {
    using Offset = hwy::MakeSigned<S>;
    HWY_ALIGN Offset offset[kBlock];
    HWY_ALIGN S inside[kBlock];  // 1 or 0
    bool all_inside = false;     // every one of the `count` points
    int count = 0, padded = 0;

    // index[axis]: source indices along x, y, z of `padded` points, `count` of them real.
    // Voxels with z outside [z_begin, z_end) count as outside (a slab of the volume).
    HWY_INLINE void Compute(const S* const index[3], int padded_points, int points, const TrilinearGeometry& g) {
        Compute(index, padded_points, points, g, 0, g.size[0]);
    }
    HWY_INLINE void Compute(const S* const index[3], int padded_points, int points, const TrilinearGeometry& g,
                            int64_t z_begin, int64_t z_end) {
        const hn::ScalableTag<S> d;
        const int lanes = static_cast<int>(hn::Lanes(d));
        count = points;
        padded = padded_points;
        const int64_t sizes[3] = {g.size[2], g.size[1], g.size[0]}, strides[3] = {g.stride[2], g.stride[1], g.stride[0]};
        const auto zero = hn::Zero(d), one = hn::Set(d, S(1)), neg_one = hn::Set(d, S(-1));
        HWY_ALIGN S rounded[3][kBlock];
        bool all = true;
        for (int i = 0; i < padded; i += lanes) {
            auto in_volume = hn::FirstN(d, static_cast<size_t>(count > i ? count - i : 0));  // lanes past count: outside
            for (int axis = 0; axis < 3; ++axis) {
                const auto v = hn::Load(d, index[axis] + i), size = hn::Set(d, static_cast<S>(sizes[axis]));
                const auto r = hn::Round(v);
                const auto begin = axis == 2 ? hn::Set(d, static_cast<S>(z_begin)) : zero;
                const auto end = axis == 2 ? hn::Set(d, static_cast<S>(z_end)) : size;
                in_volume = hn::And(in_volume, hn::And(hn::And(hn::Ge(v, neg_one), hn::Le(v, size)),
                                                       hn::And(hn::Ge(r, begin), hn::Lt(r, end))));
                hn::Store(r, d, rounded[axis] + i);
            }
            hn::Store(hn::IfThenElseZero(in_volume, one), d, inside + i);
            all = all && hn::CountTrue(d, in_volume) == static_cast<size_t>(std::min(lanes, count - i));
        }
        all_inside = all;
        if constexpr (sizeof(S) == 4) {  // int32 offsets: the caller checks OffsetsFit
            const hn::RebindToSigned<decltype(d)> di;
            for (int i = 0; i < padded; i += lanes) {
                auto o = hn::Zero(di);
                for (int axis = 0; axis < 3; ++axis)
                    o = hn::Add(o, hn::Mul(hn::ConvertTo(di, hn::Load(d, rounded[axis] + i)),
                                           hn::Set(di, static_cast<Offset>(strides[axis]))));
                const auto in_volume = hn::RebindMask(di, hn::Ne(hn::Load(d, inside + i), zero));
                hn::Store(hn::IfThenElseZero(in_volume, o), di, offset + i);
            }
        } else {
            for (int i = 0; i < padded; ++i) {  // offsets of the voxels inside only
                Offset o = 0;
                if (inside[i] != 0)
                    for (int axis = 0; axis < 3; ++axis)
                        o += static_cast<Offset>(rounded[axis][i]) * static_cast<Offset>(strides[axis]);
                offset[i] = o;
            }
        }
    }
};

// Whether every first-corner offset of a volume (floors from -2 to size, plus the corner
// deltas) fits BlockCells<S>::Offset.
template <typename S>
inline bool OffsetsFit(const TrilinearGeometry& g) {
    if constexpr (sizeof(S) == 8) return true;
    int64_t extent = 0;
    for (int i = 0; i < 3; ++i) {
        int64_t part;
        if (__builtin_mul_overflow(g.size[i] + 3, g.stride[i], &part) || __builtin_add_overflow(extent, part, &extent))
            return false;
    }
    return extent < (int64_t{1} << 31);
}

}  // namespace HWY_NAMESPACE
}  // namespace gs3d::kernels
HWY_AFTER_NAMESPACE();

#endif  // GS3D_KERNELS_BLOCKS_CELLS_INL_H_
