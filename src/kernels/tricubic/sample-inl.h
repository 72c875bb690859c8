// Tricubic's gather of one point and channel: the 64 taps combined axis by axis (x within
// each row of 4, then the rows of a plane along y, then the planes along z), each sum in tap
// order, and for the backward the three derivatives by the same tensor product with one
// axis's weight gradients. The forward and the backward's gridGrad share it, so that both
// read the same values in the same order.
//
// Compiled into each SIMD target: included by tricubic/forward-inl.h and backward-inl.h
// (after foreach_target.h) only; Highway's per-target include guard.
#if defined(GS3D_KERNELS_TRICUBIC_SAMPLE_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef GS3D_KERNELS_TRICUBIC_SAMPLE_INL_H_
#undef GS3D_KERNELS_TRICUBIC_SAMPLE_INL_H_
#else
#define GS3D_KERNELS_TRICUBIC_SAMPLE_INL_H_
#endif

#include <hwy/highway.h>

#include <cstdint>

#include "kernels/element_types.h"
#include "kernels/grid_sampler3d_kernels.h"
#include "kernels/tricubic/taps.h"

HWY_BEFORE_NAMESPACE();
namespace gs3d::kernels {
namespace HWY_NAMESPACE {
namespace {

template <typename S>
struct CubicPoint {
    CubicAxis<S> x, y, z;
    bool all_inside;  // every tap reads the input (no zeros padding applies)
};

// The point's x and y taps from its grid coordinates (x, y, z) along the input's (W, H), its
// z taps (along D) being computed already: the backward looks at them first, to skip the
// points whose taps lie in other threads' planes.
template <typename T, typename S = ComputeType<T>>
HWY_INLINE void CompleteCubicPoint(const T* g, int64_t coord_stride, const View5& in, const SamplerOptions& options,
                                   CubicPoint<S>* p) {
    ComputeCubicAxis<S>(ToCompute(g[0]), in.size[4], in.stride[4], options, &p->x);
    ComputeCubicAxis<S>(ToCompute(g[coord_stride]), in.size[3], in.stride[3], options, &p->y);
    bool inside = true;
    for (int k = 0; k < 4; ++k) inside = inside && p->x.index[k] >= 0 && p->y.index[k] >= 0 && p->z.index[k] >= 0;
    p->all_inside = inside;
}

template <typename T, typename S = ComputeType<T>>
HWY_INLINE void ComputeCubicPoint(const T* g, int64_t coord_stride, const View5& in, const SamplerOptions& options,
                                  CubicPoint<S>* p) {
    ComputeCubicAxis<S>(ToCompute(g[2 * coord_stride]), in.size[2], in.stride[2], options, &p->z);
    CompleteCubicPoint<T>(g, coord_stride, in, options, p);
}

template <typename S>
HWY_INLINE S Dot4(const S* v, const S* w) {
    return v[0] * w[0] + v[1] * w[1] + v[2] * w[2] + v[3] * w[3];
}

// The sample of one channel (base: its element 0) and, with kGrads, the sums whose product
// with gradOutput gives gridGrad: dx = sum of value * weight_grad(x) * weight(y) * weight(z),
// and so on.
template <typename S>
struct CubicSums {
    S value, dx, dy, dz;
};

template <bool kGrads, typename T, typename S>
HWY_INLINE CubicSums<S> GatherCubic(const T* base, const CubicPoint<S>& p) {
    S plane[4], plane_dx[4], plane_dy[4];
    for (int k = 0; k < 4; ++k) {
        S row[4], row_dx[4];
        for (int j = 0; j < 4; ++j) {
            const T* line = base + p.z.offset[k] + p.y.offset[j];
            S v[4];
            if (p.all_inside) {
                for (int i = 0; i < 4; ++i) v[i] = ToCompute(line[p.x.offset[i]]);
            } else {
                const bool row_inside = p.z.index[k] >= 0 && p.y.index[j] >= 0;
                for (int i = 0; i < 4; ++i) v[i] = row_inside && p.x.index[i] >= 0 ? ToCompute(line[p.x.offset[i]]) : S(0);
            }
            row[j] = Dot4(v, p.x.weight);
            if constexpr (kGrads) row_dx[j] = Dot4(v, p.x.weight_grad);
        }
        plane[k] = Dot4(row, p.y.weight);
        if constexpr (kGrads) {
            plane_dx[k] = Dot4(row_dx, p.y.weight);
            plane_dy[k] = Dot4(row, p.y.weight_grad);
        }
    }
    CubicSums<S> sums{Dot4(plane, p.z.weight), S(0), S(0), S(0)};
    if constexpr (kGrads) {
        sums.dx = Dot4(plane_dx, p.z.weight);
        sums.dy = Dot4(plane_dy, p.z.weight);
        sums.dz = Dot4(plane, p.z.weight_grad);
    }
    return sums;
}

}  // namespace
}  // namespace HWY_NAMESPACE
}  // namespace gs3d::kernels
HWY_AFTER_NAMESPACE();

#endif  // GS3D_KERNELS_TRICUBIC_SAMPLE_INL_H_
