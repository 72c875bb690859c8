// Grid coordinate math shared by the forward and backward kernels: unnormalize a grid value
// to a source index, apply the padding mode, and (for the backward) the derivative of the
// index with respect to the grid value. The formulas are PyTorch's (ATen GridSampler.h),
// including how NaN propagates through std::min / std::max, so that values agree with it.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>

#include "kernels/common/dispatch.h"
#include "kernels/common/sampler_options.h"

// Forced inline: the kernels are compiled once per SIMD target, and these helpers must be
// compiled inside each of them (with its floor/round instructions), not once for the baseline.
#define GS3D_INLINE inline __attribute__((always_inline))

namespace gs3d::kernels {

template <typename S>
GS3D_INLINE S Unnormalize(S coord, int64_t size, bool align_corners) {
    if (align_corners) return ((coord + 1) / 2) * static_cast<S>(size - 1);
    return ((coord + 1) * static_cast<S>(size) - 1) / 2;
}

template <typename S>
GS3D_INLINE S UnnormalizeDerivative(int64_t size, bool align_corners) {
    return align_corners ? static_cast<S>(size - 1) / 2 : static_cast<S>(size) / 2;
}

// Forward clip to [0, size - 1]. As in PyTorch, NaN maps to size - 1 (std::min returns its
// first argument when the comparison with NaN is false).
template <typename S>
GS3D_INLINE S Clip(S in, int64_t size) {
    return std::min(static_cast<S>(size - 1), std::max(in, static_cast<S>(0)));
}

// Backward clip: the derivative is 0 where clipped, borders included. NaN passes through.
template <typename S>
GS3D_INLINE S ClipWithDerivative(S in, int64_t size, S* derivative) {
    if (in <= 0) {
        *derivative = 0;
        return 0;
    }
    S max = static_cast<S>(size - 1);
    if (in >= max) {
        *derivative = 0;
        return max;
    }
    *derivative = 1;
    return in;
}

// Whether floor(in / span) is odd, without an int cast that NaN or huge values would make
// undefined. NaN and inf count as even, as PyTorch's cast gives on x86-64. Every float at or
// above 2^digits (2^24, 2^53) is an even integer; below, the int cast is exact and cheaper
// than fmod(flips, 2).
template <typename S>
GS3D_INLINE bool OddFlips(S in, S span) {
    const S flips = std::floor(in / span);
    constexpr S kAllEven = static_cast<S>(int64_t{1} << std::numeric_limits<S>::digits);
    if (!(std::fabs(flips) < kAllEven)) return false;  // also NaN and inf
    return (static_cast<int64_t>(flips) & 1) != 0;
}

// Reflects `in` into [twice_low / 2, twice_high / 2]; the derivative is +-1.
template <typename S>
GS3D_INLINE S ReflectWithDerivative(S in, int64_t twice_low, int64_t twice_high, S* derivative) {
    if (twice_low == twice_high) {
        *derivative = 0;
        return 0;
    }
    S min = static_cast<S>(twice_low) / 2;
    S span = static_cast<S>(twice_high - twice_low) / 2;
    in = in - min;
    S sign = 1;
    if (in < 0) {
        sign = -1;
        in = -in;
    }
    S extra = std::fmod(in, span);
    if (!OddFlips(in, span)) {
        *derivative = sign;
        return extra + min;
    }
    *derivative = -sign;
    return span - extra + min;
}

template <typename S>
GS3D_INLINE S Reflect(S in, int64_t twice_low, int64_t twice_high) {
    S unused;
    return ReflectWithDerivative(in, twice_low, twice_high, &unused);
}

// The source index of grid value `coord` along an axis of `size` (forward).
template <typename S, Padding P>
GS3D_INLINE S SourceIndex(S coord, int64_t size, bool align_corners) {
    coord = Unnormalize(coord, size, align_corners);
    if constexpr (P == Padding::kBorder) {
        coord = Clip(coord, size);
    } else if constexpr (P == Padding::kReflection) {
        coord = align_corners ? Reflect(coord, 0, 2 * (size - 1)) : Reflect(coord, -1, 2 * size - 1);
        coord = Clip(coord, size);
    }
    return coord;
}

// The source index and d(index)/d(coord) (backward). Uses the backward clip, whose NaN
// handling differs from the forward's exactly as PyTorch's does.
template <typename S, Padding P>
GS3D_INLINE S SourceIndexWithDerivative(S coord, int64_t size, bool align_corners, S* derivative) {
    *derivative = UnnormalizeDerivative<S>(size, align_corners);
    coord = Unnormalize(coord, size, align_corners);
    if constexpr (P == Padding::kBorder) {
        S clip_derivative;
        coord = ClipWithDerivative(coord, size, &clip_derivative);
        *derivative *= clip_derivative;
    } else if constexpr (P == Padding::kReflection) {
        S reflect_derivative, clip_derivative;
        coord = align_corners ? ReflectWithDerivative(coord, 0, 2 * (size - 1), &reflect_derivative)
                              : ReflectWithDerivative(coord, -1, 2 * size - 1, &reflect_derivative);
        coord = ClipWithDerivative(coord, size, &clip_derivative);
        *derivative *= reflect_derivative * clip_derivative;
    }
    return coord;
}

// The same with the padding mode chosen at run time (the point-by-point paths).
template <typename S>
GS3D_INLINE S SourceIndexWithDerivative(S coord, int64_t size, bool align_corners, Padding padding, S* derivative) {
    return DispatchPadding(padding, [&](auto mode) {
        return SourceIndexWithDerivative<S, decltype(mode)::value>(coord, size, align_corners, derivative);
    });
}

// floor(index) as an integer. NaN, inf and indices far outside [0, size) never reach an int
// cast: they give -2, so that both floor and floor + 1 are out of range.
template <typename S>
GS3D_INLINE int64_t FloorIndex(S index, int64_t size) {
    if (!(index >= -1 && index <= static_cast<S>(size))) return -2;
    return static_cast<int64_t>(std::floor(index));
}

// The nearest index, rounding half to even (std::nearbyint in the default rounding mode, as
// PyTorch). Out of range, NaN and inf give -1.
template <typename S>
GS3D_INLINE int64_t NearestIndex(S index, int64_t size) {
    if (!(index >= -1 && index <= static_cast<S>(size))) return -1;
    return static_cast<int64_t>(std::nearbyint(index));
}

}  // namespace gs3d::kernels
