#include "support/reference_grid_sampler.h"

#include <algorithm>
#include <cmath>

namespace gs3d_test {

Array5::Array5(int64_t a, int64_t b, int64_t c, int64_t d, int64_t e) : dim{a, b, c, d, e} {
    values.assign(static_cast<size_t>(Count()), 0.0);
}

namespace {

// Reflection: the line folded onto [low, high] (the voxel centres, aligned, or the volume's
// outer edges), a triangle wave of period 2 * span; the derivative's sign.
AxisIndex Fold(double index, int64_t size, bool align_corners) {
    const double s = static_cast<double>(size);
    double low = align_corners ? 0 : -0.5;
    double high = align_corners ? s - 1 : s - 0.5;
    double span = high - low;
    if (span <= 0) return {0, 0};
    double t = std::fmod(index - low, 2 * span);
    if (t < 0) t += 2 * span;
    if (t <= span) return {low + t, 1};
    return {low + 2 * span - t, -1};
}

}  // namespace

AxisIndex ReferenceSourceIndex(double g, int64_t size, const RefOptions& options) {
    const double s = static_cast<double>(size);
    // Unnormalize: -1 and 1 are the centres of the corner voxels (aligned) or their outer edges.
    double scale = options.align_corners ? (s - 1) / 2 : s / 2;
    double index = options.align_corners ? (g + 1) * scale : (g + 1) * scale - 0.5;
    double derivative = scale;
    if (options.padding == 2) {
        const AxisIndex folded = Fold(index, size, options.align_corners);
        if (folded.derivative == 0) return {0, 0};
        index = folded.index;
        derivative *= folded.derivative;
    }
    if (options.padding == 1 || options.padding == 2) {
        if (index <= 0) return {0, 0};
        if (index >= s - 1) return {s - 1, 0};
    }
    return {index, derivative};
}

namespace {

// Nearest integer, ties to even.
int64_t RoundHalfEven(double x) {
    double r = std::floor(x);
    double frac = x - r;
    if (frac > 0.5 || (frac == 0.5 && std::fmod(r, 2.0) != 0)) r += 1;
    return static_cast<int64_t>(r);
}

struct Sample {
    // Per axis (x, y, z): the candidate integer positions (1, 2 or 4: taps), their weights
    // and d(weight)/d(index).
    int taps;
    int64_t pos[3][4];
    double weight[3][4];
    double slope[3][4];
    double derivative[3];  // d(index)/d(grid value)
};

// Keys' cubic convolution kernel with a = -0.75 (tricubic's weights), and its derivative.
double Keys(double s) {
    const double a = -0.75, x = std::fabs(s);
    if (x <= 1) return (a + 2) * x * x * x - (a + 3) * x * x + 1;
    if (x < 2) return a * x * x * x - 5 * a * x * x + 8 * a * x - 4 * a;
    return 0;
}
double KeysSlope(double s) {
    const double a = -0.75, x = std::fabs(s), sign = s < 0 ? -1 : 1;
    if (x <= 1) return sign * (3 * (a + 2) * x * x - 2 * (a + 3) * x);
    if (x < 2) return sign * (3 * a * x * x - 10 * a * x + 8 * a);
    return 0;
}

// Tricubic's tap at integer position m: the padding applied to the tap (border clamps it,
// reflection folds then clamps it), or -1 where it reads 0 (zeros, outside).
int64_t PaddedTap(int64_t m, int64_t size, const RefOptions& options) {
    double position = static_cast<double>(m);
    if (options.padding == 2) position = Fold(position, size, options.align_corners).index;
    if (options.padding != 0) position = std::min(std::max(position, 0.0), static_cast<double>(size - 1));
    if (position < 0 || position > static_cast<double>(size - 1)) return -1;
    return static_cast<int64_t>(position);
}

Sample MakeSample(const Array5& input, const Array5& grid, int64_t n, int64_t d, int64_t h, int64_t w,
                  const RefOptions& options) {
    Sample s;
    const int64_t sizes[3] = {input.dim[4], input.dim[3], input.dim[2]};  // W, H, D
    for (int axis = 0; axis < 3; ++axis) {
        if (options.interpolation == 2) {  // the index unclipped; the padding goes to each tap
            RefOptions unpadded = options;
            unpadded.padding = 0;
            const AxisIndex a = ReferenceSourceIndex(grid.at(n, d, h, w, axis), sizes[axis], unpadded);
            s.taps = 4;
            s.derivative[axis] = a.derivative;
            const int64_t first = static_cast<int64_t>(std::floor(a.index)) - 1;
            for (int k = 0; k < 4; ++k) {
                s.pos[axis][k] = PaddedTap(first + k, sizes[axis], options);
                s.weight[axis][k] = Keys(a.index - static_cast<double>(first + k));
                s.slope[axis][k] = KeysSlope(a.index - static_cast<double>(first + k));
            }
            continue;
        }
        AxisIndex a = ReferenceSourceIndex(grid.at(n, d, h, w, axis), sizes[axis], options);
        s.derivative[axis] = a.derivative;
        if (options.interpolation == 1) {
            s.taps = 1;
            s.pos[axis][0] = RoundHalfEven(a.index);
            s.weight[axis][0] = 1;
            s.slope[axis][0] = 0;
            s.pos[axis][1] = -1;  // unused
            s.weight[axis][1] = 0;
            s.slope[axis][1] = 0;
            continue;
        }
        s.taps = 2;
        int64_t lo = static_cast<int64_t>(std::floor(a.index));
        for (int k = 0; k < 2; ++k) {
            s.pos[axis][k] = lo + k;
            s.weight[axis][k] = 1 - std::fabs(a.index - static_cast<double>(lo + k));
            s.slope[axis][k] = k == 0 ? -1 : 1;
        }
    }
    return s;
}

bool Inside(const Array5& input, int64_t x, int64_t y, int64_t z) {
    return x >= 0 && x < input.dim[4] && y >= 0 && y < input.dim[3] && z >= 0 && z < input.dim[2];
}

}  // namespace

Array5 ReferenceForward(const Array5& input, const Array5& grid, const RefOptions& options) {
    Array5 out(input.dim[0], input.dim[1], grid.dim[1], grid.dim[2], grid.dim[3]);
    for (int64_t n = 0; n < out.dim[0]; ++n)
        for (int64_t d = 0; d < out.dim[2]; ++d)
            for (int64_t h = 0; h < out.dim[3]; ++h)
                for (int64_t w = 0; w < out.dim[4]; ++w) {
                    Sample s = MakeSample(input, grid, n, d, h, w, options);
                    const int corners = s.taps;
                    for (int64_t c = 0; c < out.dim[1]; ++c) {
                        double sum = 0;
                        for (int kz = 0; kz < corners; ++kz)
                            for (int ky = 0; ky < corners; ++ky)
                                for (int kx = 0; kx < corners; ++kx) {
                                    int64_t x = s.pos[0][kx], y = s.pos[1][ky], z = s.pos[2][kz];
                                    if (!Inside(input, x, y, z)) continue;
                                    sum += input.at(n, c, z, y, x) * s.weight[0][kx] * s.weight[1][ky] * s.weight[2][kz];
                                }
                        out.at(n, c, d, h, w) = sum;
                    }
                }
    return out;
}

void ReferenceBackward(const Array5& grad_output, const Array5& input, const Array5& grid, const RefOptions& options,
                       Array5* input_grad, Array5* grid_grad, BackwardMagnitudes* magnitudes) {
    *input_grad = Array5(input.dim[0], input.dim[1], input.dim[2], input.dim[3], input.dim[4]);
    *grid_grad = Array5(grid.dim[0], grid.dim[1], grid.dim[2], grid.dim[3], grid.dim[4]);
    if (magnitudes) *magnitudes = BackwardMagnitudes{*input_grad, *grid_grad};
    for (int64_t n = 0; n < grid.dim[0]; ++n)
        for (int64_t d = 0; d < grid.dim[1]; ++d)
            for (int64_t h = 0; h < grid.dim[2]; ++h)
                for (int64_t w = 0; w < grid.dim[3]; ++w) {
                    Sample s = MakeSample(input, grid, n, d, h, w, options);
                    const int corners = s.taps;
                    double dindex[3] = {0, 0, 0};  // d(loss)/d(source index) per axis
                    double dindex_magnitude[3] = {0, 0, 0};  // the sums of its terms' magnitudes
                    for (int64_t c = 0; c < input.dim[1]; ++c) {
                        const double g = grad_output.at(n, c, d, h, w);
                        for (int kz = 0; kz < corners; ++kz)
                            for (int ky = 0; ky < corners; ++ky)
                                for (int kx = 0; kx < corners; ++kx) {
                                    int64_t x = s.pos[0][kx], y = s.pos[1][ky], z = s.pos[2][kz];
                                    if (!Inside(input, x, y, z)) continue;
                                    const double wx = s.weight[0][kx], wy = s.weight[1][ky], wz = s.weight[2][kz];
                                    input_grad->at(n, c, z, y, x) += g * wx * wy * wz;
                                    const double v = input.at(n, c, z, y, x) * g;
                                    const double term[3] = {v * s.slope[0][kx] * wy * wz, v * wx * s.slope[1][ky] * wz,
                                                            v * wx * wy * s.slope[2][kz]};
                                    for (int axis = 0; axis < 3; ++axis) dindex[axis] += term[axis];
                                    if (!magnitudes) continue;
                                    magnitudes->input_grad.at(n, c, z, y, x) += std::fabs(g * wx * wy * wz);
                                    for (int axis = 0; axis < 3; ++axis) dindex_magnitude[axis] += std::fabs(term[axis]);
                                }
                    }
                    for (int axis = 0; axis < 3; ++axis) {
                        grid_grad->at(n, d, h, w, axis) = dindex[axis] * s.derivative[axis];
                        if (magnitudes)
                            magnitudes->grid_grad.at(n, d, h, w, axis) =
                                dindex_magnitude[axis] * std::fabs(s.derivative[axis]);
                    }
                }
}

}  // namespace gs3d_test
