// The sampler's modes as the kernels see them (values equal the aclnn arguments).
#pragma once

namespace gs3d::kernels {

// kTricubic: PyTorch's 2-D bicubic convolution on three axes (tricubic/), an extension that
// only the gs3d calls accept (the aclnn ones refuse 2, as CANN does).
enum class Interpolation { kBilinear = 0, kNearest = 1, kTricubic = 2 };
enum class Padding { kZeros = 0, kBorder = 1, kReflection = 2 };

struct SamplerOptions {
    Interpolation interpolation = Interpolation::kBilinear;
    Padding padding = Padding::kZeros;
    bool align_corners = false;
};

}  // namespace gs3d::kernels
