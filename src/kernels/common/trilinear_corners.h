// The eight corners of a trilinear sample and their weights, computed once per grid point
// and shared by every channel. Corner k has x = bit 0, y = bit 1, z = bit 2, which is
// PyTorch's order tnw, tne, tsw, tse, bnw, bne, bsw, bse; weights multiply x * y * z in
// that order, as PyTorch does, so that fp32 results agree with it bit for bit.
//
// Included by the per-target kernel files: everything here is inline.
#pragma once

#include <cstdint>

#include "kernels/common/coordinates.h"
#include "kernels/grid_sampler3d_kernels.h"

namespace gs3d::kernels {

// A volume's sizes and strides in (D, H, W) order, and the offsets of the eight corners of a
// cell relative to its first corner.
struct TrilinearGeometry {
    int64_t size[3];
    int64_t stride[3];
    int64_t corner_delta[8];

    // From a (N, C, D, H, W) view; `strides` overrides the view's (D, H, W) strides, for
    // accumulators laid out differently from the tensor.
    explicit TrilinearGeometry(const View5& volume, const int64_t* strides = nullptr) {
        for (int i = 0; i < 3; ++i) {
            size[i] = volume.size[i + 2];
            stride[i] = strides ? strides[i] : volume.stride[i + 2];
        }
        for (int k = 0; k < 8; ++k)
            corner_delta[k] = (k & 1) * stride[2] + ((k >> 1) & 1) * stride[1] + (k >> 2) * stride[0];
    }
};

template <typename S>
struct TrilinearCorners {
    int64_t x0, y0, z0;     // the cell's first corner
    S wx[2], wy[2], wz[2];  // per-axis weights: [0] for floor, [1] for floor + 1
    S weight[8];
    int64_t offset[8];  // element offset of the corner in a (D, H, W) volume; valid when inside
    bool inside[8];

    // ix, iy, iz: source indices. Returns true when all eight corners are inside the volume;
    // `offset` and `inside` are then not filled in (address the corners from x0, y0, z0).
    GS3D_INLINE bool Compute(S ix, S iy, S iz, const TrilinearGeometry& g) {
        x0 = FloorIndex(ix, g.size[2]);
        y0 = FloorIndex(iy, g.size[1]);
        z0 = FloorIndex(iz, g.size[0]);
        wx[0] = static_cast<S>(x0 + 1) - ix;
        wx[1] = ix - static_cast<S>(x0);
        wy[0] = static_cast<S>(y0 + 1) - iy;
        wy[1] = iy - static_cast<S>(y0);
        wz[0] = static_cast<S>(z0 + 1) - iz;
        wz[1] = iz - static_cast<S>(z0);
        // (wx * wy) * wz, the products PyTorch forms, with the four wx * wy computed once.
        const S xy[4] = {wx[0] * wy[0], wx[1] * wy[0], wx[0] * wy[1], wx[1] * wy[1]};
        for (int k = 0; k < 4; ++k) {
            weight[k] = xy[k] * wz[0];
            weight[k + 4] = xy[k] * wz[1];
        }
        if (x0 >= 0 && x0 + 1 < g.size[2] && y0 >= 0 && y0 + 1 < g.size[1] && z0 >= 0 && z0 + 1 < g.size[0])
            return true;
        FillOffsets(g);
        return false;
    }

    // The corners' offsets and whether each is inside, for the geometry g.
    GS3D_INLINE void FillOffsets(const TrilinearGeometry& g) {
        const int64_t base = z0 * g.stride[0] + y0 * g.stride[1] + x0 * g.stride[2];
        for (int k = 0; k < 8; ++k) {
            const int64_t x = x0 + (k & 1), y = y0 + ((k >> 1) & 1), z = z0 + (k >> 2);
            inside[k] = x >= 0 && x < g.size[2] && y >= 0 && y < g.size[1] && z >= 0 && z < g.size[0];
            offset[k] = inside[k] ? base + g.corner_delta[k] : 0;
        }
    }
};

// The nearest voxel of a sample: its offset in a (D, H, W) volume, or inside == false.
struct NearestCorner {
    int64_t offset = 0;
    bool inside = false;

    template <typename S>
    GS3D_INLINE void Compute(S ix, S iy, S iz, const TrilinearGeometry& g) {
        const int64_t x = NearestIndex(ix, g.size[2]);
        const int64_t y = NearestIndex(iy, g.size[1]);
        const int64_t z = NearestIndex(iz, g.size[0]);
        inside = x >= 0 && x < g.size[2] && y >= 0 && y < g.size[1] && z >= 0 && z < g.size[0];
        offset = inside ? z * g.stride[0] + y * g.stride[1] + x * g.stride[2] : 0;
    }
};

}  // namespace gs3d::kernels
