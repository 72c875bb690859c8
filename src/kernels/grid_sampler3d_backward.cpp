// The backward kernel: inputGrad (scatter of gradOutput through the sampling weights) and
// gridGrad (derivative of the sample with respect to the grid coordinates).
//
// No races, and a result that does not depend on the thread count:
// - The input volume of each batch item is cut into slabs along D (a count that depends on
//   D only). Grid points are binned by the slab of their first corner (counting sort, grid
//   order kept within a bin); a point's corners then touch its slab and the next one only.
// - Phase 0 runs the even slabs in parallel, phase 1 the odd ones: no two tasks of a phase
//   touch the same slab. Each element thus sums its contributions in a fixed order: the
//   points of the slab before it, then its own, each in grid order.
// - gridGrad is computed in the same pass from the same corners (coordinates once per
//   point), summing over channels in order.
// - Phase 0 zero-fills its two slabs before scattering; fp16/bf16 accumulate in an fp32
//   buffer and are rounded once at the end.
// Compiled once per SIMD target (Highway foreach_target) like the forward kernel.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "kernels/grid_sampler3d_backward.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

#include "kernels/simd_cells-inl.h"

#include <omp.h>

#include <algorithm>
#include <cstdint>
#include <type_traits>
#include <vector>

#include "kernels/backward_plan.h"
#include "kernels/dispatch.h"
#include "kernels/fast_divide.h"
#include "kernels/grid_sampler3d_kernels.h"
#include "kernels/trilinear_corners.h"

