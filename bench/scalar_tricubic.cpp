// A plain scalar tricubic sampler (forward and backward; zeros, border or reflection padding
// per tap; float or double; any strides), the baseline that bench/tricubic.py times beside
// the library's tricubic mode: a loop as a user would write it from PyTorch's 2-D bicubic,
// one point at a time, its 64 taps in three nested loops, each tap's padded index computed
// and bounds-tested. One thread. The same formulas as the library (taps.h), so both compute
// the same values; the library must beat this loop, or its row phases do not earn their lines.
//
// Loaded through ctypes (bench/scalar.py), with the scalar baseline's calling convention.
#include <cmath>
#include <cstdint>

#include "kernels/common/coordinates.h"
#include "kernels/tricubic/taps.h"

namespace {

using gs3d::kernels::Padding;
using gs3d::kernels::PaddedTap;
using gs3d::kernels::Unnormalize;
using gs3d::kernels::UnnormalizeDerivative;

template <typename S>
struct Axis {
    int64_t tap[4];  // padded indices, -1: reads 0
    S w[4], g[4];    // weights, and minus their derivatives (PyTorch's coefficient gradients)
    S scale;         // d(index)/d(grid value)
};

template <typename S>
Axis<S> MakeAxis(S coord, int64_t size, Padding padding, bool align) {
    constexpr S A = static_cast<S>(-0.75);
    Axis<S> a;
    const S index = Unnormalize(coord, size, align);
    const S first = std::floor(index);
    const S t = index - first;
    S x = t + 1;
    a.w[0] = ((A * x - 5 * A) * x + 8 * A) * x - 4 * A;
    a.w[1] = ((A + 2) * t - (A + 3)) * t * t + 1;
    x = 1 - t;
    a.w[2] = ((A + 2) * x - (A + 3)) * x * x + 1;
    x = 2 - t;
    a.w[3] = ((A * x - 5 * A) * x + 8 * A) * x - 4 * A;
    x = -1 - t;
    a.g[0] = (-3 * A * x - 10 * A) * x - 8 * A;
    x = 0 - t;
    a.g[1] = (-3 * (A + 2) * x - 2 * (A + 3)) * x;
    x = 1 - t;
    a.g[2] = (3 * (A + 2) * x - 2 * (A + 3)) * x;
    x = 2 - t;
    a.g[3] = (3 * A * x - 10 * A) * x + 8 * A;
    for (int k = 0; k < 4; ++k) a.tap[k] = PaddedTap<S>(first - 1 + static_cast<S>(k), size, padding, align);
    a.scale = UnnormalizeDerivative<S>(size, align);
    return a;
}

struct Shape {
    const int64_t *size, *stride;
};

// Calls f(n, d, h, w, x, y, z) for every grid point in order, with its three axes' taps.
template <typename S, typename F>
void ForEachPoint(const S* grid, Shape is, Shape gs, Padding padding, bool align, F&& f) {
    for (int64_t n = 0; n < is.size[0]; ++n)
        for (int64_t d = 0; d < gs.size[1]; ++d)
            for (int64_t h = 0; h < gs.size[2]; ++h)
                for (int64_t w = 0; w < gs.size[3]; ++w) {
                    const S* g = grid + n * gs.stride[0] + d * gs.stride[1] + h * gs.stride[2] + w * gs.stride[3];
                    f(n, d, h, w, MakeAxis(g[0], is.size[4], padding, align),
                      MakeAxis(g[gs.stride[4]], is.size[3], padding, align),
                      MakeAxis(g[2 * gs.stride[4]], is.size[2], padding, align));
                }
}

template <typename S>
void Forward(const S* in, Shape is, const S* grid, Shape gs, S* out, const int64_t* os, Padding padding, bool align) {
    ForEachPoint(grid, is, gs, padding, align,
                 [&](int64_t n, int64_t d, int64_t h, int64_t w, const Axis<S>& x, const Axis<S>& y, const Axis<S>& z) {
                    for (int64_t c = 0; c < is.size[1]; ++c) {
                        const S* v = in + n * is.stride[0] + c * is.stride[1];
                        S sum = 0;
                        for (int k = 0; k < 4; ++k)
                            for (int j = 0; j < 4; ++j)
                                for (int i = 0; i < 4; ++i)
                                    if (z.tap[k] >= 0 && y.tap[j] >= 0 && x.tap[i] >= 0)
                                        sum += v[z.tap[k] * is.stride[2] + y.tap[j] * is.stride[3] + x.tap[i] * is.stride[4]] *
                                               x.w[i] * y.w[j] * z.w[k];
                        out[n * os[0] + c * os[1] + d * os[2] + h * os[3] + w * os[4]] = sum;
                    }
                 });
}

template <typename S>
void Backward(const S* grad, const int64_t* go, const S* in, Shape is, const S* grid, Shape gs, S* input_grad,
              const int64_t* igs, S* grid_grad, const int64_t* ggs, Padding padding, bool align) {
    for (int64_t n = 0; n < is.size[0]; ++n)
        for (int64_t c = 0; c < is.size[1]; ++c)
            for (int64_t z = 0; z < is.size[2]; ++z)
                for (int64_t y = 0; y < is.size[3]; ++y)
                    for (int64_t x = 0; x < is.size[4]; ++x)
                        input_grad[n * igs[0] + c * igs[1] + z * igs[2] + y * igs[3] + x * igs[4]] = 0;
    ForEachPoint(grid, is, gs, padding, align,
                 [&](int64_t n, int64_t d, int64_t h, int64_t w, const Axis<S>& x, const Axis<S>& y, const Axis<S>& z) {
                    S gx = 0, gy = 0, gz = 0;
                    for (int64_t c = 0; c < is.size[1]; ++c) {
                        const S* v = in + n * is.stride[0] + c * is.stride[1];
                        S* acc = input_grad + n * igs[0] + c * igs[1];
                        const S gout = grad[n * go[0] + c * go[1] + d * go[2] + h * go[3] + w * go[4]];
                        for (int k = 0; k < 4; ++k)
                            for (int j = 0; j < 4; ++j)
                                for (int i = 0; i < 4; ++i) {
                                    if (z.tap[k] < 0 || y.tap[j] < 0 || x.tap[i] < 0) continue;
                                    acc[z.tap[k] * igs[2] + y.tap[j] * igs[3] + x.tap[i] * igs[4]] +=
                                        gout * x.w[i] * y.w[j] * z.w[k];
                                    const S value =
                                        v[z.tap[k] * is.stride[2] + y.tap[j] * is.stride[3] + x.tap[i] * is.stride[4]] * gout;
                                    gx -= value * x.g[i] * y.w[j] * z.w[k];
                                    gy -= value * x.w[i] * y.g[j] * z.w[k];
                                    gz -= value * x.w[i] * y.w[j] * z.g[k];
                                }
                    }
                    S* gg = grid_grad + n * ggs[0] + d * ggs[1] + h * ggs[2] + w * ggs[3];
                    gg[0] = gx * x.scale, gg[ggs[4]] = gy * y.scale, gg[2 * ggs[4]] = gz * z.scale;
                 });
}

}  // namespace

