// Elements to and from the kernels' compute type, one at a time or in vectors, and the grid
// values of a block of points, in the layout the SIMD blocks compute on (blocks/cells-inl.h).
//
// Compiled into each SIMD target: Highway's per-target include guard, included after
// foreach_target.h.
#if defined(GS3D_KERNELS_COMMON_SIMD_LOADS_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef GS3D_KERNELS_COMMON_SIMD_LOADS_INL_H_
#undef GS3D_KERNELS_COMMON_SIMD_LOADS_INL_H_
#else
#define GS3D_KERNELS_COMMON_SIMD_LOADS_INL_H_
#endif

#include <hwy/highway.h>

#include <cstdint>
#include <type_traits>

#include "kernels/common/element_types.h"

HWY_BEFORE_NAMESPACE();
namespace gs3d::kernels {
namespace HWY_NAMESPACE {

namespace hn = hwy::HWY_NAMESPACE;

// Grid points handled together by the SIMD block paths.
constexpr int kBlock = 64;

// One element to and from the compute type, with the target's conversion instructions where
// they are exact: F16C (x86 AVX2 and AVX-512 targets) for fp16, round to nearest even like
// FromCompute. Elsewhere, and for bf16 (a shift and an integer rounding either way), the
// portable conversions of common/element_types.h. Highway's portable fp16 conversions are not used:
// they truncate and do not keep inf and NaN.
#undef GS3D_HARDWARE_F16  // set anew for each target
#if HWY_ARCH_X86 && HWY_TARGET <= HWY_AVX2
#define GS3D_HARDWARE_F16 1
#else
#define GS3D_HARDWARE_F16 0
#endif

// DV's lanes of consecutive elements from p, in the compute type (fp16 and bf16 promoted,
// exactly).
template <class DV, typename T>
HWY_INLINE hn::Vec<DV> LoadLanes(DV dv, const T* p) {
    if constexpr (std::is_same_v<T, hn::TFromD<DV>>)
        return hn::LoadU(dv, p);
    else if constexpr (std::is_same_v<T, Half> && GS3D_HARDWARE_F16)
        return hn::PromoteTo(dv, hn::LoadU(hn::Rebind<hwy::float16_t, DV>(), reinterpret_cast<const hwy::float16_t*>(p)));
    else if constexpr (std::is_same_v<T, Half>) {
        // Without F16C, Highway's promotion makes inf and NaN finite: element by element.
        HWY_ALIGN hn::TFromD<DV> lanes[hn::MaxLanes(DV())];
        for (size_t l = 0; l < hn::Lanes(dv); ++l) lanes[l] = ToCompute(p[l]);
        return hn::Load(dv, lanes);
    } else
        return hn::PromoteTo(dv, hn::LoadU(hn::Rebind<hwy::bfloat16_t, DV>(), reinterpret_cast<const hwy::bfloat16_t*>(p)));
}

// Whether StoreLanes converts in vectors what StoreElement converts element by element (with
// the same rounding): the compute type itself, bf16 (integer rounding), and fp16 where F16C
// converts it.
template <typename T, typename S>
constexpr bool kStoresLanes = std::is_same_v<T, S> || std::is_same_v<T, BFloat16> ||
                              (GS3D_HARDWARE_F16 && std::is_same_v<T, Half>);

// DV's lanes of v into consecutive elements from p, rounded to T as StoreElement rounds each:
// to nearest even, NaN kept quiet (FloatToBFloat16's steps, lane by lane). Only where
// kStoresLanes<T, S>.
template <class DV, typename T>
HWY_INLINE void StoreLanes(DV dv, hn::Vec<DV> v, T* p) {
    using S = hn::TFromD<DV>;
    static_assert(kStoresLanes<T, S>, "StoreLanes: no vector conversion to this type");
    if constexpr (std::is_same_v<T, S>) {
        hn::StoreU(v, dv, p);
    } else if constexpr (std::is_same_v<T, Half>) {
        const hn::Rebind<hwy::float16_t, DV> dh;
        hn::StoreU(hn::DemoteTo(dh, v), dh, reinterpret_cast<hwy::float16_t*>(p));
    } else {
        const hn::RebindToSigned<DV> di;
        const auto x = hn::BitCast(di, v);
        const auto rounded =
            hn::ShiftRight<16>(hn::Add(x, hn::Add(hn::Set(di, 0x7fff), hn::And(hn::ShiftRight<16>(x), hn::Set(di, 1)))));
        const auto nan = hn::Gt(hn::And(x, hn::Set(di, 0x7fffffff)), hn::Set(di, 0x7f800000));
        const auto quiet = hn::Or(hn::ShiftRight<16>(x), hn::Set(di, 0x40));
        // Both within 16 bits (the arithmetic shift's sign bits masked off below).
        const auto bits = hn::And(hn::IfThenElse(nan, quiet, rounded), hn::Set(di, 0xffff));
        const hn::Rebind<uint16_t, DV> du16;
        hn::StoreU(hn::DemoteTo(du16, bits), du16, reinterpret_cast<uint16_t*>(p));
    }
}

// LoadElement and StoreElement (described above): on the F16C targets, fp16 through a
// vector of one lane.
template <typename T>
HWY_INLINE ComputeType<T> LoadElement(const T* p) {
    if constexpr (GS3D_HARDWARE_F16 && std::is_same_v<T, Half>) return hn::GetLane(LoadLanes(hn::CappedTag<float, 1>(), p));
    return ToCompute(*p);
}

template <typename T>
HWY_INLINE void StoreElement(ComputeType<T> v, T* p) {
    if constexpr (GS3D_HARDWARE_F16 && std::is_same_v<T, Half>) {
        const hn::CappedTag<float, 1> d;
        StoreLanes(d, hn::Set(d, v), p);
        return;
    }
    *p = FromCompute<T>(v);
}

// The grid values (x, y, z) of a block's `count` points into coord[axis][i], in the compute
// type; lanes up to `padded` get 0. point(i): point i's first value; cs: the values' stride.
template <typename S, size_t kWidth, typename PointAt>
HWY_INLINE void LoadGridValues(PointAt point, int64_t cs, int count, int padded, S (*HWY_RESTRICT coord)[kWidth]) {
    for (int i = 0; i < count; ++i) {
        const auto* p = point(i);
        for (int axis = 0; axis < 3; ++axis) coord[axis][i] = LoadElement(p + axis * cs);
    }
    for (int i = count; i < padded; ++i) coord[0][i] = coord[1][i] = coord[2][i] = 0;
}

// The grid values of `count` consecutive points of a row (point i's first value at
// first + i * gs, the values cs apart) into coord[axis][i]; lanes up to `padded` get 0. A
// packed row (x, y, z, x, y, z, ...) is loaded in vectors: fp16 and bf16 converted to the
// compute type first, the whole vectors' values at once. kWidth: the block's points (kBlock;
// tricubic's blocks are smaller).
template <typename T, typename S, size_t kWidth>
HWY_INLINE void LoadGridRow(const T* HWY_RESTRICT first, int64_t gs, int64_t cs, int count, int padded,
                            S (*HWY_RESTRICT coord)[kWidth]) {
    if constexpr (!std::is_same_v<T, S>) {
        if (cs == 1 && gs == 3) {
            const hn::ScalableTag<S> d;
            const int lanes = static_cast<int>(hn::Lanes(d)), whole = count / lanes * lanes;
            HWY_ALIGN S converted[3 * kWidth];
            for (int j = 0; j < 3 * whole; j += lanes) hn::Store(LoadLanes(d, first + j), d, converted + j);
            LoadGridRow(converted, 3, 1, whole, whole, coord);
            for (int i = whole; i < count; ++i)
                for (int axis = 0; axis < 3; ++axis) coord[axis][i] = LoadElement(first + 3 * i + axis);
            for (int i = count; i < padded; ++i) coord[0][i] = coord[1][i] = coord[2][i] = 0;
            return;
        }
    } else {
        if (cs == 1 && gs == 3) {
            const hn::ScalableTag<S> d;
            const int lanes = static_cast<int>(hn::Lanes(d));
            int i = 0;
            for (; i + lanes <= count; i += lanes) {
                hn::Vec<decltype(d)> x, y, z;
                hn::LoadInterleaved3(d, first + 3 * i, x, y, z);
                hn::Store(x, d, coord[0] + i), hn::Store(y, d, coord[1] + i), hn::Store(z, d, coord[2] + i);
            }
            for (; i < count; ++i)
                for (int axis = 0; axis < 3; ++axis) coord[axis][i] = first[3 * i + axis];
            for (; i < padded; ++i) coord[0][i] = coord[1][i] = coord[2][i] = 0;
            return;
        }
    }
    LoadGridValues([&](int i) { return first + i * gs; }, cs, count, padded, coord);
}

// The D values alone (axis 2) of `count` consecutive points of a row, as LoadGridRow: for the
// passes that need D only. A packed row is loaded in vectors: element by element, the
// vector load of the values that followed waited on sixteen 4-byte stores (no forwarding
// from several stores to one load), half of the sorted plan's keys pass at (2, 8, 64).
template <typename T, typename S>
HWY_INLINE void LoadGridRowDepth(const T* HWY_RESTRICT first, int64_t gs, int64_t cs, int count, int padded,
                                 S* HWY_RESTRICT depth) {
    int i = 0;
    if constexpr (std::is_same_v<T, S>) {
        if (cs == 1 && gs == 3) {
            const hn::ScalableTag<S> d;
            const int lanes = static_cast<int>(hn::Lanes(d));
            for (; i + lanes <= count; i += lanes) {
                hn::Vec<decltype(d)> x, y, z;
                hn::LoadInterleaved3(d, first + 3 * i, x, y, z);
                hn::Store(z, d, depth + i);
            }
        }
    }
    for (; i < count; ++i) depth[i] = LoadElement(first + i * gs + 2 * cs);
    for (; i < padded; ++i) depth[i] = 0;
}

}  // namespace HWY_NAMESPACE
}  // namespace gs3d::kernels
HWY_AFTER_NAMESPACE();

#endif  // GS3D_KERNELS_COMMON_SIMD_LOADS_INL_H_