HWY_BEFORE_NAMESPACE();
namespace gs3d::kernels {
namespace HWY_NAMESPACE {
namespace {

template <typename T>
constexpr bool kAccumulatesInBuffer = !std::is_same_v<T, ComputeType<T>>;

template <typename S>
struct SourceIndices {
    S ix, iy, iz;  // source indices
    S mx, my, mz;  // d(index)/d(grid value)
};

template <typename T, Padding P, typename S = ComputeType<T>>
HWY_INLINE SourceIndices<S> LoadSourceIndices(const T* g, int64_t coord_stride, const View5& in, bool align) {
    SourceIndices<S> s;
    s.ix = SourceIndexWithDerivative<S, P>(ToCompute(g[0]), in.size[4], align, &s.mx);
    s.iy = SourceIndexWithDerivative<S, P>(ToCompute(g[coord_stride]), in.size[3], align, &s.my);
    s.iz = SourceIndexWithDerivative<S, P>(ToCompute(g[2 * coord_stride]), in.size[2], align, &s.mz);
    return s;
}

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
        const View5& g = args.grid;
        return grid + n * g.stride[0] + d * g.stride[1] + h * g.stride[2] + w * g.stride[3];
    }
    T* GridGradPoint(int64_t n, int64_t d, int64_t h, int64_t w) const {
        const View5& g = args.grid_grad;
        return ggrid + n * g.stride[0] + d * g.stride[1] + h * g.stride[2] + w * g.stride[3];
    }
    const T* GradOutputPoint(int64_t n, int64_t d, int64_t h, int64_t w) const {
        const View5& g = args.grad_output;
        if (!gout) return nullptr;  // C = 0: no element to read, and no data
        return gout + n * g.stride[0] + d * g.stride[2] + h * g.stride[3] + w * g.stride[4];
    }
    void WriteGridGrad(int64_t n, int64_t d, int64_t h, int64_t w, S gx, S gy, S gz) const {
        T* gg = GridGradPoint(n, d, h, w);
        const int64_t cs = args.grid_grad.stride[4];
        gg[0] = FromCompute<T>(gx);
        gg[cs] = FromCompute<T>(gy);
        gg[2 * cs] = FromCompute<T>(gz);
    }
};

// A bilinear point whose eight corners are all inside: no tests, every corner written out
// with PyTorch's expressions in PyTorch's order (for each channel: the eight scatters, then
// the eight corners' terms of the grid gradient), so that values, NaN and inf included,
// agree with it. Corners are addressed from the cell's first corner with the strides.
template <typename T, bool kInputGrad, bool kGridGrad, bool kUnitChannels, typename S = ComputeType<T>>
HWY_INLINE void BilinearInsidePoint(const Problem<T>& pb, const TrilinearCorners<S>& cell, const SourceIndices<S>& s,
                                    int64_t n, int64_t d, int64_t h, int64_t w, const T* HWY_RESTRICT in_n,
                                    const T* HWY_RESTRICT gout_p, S* HWY_RESTRICT acc_n) {
    const BackwardArgs& a = pb.args;
    const int64_t gout_cs = kUnitChannels ? 1 : a.grad_output.stride[1];
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
    auto channel = [&](int64_t c, S& gx, S& gy, S& gz) HWY_ATTR __attribute__((always_inline)) {
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
    if constexpr (kUnitChannels) {
        // Channels contiguous (NDHWC): vectorised across channels. The corners of different
        // channels are distinct elements (outputs are checked not to overlap). The grid
        // gradient is then summed in lanes, in an order fixed by the SIMD target.
#pragma omp simd reduction(+ : gix, giy, giz)
        for (int64_t c = 0; c < pb.channels; ++c) channel(c, gix, giy, giz);
    } else {
        for (int64_t c = 0; c < pb.channels; ++c) channel(c, gix, giy, giz);
    }
    if constexpr (kGridGrad) pb.WriteGridGrad(n, d, h, w, s.mx * gix, s.my * giy, s.mz * giz);
}

// All work for one grid point: scatter into inputGrad (kInputGrad) and its gridGrad
// (kGridGrad). kUnitChannels: input, gradOutput and the accumulator have channel stride 1.
template <typename T, Interpolation I, Padding P, bool kInputGrad, bool kGridGrad, bool kUnitChannels>
HWY_INLINE void BackwardPoint(const Problem<T>& pb, int64_t n, int64_t d, int64_t h, int64_t w) {
    using S = ComputeType<T>;
    const BackwardArgs& a = pb.args;
    const SourceIndices<S> s =
        LoadSourceIndices<T, P>(pb.GridPoint(n, d, h, w), a.grid.stride[4], a.input, a.options.align_corners);
    const T* HWY_RESTRICT gout_p = pb.GradOutputPoint(n, d, h, w);
    // With C = 0 the input has no data, and without inputGrad there is no accumulator: both
    // are null then, and offsetting null is undefined.
    const T* HWY_RESTRICT in_n = pb.in ? pb.in + n * a.input.stride[0] : nullptr;
    S* HWY_RESTRICT acc_n = kInputGrad && pb.acc ? pb.acc + n * pb.acc_stride[0] : nullptr;
    const int64_t gout_cs = kUnitChannels ? 1 : a.grad_output.stride[1];
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

// Up to kBlock grid points of one batch item gathered for a block: each point's
// element offsets in the grid, in gradOutput (channel 0) and in gridGrad.
struct PointBlock {
    int count = 0;
    int64_t grid[kBlock], grad_output[kBlock], grid_grad[kBlock];
};

// A block of bilinear points after its per-point work (stage A below): cells,
// weights, inside masks, first-corner offsets and d(index)/d(grid value).
template <typename S>
struct PreparedBlock {
    using Offset = typename BlockCells<S>::Offset;
    BlockCells<S> cells;
    HWY_ALIGN S mx[kBlock], my[kBlock], mz[kBlock];
    HWY_ALIGN Offset acc_base[kBlock], in_base[kBlock];  // in_base: when the geometries differ
    int64_t grad_output[kBlock], grid_grad[kBlock];
    // A scan task's slab (RestrictToSlab): whole, every corner inside is scattered and every
    // gridGrad written; else scatter[k][i] (1 or 0) says which corners, owned[i] which gridGrad.
    bool whole = true;
    HWY_ALIGN S scatter[8][kBlock];
    bool owned[kBlock];
    HWY_ALIGN S gix[kBlock], giy[kBlock], giz[kBlock];  // the grid gradient's sums over the channels run so far
};

// A block of bilinear points, in structure-of-arrays form, vectorised across points:
// (A) PrepareBlock: source indices and their derivatives (simd_cells-inl.h: vector form for
//     zeros and border, PyTorch's scalar code for reflection), cells, weights, inside masks
//     and the first corners' offsets;
// (B) RunBlock, per channel: gradOutput, the corner values gathered, the grid gradient's
//     terms in vector form, in PyTorch's order, with corners outside masked out (so that NaN
//     and inf behave as in PyTorch, which skips them); w * g in vector form, then a scalar
//     scatter into inputGrad in the block's point order;
// (C) RunBlock: gridGrad = d(index)/d(grid) * the sums.
// The caller checks OffsetsFit for both geometries.
template <typename T, Padding P, bool kGridGrad, typename S = ComputeType<T>>
HWY_NOINLINE void PrepareBlock(const Problem<T>& pb, const PointBlock& points, PreparedBlock<S>& out) {
    const hn::ScalableTag<S> d;
    const int lanes = static_cast<int>(hn::Lanes(d));
    const BackwardArgs& a = pb.args;
    const int count = points.count;
    const int padded = (count + lanes - 1) / lanes * lanes;
    const bool align = a.options.align_corners;
    HWY_ALIGN S coord[3][kBlock], ix[kBlock], iy[kBlock], iz[kBlock];
    const int64_t cs = a.grid.stride[4];
    LoadGridValues([&](int i) { return pb.grid + points.grid[i]; }, cs, count, padded, coord);
    std::copy(points.grad_output, points.grad_output + count, out.grad_output);
    std::copy(points.grid_grad, points.grid_grad + count, out.grid_grad);
    BlockSourceIndices<S, P, true>(coord[0], padded, a.input.size[4], align, ix, out.mx);
    BlockSourceIndices<S, P, true>(coord[1], padded, a.input.size[3], align, iy, out.my);
    BlockSourceIndices<S, P, true>(coord[2], padded, a.input.size[2], align, iz, out.mz);
    for (int i = count; i < padded; ++i) ix[i] = iy[i] = iz[i] = -4;  // lanes past the end: outside, never stored
    out.cells.Compute(ix, iy, iz, padded, count, pb.acc_geometry);
    out.whole = true;
    out.cells.Bases(pb.acc_geometry.stride, out.acc_base);
    if (kGridGrad && !pb.same_geometry) out.cells.Bases(pb.in_geometry.stride, out.in_base);
}

// Channels [c_begin, c_end) of a block: (B) for each, and (C) once the last is done. The
// grid gradient's sums live in the block between calls, channels taken in order.
template <typename T, bool kGridGrad, typename S = ComputeType<T>>
HWY_NOINLINE void RunBlock(const Problem<T>& pb, int64_t n, PreparedBlock<S>& block, int64_t c_begin, int64_t c_end) {
    const hn::ScalableTag<S> d;
    const int lanes = static_cast<int>(hn::Lanes(d));
    const BackwardArgs& a = pb.args;
    const BlockCells<S>& cells = block.cells;
    const int count = cells.count, padded = cells.padded;
    const auto* acc_base = block.acc_base;
    const auto* in_base = pb.same_geometry ? block.acc_base : block.in_base;
    HWY_ALIGN S g[kBlock], v[8][kBlock], wg[8][kBlock];
    S* HWY_RESTRICT gix = block.gix;
    S* HWY_RESTRICT giy = block.giy;
    S* HWY_RESTRICT giz = block.giz;
    const auto zero = hn::Zero(d);
    if (c_begin == 0)
        for (int i = 0; i < padded; i += lanes) {
            hn::Store(zero, d, gix + i), hn::Store(zero, d, giy + i), hn::Store(zero, d, giz + i);
        }

    // (B). With C = 0 the input and the accumulator have no data to offset (the grid
    // gradient, zero, is still written below).
    const T* in_n = pb.channels ? pb.in + n * a.input.stride[0] : nullptr;
    S* acc_n = pb.channels ? pb.acc + n * pb.acc_stride[0] : nullptr;
    auto channel_terms = [&](auto all_inside) HWY_ATTR {
        for (int i = 0; i < padded; i += lanes) {
            const auto vg = hn::Load(d, g + i);
            for (int k = 0; k < 8; ++k) hn::Store(hn::Mul(hn::Load(d, cells.weight[k] + i), vg), d, wg[k] + i);
            if constexpr (kGridGrad) {
                auto gx = hn::Load(d, gix + i), gy = hn::Load(d, giy + i), gz = hn::Load(d, giz + i);
                const decltype(gx) wxs[2] = {hn::Load(d, cells.wx[0] + i), hn::Load(d, cells.wx[1] + i)},
                                   wys[2] = {hn::Load(d, cells.wy[0] + i), hn::Load(d, cells.wy[1] + i)},
                                   wzs[2] = {hn::Load(d, cells.wz[0] + i), hn::Load(d, cells.wz[1] + i)};
                for (int k = 0; k < 8; ++k) {
                    const int kx = k & 1, ky = (k >> 1) & 1, kz = k >> 2;
                    const auto vk = hn::Load(d, v[k] + i);
                    // PyTorch: gix -= tnw_val * (iy_bse - iy) * (iz_bse - iz) * gOut, and so on.
                    auto tx = hn::Mul(hn::Mul(hn::Mul(vk, wys[ky]), wzs[kz]), vg);
                    auto ty = hn::Mul(hn::Mul(hn::Mul(vk, wxs[kx]), wzs[kz]), vg);
                    auto tz = hn::Mul(hn::Mul(hn::Mul(vk, wxs[kx]), wys[ky]), vg);
                    if constexpr (!decltype(all_inside)::value) {
                        const auto mask = hn::Ne(hn::Load(d, cells.inside[k] + i), zero);
                        tx = hn::IfThenElseZero(mask, tx), ty = hn::IfThenElseZero(mask, ty),
                        tz = hn::IfThenElseZero(mask, tz);
                    }
                    gx = kx ? hn::Add(gx, tx) : hn::Sub(gx, tx);
                    gy = ky ? hn::Add(gy, ty) : hn::Sub(gy, ty);
                    gz = kz ? hn::Add(gz, tz) : hn::Sub(gz, tz);
                }
                hn::Store(gx, d, gix + i), hn::Store(gy, d, giy + i), hn::Store(gz, d, giz + i);
            }
        }
    };
    const int64_t* acc_delta = pb.acc_geometry.corner_delta;
    for (int64_t c = c_begin; c < c_end; ++c) {
        const T* gout_c = pb.gout + c * a.grad_output.stride[1];
        for (int i = 0; i < count; ++i) g[i] = LoadElement(gout_c + block.grad_output[i]);
        for (int i = count; i < padded; ++i) g[i] = 0;
        if constexpr (kGridGrad) {
            const T* in_c = in_n + c * a.input.stride[1];
            cells.LoadCorners(in_c, in_base, pb.in_geometry.corner_delta, pb.in_last - (in_c - pb.in), v);
        }
        S* HWY_RESTRICT acc_c = acc_n + c * pb.acc_stride[1];
        if (cells.all_inside)
            channel_terms(std::true_type{});
        else
            channel_terms(std::false_type{});
        if (cells.all_inside && block.whole) {
            for (int i = 0; i < count; ++i) {
                S* HWY_RESTRICT q = acc_c + acc_base[i];
                for (int k = 0; k < 8; ++k) q[acc_delta[k]] += wg[k][i];
            }
        } else {
            const S(*scatter)[kBlock] = block.whole ? cells.inside : block.scatter;
            for (int i = 0; i < count; ++i)
                for (int k = 0; k < 8; ++k)
                    if (scatter[k][i] != 0) acc_c[acc_base[i] + acc_delta[k]] += wg[k][i];
        }
    }

    // (C)
    if (kGridGrad && c_end == pb.channels) {
        const int64_t ggs = a.grid_grad.stride[4];
        for (int i = 0; i < count; ++i) {
            if (!block.whole && !block.owned[i]) continue;  // another slab's task writes it
            T* gg = pb.ggrid + block.grid_grad[i];
            StoreElement<T>(block.mx[i] * gix[i], gg);
            StoreElement<T>(block.my[i] * giy[i], gg + ggs);
            StoreElement<T>(block.mz[i] * giz[i], gg + 2 * ggs);
        }
    }
}

// A prepared block with channels last (input, gradOutput and the accumulator have channel
// stride 1): per point, the channels in vectors of D (lanes <= C), the rest one by one. The
// eight corners' scatter, and the grid gradient's terms in PyTorch's expressions summed in
// lanes and reduced once per point (an order fixed by the SIMD target and the shape).
template <class D, typename T, bool kGridGrad, typename S = ComputeType<T>>
HWY_NOINLINE void RunBlockChannelsLast(D d, const Problem<T>& pb, int64_t n, const PreparedBlock<S>& block) {
    const BackwardArgs& a = pb.args;
    const BlockCells<S>& cells = block.cells;
    const int64_t channels = pb.channels, lanes = static_cast<int64_t>(hn::Lanes(d));
    const int64_t vector_end = channels / lanes * lanes;
    // With C = 0 the input and the accumulator have no data to offset (gridGrad, zero, is
    // still written).
    const T* in_n = channels ? pb.in + n * a.input.stride[0] : nullptr;
    S* acc_n = channels ? pb.acc + n * pb.acc_stride[0] : nullptr;
    const auto* in_base = pb.same_geometry ? block.acc_base : block.in_base;
    const int64_t* acc_delta = pb.acc_geometry.corner_delta;
    const int64_t* in_delta = pb.in_geometry.corner_delta;
    const int64_t ggs = a.grid_grad.stride[4];
    for (int i = 0; i < cells.count; ++i) {
        const T* gout_p = pb.gout + block.grad_output[i];
        const S wx[2] = {cells.wx[0][i], cells.wx[1][i]}, wy[2] = {cells.wy[0][i], cells.wy[1][i]},
                wz[2] = {cells.wz[0][i], cells.wz[1][i]};
        // This task writes the point's gridGrad (a scan task: only for its own points), and
        // which corners it scatters (a scan task: those in its slab).
        const bool grid_grad = kGridGrad && (block.whole || block.owned[i]);
        bool inside[8], scatter[8];
        S* acc_k[8];
        const T* in_k[8];
        for (int k = 0; k < 8; ++k) {
            inside[k] = cells.all_inside || cells.inside[k][i] != 0;
            scatter[k] = block.whole ? inside[k] : block.scatter[k][i] != 0;
            // Pointers only to corners inside, from the summed offset (a first corner at -1
            // along an axis is not an address in the volume); in_base is set only for gridGrad.
            const bool valid = inside[k] && channels;
            acc_k[k] = valid ? acc_n + (static_cast<int64_t>(block.acc_base[i]) + acc_delta[k]) : nullptr;
            in_k[k] = kGridGrad && valid ? in_n + (static_cast<int64_t>(in_base[i]) + in_delta[k]) : nullptr;
        }
        auto gx = hn::Zero(d), gy = hn::Zero(d), gz = hn::Zero(d);
        for (int64_t c = 0; c < vector_end; c += lanes) {
            const auto g = hn::LoadU(d, gout_p + c);
            for (int k = 0; k < 8; ++k) {
                if (!inside[k]) continue;
                if (scatter[k])
                    hn::StoreU(hn::Add(hn::LoadU(d, acc_k[k] + c), hn::Mul(hn::Set(d, cells.weight[k][i]), g)), d,
                               acc_k[k] + c);
                if (grid_grad) {
                    const int kx = k & 1, ky = (k >> 1) & 1, kz = k >> 2;
                    const auto v = hn::LoadU(d, in_k[k] + c);
                    const auto tx = hn::Mul(hn::Mul(hn::Mul(v, hn::Set(d, wy[ky])), hn::Set(d, wz[kz])), g);
                    const auto ty = hn::Mul(hn::Mul(hn::Mul(v, hn::Set(d, wx[kx])), hn::Set(d, wz[kz])), g);
                    const auto tz = hn::Mul(hn::Mul(hn::Mul(v, hn::Set(d, wx[kx])), hn::Set(d, wy[ky])), g);
                    gx = kx ? hn::Add(gx, tx) : hn::Sub(gx, tx);
                    gy = ky ? hn::Add(gy, ty) : hn::Sub(gy, ty);
                    gz = kz ? hn::Add(gz, tz) : hn::Sub(gz, tz);
                }
            }
        }
        S gix = hn::GetLane(hn::SumOfLanes(d, gx)), giy = hn::GetLane(hn::SumOfLanes(d, gy)),
          giz = hn::GetLane(hn::SumOfLanes(d, gz));
        for (int64_t c = vector_end; c < channels; ++c) {
            const S g = gout_p[c];
            for (int k = 0; k < 8; ++k) {
                if (!inside[k]) continue;
                if (scatter[k]) acc_k[k][c] += cells.weight[k][i] * g;
                if (grid_grad) {
                    const int kx = k & 1, ky = (k >> 1) & 1, kz = k >> 2;
                    const S v = in_k[k][c];
                    const S tx = v * wy[ky] * wz[kz] * g, ty = v * wx[kx] * wz[kz] * g, tz = v * wx[kx] * wy[ky] * g;
                    gix = kx ? gix + tx : gix - tx;
                    giy = ky ? giy + ty : giy - ty;
                    giz = kz ? giz + tz : giz - tz;
                }
            }
        }
        if (grid_grad) {
            T* gg = pb.ggrid + block.grid_grad[i];
            gg[0] = FromCompute<T>(block.mx[i] * gix);
            gg[ggs] = FromCompute<T>(block.my[i] * giy);
            gg[2 * ggs] = FromCompute<T>(block.mz[i] * giz);
        }
    }
}

// Runs a prepared block: channels in vectors (channels last; the widest vector that the
// channel count fills), or points in vectors (RunBlock).
template <typename T, bool kGridGrad, bool kUnitChannels, typename S = ComputeType<T>>
HWY_INLINE void RunPreparedBlock(const Problem<T>& pb, int64_t n, PreparedBlock<S>& block) {
    if constexpr (kUnitChannels && std::is_same_v<T, S>) {
        const hn::ScalableTag<S> full;
        const hn::CappedTag<S, 8> eight;
        const hn::CappedTag<S, 4> four;
        if (pb.channels >= static_cast<int64_t>(hn::Lanes(full)))
            RunBlockChannelsLast<decltype(full), T, kGridGrad>(full, pb, n, block);
        else if (pb.channels >= static_cast<int64_t>(hn::Lanes(eight)))
            RunBlockChannelsLast<decltype(eight), T, kGridGrad>(eight, pb, n, block);
        else
            RunBlockChannelsLast<decltype(four), T, kGridGrad>(four, pb, n, block);
    } else {
        RunBlock<T, kGridGrad>(pb, n, block, 0, pb.channels);
    }
}

// A task's prepared blocks (one batch item), run a chunk at a time. With channels apart
// (NCDHW) and more than one, channel by channel over the chunk: a channel's gathers and
// scatters for all the chunk's points before the next channel's, so that its lines are
// reused from L1 across the blocks instead of every channel's passing through per block.
// Each element's sum keeps its order (the chunk's points in order, per channel), and each
// point's grid gradient its channel order.
template <typename T, bool kGridGrad, bool kUnitChannels, typename S = ComputeType<T>>
class BlockChunk {
  public:
    static constexpr int kBlocks = 8;
    BlockChunk(const Problem<T>& pb, int64_t n) : pb_(pb), n_(n), blocks_(kUnitChannels || pb.channels <= 1 ? 1 : kBlocks) {}
    PreparedBlock<S>& Next() { return blocks_[used_]; }
    // Takes the block filled through Next(); runs the chunk when full. The caller runs the
    // rest at the end.
    void Add() {
        if (++used_ == static_cast<int>(blocks_.size())) Run();
    }
    void Run() {
        if (used_ == 1 || kUnitChannels) {
            for (int b = 0; b < used_; ++b) RunPreparedBlock<T, kGridGrad, kUnitChannels>(pb_, n_, blocks_[b]);
        } else if (used_ > 1) {
            for (int64_t c = 0; c < pb_.channels; ++c)
                for (int b = 0; b < used_; ++b) RunBlock<T, kGridGrad>(pb_, n_, blocks_[b], c, c + 1);
        }
        used_ = 0;
    }

  private:
    const Problem<T>& pb_;
    int64_t n_;
    std::vector<PreparedBlock<S>> blocks_;
    int used_ = 0;
};

// A block of nearest points: source indices with SIMD (with the backward clip, as PyTorch's
// backward), each point's voxel, then per channel a scalar scatter of gradOutput into the
// voxels, in the block's point order. (gridGrad, 0, is written by SlabBackward in grid order.)
template <typename T, Padding P, typename S = ComputeType<T>>
HWY_NOINLINE void NearestBlock(const Problem<T>& pb, int64_t n, const PointBlock& points) {
    const hn::ScalableTag<S> d;
    const int lanes = static_cast<int>(hn::Lanes(d));
    const BackwardArgs& a = pb.args;
    const int count = points.count;
    const int padded = (count + lanes - 1) / lanes * lanes;
    HWY_ALIGN S coord[3][kBlock], index[3][kBlock], unused[kBlock];
    const int64_t cs = a.grid.stride[4];
    LoadGridValues([&](int i) { return pb.grid + points.grid[i]; }, cs, count, padded, coord);
    const int64_t sizes[3] = {a.input.size[4], a.input.size[3], a.input.size[2]};  // x, y, z
    for (int axis = 0; axis < 3; ++axis)
        BlockSourceIndices<S, P, true>(coord[axis], padded, sizes[axis], a.options.align_corners, index[axis], unused);
    const S* const indices[3] = {index[0], index[1], index[2]};
    BlockVoxels<S> voxels;
    voxels.Compute(indices, padded, count, pb.acc_geometry);
    // With C = 0 the accumulator has no data to offset.
    S* acc_n = pb.channels ? pb.acc + n * pb.acc_stride[0] : nullptr;
    for (int64_t c = 0; c < pb.channels; ++c) {
        const T* gout_c = pb.gout + c * a.grad_output.stride[1];
        S* HWY_RESTRICT acc_c = acc_n + c * pb.acc_stride[1];
        for (int i = 0; i < count; ++i)
            if (voxels.inside[i] != 0) acc_c[voxels.offset[i]] += LoadElement(gout_c + points.grad_output[i]);
    }
}

// inputGrad by scanning, when the grid is close to the identity. A task that owns a slab of
// the volume (planes [z_begin, z_end)) visits the grid in order and scatters only the corners
// (nearest: voxels) that lie in its slab: each element then sums its contributions in grid
// order, as one thread would, bitwise, however the volume is cut. The cut thus follows the
// thread count, and needs no keys and no sort:
// - pass 1, threads split the grid rows: each row's range of planes (RowPlanes), and for
//   nearest gridGrad (0) in grid order;
// - the choice, from the shapes and the grid alone (never the thread count, so that the
//   result is the same for any): scan for nearest and for bilinear with one channel, when the
//   rows' plane ranges average at most a quarter of D; else the sorted slabs (SlabBackward);
// - pass 2, one task per slab (as many as threads, and no thinner than a row's average
//   range): zero the slab, then every row whose range meets it, in blocks: nearest, the
//   voxels in the slab, scattered channel by channel; bilinear, PrepareBlock, the corners in
//   the slab (RestrictToSlab), RunPreparedBlock, gridGrad written by the task of the point's
//   first corner's plane (clamped into the volume).
// A row is computed once per slab that it meets.

// A grid row's range of planes along D: bilinear, from its points' first corners' planes to
// the planes after them, clamped into [0, D) (every point's gridGrad has an owner: the slab
// of its clamped first plane); nearest, its voxels' planes inside [0, D), or an empty range.
template <typename T, Interpolation I, Padding P>
HWY_INLINE void RowPlanes(const Problem<T>& pb, int64_t n, int64_t d, int64_t h, uint32_t* lowest,
                          uint32_t* highest) {
    using S = ComputeType<T>;
    const hn::ScalableTag<S> dv;
    const int lanes = static_cast<int>(hn::Lanes(dv));
    const int64_t depth = pb.args.input.size[2], cs = pb.args.grid.stride[4], gs = pb.args.grid.stride[3];
    const auto neg_one = hn::Set(dv, S(-1)), extent = hn::Set(dv, static_cast<S>(depth)), zero = hn::Zero(dv),
               one = hn::Set(dv, S(1)), last_plane = hn::Set(dv, static_cast<S>(depth - 1));
    auto low = extent, high = neg_one;  // no plane yet
    HWY_ALIGN S coord[kBlock], iz[kBlock], unused[kBlock];
    for (int64_t w0 = 0; w0 < pb.out_w; w0 += kBlock) {
        const int count = static_cast<int>(std::min<int64_t>(kBlock, pb.out_w - w0));
        const int padded = (count + lanes - 1) / lanes * lanes;
        const T* g = pb.GridPoint(n, d, h, w0) + 2 * cs;
        for (int i = 0; i < count; ++i) coord[i] = LoadElement(g + i * gs);
        for (int i = count; i < padded; ++i) coord[i] = 0;
        BlockSourceIndices<S, P, true>(coord, padded, depth, pb.args.options.align_corners, iz, unused);
        for (int i = 0; i < padded; i += lanes) {
            const auto v = hn::Load(dv, iz + i);
            const auto real = hn::FirstN(dv, static_cast<size_t>(count - i));
            const auto near = hn::And(hn::Ge(v, neg_one), hn::Le(v, extent));
            if constexpr (I == Interpolation::kNearest) {  // NearestIndex, as BlockVoxels
                const auto r = hn::Round(v);
                const auto valid = hn::And(real, hn::And(near, hn::And(hn::Ge(r, zero), hn::Lt(r, extent))));
                low = hn::Min(low, hn::IfThenElse(valid, r, extent));
                high = hn::Max(high, hn::IfThenElse(valid, r, neg_one));
            } else {  // FloorIndex (-2 far outside, NaN, inf), as BlockCells, then clamped
                const auto z0 = hn::IfThenElse(near, hn::Floor(v), hn::Set(dv, S(-2)));
                const auto first = hn::Min(hn::Max(z0, zero), last_plane);
                const auto second = hn::Min(hn::Max(hn::Add(z0, one), zero), last_plane);
                low = hn::Min(low, hn::IfThenElse(real, first, extent));
                high = hn::Max(high, hn::IfThenElse(real, second, neg_one));
            }
        }
    }
    const S first = hn::GetLane(hn::MinOfLanes(dv, low)), last = hn::GetLane(hn::MaxOfLanes(dv, high));
    if (last < 0) {  // no plane: an empty range
        *lowest = 1, *highest = 0;
        return;
    }
    *lowest = static_cast<uint32_t>(first);
    *highest = static_cast<uint32_t>(last);
}

// Restricts a prepared block to a scan task's slab [z_begin, z_end) of a volume of `depth`
// planes: corners in other slabs are not scattered, and gridGrad is written only for the
// points whose clamped first plane lies in the slab. `whole` stays true when that changes
// nothing (every point's corners inside the volume lie in the slab, and the point is owned).
template <typename S>
HWY_INLINE void RestrictToSlab(PreparedBlock<S>& block, int64_t z_begin, int64_t z_end, int64_t depth) {
    const BlockCells<S>& cells = block.cells;
    const S begin = static_cast<S>(z_begin), end = static_cast<S>(z_end);
    bool whole = true;
    for (int i = 0; i < cells.count; ++i)
        whole = whole && (z_begin == 0 || cells.z0[i] >= begin) && (z_end == depth || cells.z0[i] + 1 < end);
    block.whole = whole;
    if (whole) return;
    const S last = static_cast<S>(depth - 1);
    for (int i = 0; i < cells.padded; ++i) {
        const S z0 = cells.z0[i], z1 = z0 + 1, clamped = std::min(std::max(z0, S(0)), last);
        const bool first_in = z0 >= begin && z0 < end, second_in = z1 >= begin && z1 < end;
        for (int k = 0; k < 8; ++k) block.scatter[k][i] = (k < 4 ? first_in : second_in) ? cells.inside[k][i] : S(0);
        block.owned[i] = clamped >= begin && clamped < end;
    }
}

template <typename T, Interpolation I, Padding P, bool kGridGrad, bool kUnitChannels>
bool ScanBackward(const Problem<T>& pb, const BackwardWorkspace& ws) {
    using S = ComputeType<T>;
    const BackwardArgs& a = pb.args;
    const int64_t rows = pb.out_d * pb.out_h, depth = a.input.size[2];
    if (!OffsetsFit<S>(pb.acc_geometry) || !OffsetsFit<S>(pb.in_geometry) || depth == 0) return false;
    // Bilinear with more than one channel: a task's wide slab lets each channel's gathers and
    // scatters roam over all planes near a row's, and with 2 channels that no longer fits the
    // L2 cache (measured: (1, 2, 128) 105 ms scanning, 82 ms sorted; (1, 1, 128) 37 against
    // 47 ms); the thin sorted slabs keep it small.
    if (I == Interpolation::kBilinear && pb.channels > 1) return false;

    int64_t spans = 0, spanning_rows = 0;  // sum of the rows' ranges (planes), rows with one
#pragma omp parallel for schedule(static) reduction(+ : spans, spanning_rows)
    for (int64_t task = 0; task < pb.batch * rows; ++task) {
        const int64_t n = task / rows, row = task % rows, d = row / pb.out_h, h = row % pb.out_h;
        RowPlanes<T, I, P>(pb, n, d, h, &ws.row_lowest[task], &ws.row_highest[task]);
        if (ws.row_lowest[task] <= ws.row_highest[task]) {
            spans += ws.row_highest[task] - ws.row_lowest[task] + 1;
            ++spanning_rows;
        }
        if constexpr (I == Interpolation::kNearest && kGridGrad)  // piecewise constant
            for (int64_t w = 0; w < pb.out_w; ++w) pb.WriteGridGrad(n, d, h, w, 0, 0, 0);
    }
    const int64_t average_span = spanning_rows ? (spans + spanning_rows - 1) / spanning_rows : 1;
    if (4 * average_span > depth && depth > 4) return false;

    const int64_t threads = std::max(1, omp_get_max_threads());
    const int64_t slab_count = std::max<int64_t>(1, std::min(threads, depth / std::max<int64_t>(1, average_span)));
    const int64_t slab_depth = (depth + slab_count - 1) / slab_count;
    const int64_t slabs = (depth + slab_depth - 1) / slab_depth;
    const hn::ScalableTag<S> dv;
    const int lanes = static_cast<int>(hn::Lanes(dv));
    const int64_t vol_h = a.input.size[3], vol_w = a.input.size[4];
    const int64_t sizes[3] = {a.input.size[4], a.input.size[3], depth};  // x, y, z
#pragma omp parallel for schedule(dynamic, 1)
    for (int64_t task = 0; task < pb.batch * slabs; ++task) {
        const int64_t n = task / slabs, slab = task % slabs;
        const int64_t z_begin = slab * slab_depth, z_end = std::min(depth, z_begin + slab_depth);
        S* acc_n = pb.channels ? pb.acc + n * pb.acc_stride[0] : nullptr;  // C = 0: no data
        for (int64_t c = 0; c < pb.channels; ++c)
            for (int64_t z = z_begin; z < z_end; ++z)
                for (int64_t y = 0; y < vol_h; ++y) {
                    S* line = acc_n + c * pb.acc_stride[1] + z * pb.acc_stride[2] + y * pb.acc_stride[3];
                    for (int64_t x = 0; x < vol_w; ++x) line[x * pb.acc_stride[4]] = 0;
                }
        // Nearest: the points kept, gathered over blocks and rows, then scattered channel by
        // channel (with many channels, a block's worth of points per channel would visit
        // every channel's volume between two blocks).
        constexpr int kChunk = 1024;
        typename BlockVoxels<S>::Offset voxel[I == Interpolation::kNearest ? kChunk : 1];
        int64_t gout_offset[I == Interpolation::kNearest ? kChunk : 1];
        int chunk = 0;
        auto flush = [&] {
            for (int64_t c = 0; c < pb.channels; ++c) {
                const T* HWY_RESTRICT gout_c = pb.gout + c * a.grad_output.stride[1];
                S* HWY_RESTRICT acc_c = acc_n + c * pb.acc_stride[1];
                for (int j = 0; j < chunk; ++j) acc_c[voxel[j]] += LoadElement(gout_c + gout_offset[j]);
            }
            chunk = 0;
        };
        HWY_ALIGN S coord[3][kBlock], index[3][kBlock], unused[kBlock];
        const S* const indices[3] = {index[0], index[1], index[2]};
        BlockVoxels<S> voxels;
        PointBlock points;
        BlockChunk<T, kGridGrad, kUnitChannels> chunked(pb, n);
        for (int64_t row = 0; row < rows; ++row) {
            const int64_t r = n * rows + row;
            if (ws.row_lowest[r] > ws.row_highest[r] || ws.row_lowest[r] >= z_end || ws.row_highest[r] < z_begin)
                continue;
            const int64_t d = row / pb.out_h, h = row % pb.out_h;
            const int64_t grid_row = n * a.grid.stride[0] + d * a.grid.stride[1] + h * a.grid.stride[2];
            const int64_t gout_row = n * a.grad_output.stride[0] + d * a.grad_output.stride[2] + h * a.grad_output.stride[3];
            for (int64_t w0 = 0; w0 < pb.out_w; w0 += kBlock) {
                const int count = static_cast<int>(std::min<int64_t>(kBlock, pb.out_w - w0));
                if constexpr (I == Interpolation::kNearest) {
                    const int padded = (count + lanes - 1) / lanes * lanes;
                    LoadGridRow(pb.grid + grid_row + w0 * a.grid.stride[3], a.grid.stride[3], a.grid.stride[4], count,
                                padded, coord);
                    for (int axis = 0; axis < 3; ++axis)
                        BlockSourceIndices<S, P, true>(coord[axis], padded, sizes[axis], a.options.align_corners,
                                                       index[axis], unused);
                    voxels.Compute(indices, padded, count, pb.acc_geometry, z_begin, z_end);
                    if (chunk + count > kChunk) flush();
                    for (int i = 0; i < count; ++i) {  // branch-free: in rows across two slabs, kept and not alternate
                        voxel[chunk] = voxels.offset[i];
                        gout_offset[chunk] = gout_row + (w0 + i) * a.grad_output.stride[4];
                        chunk += voxels.inside[i] != 0;
                    }
                } else {
                    const int64_t ggrid_row = n * a.grid_grad.stride[0] + d * a.grid_grad.stride[1] + h * a.grid_grad.stride[2];
                    points.count = count;
                    for (int i = 0; i < count; ++i) {
                        points.grid[i] = grid_row + (w0 + i) * a.grid.stride[3];
                        points.grad_output[i] = gout_row + (w0 + i) * a.grad_output.stride[4];
                        points.grid_grad[i] = ggrid_row + (w0 + i) * a.grid_grad.stride[3];
                    }
                    PreparedBlock<S>& prepared = chunked.Next();
                    PrepareBlock<T, P, kGridGrad>(pb, points, prepared);
                    RestrictToSlab(prepared, z_begin, z_end, depth);
                    chunked.Add();
                }
            }
        }
        if constexpr (I == Interpolation::kNearest) flush();
        chunked.Run();
    }
    return true;
}
// The slab keys of a grid row: each point's slab of its first corner along D (nearest: its
// voxel), clamped into the volume (a point that touches no voxel may go to any slab; it
// writes only its gridGrad). The source index comes from the same vector code as the
// blocks', and the floor (nearest: round half to even) is FloorIndex's (NearestIndex's), so
// the corners of a point lie in its key's slab and the next.
template <typename T, Interpolation I, Padding P>
HWY_INLINE void RowKeys(const Problem<T>& pb, const FastDivider32& by_slab_depth, int64_t n, int64_t d, int64_t h,
                        uint16_t* HWY_RESTRICT keys) {
    using S = ComputeType<T>;
    const hn::ScalableTag<S> dv;
    const int lanes = static_cast<int>(hn::Lanes(dv));
    const int64_t depth = pb.args.input.size[2], cs = pb.args.grid.stride[4];
    const auto low = hn::Set(dv, S(-1)), high = hn::Set(dv, static_cast<S>(depth)), zero = hn::Zero(dv),
               last = hn::Set(dv, static_cast<S>(depth - 1));
    HWY_ALIGN S coord[kBlock], iz[kBlock], unused[kBlock];
    for (int64_t w0 = 0; w0 < pb.out_w; w0 += kBlock) {
        const int count = static_cast<int>(std::min<int64_t>(kBlock, pb.out_w - w0));
        const int padded = (count + lanes - 1) / lanes * lanes;
        const T* g = pb.GridPoint(n, d, h, w0) + 2 * cs;
        const int64_t gs = pb.args.grid.stride[3];
        for (int i = 0; i < count; ++i) coord[i] = LoadElement(g + i * gs);
        for (int i = count; i < padded; ++i) coord[i] = 0;
        BlockSourceIndices<S, P, true>(coord, padded, depth, pb.args.options.align_corners, iz, unused);
        for (int i = 0; i < padded; i += lanes) {
            const auto v = hn::Load(dv, iz + i);
            const auto z = I == Interpolation::kNearest ? hn::Round(v) : hn::Floor(v);
            // Outside [-1, depth], NaN and inf: slab 0; then clamped to [0, depth - 1].
            const auto valid = hn::And(hn::Ge(v, low), hn::Le(v, high));
            hn::Store(hn::Min(hn::Max(hn::IfThenElseZero(valid, z), zero), last), dv, iz + i);
        }
        for (int i = 0; i < count; ++i)
            keys[w0 + i] = static_cast<uint16_t>(by_slab_depth.Divide(static_cast<uint32_t>(iz[i])));
    }
}

// inputGrad (and gridGrad, kGridGrad) by slabs:
// - keys: every point's slab; each grid row's points sorted by key (a stable counting sort
//   within the row), with the row's smallest and largest key;
// - phase 0: the even slabs in parallel, phase 1 the odd ones. A slab's task zero-fills its
//   slab and the next (phase 0), then takes, from each row whose key range holds its slab,
//   the run of that row's points with its key, in grid order.
// Every element thus sums its contributions in a fixed order: the points of the slab before
// it, then those of its own, each in grid order; whatever the thread count.
template <typename T, Interpolation I, Padding P, bool kGridGrad, bool kUnitChannels>
void SlabBackward(const Problem<T>& pb, const SlabPlan& plan, const BackwardWorkspace& ws) {
    using S = ComputeType<T>;
    const BackwardArgs& a = pb.args;
    const int64_t rows = pb.out_d * pb.out_h, slabs = plan.slabs;
    const FastDivider32 by_slab_depth(static_cast<uint32_t>(plan.slab_depth));

#pragma omp parallel for schedule(static)
    for (int64_t task = 0; task < pb.batch * rows; ++task) {
        const int64_t n = task / rows, row = task % rows, d = row / pb.out_h, h = row % pb.out_h;
        uint16_t* keys = ws.keys + task * pb.out_w;
        uint32_t* order = ws.order + task * pb.out_w;
        uint16_t lowest = UINT16_MAX, highest = 0;
        RowKeys<T, I, P>(pb, by_slab_depth, n, d, h, keys);
        for (int64_t w = 0; w < pb.out_w; ++w) {
            lowest = std::min(lowest, keys[w]);
            highest = std::max(highest, keys[w]);
        }
        ws.row_lowest[task] = lowest;
        ws.row_highest[task] = highest;
        if (lowest == highest) {  // one slab (the common case): grid order is key order
            for (int64_t w = 0; w < pb.out_w; ++w) order[w] = static_cast<uint32_t>(w);
            continue;
        }
        uint32_t start[kMaxSlabs + 1] = {};
        for (int64_t w = 0; w < pb.out_w; ++w) ++start[keys[w] + 1];
        for (int k = lowest + 1; k <= highest; ++k) start[k] += start[k - 1];
        for (int64_t w = 0; w < pb.out_w; ++w) order[start[keys[w]]++] = static_cast<uint32_t>(w);
        // keys[] becomes the sorted keys: after the pass start[k] is the end of key k's run.
        uint32_t position = 0;
        for (int k = lowest; k <= highest; ++k)
            for (; position < start[k]; ++position) keys[position] = static_cast<uint16_t>(k);
    }

    const bool blocks = OffsetsFit<S>(pb.acc_geometry) && OffsetsFit<S>(pb.in_geometry);
    if constexpr (I == Interpolation::kNearest && kGridGrad) {
        // The sample is piecewise constant: gridGrad is 0, written here in grid order rather
        // than point by point in slab order (which would write each line several times).
#pragma omp parallel for schedule(static)
        for (int64_t task = 0; task < pb.batch * rows; ++task) {
            const int64_t n = task / rows, row = task % rows;
            for (int64_t w = 0; w < pb.out_w; ++w) pb.WriteGridGrad(n, row / pb.out_h, row % pb.out_h, w, 0, 0, 0);
        }
    }
    const int64_t vol_d = a.input.size[2], vol_h = a.input.size[3], vol_w = a.input.size[4];
    const int64_t slab_tasks = (slabs + 1) / 2;
    for (int phase = 0; phase < 2; ++phase) {
#pragma omp parallel for schedule(dynamic, 1)
        for (int64_t task = 0; task < pb.batch * slab_tasks; ++task) {
            const int64_t n = task / slab_tasks, slab = 2 * (task % slab_tasks) + phase;
            if (slab >= slabs) continue;
            if (phase == 0) {  // zero this slab and the next: no task has written them yet
                const int64_t z_end = std::min(vol_d, (slab + 2) * plan.slab_depth);
                for (int64_t c = 0; c < pb.channels; ++c)
                    for (int64_t z = slab * plan.slab_depth; z < z_end; ++z)
                        for (int64_t y = 0; y < vol_h; ++y) {
                            S* line = pb.acc + n * pb.acc_stride[0] + c * pb.acc_stride[1] + z * pb.acc_stride[2] +
                                      y * pb.acc_stride[3];
                            for (int64_t x = 0; x < vol_w; ++x) line[x * pb.acc_stride[4]] = 0;
                        }
            }
            PointBlock block;
            BlockChunk<T, kGridGrad, kUnitChannels> chunked(pb, n);
            auto submit = [&] {
                if constexpr (I == Interpolation::kNearest) {
                    NearestBlock<T, P>(pb, n, block);
                } else {
                    PrepareBlock<T, P, kGridGrad>(pb, block, chunked.Next());
                    chunked.Add();
                }
                block.count = 0;
            };
            for (int64_t row = 0; row < rows; ++row) {
                const int64_t r = n * rows + row;
                if (ws.row_lowest[r] > slab || ws.row_highest[r] < slab) continue;
                const int64_t d = row / pb.out_h, h = row % pb.out_h;
                const uint16_t* keys = ws.keys + r * pb.out_w;
                const uint32_t* order = ws.order + r * pb.out_w;
                const auto key = static_cast<uint16_t>(slab);
                const int64_t begin = std::lower_bound(keys, keys + pb.out_w, key) - keys;
                const int64_t end = std::upper_bound(keys + begin, keys + pb.out_w, key) - keys;
                if (blocks) {
                    const int64_t grid_row = n * a.grid.stride[0] + d * a.grid.stride[1] + h * a.grid.stride[2];
                    const int64_t gout_row =
                        n * a.grad_output.stride[0] + d * a.grad_output.stride[2] + h * a.grad_output.stride[3];
                    const int64_t ggrid_row =
                        n * a.grid_grad.stride[0] + d * a.grid_grad.stride[1] + h * a.grid_grad.stride[2];
                    for (int64_t i = begin; i < end; ++i) {
                        const int64_t w = order[i];
                        block.grid[block.count] = grid_row + w * a.grid.stride[3];
                        block.grad_output[block.count] = gout_row + w * a.grad_output.stride[4];
                        block.grid_grad[block.count] = ggrid_row + w * a.grid_grad.stride[3];
                        if (++block.count == kBlock) submit();
                    }
                    continue;
                }
                for (int64_t i = begin; i < end; ++i)
                    BackwardPoint<T, I, P, true, kGridGrad, kUnitChannels>(pb, n, d, h, order[i]);
            }
            if (block.count) submit();
            chunked.Run();
        }
    }
}

// gridGrad alone (outputMask {false, true}): threads split the rows of the grid.
template <typename T, Interpolation I, Padding P, bool kUnitChannels>
void GridGradOnly(const Problem<T>& pb) {
    const int64_t rows = pb.batch * pb.out_d * pb.out_h;
#pragma omp parallel for schedule(static)
    for (int64_t row = 0; row < rows; ++row) {
        const int64_t h = row % pb.out_h, d = row / pb.out_h % pb.out_d, n = row / (pb.out_h * pb.out_d);
        for (int64_t w = 0; w < pb.out_w; ++w) BackwardPoint<T, I, P, false, true, kUnitChannels>(pb, n, d, h, w);
    }
}

// inputGrad when the slab plan does not apply (more than 2^32 points per batch item):
// tasks own whole (n, c) volumes and visit every point of n in order.
template <typename T, Interpolation I, Padding P, bool kGridGrad>
void PerChannelBackward(const Problem<T>& pb) {
    using S = ComputeType<T>;
    const int64_t vol_d = pb.args.input.size[2], vol_h = pb.args.input.size[3], vol_w = pb.args.input.size[4];
#pragma omp parallel for schedule(dynamic, 1)
    for (int64_t task = 0; task < pb.batch * pb.channels; ++task) {
        const int64_t n = task / pb.channels, c = task % pb.channels;
        Problem<T> one = pb;  // a view of channel c alone
        one.channels = 1;
        one.in += c * pb.args.input.stride[1];
        one.gout += c * pb.args.grad_output.stride[1];
        one.acc += c * pb.acc_stride[1];
        for (int64_t z = 0; z < vol_d; ++z)
            for (int64_t y = 0; y < vol_h; ++y)
                for (int64_t x = 0; x < vol_w; ++x)
                    one.acc[n * pb.acc_stride[0] + z * pb.acc_stride[2] + y * pb.acc_stride[3] + x * pb.acc_stride[4]] =
                        S(0);
        for (int64_t d = 0; d < pb.out_d; ++d)
            for (int64_t h = 0; h < pb.out_h; ++h)
                for (int64_t w = 0; w < pb.out_w; ++w)
                    BackwardPoint<T, I, P, true, false, false>(one, n, d, h, w);
    }
    if constexpr (kGridGrad) GridGradOnly<T, I, P, false>(pb);
}

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
                StoreElement<T>(from[y * pb.acc_stride[3] + x * pb.acc_stride[4]], to + y * out.stride[3] + x * out.stride[4]);
    }
}

template <typename T, Interpolation I, Padding P>
void Backward(const BackwardArgs& args, void* workspace) {
    using S = ComputeType<T>;
    const BackwardWorkspace ws = LayOutWorkspace(args, workspace);
    int64_t acc_strides[5];
    S* acc;
    if constexpr (kAccumulatesInBuffer<T>) {
        acc = reinterpret_cast<S*>(ws.accumulator);
        for (int i = 0; i < 5; ++i) acc_strides[i] = ws.accumulator_stride[i];
    } else {
        acc = static_cast<S*>(args.input_grad.data);
        for (int i = 0; i < 5; ++i) acc_strides[i] = args.input_grad.stride[i];
    }
    const Problem<T> pb(args, acc, acc_strides);
    const bool unit_channels = args.input.stride[1] == 1 && args.grad_output.stride[1] == 1 && acc_strides[1] == 1;
    if (!args.compute_input_grad) {
        if (!args.compute_grid_grad) return;
        if (unit_channels)
            GridGradOnly<T, I, P, true>(pb);
        else
            GridGradOnly<T, I, P, false>(pb);
        return;
    }
    const SlabPlan plan = PlanSlabs(args);
    if (!plan.usable) {
        if (args.compute_grid_grad)
            PerChannelBackward<T, I, P, true>(pb);
        else
            PerChannelBackward<T, I, P, false>(pb);
    } else if (args.compute_grid_grad ? (unit_channels ? ScanBackward<T, I, P, true, true>(pb, ws)
                                                        : ScanBackward<T, I, P, true, false>(pb, ws))
                                      : (unit_channels ? ScanBackward<T, I, P, false, true>(pb, ws)
                                                       : ScanBackward<T, I, P, false, false>(pb, ws))) {
        // done by scanning
    } else if (args.compute_grid_grad) {
        if (unit_channels)
            SlabBackward<T, I, P, true, true>(pb, plan, ws);
        else
            SlabBackward<T, I, P, true, false>(pb, plan, ws);
    } else {
        if (unit_channels)
            SlabBackward<T, I, P, false, true>(pb, plan, ws);
        else
            SlabBackward<T, I, P, false, false>(pb, plan, ws);
    }
    if constexpr (kAccumulatesInBuffer<T>) StoreAccumulator(pb);
}

}  // namespace

void RunBackwardForTarget(const BackwardArgs& args, void* workspace) {
    Dispatch(args.type, args.options, [&](auto type_tag, auto interpolation, auto padding) {
        Backward<typename decltype(type_tag)::type, decltype(interpolation)::value, decltype(padding)::value>(args,
                                                                                                           workspace);
    });
}

}  // namespace HWY_NAMESPACE
}  // namespace gs3d::kernels
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace gs3d::kernels {

HWY_EXPORT(RunBackwardForTarget);

void RunBackward(const BackwardArgs& args, void* workspace) {
    HWY_DYNAMIC_DISPATCH(RunBackwardForTarget)(args, workspace);
}

}  // namespace gs3d::kernels
#endif  // HWY_ONCE
