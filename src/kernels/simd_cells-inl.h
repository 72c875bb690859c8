// The trilinear cells of a block of grid points, computed across points with SIMD: floors,
// per-axis weights, the eight corner weights ((wx * wy) * wz, PyTorch's products) and which
// corners lie inside the volume. Shared by the forward and backward kernels.
//
// Compiled into each SIMD target: Highway's per-target include guard, included after
// foreach_target.h.
#if defined(GS3D_KERNELS_SIMD_CELLS_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef GS3D_KERNELS_SIMD_CELLS_INL_H_
#undef GS3D_KERNELS_SIMD_CELLS_INL_H_
#else
#define GS3D_KERNELS_SIMD_CELLS_INL_H_
#endif

#include <hwy/highway.h>

#include <cstdint>

#include "kernels/element_types.h"
#include "kernels/trilinear_corners.h"

HWY_BEFORE_NAMESPACE();
namespace gs3d::kernels {
namespace HWY_NAMESPACE {

namespace hn = hwy::HWY_NAMESPACE;

// Grid points handled together by the SIMD block paths.
constexpr int kBlock = 64;

template <typename S>
struct BlockCells {
    HWY_ALIGN S x0[kBlock], y0[kBlock], z0[kBlock];
    HWY_ALIGN S wx[2][kBlock], wy[2][kBlock], wz[2][kBlock];
    HWY_ALIGN S weight[8][kBlock];
    HWY_ALIGN S inside[8][kBlock];  // 1 or 0
    bool all_inside[kBlock];

    // ix, iy, iz: source indices of `padded` points (a multiple of the lane count).
    HWY_INLINE void Compute(const S* ix, const S* iy, const S* iz, int padded, int count, const TrilinearGeometry& g) {
        const hn::ScalableTag<S> d;
        const int lanes = static_cast<int>(hn::Lanes(d));
        const auto one = hn::Set(d, S(1)), zero = hn::Zero(d), sentinel = hn::Set(d, S(-2)), neg_one = hn::Set(d, S(-1));
        const auto size_x = hn::Set(d, static_cast<S>(g.size[2])), size_y = hn::Set(d, static_cast<S>(g.size[1])),
                   size_z = hn::Set(d, static_cast<S>(g.size[0]));
        for (int i = 0; i < padded; i += lanes) {
            // FloorIndex: NaN, inf and far-out indices give -2 (both corners outside).
            const auto vix = hn::Load(d, ix + i), viy = hn::Load(d, iy + i), viz = hn::Load(d, iz + i);
            const auto vx0 = hn::IfThenElse(hn::And(hn::Ge(vix, neg_one), hn::Le(vix, size_x)), hn::Floor(vix), sentinel);
            const auto vy0 = hn::IfThenElse(hn::And(hn::Ge(viy, neg_one), hn::Le(viy, size_y)), hn::Floor(viy), sentinel);
            const auto vz0 = hn::IfThenElse(hn::And(hn::Ge(viz, neg_one), hn::Le(viz, size_z)), hn::Floor(viz), sentinel);
            hn::Store(vx0, d, x0 + i);
            hn::Store(vy0, d, y0 + i);
            hn::Store(vz0, d, z0 + i);
            const auto vx1 = hn::Add(vx0, one), vy1 = hn::Add(vy0, one), vz1 = hn::Add(vz0, one);
            const decltype(vx0) wxs[2] = {hn::Sub(vx1, vix), hn::Sub(vix, vx0)},
                                wys[2] = {hn::Sub(vy1, viy), hn::Sub(viy, vy0)},
                                wzs[2] = {hn::Sub(vz1, viz), hn::Sub(viz, vz0)};
            for (int k = 0; k < 2; ++k) {
                hn::Store(wxs[k], d, wx[k] + i);
                hn::Store(wys[k], d, wy[k] + i);
                hn::Store(wzs[k], d, wz[k] + i);
            }
            const decltype(hn::Lt(vx0, size_x)) bx[2] = {hn::And(hn::Ge(vx0, zero), hn::Lt(vx0, size_x)),
                                                        hn::And(hn::Ge(vx1, zero), hn::Lt(vx1, size_x))},
                                               by[2] = {hn::And(hn::Ge(vy0, zero), hn::Lt(vy0, size_y)),
                                                        hn::And(hn::Ge(vy1, zero), hn::Lt(vy1, size_y))},
                                               bz[2] = {hn::And(hn::Ge(vz0, zero), hn::Lt(vz0, size_z)),
                                                        hn::And(hn::Ge(vz1, zero), hn::Lt(vz1, size_z))};
            for (int k = 0; k < 8; ++k) {
                const int kx = k & 1, ky = (k >> 1) & 1, kz = k >> 2;
                hn::Store(hn::Mul(hn::Mul(wxs[kx], wys[ky]), wzs[kz]), d, weight[k] + i);
                hn::Store(hn::IfThenElseZero(hn::And(hn::And(bx[kx], by[ky]), bz[kz]), one), d, inside[k] + i);
            }
        }
        for (int i = 0; i < count; ++i) {
            bool all = true;
            for (int k = 0; k < 8; ++k) all = all && inside[k][i] != 0;
            all_inside[i] = all;
        }
    }

    // The eight corner values of each point of a volume (one channel) into v[k][i]: corners
    // outside read as 0 (the vector code masks them out anyway), lanes past `count` as 0.
    // base[i]: the first corner's offset (Base); delta: the geometry's corner_delta.
    template <typename T>
    HWY_INLINE void LoadCorners(const T* volume, const int64_t* base, const int64_t* delta, int count, int padded,
                                S (*HWY_RESTRICT v)[kBlock]) const {
        for (int i = 0; i < count; ++i) {
            const T* q = volume + base[i];
            if (all_inside[i]) {
                for (int k = 0; k < 8; ++k) v[k][i] = ToCompute(q[delta[k]]);
            } else {
                for (int k = 0; k < 8; ++k) v[k][i] = inside[k][i] != 0 ? ToCompute(q[delta[k]]) : S(0);
            }
        }
        for (int k = 0; k < 8; ++k)
            for (int i = count; i < padded; ++i) v[k][i] = 0;
    }

    // Element offset of point i's first corner for the given strides (D, H, W order).
    HWY_INLINE int64_t Base(int i, const int64_t stride[3]) const {
        return static_cast<int64_t>(z0[i]) * stride[0] + static_cast<int64_t>(y0[i]) * stride[1] +
               static_cast<int64_t>(x0[i]) * stride[2];
    }
};

}  // namespace HWY_NAMESPACE
}  // namespace gs3d::kernels
HWY_AFTER_NAMESPACE();

#endif  // GS3D_KERNELS_SIMD_CELLS_INL_H_
