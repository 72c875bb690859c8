// The sampler's modes as the kernels see them (values equal the aclnn arguments).
#pragma once

namespace gs3d::kernels {

enum class Interpolation { kBilinear = 0, kNearest = 1 };
enum class Padding { kZeros = 0, kBorder = 1, kReflection = 2 };

struct SamplerOptions {
    Interpolation interpolation = Interpolation::kBilinear;
    Padding padding = Padding::kZeros;
    bool align_corners = false;
};

}  // namespace gs3d::kernels
