// Source indices of grid values in vector form, PyTorch's formulas lane for lane
// (unnormalize, clip, reflect; the backward's derivatives too): a vector at a time
// (SourceIndexLanes, for the row phases' one-pass phase 1) and a block's axis or three axes
// at a time (BlockSourceIndices, BlockSourceIndices3). Used by blocks/cells-inl.h's blocks and
// the row phases.
//
// Compiled into each SIMD target: Highway's per-target include guard, included after
// foreach_target.h.
#if defined(GS3D_KERNELS_COMMON_SOURCE_INDICES_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef GS3D_KERNELS_COMMON_SOURCE_INDICES_INL_H_
#undef GS3D_KERNELS_COMMON_SOURCE_INDICES_INL_H_
#else
#define GS3D_KERNELS_COMMON_SOURCE_INDICES_INL_H_
#endif

#include <hwy/highway.h>

#include <cstdint>
#include <cstring>
#include <type_traits>

#include "kernels/common/coordinates.h"
#include "kernels/common/dispatch.h"
#include "kernels/common/sampler_options.h"
#include "kernels/common/simd_loads-inl.h"

HWY_BEFORE_NAMESPACE();
namespace gs3d::kernels {
namespace HWY_NAMESPACE {

namespace hn = hwy::HWY_NAMESPACE;

// A reflection's bounds as PyTorch's reflect_coordinates has them: the low end min and the
// span, from twice_low and twice_high; and the largest offset t = in - min that it leaves as
// it is (floor(t / span) = 0 in S's rounding), so that ReflectLanes can tell such vectors with
// two comparisons. That offset is the float just below span: t / span is then
// 1 - ulp(span) / span, more than half the spacing of the floats just below 1 away from 1, so
// it rounds below 1 (spans are at least 1/2, never subnormal); taken from span's bits, since
// SourceIndexLanes is made per block.
template <typename S>
struct ReflectSpan {
    S min = 0, span = 0, identity_top = S(-1);  // -1: no offset (an empty span)

    ReflectSpan() = default;
    ReflectSpan(int64_t twice_low, int64_t twice_high)
        : min(static_cast<S>(twice_low) / 2), span(static_cast<S>(twice_high - twice_low) / 2) {
        if (!(span > 0)) return;
        std::conditional_t<sizeof(S) == 4, uint32_t, uint64_t> bits;
        std::memcpy(&bits, &span, sizeof(S));
        --bits;  // the next float towards 0
        std::memcpy(&identity_top, &bits, sizeof(S));
    }
};

// Reflection (ReflectWithDerivative) of unnormalized indices `in` in vector form, lane for
// lane equal to the scalar code, NaN and inf included: fmod is exact, and so is
// in - q * span computed with a fused multiply-add once q = floor(in / span) is corrected
// (the division may round it up or down by one; the sign of each FMA's exactly rounded
// result says which). Lanes with in >= 2^22 * span (where q + 1 may not be exact) are marked
// in `scalar` for the caller to redo with the scalar code. A vector whose offsets from min all
// lie in [0, identity_top] (most of a grid's inside) is left as it is, which is what the
// general path computes for it (q = 0, no flip), at a fraction of the cost. Needs a native FMA.
template <class D, class V = hn::Vec<D>>
HWY_INLINE V ReflectLanes(D d, V in, const ReflectSpan<hn::TFromD<D>>& bounds, V* derivative, hn::Mask<D>* scalar) {
    using S = hn::TFromD<D>;
    const V min = hn::Set(d, bounds.min), span = hn::Set(d, bounds.span);
    const V one = hn::Set(d, S(1)), zero = hn::Zero(d);
    in = hn::Sub(in, min);
    if (hn::AllTrue(d, hn::And(hn::Ge(in, zero), hn::Le(in, hn::Set(d, bounds.identity_top))))) {
        *derivative = one;
        *scalar = hn::FirstN(d, 0);
        return hn::Add(in, min);
    }
    const auto negative = hn::Lt(in, zero);
    const V sign = hn::IfThenElse(negative, hn::Neg(one), one);
    in = hn::IfThenElse(negative, hn::Neg(in), in);
    *scalar = hn::Ge(in, hn::Mul(span, hn::Set(d, static_cast<S>(1 << 22))));
    // fmod(in, span): q = floor(in / span) corrected by one either way, then in - q * span.
    const V flips = hn::Floor(hn::Div(in, span));
    V q = flips;
    q = hn::IfThenElse(hn::Lt(hn::NegMulAdd(q, span, in), zero), hn::Sub(q, one), q);
    const V up = hn::Add(q, one);
    q = hn::IfThenElse(hn::Ge(hn::NegMulAdd(up, span, in), zero), up, q);
    const V extra = hn::NegMulAdd(q, span, in);
    // OddFlips: floor(in / span) odd, that is, half of it not whole and not NaN (NaN is even,
    // whatever a target's Ne gives for it); inf and values at or above 2^digits are even
    // integers, whose half is whole.
    const V half = hn::Mul(flips, hn::Set(d, S(0.5)));
    const auto odd = hn::AndNot(hn::Eq(hn::Floor(half), half), hn::Eq(half, half));
    *derivative = hn::IfThenElse(odd, hn::Neg(sign), sign);
    return hn::IfThenElse(odd, hn::Add(hn::Sub(span, extra), min), hn::Add(extra, min));
}

// Source indices of grid values along an axis of `size` (PyTorch's formulas), a vector at a
// time. kBackward: the backward clip and d(index)/d(grid value); otherwise the forward clip.
// In vector form (division by 2 and the clip's comparisons are exact, so lanes equal the
// scalar code bit for bit, NaN included); reflection too where the target has a native FMA
// (ReflectLanes), except for the lanes it marks for the scalar code (Scalar).
template <class D, Padding P, bool kBackward>
struct SourceIndexLanes {
    using V = hn::Vec<D>;
    using S = hn::TFromD<D>;
    static constexpr bool kVectors = P != Padding::kReflection || HWY_NATIVE_FMA;
    static constexpr bool kMarksLanes = P == Padding::kReflection;  // lanes for Scalar, if any
    int64_t size;
    ReflectSpan<S> reflect;  // PyTorch's bounds for this axis and alignment; read by reflection only
    bool align;
    V one, half, zero, last, extent, unnormalize_derivative;

