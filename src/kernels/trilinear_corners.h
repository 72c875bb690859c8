// The eight corners of a trilinear sample and their weights, computed once per grid point
// and shared by every channel. Corner k has x = bit 0, y = bit 1, z = bit 2, which is
// PyTorch's order tnw, tne, tsw, tse, bnw, bne, bsw, bse; weights multiply x * y * z in
// that order, as PyTorch does, so that fp32 results agree bit for bit where no FMA is used.
#pragma once

#include <cstdint>

#include "kernels/coordinates.h"

namespace gs3d::kernels {

template <typename S>
struct TrilinearCorners {
    S wx[2], wy[2], wz[2];  // per-axis weights: [0] for floor, [1] for floor + 1
    S weight[8];
    int64_t offset[8];  // element offset of the corner in a (D, H, W) volume; valid when inside
    bool inside[8];

    // ix, iy, iz: source indices; size and stride: of the input volume, (D, H, W) order.
    void Compute(S ix, S iy, S iz, const int64_t size[3], const int64_t stride[3]) {
        int64_t x0 = FloorIndex(ix, size[2]);
        int64_t y0 = FloorIndex(iy, size[1]);
        int64_t z0 = FloorIndex(iz, size[0]);
        wx[0] = static_cast<S>(x0 + 1) - ix;
        wx[1] = ix - static_cast<S>(x0);
        wy[0] = static_cast<S>(y0 + 1) - iy;
        wy[1] = iy - static_cast<S>(y0);
        wz[0] = static_cast<S>(z0 + 1) - iz;
        wz[1] = iz - static_cast<S>(z0);
        for (int k = 0; k < 8; ++k) {
            int bx = k & 1, by = (k >> 1) & 1, bz = k >> 2;
            int64_t x = x0 + bx, y = y0 + by, z = z0 + bz;
            inside[k] = x >= 0 && x < size[2] && y >= 0 && y < size[1] && z >= 0 && z < size[0];
            offset[k] = inside[k] ? z * stride[0] + y * stride[1] + x * stride[2] : 0;
            weight[k] = wx[bx] * wy[by] * wz[bz];
        }
    }
};

// The nearest voxel of a sample: its offset in a (D, H, W) volume, or inside == false.
struct NearestCorner {
    int64_t offset = 0;
    bool inside = false;

    template <typename S>
    void Compute(S ix, S iy, S iz, const int64_t size[3], const int64_t stride[3]) {
        int64_t x = NearestIndex(ix, size[2]);
        int64_t y = NearestIndex(iy, size[1]);
        int64_t z = NearestIndex(iz, size[0]);
        inside = x >= 0 && x < size[2] && y >= 0 && y < size[1] && z >= 0 && z < size[0];
        offset = inside ? z * stride[0] + y * stride[1] + x * stride[2] : 0;
    }
};

}  // namespace gs3d::kernels
