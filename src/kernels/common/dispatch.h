// Turns the run-time interpolation mode into a template argument, so that the hot loops have
// no branches on it (the element type is the translation unit's: kernel_entry-inl.h). The
// padding mode stays a run-time value down to the source indices (BlockSourceIndices,
// SourceIndexWithDerivative), which switch on it once per block or point.
#pragma once

#include <type_traits>

#include "kernels/common/sampler_options.h"

namespace gs3d::kernels {

// Returns f(PaddingConstant): for the few functions compiled once per padding mode (the
// source indices), whose callers pass the mode at run time.
template <typename F>
inline decltype(auto) DispatchPadding(Padding padding, F&& f) {
    if (padding == Padding::kBorder) return f(std::integral_constant<Padding, Padding::kBorder>{});
    if (padding == Padding::kReflection) return f(std::integral_constant<Padding, Padding::kReflection>{});
    return f(std::integral_constant<Padding, Padding::kZeros>{});
}

// Calls f(InterpolationConstant) for bilinear and nearest; tricubic has kernels of its own
// (tricubic/), which ForwardOfType and BackwardOfType call before this.
template <typename F>
void DispatchInterpolation(const SamplerOptions& options, F&& f) {
    if (options.interpolation == Interpolation::kNearest)
        f(std::integral_constant<Interpolation, Interpolation::kNearest>{});
    else
        f(std::integral_constant<Interpolation, Interpolation::kBilinear>{});
}

}  // namespace gs3d::kernels
