// Turns the run-time modes into template arguments, so that the hot loops have no branches
// on them (the element type is the translation unit's: kernel_entry-inl.h).
#pragma once

#include <type_traits>

#include "kernels/sampler_options.h"

namespace gs3d::kernels {

// Calls f(InterpolationConstant, PaddingConstant).
template <typename F>
void DispatchModes(const SamplerOptions& options, F&& f) {
    auto with_padding = [&](auto interpolation) {
        switch (options.padding) {
            case Padding::kZeros:
                return f(interpolation, std::integral_constant<Padding, Padding::kZeros>{});
            case Padding::kBorder:
                return f(interpolation, std::integral_constant<Padding, Padding::kBorder>{});
            case Padding::kReflection:
                return f(interpolation, std::integral_constant<Padding, Padding::kReflection>{});
        }
    };
    if (options.interpolation == Interpolation::kNearest)
        with_padding(std::integral_constant<Interpolation, Interpolation::kNearest>{});
    else
        with_padding(std::integral_constant<Interpolation, Interpolation::kBilinear>{});
}

}  // namespace gs3d::kernels
