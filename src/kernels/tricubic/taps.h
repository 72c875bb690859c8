// Tricubic's taps: PyTorch's 2-D bicubic convolution (A = -0.75, its GridSamplerKernel's
// coefficient formulas, in vectors in blocks-inl.h) applied to each of the three axes. The
// source index is unnormalized and not clipped; the padding applies to each tap's index, as
// PyTorch's get_value_bounded does (zeros: a tap outside reads 0 and takes no gradient;
// border: each tap clipped; reflection: each tap reflected, then clipped).
#pragma once

#include <cstdint>

#include "kernels/common/coordinates.h"
#include "kernels/common/sampler_options.h"

namespace gs3d::kernels {

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

}  // namespace gs3d::kernels
