// A plain scalar 3-D grid sampler (bilinear; zeros, border or reflection padding; float or
// double; any strides), the baseline row of bench.py: the library's SIMD kernels must beat
// it on every workload, or they do not earn their lines. One pass over the points in order,
// source indices and weights per point (common/coordinates.h, PyTorch's formulas), one bounds test
// per point with a fast path when all eight corners are inside. One thread.
//
// Loaded by bench.py through ctypes: no ACL types, just pointers, sizes and strides in
// elements, in logical order (input (N, C, D, H, W), grid (N, Do, Ho, Wo, 3)).
#include <cstdint>
#include <type_traits>

#include "kernels/common/coordinates.h"

namespace {

using gs3d::kernels::FloorIndex;
using gs3d::kernels::Padding;
using gs3d::kernels::SourceIndex;
using gs3d::kernels::SourceIndexWithDerivative;

struct Volume {
    int64_t n, c, d, h, w;
    const int64_t* stride;  // N, C, D, H, W
};

// One point's cell: its first corner, the per-axis weights, the eight corner weights and
// their derivatives along x, y and z ((+-1) times the other two axes' weights), and whether
// all eight corners lie inside the volume (else `inside` says which).
template <typename S>
struct Cell {
    int64_t x0, y0, z0;
    S weight[8], dx[8], dy[8], dz[8];
    bool all_inside;
    bool inside[8];

    Cell(S ix, S iy, S iz, const Volume& v) : x0(FloorIndex(ix, v.w)), y0(FloorIndex(iy, v.h)), z0(FloorIndex(iz, v.d)) {
        const S wx[2] = {S(x0 + 1) - ix, ix - S(x0)};
        const S wy[2] = {S(y0 + 1) - iy, iy - S(y0)};
        const S wz[2] = {S(z0 + 1) - iz, iz - S(z0)};
        all_inside = x0 >= 0 && x0 + 1 < v.w && y0 >= 0 && y0 + 1 < v.h && z0 >= 0 && z0 + 1 < v.d;
        for (int k = 0; k < 8; ++k) {
            const int i = k & 1, j = k >> 1 & 1, l = k >> 2;
            weight[k] = wx[i] * wy[j] * wz[l];
            dx[k] = (i ? 1 : -1) * wy[j] * wz[l];
            dy[k] = (j ? 1 : -1) * wx[i] * wz[l];
            dz[k] = (l ? 1 : -1) * wx[i] * wy[j];
            const int64_t x = x0 + i, y = y0 + j, z = z0 + l;
            inside[k] = x >= 0 && x < v.w && y >= 0 && y < v.h && z >= 0 && z < v.d;
        }
    }
};

// Offsets of the eight corners from the first, for a volume's (D, H, W) strides.
struct CornerOffsets {
    int64_t delta[8];
    CornerOffsets(int64_t sd, int64_t sh, int64_t sw) {
        for (int k = 0; k < 8; ++k) delta[k] = (k & 1) * sw + (k >> 1 & 1) * sh + (k >> 2) * sd;
    }
};

template <typename S, Padding P>
void Forward(const S* in, Volume v, const S* grid, const int64_t* gsize, const int64_t* gs, S* out,
             const int64_t* os, bool align) {
    const CornerOffsets corners(v.stride[2], v.stride[3], v.stride[4]);
    for (int64_t n = 0; n < gsize[0]; ++n)
        for (int64_t d = 0; d < gsize[1]; ++d)
            for (int64_t h = 0; h < gsize[2]; ++h)
                for (int64_t w = 0; w < gsize[3]; ++w) {
                    const S* g = grid + n * gs[0] + d * gs[1] + h * gs[2] + w * gs[3];
                    const Cell<S> cell(SourceIndex<S, P>(g[0], v.w, align), SourceIndex<S, P>(g[gs[4]], v.h, align),
                                       SourceIndex<S, P>(g[2 * gs[4]], v.d, align), v);
                    const int64_t first = cell.x0 * v.stride[4] + cell.y0 * v.stride[3] + cell.z0 * v.stride[2];
                    for (int64_t c = 0; c < v.c; ++c) {
                        const S* base = in + n * v.stride[0] + c * v.stride[1] + first;
                        S sum = 0;
                        if (cell.all_inside) {
                            for (int k = 0; k < 8; ++k) sum += base[corners.delta[k]] * cell.weight[k];
                        } else {
                            for (int k = 0; k < 8; ++k)
                                if (cell.inside[k]) sum += base[corners.delta[k]] * cell.weight[k];
                        }
                        out[n * os[0] + c * os[1] + d * os[2] + h * os[3] + w * os[4]] = sum;
                    }
                }
}

template <typename S, Padding P>
void Backward(const S* gout, const int64_t* gos, const S* in, Volume v, const S* grid, const int64_t* gsize,
              const int64_t* gs, S* in_grad, const int64_t* igs, S* grid_grad, const int64_t* ggs, bool align) {
    for (int64_t n = 0; n < v.n; ++n)
        for (int64_t c = 0; c < v.c; ++c)
            for (int64_t z = 0; z < v.d; ++z)
                for (int64_t y = 0; y < v.h; ++y)
                    for (int64_t x = 0; x < v.w; ++x) in_grad[n * igs[0] + c * igs[1] + z * igs[2] + y * igs[3] + x * igs[4]] = 0;
    const CornerOffsets corners(v.stride[2], v.stride[3], v.stride[4]), grad_corners(igs[2], igs[3], igs[4]);
    for (int64_t n = 0; n < gsize[0]; ++n)
        for (int64_t d = 0; d < gsize[1]; ++d)
            for (int64_t h = 0; h < gsize[2]; ++h)
                for (int64_t w = 0; w < gsize[3]; ++w) {
                    const S* g = grid + n * gs[0] + d * gs[1] + h * gs[2] + w * gs[3];
                    S mx, my, mz;
                    const S ix = SourceIndexWithDerivative<S, P>(g[0], v.w, align, &mx);
                    const S iy = SourceIndexWithDerivative<S, P>(g[gs[4]], v.h, align, &my);
                    const S iz = SourceIndexWithDerivative<S, P>(g[2 * gs[4]], v.d, align, &mz);
                    const Cell<S> cell(ix, iy, iz, v);
                    const int64_t first = cell.x0 * v.stride[4] + cell.y0 * v.stride[3] + cell.z0 * v.stride[2];
                    const int64_t gfirst = cell.x0 * igs[4] + cell.y0 * igs[3] + cell.z0 * igs[2];
                    S gx = 0, gy = 0, gz = 0;
                    for (int64_t c = 0; c < v.c; ++c) {
                        const S go = gout[n * gos[0] + c * gos[1] + d * gos[2] + h * gos[3] + w * gos[4]];
                        const S* base = in + n * v.stride[0] + c * v.stride[1] + first;
                        S* gbase = in_grad + n * igs[0] + c * igs[1] + gfirst;
                        auto corner = [&](int k) {
                            gbase[grad_corners.delta[k]] += cell.weight[k] * go;
                            const S value = base[corners.delta[k]] * go;
                            gx += value * cell.dx[k], gy += value * cell.dy[k], gz += value * cell.dz[k];
                        };
                        if (cell.all_inside) {
                            for (int k = 0; k < 8; ++k) corner(k);
                        } else {
                            for (int k = 0; k < 8; ++k)
                                if (cell.inside[k]) corner(k);
                        }
                    }
                    S* gg = grid_grad + n * ggs[0] + d * ggs[1] + h * ggs[2] + w * ggs[3];
                    gg[0] = gx * mx, gg[ggs[4]] = gy * my, gg[2 * ggs[4]] = gz * mz;
                }
}

template <typename F>
void WithPadding(int padding, F&& f) {
    if (padding == 1)
        f(std::integral_constant<Padding, Padding::kBorder>{});
    else if (padding == 2)
        f(std::integral_constant<Padding, Padding::kReflection>{});
    else
        f(std::integral_constant<Padding, Padding::kZeros>{});
}

}  // namespace

