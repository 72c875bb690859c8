// The backward kernel: inputGrad (scatter of gradOutput through the sampling weights) and
// gridGrad (derivative of the sample with respect to the grid coordinates).
//
// No races and no dependence on the thread count:
// - gridGrad: threads split the grid points; each point sums over channels in order.
// - inputGrad: threads split (n, block of channels); a block owns its slices of inputGrad
//   and visits the grid points of n in order, so every element sums its contributions in
//   grid-point order, as PyTorch's serial loop does.
#include <algorithm>
#include <cstdint>
#include <type_traits>

#include "kernels/dispatch.h"
#include "kernels/grid_sampler3d_kernels.h"
#include "kernels/trilinear_corners.h"

namespace gs3d::kernels {
namespace {

// Channels whose inputGrad slices one task owns: the corners of a point are computed once
// for the block. A constant, so that the split depends on the shape only.
constexpr int64_t kChannelBlock = 8;

template <typename T>
constexpr bool kAccumulatesInWorkspace = !std::is_same_v<T, ComputeType<T>>;

// Loads the three grid values of point (n, d, h, w).
template <typename T, typename S>
void LoadGridPoint(const View5& grid, int64_t n, int64_t d, int64_t h, int64_t w, S* x, S* y, S* z) {
    const T* g = static_cast<const T*>(grid.data) + n * grid.stride[0] + d * grid.stride[1] + h * grid.stride[2] +
                 w * grid.stride[3];
    *x = ToCompute(g[0]);
    *y = ToCompute(g[grid.stride[4]]);
    *z = ToCompute(g[2 * grid.stride[4]]);
}

template <typename S>
struct SourceIndices {
    S ix, iy, iz;     // source indices
    S mx, my, mz;     // d(index)/d(grid value)
};

template <typename S, Padding P>
SourceIndices<S> ComputeSourceIndices(S x, S y, S z, const View5& in, bool align) {
    SourceIndices<S> s;
    s.ix = SourceIndexWithDerivative<S, P>(x, in.size[4], align, &s.mx);
    s.iy = SourceIndexWithDerivative<S, P>(y, in.size[3], align, &s.my);
    s.iz = SourceIndexWithDerivative<S, P>(z, in.size[2], align, &s.mz);
    return s;
}

template <typename T, Interpolation I, Padding P>
void GridGrad(const BackwardArgs& args) {
    using S = ComputeType<T>;
    const View5& in = args.input;
    const View5& grid = args.grid;
    const View5& gout = args.grad_output;
    const View5& ggrid = args.grid_grad;
    const int64_t batch = in.size[0], channels = in.size[1];
    const int64_t out_d = grid.size[1], out_h = grid.size[2], out_w = grid.size[3];
    const int64_t points = out_d * out_h * out_w;
    const int64_t in_size[3] = {in.size[2], in.size[3], in.size[4]};
    const int64_t in_stride[3] = {in.stride[2], in.stride[3], in.stride[4]};
    const auto* in_data = static_cast<const T*>(in.data);
    const auto* gout_data = static_cast<const T*>(gout.data);
    auto* ggrid_data = static_cast<T*>(ggrid.data);

#pragma omp parallel for schedule(static)
    for (int64_t p = 0; p < batch * points; ++p) {
        const int64_t n = p / points, r = p % points;
        const int64_t d = r / (out_h * out_w), h = (r / out_w) % out_h, w = r % out_w;
        T* gg = ggrid_data + n * ggrid.stride[0] + d * ggrid.stride[1] + h * ggrid.stride[2] + w * ggrid.stride[3];
        S gix = 0, giy = 0, giz = 0, mx = 0, my = 0, mz = 0;
        if constexpr (I == Interpolation::kBilinear) {
            S x, y, z;
            LoadGridPoint<T>(grid, n, d, h, w, &x, &y, &z);
            const SourceIndices<S> s = ComputeSourceIndices<S, P>(x, y, z, in, args.options.align_corners);
            mx = s.mx, my = s.my, mz = s.mz;
            TrilinearCorners<S> corners;
            corners.Compute(s.ix, s.iy, s.iz, in_size, in_stride);
            const T* in_n = in_data + n * in.stride[0];
            const T* gout_p =
                gout_data + n * gout.stride[0] + d * gout.stride[2] + h * gout.stride[3] + w * gout.stride[4];
            for (int64_t c = 0; c < channels; ++c) {
                const S g = ToCompute(gout_p[c * gout.stride[1]]);
                const T* in_c = in_n + c * in.stride[1];
                for (int k = 0; k < 8; ++k) {
                    if (!corners.inside[k]) continue;
                    const int bx = k & 1, by = (k >> 1) & 1, bz = k >> 2;
                    const S v = ToCompute(in_c[corners.offset[k]]);
                    // d(weight)/d(ix) is -+ wy * wz, and likewise for y and z.
                    const S dx = v * corners.wy[by] * corners.wz[bz] * g;
                    const S dy = v * corners.wx[bx] * corners.wz[bz] * g;
                    const S dz = v * corners.wx[bx] * corners.wy[by] * g;
                    gix = bx ? gix + dx : gix - dx;
                    giy = by ? giy + dy : giy - dy;
                    giz = bz ? giz + dz : giz - dz;
                }
            }
        }
        // Nearest: the sample is piecewise constant in the grid, so its gradient is 0.
        gg[0] = FromCompute<T>(mx * gix);
        gg[ggrid.stride[4]] = FromCompute<T>(my * giy);
        gg[2 * ggrid.stride[4]] = FromCompute<T>(mz * giz);
    }
}

// Where inputGrad is accumulated: the output itself (fp32, fp64), or a contiguous fp32
// buffer in the workspace (fp16, bf16) converted once at the end.
template <typename S>
struct Accumulator {
    S* data;
    int64_t stride[5];
};

template <typename T, Interpolation I, Padding P>
void InputGrad(const BackwardArgs& args, void* workspace) {
    using S = ComputeType<T>;
    const View5& grid = args.grid;
    const View5& gout = args.grad_output;
    const View5& igrad = args.input_grad;
    const int64_t batch = igrad.size[0], channels = igrad.size[1];
    const int64_t vol_d = igrad.size[2], vol_h = igrad.size[3], vol_w = igrad.size[4];
    const int64_t out_d = grid.size[1], out_h = grid.size[2], out_w = grid.size[3];
    const int64_t in_size[3] = {vol_d, vol_h, vol_w};
    const auto* gout_data = static_cast<const T*>(gout.data);

    Accumulator<S> acc;
    if constexpr (kAccumulatesInWorkspace<T>) {
        acc.data = static_cast<S*>(workspace);
        acc.stride[4] = 1;
        for (int i = 4; i > 0; --i) acc.stride[i - 1] = acc.stride[i] * igrad.size[i];
    } else {
        acc.data = static_cast<S*>(igrad.data);
        for (int i = 0; i < 5; ++i) acc.stride[i] = igrad.stride[i];
    }
    const int64_t acc_vol_stride[3] = {acc.stride[2], acc.stride[3], acc.stride[4]};
    const int64_t blocks_per_n = (channels + kChannelBlock - 1) / kChannelBlock;

#pragma omp parallel for schedule(dynamic, 1)
    for (int64_t task = 0; task < batch * blocks_per_n; ++task) {
        const int64_t n = task / blocks_per_n;
        const int64_t c_begin = task % blocks_per_n * kChannelBlock;
        const int64_t c_end = std::min(channels, c_begin + kChannelBlock);
        S* acc_n = acc.data + n * acc.stride[0];
        for (int64_t c = c_begin; c < c_end; ++c)  // zero the slices this task owns
            for (int64_t z = 0; z < vol_d; ++z)
                for (int64_t y = 0; y < vol_h; ++y)
                    for (int64_t x = 0; x < vol_w; ++x)
                        acc_n[c * acc.stride[1] + z * acc.stride[2] + y * acc.stride[3] + x * acc.stride[4]] = 0;
        for (int64_t d = 0; d < out_d; ++d)
            for (int64_t h = 0; h < out_h; ++h)
                for (int64_t w = 0; w < out_w; ++w) {
                    S x, y, z;
                    LoadGridPoint<T>(grid, n, d, h, w, &x, &y, &z);
                    const SourceIndices<S> s = ComputeSourceIndices<S, P>(x, y, z, args.input, args.options.align_corners);
                    const T* gout_p =
                        gout_data + n * gout.stride[0] + d * gout.stride[2] + h * gout.stride[3] + w * gout.stride[4];
                    if constexpr (I == Interpolation::kBilinear) {
                        TrilinearCorners<S> corners;
                        corners.Compute(s.ix, s.iy, s.iz, in_size, acc_vol_stride);
                        for (int64_t c = c_begin; c < c_end; ++c) {
                            const S g = ToCompute(gout_p[c * gout.stride[1]]);
                            S* acc_c = acc_n + c * acc.stride[1];
                            for (int k = 0; k < 8; ++k)
                                if (corners.inside[k]) acc_c[corners.offset[k]] += corners.weight[k] * g;
                        }
                    } else {
                        NearestCorner corner;
                        corner.Compute(s.ix, s.iy, s.iz, in_size, acc_vol_stride);
                        if (!corner.inside) continue;
                        for (int64_t c = c_begin; c < c_end; ++c)
                            acc_n[c * acc.stride[1] + corner.offset] += ToCompute(gout_p[c * gout.stride[1]]);
                    }
                }
        if constexpr (kAccumulatesInWorkspace<T>) {  // round once into the output
            T* out_n = static_cast<T*>(igrad.data) + n * igrad.stride[0];
            for (int64_t c = c_begin; c < c_end; ++c)
                for (int64_t z = 0; z < vol_d; ++z)
                    for (int64_t y = 0; y < vol_h; ++y)
                        for (int64_t x = 0; x < vol_w; ++x)
                            out_n[c * igrad.stride[1] + z * igrad.stride[2] + y * igrad.stride[3] +
                                  x * igrad.stride[4]] =
                                FromCompute<T>(acc_n[c * acc.stride[1] + z * acc.stride[2] + y * acc.stride[3] +
                                                     x * acc.stride[4]]);
        }
    }
}

}  // namespace

size_t BackwardWorkspaceBytes(const BackwardArgs& args) {
    if (!args.compute_input_grad || args.type == ElementType::kFloat32 || args.type == ElementType::kFloat64) return 0;
    size_t elements = 1;
    for (int64_t s : args.input_grad.size) elements *= static_cast<size_t>(s);
    return elements * sizeof(float);
}

void RunBackward(const BackwardArgs& args, void* workspace) {
    Dispatch(args.type, args.options, [&](auto type_tag, auto interpolation, auto padding) {
        using T = typename decltype(type_tag)::type;
        constexpr Interpolation I = decltype(interpolation)::value;
        constexpr Padding P = decltype(padding)::value;
        if (args.compute_grid_grad) GridGrad<T, I, P>(args);
        if (args.compute_input_grad) InputGrad<T, I, P>(args, workspace);
    });
}

}  // namespace gs3d::kernels
