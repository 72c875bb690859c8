// The element types the kernels read and write, and their conversions to the type they
// compute in: fp16 and bf16 are computed in fp32 and rounded once, to nearest even, on store.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>

// Forced inline, like the coordinate helpers: compiled inside each SIMD target's kernels.
#define GS3D_ELEMENT_INLINE inline __attribute__((always_inline))

namespace gs3d::kernels {

struct Half {
    uint16_t bits;
};
struct BFloat16 {
    uint16_t bits;
};

GS3D_ELEMENT_INLINE uint32_t FloatBits(float f) {
    uint32_t u;
    std::memcpy(&u, &f, sizeof u);
    return u;
}
GS3D_ELEMENT_INLINE float BitsToFloat(uint32_t u) {
    float f;
    std::memcpy(&f, &u, sizeof f);
    return f;
}

GS3D_ELEMENT_INLINE float HalfToFloat(Half h) {
    uint32_t sign = static_cast<uint32_t>(h.bits & 0x8000u) << 16;
    uint32_t exponent = (h.bits >> 10) & 0x1fu;
    uint32_t mantissa = h.bits & 0x3ffu;
    if (exponent == 0) {  // zero or subnormal: mantissa * 2^-24, exact in fp32
        float magnitude = static_cast<float>(mantissa) * (1.0f / 16777216.0f);
        return sign ? -magnitude : magnitude;
    }
    if (exponent == 31) return BitsToFloat(sign | 0x7f800000u | (mantissa << 13));  // inf, NaN
    return BitsToFloat(sign | ((exponent + 112u) << 23) | (mantissa << 13));        // rebias 15 -> 127
}

GS3D_ELEMENT_INLINE Half FloatToHalf(float f) {
    uint32_t x = FloatBits(f);
    uint16_t sign = static_cast<uint16_t>((x >> 16) & 0x8000u);
    uint32_t magnitude = x & 0x7fffffffu;
    if (magnitude > 0x7f800000u)  // NaN: stays a quiet NaN, keeping the top payload bits
        return Half{static_cast<uint16_t>(sign | 0x7e00u | ((magnitude >> 13) & 0x3ffu))};
    if (magnitude >= 0x477ff000u)  // >= 65520, the midpoint above the largest half: inf
        return Half{static_cast<uint16_t>(sign | 0x7c00u)};
    if (magnitude < 0x38800000u) {  // below 2^-14: a half subnormal, in units of 2^-24
        float scaled = BitsToFloat(magnitude) * 16777216.0f;  // exact: a power-of-two scale
        return Half{static_cast<uint16_t>(sign | static_cast<uint16_t>(std::nearbyint(scaled)))};
    }
    // Normal: drop 13 mantissa bits rounding to nearest even (a carry moves into the
    // exponent, which is right), then rebias the exponent from 127 to 15.
    uint32_t rounded = magnitude + 0xfffu + ((magnitude >> 13) & 1u);
    return Half{static_cast<uint16_t>(sign | ((rounded - (112u << 23)) >> 13))};
}

GS3D_ELEMENT_INLINE float BFloat16ToFloat(BFloat16 b) { return BitsToFloat(static_cast<uint32_t>(b.bits) << 16); }

GS3D_ELEMENT_INLINE BFloat16 FloatToBFloat16(float f) {
    uint32_t x = FloatBits(f);
    if ((x & 0x7fffffffu) > 0x7f800000u) return BFloat16{static_cast<uint16_t>((x >> 16) | 0x40u)};  // quiet NaN
    return BFloat16{static_cast<uint16_t>((x + 0x7fffu + ((x >> 16) & 1u)) >> 16)};
}

// The type an element type is computed and accumulated in.
template <typename T>
struct ComputeTypeOf {
    using type = float;
};
template <>
struct ComputeTypeOf<double> {
    using type = double;
};
template <typename T>
using ComputeType = typename ComputeTypeOf<T>::type;

GS3D_ELEMENT_INLINE float ToCompute(float v) { return v; }
GS3D_ELEMENT_INLINE double ToCompute(double v) { return v; }
GS3D_ELEMENT_INLINE float ToCompute(Half v) { return HalfToFloat(v); }
GS3D_ELEMENT_INLINE float ToCompute(BFloat16 v) { return BFloat16ToFloat(v); }

template <typename T>
T FromCompute(ComputeType<T> v);
template <>
GS3D_ELEMENT_INLINE float FromCompute<float>(float v) { return v; }
template <>
GS3D_ELEMENT_INLINE double FromCompute<double>(double v) { return v; }
template <>
GS3D_ELEMENT_INLINE Half FromCompute<Half>(float v) { return FloatToHalf(v); }
template <>
GS3D_ELEMENT_INLINE BFloat16 FromCompute<BFloat16>(float v) { return FloatToBFloat16(v); }

}  // namespace gs3d::kernels
