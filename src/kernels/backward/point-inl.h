// The backward kernel's problem (its arguments pulled out once) and its point-by-point path
// (BackwardPoint): PyTorch's scalar expressions, corner by corner, for the cases that the
// SIMD blocks do not take (offsets that do not fit int32, gridGrad alone, more than 2^32
// points).
//
// Compiled into each SIMD target: included by backward/kernel-inl.h (after
// foreach_target.h) only; Highway's per-target include guard.
#if defined(GS3D_KERNELS_BACKWARD_POINT_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef GS3D_KERNELS_BACKWARD_POINT_INL_H_
#undef GS3D_KERNELS_BACKWARD_POINT_INL_H_
#else
#define GS3D_KERNELS_BACKWARD_POINT_INL_H_
#endif

#include <hwy/highway.h>

#include <algorithm>
#include <cstdint>
#include <type_traits>

#include "kernels/common/coordinates.h"
#include "kernels/common/element_types.h"
#include "kernels/grid_sampler3d_kernels.h"
#include "kernels/common/trilinear_corners.h"

HWY_BEFORE_NAMESPACE();
namespace gs3d::kernels {
namespace HWY_NAMESPACE {
namespace {  // internal to each element type's kernels_*.cpp

template <typename T>
constexpr bool kAccumulatesInBuffer = !std::is_same_v<T, ComputeType<T>>;

template <typename S>
struct SourceIndices {
    S ix, iy, iz;  // source indices
    S mx, my, mz;  // d(index)/d(grid value)
};

template <typename T, typename S = ComputeType<T>>
HWY_INLINE SourceIndices<S> LoadSourceIndices(const T* g, int64_t coord_stride, const View5& in,
                                              const SamplerOptions& options) {
    const bool align = options.align_corners;
    const Padding padding = options.padding;
    SourceIndices<S> s;
    s.ix = SourceIndexWithDerivative<S>(ToCompute(g[0]), in.size[4], align, padding, &s.mx);
    s.iy = SourceIndexWithDerivative<S>(ToCompute(g[coord_stride]), in.size[3], align, padding, &s.my);
    s.iz = SourceIndexWithDerivative<S>(ToCompute(g[2 * coord_stride]), in.size[2], align, padding, &s.mz);
    return s;
}

// Where a grid row's points are (Problem::Row): point w of row (n, d, h) is at element
// grid + w * grid_w of the grid, and so on (gradOutput: channel 0).
struct RowOffsets {
    int64_t grid, grad_output, grid_grad;
    int64_t grid_w, grad_output_w, grid_grad_w;
};

// Everything a pass needs, pulled out of the arguments once.
template <typename T>
struct Problem {
    using S = ComputeType<T>;
    const BackwardArgs& args;
    const T* in;
    const T* grid;
    const T* gout;
    T* ggrid;
    S* acc;                // inputGrad accumulator: the output, or the fp32 buffer
    int64_t acc_stride[5];
    int64_t batch, channels, out_d, out_h, out_w;
    TrilinearGeometry in_geometry, acc_geometry;
    bool same_geometry;  // input and accumulator have the same (D, H, W) strides
    int64_t in_last;     // the input's largest element offset

    Problem(const BackwardArgs& a, S* accumulator, const int64_t* accumulator_strides)
        : args(a),
          in(static_cast<const T*>(a.input.data)),
          grid(static_cast<const T*>(a.grid.data)),
          gout(static_cast<const T*>(a.grad_output.data)),
          ggrid(static_cast<T*>(a.grid_grad.data)),
          acc(accumulator),
          acc_stride{accumulator_strides[0], accumulator_strides[1], accumulator_strides[2], accumulator_strides[3],
                     accumulator_strides[4]},
          batch(a.input.size[0]),
          channels(a.input.size[1]),
          out_d(a.grid.size[1]),
          out_h(a.grid.size[2]),
          out_w(a.grid.size[3]),
          in_geometry(a.input),
          acc_geometry(a.input_grad, accumulator_strides + 2),
          same_geometry(in_geometry.stride[0] == acc_geometry.stride[0] && in_geometry.stride[1] == acc_geometry.stride[1] &&
                        in_geometry.stride[2] == acc_geometry.stride[2]),
          in_last(LastElementOffset(a.input)) {}