extern "C" {

// As gs3d_scalar_forward and gs3d_scalar_backward (scalar_baseline.cpp), for tricubic.
void gs3d_scalar_tricubic_forward(int double_precision, int padding, int align, const void* input,
                                  const int64_t* in_size, const int64_t* in_stride, const void* grid,
                                  const int64_t* grid_size, const int64_t* grid_stride, void* out,
                                  const int64_t* out_stride) {
    const Shape is{in_size, in_stride}, gs{grid_size, grid_stride};
    const auto p = static_cast<Padding>(padding);
    if (double_precision)
        Forward(static_cast<const double*>(input), is, static_cast<const double*>(grid), gs, static_cast<double*>(out),
                out_stride, p, align != 0);
    else
        Forward(static_cast<const float*>(input), is, static_cast<const float*>(grid), gs, static_cast<float*>(out),
                out_stride, p, align != 0);
}

void gs3d_scalar_tricubic_backward(int double_precision, int padding, int align, const void* grad_output,
                                   const int64_t* grad_output_stride, const void* input, const int64_t* in_size,
                                   const int64_t* in_stride, const void* grid, const int64_t* grid_size,
                                   const int64_t* grid_stride, void* input_grad, const int64_t* input_grad_stride,
                                   void* grid_grad, const int64_t* grid_grad_stride) {
    const Shape is{in_size, in_stride}, gs{grid_size, grid_stride};
    const auto p = static_cast<Padding>(padding);
    if (double_precision)
        Backward(static_cast<const double*>(grad_output), grad_output_stride, static_cast<const double*>(input), is,
                 static_cast<const double*>(grid), gs, static_cast<double*>(input_grad), input_grad_stride,
                 static_cast<double*>(grid_grad), grid_grad_stride, p, align != 0);
    else
        Backward(static_cast<const float*>(grad_output), grad_output_stride, static_cast<const float*>(input), is,
                 static_cast<const float*>(grid), gs, static_cast<float*>(input_grad), input_grad_stride,
                 static_cast<float*>(grid_grad), grid_grad_stride, p, align != 0);
}

}  // extern "C"
