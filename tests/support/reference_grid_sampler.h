// An independent double-precision reference of the 3-D grid sampler and its gradients,
// written from the mathematical definition (PyTorch's documented semantics), not from the
// library's kernels: reflection by folding a periodic coordinate, weights as 1 - |i - x|,
// derivatives by differentiating those expressions, nearest by explicit half-to-even,
// tricubic by Keys' cubic convolution kernel (a = -0.75) and its derivative, the padding
// applied to each tap (border clamps, reflection folds then clamps, zeros reads 0 outside).
#pragma once

#include <cstdint>
#include <vector>

namespace gs3d_test {

struct RefOptions {
    int interpolation = 0;  // 0 bilinear, 1 nearest, 2 tricubic (the gs3d extension calls)
    int padding = 0;        // 0 zeros, 1 border, 2 reflection
    bool align_corners = false;
};

// A dense row-major array of 5 dims.
struct Array5 {
    int64_t dim[5] = {0, 0, 0, 0, 0};
    std::vector<double> values;

    Array5() = default;
    Array5(int64_t a, int64_t b, int64_t c, int64_t d, int64_t e);
    int64_t Count() const { return dim[0] * dim[1] * dim[2] * dim[3] * dim[4]; }
    int64_t Index(int64_t a, int64_t b, int64_t c, int64_t d, int64_t e) const {
        return (((a * dim[1] + b) * dim[2] + c) * dim[3] + d) * dim[4] + e;
    }
    double& at(int64_t a, int64_t b, int64_t c, int64_t d, int64_t e) { return values[Index(a, b, c, d, e)]; }
    double at(int64_t a, int64_t b, int64_t c, int64_t d, int64_t e) const { return values[Index(a, b, c, d, e)]; }
};

// The source index of grid value g along an axis of `size`, after padding, and its
// derivative with respect to g (0 where clipped, borders included).
struct AxisIndex {
    double index;
    double derivative;
};
AxisIndex ReferenceSourceIndex(double g, int64_t size, const RefOptions& options);

// input (N, C, D, H, W), grid (N, Do, Ho, Wo, 3) -> out (N, C, Do, Ho, Wo).
Array5 ReferenceForward(const Array5& input, const Array5& grid, const RefOptions& options);

// Per element of inputGrad and gridGrad, the sum of its terms' magnitudes (|gradOutput x
// weights|, |input x gradOutput x slope x weights| x |d(index)/d(grid)|): the scale of its
// rounding error where many terms of either sign meet (tricubic's border voxels, or its
// weight gradients, which sum to 0 on an input constant along an axis).
struct BackwardMagnitudes {
    Array5 input_grad, grid_grad;
};

// Gradients of sum(grad_output * forward(input, grid)); with `magnitudes`, their terms'
// magnitudes too.
void ReferenceBackward(const Array5& grad_output, const Array5& input, const Array5& grid, const RefOptions& options,
                       Array5* input_grad, Array5* grid_grad, BackwardMagnitudes* magnitudes = nullptr);

}  // namespace gs3d_test