    HWY_INLINE SourceIndexLanes(D d, int64_t axis_size, bool align_corners)
        : size(axis_size),
          reflect(align_corners ? 0 : -1, align_corners ? 2 * (axis_size - 1) : 2 * axis_size - 1),
          align(align_corners),
          one(hn::Set(d, S(1))), half(hn::Set(d, S(0.5))), zero(hn::Zero(d)),
          last(hn::Set(d, static_cast<S>(axis_size - 1))), extent(hn::Set(d, static_cast<S>(axis_size))),
          unnormalize_derivative(hn::Set(d, UnnormalizeDerivative<S>(axis_size, align_corners))) {}

    // The indices of grid values c; *derivative (backward) their derivatives; *scalar the lanes
    // to redo with Scalar.
    HWY_INLINE V operator()(D d, V c, V* derivative, hn::Mask<D>* scalar) const {
        // Unnormalize: ((c + 1) / 2) * (size - 1), or ((c + 1) * size - 1) / 2; x / 2 as
        // x * 0.5, the same correctly rounded value without a division.
        const V v = align ? hn::Mul(hn::Mul(hn::Add(c, one), half), last) : hn::Mul(hn::Sub(hn::Mul(hn::Add(c, one), extent), one), half);
        V dv = unnormalize_derivative;
        const V padded = Pad(d, v, &dv, scalar);
        if constexpr (kBackward) *derivative = dv;
        return padded;
    }
    // The padding of unnormalized indices v: reflected (reflection), then clipped (border and
    // reflection); backward, *dv times the padding's derivative. Tricubic pads its taps so.
    HWY_INLINE V Pad(D d, V v, V* dv, hn::Mask<D>* scalar) const {
        *scalar = hn::FirstN(d, 0);
        V reflect_derivative = one;
        if constexpr (P == Padding::kReflection) {
            if (reflect.span > 0) {  // twice_low != twice_high
                v = ReflectLanes(d, v, reflect, &reflect_derivative, scalar);
            } else {  // one plane, aligned: 0, derivative 0
                v = zero;
                reflect_derivative = zero;
            }
        }
        if constexpr (P != Padding::kZeros) {  // border's clip, and reflection's after reflecting
            if constexpr (kBackward) {  // ClipWithDerivative: NaN passes with derivative 1
                const auto low = hn::Le(v, zero), high = hn::Ge(v, last);
                v = hn::IfThenElse(low, zero, hn::IfThenElse(high, last, v));
                const auto clip_derivative = hn::IfThenZeroElse(hn::Or(low, high), one);
                // derivative *= clip_derivative, or reflect_derivative * clip_derivative
                *dv = hn::Mul(*dv, P == Padding::kReflection ? hn::Mul(reflect_derivative, clip_derivative) : clip_derivative);
            } else {  // Clip: min(size - 1, max(v, 0)) with std's NaN rule: NaN -> size - 1
                v = hn::IfThenElse(hn::Lt(v, zero), zero, v);
                v = hn::IfThenElse(hn::Lt(v, last), v, last);
            }
        }
        return v;
    }
    // The scalar code's index of grid value c (and its derivative, backward).
    HWY_INLINE S Scalar(S c, S* derivative) const {
        if constexpr (kBackward) return SourceIndexWithDerivative<S, P>(c, size, align, derivative);
        return SourceIndex<S, P>(c, size, align);
    }
    // The indices of a vector of grid values at `coord` (derivatives into `derivative`,
    // backward): in vectors, and the lanes they leave (reflection only, so that no other
    // mode's loop holds the scalar code) with Scalar.
    HWY_INLINE V At(D d, const S* HWY_RESTRICT coord, S* HWY_RESTRICT derivative) const {
        V v = zero;
        auto scalar = hn::FirstN(d, hn::Lanes(d));
        if constexpr (kVectors) {
            V dv;
            v = (*this)(d, hn::Load(d, coord), &dv, &scalar);
            if constexpr (kBackward) hn::Store(dv, d, derivative);
        }
        if (kMarksLanes && !hn::AllFalse(d, scalar)) {
            HWY_ALIGN S lane_index[hn::MaxLanes(d)];
            for (size_t j = 0; j < hn::Lanes(d); ++j) lane_index[j] = Scalar(coord[j], kBackward ? &derivative[j] : nullptr);
            v = hn::Load(d, lane_index);
        }
        return v;
    }
};

// Source indices of `padded` grid values along an axis (SourceIndexLanes::At), into index[i]
// and, backward, derivative[i].
template <typename S, Padding P, bool kBackward>
HWY_INLINE void BlockSourceIndicesOf(const S* HWY_RESTRICT coord, int padded, int64_t size, bool align,
                                     S* HWY_RESTRICT index, S* HWY_RESTRICT derivative) {
    using D = hn::ScalableTag<S>;
    const D d;
    const SourceIndexLanes<D, P, kBackward> indexer(d, size, align);
    for (int i = 0; i < padded; i += static_cast<int>(hn::Lanes(d)))
        hn::Store(indexer.At(d, coord + i, kBackward ? derivative + i : nullptr), d, index + i);
}

// The same with the padding mode chosen at run time, once per block: the only kernel code
// compiled once per padding mode (the callers are compiled once for all three).
template <typename S, bool kBackward>
HWY_INLINE void BlockSourceIndices(const S* HWY_RESTRICT coord, int padded, int64_t size, const SamplerOptions& options,
                                   S* HWY_RESTRICT index, S* HWY_RESTRICT derivative) {
    DispatchPadding(options.padding, [&](auto mode) HWY_ATTR {
        BlockSourceIndicesOf<S, decltype(mode)::value, kBackward>(coord, padded, size, options.align_corners, index,
                                                                   derivative);
    });
}

// The three axes' source indices (x, y, z) of a block, one switch on the padding mode for all
// three. size: the input's (N, C, D, H, W).
template <typename S, bool kBackward>
HWY_INLINE void BlockSourceIndices3(const S (*HWY_RESTRICT coord)[kBlock], int padded, const int64_t* size,
                                    const SamplerOptions& options, S* HWY_RESTRICT ix, S* HWY_RESTRICT iy,
                                    S* HWY_RESTRICT iz, S* HWY_RESTRICT mx, S* HWY_RESTRICT my, S* HWY_RESTRICT mz) {
    const bool align = options.align_corners;
    DispatchPadding(options.padding, [&](auto mode) HWY_ATTR {
        constexpr Padding P = decltype(mode)::value;
        BlockSourceIndicesOf<S, P, kBackward>(coord[0], padded, size[4], align, ix, mx);
        BlockSourceIndicesOf<S, P, kBackward>(coord[1], padded, size[3], align, iy, my);
        BlockSourceIndicesOf<S, P, kBackward>(coord[2], padded, size[2], align, iz, mz);
    });
}

}  // namespace HWY_NAMESPACE
}  // namespace gs3d::kernels
HWY_AFTER_NAMESPACE();

#endif  // GS3D_KERNELS_COMMON_SOURCE_INDICES_INL_H_