    const T* GridPoint(int64_t n, int64_t d, int64_t h, int64_t w) const {
        const RowOffsets row = Row(n, d, h);
        return grid + row.grid + w * row.grid_w;
    }
    T* GridGradPoint(int64_t n, int64_t d, int64_t h, int64_t w) const {
        const RowOffsets row = Row(n, d, h);
        return ggrid + row.grid_grad + w * row.grid_grad_w;
    }
    const T* GradOutputPoint(int64_t n, int64_t d, int64_t h, int64_t w) const {
        if (!gout) return nullptr;  // C = 0: no element to read, and no data
        const RowOffsets row = Row(n, d, h);
        return gout + row.grad_output + w * row.grad_output_w;
    }
    RowOffsets Row(int64_t n, int64_t d, int64_t h) const {
        const View5 &g = args.grid, &go = args.grad_output, &gg = args.grid_grad;
        return {n * g.stride[0] + d * g.stride[1] + h * g.stride[2],
                n * go.stride[0] + d * go.stride[2] + h * go.stride[3],
                n * gg.stride[0] + d * gg.stride[1] + h * gg.stride[2],
                g.stride[3],
                go.stride[4],
                gg.stride[3]};
    }
    // Zeroes planes [z_begin, z_end) of batch item n's accumulator, every channel, in memory
    // order: with channels innermost (NDHWC) each line at once rather than once per channel,
    // which strided over every line C times.
    void ZeroAccumulatorPlanes(int64_t n, int64_t z_begin, int64_t z_end) const {
        if (channels == 0) return;  // no data to offset
        if (!args.first_chunk) return;  // the sum of the grid's earlier chunks (BackwardArgs)
        const int64_t vol_h = args.input.size[3], vol_w = args.input.size[4];
        const int64_t* st = acc_stride;
        const bool channels_inner = st[1] < st[4];
        const bool packed_line = channels_inner && st[1] == 1 && st[4] == channels;  // (x, c) contiguous
        if (!channels_inner && st[4] == 1 && st[3] == vol_w) {  // each channel's planes (h, w) contiguous
            // One fill per channel: element by element at a run-time stride, the compiler's
            // loop stored 4 bytes at a time (perf: 16% of a one-thread nearest backward, (2, 8, 64)).
            for (int64_t c = 0; c < channels; ++c)
                for (int64_t z = z_begin; z < z_end; ++z) {
                    S* plane = acc + n * st[0] + c * st[1] + z * st[2];
                    std::fill(plane, plane + vol_h * vol_w, S(0));
                }
            return;
        }
        for (int64_t z = z_begin; z < z_end; ++z)
            for (int64_t y = 0; y < vol_h; ++y) {
                S* line = acc + n * st[0] + z * st[2] + y * st[3];
                if (packed_line) {
                    std::fill(line, line + vol_w * channels, S(0));
                } else if (channels_inner) {
                    for (int64_t x = 0; x < vol_w; ++x)
                        for (int64_t c = 0; c < channels; ++c) line[x * st[4] + c * st[1]] = S(0);
                } else {
                    for (int64_t c = 0; c < channels; ++c)
                        for (int64_t x = 0; x < vol_w; ++x) line[c * st[1] + x * st[4]] = S(0);
                }
            }
    }
    void WriteGridGrad(int64_t n, int64_t d, int64_t h, int64_t w, S gx, S gy, S gz) const {
        T* gg = GridGradPoint(n, d, h, w);
        const int64_t cs = args.grid_grad.stride[4];
        gg[0] = FromCompute<T>(gx);
        gg[cs] = FromCompute<T>(gy);
        gg[2 * cs] = FromCompute<T>(gz);
    }
};

// Rounds the fp32 accumulator into the fp16/bf16 inputGrad.
template <typename T>
void StoreAccumulator(const Problem<T>& pb) {
    const View5& out = pb.args.input_grad;
    const int64_t planes = out.size[0] * out.size[1] * out.size[2];
#pragma omp parallel for schedule(static)
    for (int64_t plane = 0; plane < planes; ++plane) {
        const int64_t z = plane % out.size[2], c = plane / out.size[2] % out.size[1], n = plane / (out.size[2] * out.size[1]);
        const float* from = pb.acc + n * pb.acc_stride[0] + c * pb.acc_stride[1] + z * pb.acc_stride[2];
        T* to = static_cast<T*>(out.data) + n * out.stride[0] + c * out.stride[1] + z * out.stride[2];
        for (int64_t y = 0; y < out.size[3]; ++y)
            for (int64_t x = 0; x < out.size[4]; ++x)
                to[y * out.stride[3] + x * out.stride[4]] = FromCompute<T>(from[y * pb.acc_stride[3] + x * pb.acc_stride[4]]);
    }
}

// A bilinear point whose eight corners are all inside: no tests, every corner written out
// with PyTorch's expressions in PyTorch's order (for each channel: the eight scatters, then
// the eight corners' terms of the grid gradient), so that values, NaN and inf included,
// agree with it. Corners are addressed from the cell's first corner with the strides.
template <typename T, bool kInputGrad, bool kGridGrad, bool kUnitChannels, typename S = ComputeType<T>>
HWY_INLINE void BilinearInsidePoint(const Problem<T>& pb, const TrilinearCorners<S>& cell, const SourceIndices<S>& s,
                                    int64_t n, int64_t d, int64_t h, int64_t w, const T* HWY_RESTRICT in_n,
                                    const T* HWY_RESTRICT gout_p, S* HWY_RESTRICT acc_n) {
    const BackwardArgs& a = pb.args;
    const int64_t in_cs = kUnitChannels ? 1 : a.input.stride[1];
    const int64_t acc_cs = kUnitChannels ? 1 : pb.acc_stride[1];
    const TrilinearGeometry& ag = pb.acc_geometry;
    const TrilinearGeometry& ig = pb.in_geometry;
    const int64_t asz = ag.stride[0], asy = ag.stride[1], asx = ag.stride[2];
    const int64_t isz = ig.stride[0], isy = ig.stride[1], isx = ig.stride[2];
    const int64_t acc_base = cell.z0 * asz + cell.y0 * asy + cell.x0 * asx;
    const int64_t in_base = cell.z0 * isz + cell.y0 * isy + cell.x0 * isx;
    const S wx0 = cell.wx[0], wx1 = cell.wx[1], wy0 = cell.wy[0], wy1 = cell.wy[1], wz0 = cell.wz[0],
            wz1 = cell.wz[1];
    const S* wt = cell.weight;
    S gix = 0, giy = 0, giz = 0;
    // gout_cs: gradOutput's channel stride, a literal 1 where it is (a contiguous load).
    auto channel = [&](int64_t c, int64_t gout_cs, S& gx, S& gy, S& gz) HWY_ATTR __attribute__((always_inline)) {
        const S g = ToCompute(gout_p[c * gout_cs]);
        if constexpr (kInputGrad) {
            S* HWY_RESTRICT p = acc_n + c * acc_cs + acc_base;
            p[0] += wt[0] * g;
            p[asx] += wt[1] * g;
            p[asy] += wt[2] * g;
            p[asy + asx] += wt[3] * g;
            p[asz] += wt[4] * g;
            p[asz + asx] += wt[5] * g;
            p[asz + asy] += wt[6] * g;
            p[asz + asy + asx] += wt[7] * g;
        }
        if constexpr (kGridGrad) {
            const T* HWY_RESTRICT q = in_n + c * in_cs + in_base;
            const S v0 = ToCompute(q[0]), v1 = ToCompute(q[isx]), v2 = ToCompute(q[isy]),
                    v3 = ToCompute(q[isy + isx]), v4 = ToCompute(q[isz]), v5 = ToCompute(q[isz + isx]),
                    v6 = ToCompute(q[isz + isy]), v7 = ToCompute(q[isz + isy + isx]);
            gx -= v0 * wy0 * wz0 * g; gy -= v0 * wx0 * wz0 * g; gz -= v0 * wx0 * wy0 * g;
            gx += v1 * wy0 * wz0 * g; gy -= v1 * wx1 * wz0 * g; gz -= v1 * wx1 * wy0 * g;
            gx -= v2 * wy1 * wz0 * g; gy += v2 * wx0 * wz0 * g; gz -= v2 * wx0 * wy1 * g;
            gx += v3 * wy1 * wz0 * g; gy += v3 * wx1 * wz0 * g; gz -= v3 * wx1 * wy1 * g;
            gx -= v4 * wy0 * wz1 * g; gy -= v4 * wx0 * wz1 * g; gz += v4 * wx0 * wy0 * g;
            gx += v5 * wy0 * wz1 * g; gy -= v5 * wx1 * wz1 * g; gz += v5 * wx1 * wy0 * g;
            gx -= v6 * wy1 * wz1 * g; gy += v6 * wx0 * wz1 * g; gz += v6 * wx0 * wy1 * g;
            gx += v7 * wy1 * wz1 * g; gy += v7 * wx1 * wz1 * g; gz += v7 * wx1 * wy1 * g;
        }
    };
    const int64_t gout_cs = a.grad_output.stride[1];  // any: kUnitChannels does not fix it
    if constexpr (kUnitChannels) {
        // Channels contiguous (NDHWC): vectorised across channels. The corners of different
        // channels are distinct elements (outputs are checked not to overlap). The grid
        // gradient is then summed in lanes, in an order fixed by the SIMD target.
        // gradOutput's channels apart are gathered; next to each other, loaded (3x faster
        // at C = 32, gridGrad alone, than with the stride of 1 known only at run time).
        if (gout_cs == 1) {
#pragma omp simd reduction(+ : gix, giy, giz)
            for (int64_t c = 0; c < pb.channels; ++c) channel(c, 1, gix, giy, giz);
        } else {
#pragma omp simd reduction(+ : gix, giy, giz)
            for (int64_t c = 0; c < pb.channels; ++c) channel(c, gout_cs, gix, giy, giz);
        }
    } else {
        for (int64_t c = 0; c < pb.channels; ++c) channel(c, gout_cs, gix, giy, giz);
    }
    if constexpr (kGridGrad) pb.WriteGridGrad(n, d, h, w, s.mx * gix, s.my * giy, s.mz * giz);
}

// All work for one grid point: scatter into inputGrad (kInputGrad) and its gridGrad
// (kGridGrad). kUnitChannels: the input and the accumulator have channel stride 1;
// gradOutput's channels may lie apart (Backward takes this path for any gatherable stride).
template <typename T, Interpolation I, bool kInputGrad, bool kGridGrad, bool kUnitChannels>
HWY_INLINE void BackwardPoint(const Problem<T>& pb, int64_t n, int64_t d, int64_t h, int64_t w) {
    using S = ComputeType<T>;
    const BackwardArgs& a = pb.args;
    const SourceIndices<S> s =
        LoadSourceIndices<T>(pb.GridPoint(n, d, h, w), a.grid.stride[4], a.input, a.options);
    const T* HWY_RESTRICT gout_p = pb.GradOutputPoint(n, d, h, w);
    // With C = 0 the input has no data, and without inputGrad there is no accumulator: both
    // are null then, and offsetting null is undefined.
    const T* HWY_RESTRICT in_n = pb.in ? pb.in + n * a.input.stride[0] : nullptr;
    S* HWY_RESTRICT acc_n = kInputGrad && pb.acc ? pb.acc + n * pb.acc_stride[0] : nullptr;
    const int64_t gout_cs = a.grad_output.stride[1];  // any: kUnitChannels does not fix it
    const int64_t in_cs = kUnitChannels ? 1 : a.input.stride[1];
    const int64_t acc_cs = kUnitChannels ? 1 : pb.acc_stride[1];
    if constexpr (I == Interpolation::kNearest) {
        if constexpr (kInputGrad) {
            NearestCorner corner;
            corner.Compute(s.ix, s.iy, s.iz, pb.acc_geometry);
            if (corner.inside)
                for (int64_t c = 0; c < pb.channels; ++c)
                    acc_n[c * acc_cs + corner.offset] += ToCompute(gout_p[c * gout_cs]);
        }
        if constexpr (kGridGrad) pb.WriteGridGrad(n, d, h, w, 0, 0, 0);  // piecewise constant
    } else {
        TrilinearCorners<S> acc_corners;
        if (acc_corners.Compute(s.ix, s.iy, s.iz, pb.acc_geometry)) {
            BilinearInsidePoint<T, kInputGrad, kGridGrad, kUnitChannels>(pb, acc_corners, s, n, d, h, w, in_n,
                                                                         gout_p, acc_n);
            return;
        }
        // Near the border: the corners one by one, with PyTorch's expressions.
        TrilinearCorners<S> in_corners = acc_corners;
        if constexpr (kGridGrad) in_corners.FillOffsets(pb.in_geometry);
        S gix = 0, giy = 0, giz = 0;
        for (int64_t c = 0; c < pb.channels; ++c) {
            const S g = ToCompute(gout_p[c * gout_cs]);
            S* HWY_RESTRICT acc_c = kInputGrad ? acc_n + c * acc_cs : nullptr;  // c < C: acc_n is set
            const T* HWY_RESTRICT in_c = in_n + c * in_cs;
            for (int k = 0; k < 8; ++k) {
                if (!acc_corners.inside[k]) continue;
                if constexpr (kInputGrad) acc_c[acc_corners.offset[k]] += acc_corners.weight[k] * g;
                if constexpr (kGridGrad) {
                    const int bx = k & 1, by = (k >> 1) & 1, bz = k >> 2;
                    const S v = ToCompute(in_c[in_corners.offset[k]]);
                    // d(weight)/d(ix) is -+ wy * wz, and likewise for y and z.
                    const S dx = v * acc_corners.wy[by] * acc_corners.wz[bz] * g;
                    const S dy = v * acc_corners.wx[bx] * acc_corners.wz[bz] * g;
                    const S dz = v * acc_corners.wx[bx] * acc_corners.wy[by] * g;
                    gix = bx ? gix + dx : gix - dx;
                    giy = by ? giy + dy : giy - dy;
                    giz = bz ? giz + dz : giz - dz;
                }
            }
        }
        if constexpr (kGridGrad) pb.WriteGridGrad(n, d, h, w, s.mx * gix, s.my * giy, s.mz * giz);
    }
}

}  // namespace
}  // namespace HWY_NAMESPACE
}  // namespace gs3d::kernels
HWY_AFTER_NAMESPACE();

#endif  // GS3D_KERNELS_BACKWARD_POINT_INL_H_
