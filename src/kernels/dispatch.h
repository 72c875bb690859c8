// Turns the run-time element type and modes into template arguments, so that the hot loops
// have no branches on them.
#pragma once

#include <type_traits>

#include "kernels/element_types.h"
#include "kernels/grid_sampler3d_kernels.h"

namespace gs3d::kernels {

template <typename T>
struct TypeTag {
    using type = T;
};

// Calls f(TypeTag<T>{}, InterpolationConstant, PaddingConstant).
template <typename F>
void Dispatch(ElementType type, const SamplerOptions& options, F&& f) {
    auto with_modes = [&](auto type_tag) {
        auto with_padding = [&](auto interpolation) {
            switch (options.padding) {
                case Padding::kZeros:
                    return f(type_tag, interpolation, std::integral_constant<Padding, Padding::kZeros>{});
                case Padding::kBorder:
                    return f(type_tag, interpolation, std::integral_constant<Padding, Padding::kBorder>{});
                case Padding::kReflection:
                    return f(type_tag, interpolation, std::integral_constant<Padding, Padding::kReflection>{});
            }
        };
        if (options.interpolation == Interpolation::kNearest)
            with_padding(std::integral_constant<Interpolation, Interpolation::kNearest>{});
        else
            with_padding(std::integral_constant<Interpolation, Interpolation::kBilinear>{});
    };
    switch (type) {
        case ElementType::kFloat32: return with_modes(TypeTag<float>{});
        case ElementType::kFloat64: return with_modes(TypeTag<double>{});
        case ElementType::kFloat16: return with_modes(TypeTag<Half>{});
        case ElementType::kBFloat16: return with_modes(TypeTag<BFloat16>{});
    }
}

}  // namespace gs3d::kernels