extern "C" {

// double_precision: 0 float, 1 double. Sizes and strides: 5 int64 each, in elements.
void gs3d_scalar_forward(int double_precision, int padding, int align, const void* input, const int64_t* in_size,
                         const int64_t* in_stride, const void* grid, const int64_t* grid_size,
                         const int64_t* grid_stride, void* out, const int64_t* out_stride) {
    const Volume v{in_size[0], in_size[1], in_size[2], in_size[3], in_size[4], in_stride};
    auto run = [&](auto type) {
        using S = decltype(type);
        WithPadding(padding, [&](auto p) {
            Forward<S, decltype(p)::value>(static_cast<const S*>(input), v, static_cast<const S*>(grid), grid_size,
                                           grid_stride, static_cast<S*>(out), out_stride, align != 0);
        });
    };
    double_precision ? run(double{}) : run(float{});
}

void gs3d_scalar_backward(int double_precision, int padding, int align, const void* grad_output,
                          const int64_t* grad_output_stride, const void* input, const int64_t* in_size,
                          const int64_t* in_stride, const void* grid, const int64_t* grid_size,
                          const int64_t* grid_stride, void* input_grad, const int64_t* input_grad_stride,
                          void* grid_grad, const int64_t* grid_grad_stride) {
    const Volume v{in_size[0], in_size[1], in_size[2], in_size[3], in_size[4], in_stride};
    auto run = [&](auto type) {
        using S = decltype(type);
        WithPadding(padding, [&](auto p) {
            Backward<S, decltype(p)::value>(static_cast<const S*>(grad_output), grad_output_stride,
                                            static_cast<const S*>(input), v, static_cast<const S*>(grid), grid_size,
                                            grid_stride, static_cast<S*>(input_grad), input_grad_stride,
                                            static_cast<S*>(grid_grad), grid_grad_stride, align != 0);
        });
    };
    double_precision ? run(double{}) : run(float{});
}

}  // extern "C"
