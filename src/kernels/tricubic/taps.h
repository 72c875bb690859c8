// Tricubic's taps along one axis: PyTorch's 2-D bicubic convolution (A = -0.75, its
// GridSamplerKernel's coefficient formulas) applied to each of the three axes. The source
// index is unnormalized and not clipped; the padding applies to each tap's index, as
// PyTorch's get_value_bounded does (zeros: a tap outside reads 0 and takes no gradient;
// border: each tap clipped; reflection: each tap reflected, then clipped).
#pragma once

#include <cmath>
#include <cstdint>

#include "kernels/coordinates.h"
#include "kernels/sampler_options.h"

namespace gs3d::kernels {

template <typename S>
struct CubicAxis {
    S weight[4];          // the cubic convolution's coefficients of taps floor(i) - 1 ... floor(i) + 2
    S weight_grad[4];     // PyTorch's get_cubic_coefficients_grad: minus d(weight)/d(index)
    int64_t offset[4];    // each tap's (padded) index times the axis's stride
    int64_t index[4];     // each tap's padded index; -1 where the tap reads 0 (zeros padding)
    S index_derivative;   // d(index)/d(grid value): the unnormalization's scale
};

template <typename S>
GS3D_INLINE void CubicWeights(S t, S* w) {
    constexpr S A = static_cast<S>(-0.75);
    S x = t + 1;  // 1 < x < 2
    w[0] = ((A * x - 5 * A) * x + 8 * A) * x - 4 * A;
    x = t;  // x <= 1
    w[1] = ((A + 2) * x - (A + 3)) * x * x + 1;
    x = 1 - t;
    w[2] = ((A + 2) * x - (A + 3)) * x * x + 1;
    x = 2 - t;
    w[3] = ((A * x - 5 * A) * x + 8 * A) * x - 4 * A;
}

template <typename S>
GS3D_INLINE void CubicWeightGrads(S t, S* g) {
    constexpr S A = static_cast<S>(-0.75);
    S x = -1 - t;
    g[0] = (-3 * A * x - 10 * A) * x - 8 * A;
    x = 0 - t;
    g[1] = (-3 * (A + 2) * x - 2 * (A + 3)) * x;
    x = 1 - t;
    g[2] = (3 * (A + 2) * x - 2 * (A + 3)) * x;
    x = 2 - t;
    g[3] = (3 * A * x - 10 * A) * x + 8 * A;
}

// A tap's index after the padding, or -1 where it reads 0. The tap is an integer-valued
// float (or NaN or inf); it is compared in float before any int cast, so that NaN, inf and
// huge values never reach one (PyTorch's cast of them gives an index out of bounds too,
// except that border and reflection clip NaN to size - 1, as here through Clip).
template <typename S>
GS3D_INLINE int64_t PaddedTap(S tap, int64_t size, Padding padding, bool align_corners) {
    if (padding == Padding::kBorder) {
        tap = Clip(tap, size);
    } else if (padding == Padding::kReflection) {
        tap = align_corners ? Reflect(tap, 0, 2 * (size - 1)) : Reflect(tap, -1, 2 * size - 1);
        tap = Clip(tap, size);
    }
    if (!(tap >= 0 && tap <= static_cast<S>(size - 1))) return -1;
    return static_cast<int64_t>(tap);
}

// The taps of grid value `coord` along an axis of `size` elements `stride` apart.
template <typename S>
GS3D_INLINE void ComputeCubicAxis(S coord, int64_t size, int64_t stride, const SamplerOptions& options,
                                  CubicAxis<S>* axis) {
    const S index = Unnormalize(coord, size, options.align_corners);
    const S first = std::floor(index);
    const S t = index - first;
    CubicWeights(t, axis->weight);
    CubicWeightGrads(t, axis->weight_grad);
    axis->index_derivative = UnnormalizeDerivative<S>(size, options.align_corners);
    for (int k = 0; k < 4; ++k) {
        axis->index[k] = PaddedTap<S>(first - 1 + static_cast<S>(k), size, options.padding, options.align_corners);
        axis->offset[k] = axis->index[k] < 0 ? 0 : axis->index[k] * stride;
    }
}

}  // namespace gs3d::kernels
