// The fused warps' geometry (the output cut into chunks of rows) and their per-row
// arithmetic (warps/rows.cpp, compiled per SIMD target): a chunk's coordinates, flowGrad from
// a chunk's gridGrad, and thetaGrad's partial sums.
#pragma once

#include <algorithm>
#include <cstdint>

#include "kernels/plan/backward.h"  // CeilDiv
#include "kernels/common/element_types.h"
#include "kernels/warps/chunks.h"

namespace gs3d::kernels {

// Calls f with a value of the element type's C++ type (its value is not used).
template <typename F>
void DispatchElement(ElementType type, F&& f) {
    switch (type) {
        case ElementType::kFloat32: return f(float{});
        case ElementType::kFloat64: return f(double{});
        case ElementType::kFloat16: return f(Half{});
        case ElementType::kBFloat16: return f(BFloat16{});
    }
}

// Element (i0, i1, i2, i3, i4) of a view of T (theta, flow, flowGrad, thetaGrad).
template <typename T>
T* ElementAt(const View5& v, int64_t i0, int64_t i1, int64_t i2 = 0, int64_t i3 = 0, int64_t i4 = 0) {
    return static_cast<T*>(v.data) + i0 * v.stride[0] + i1 * v.stride[1] + i2 * v.stride[2] + i3 * v.stride[3] +
           i4 * v.stride[4];
}

// The order of the output's rows (d, h) in chunks. The backward's: bands of rows along H
// over every plane (D), band after band, each plane after plane (chunks of whole planes made
// the affine backward a fifth slower). Planes after planes, the grid's own order, reads a
// flow and writes the output in long runs instead of runs of a few rows (the forward picks:
// warps/chunks.cpp).
enum class ChunkOrder { kBands, kPlanes };

// The output's shape and its chunks of about kWarpChunkPoints points: in bands, rows along H
// over every plane, and where one row of H over every plane is too many points, planes in
// groups too; in planes, whole planes, and where one plane is too many points, its rows in
// groups.
struct Chunking {
    ChunkOrder order;
    int64_t batch, out_d, out_h, out_w;
    int64_t chunk_rows, chunk_planes;  // along H and D
    int64_t h_chunks, d_chunks, chunks;
};

// Chunk k: planes [d0, d0 + planes), rows [h0, h0 + rows) of each; its rows in that order
// (plane after plane).
struct Chunk {
    int64_t d0, planes, h0, rows;
    int64_t Rows() const { return planes * rows; }  // grid rows (d, h) in it
};

inline Chunking ChunkingOf(const View5& out, ChunkOrder order) {
    Chunking c{order, out.size[0], out.size[2], out.size[3], out.size[4], 1, 1, 1, 1, 1};
    const int64_t row_points = std::max<int64_t>(1, c.out_w), rows = std::max<int64_t>(1, c.out_h),
                  planes = std::max<int64_t>(1, c.out_d);
    if (order == ChunkOrder::kBands) {
        c.chunk_rows = std::clamp<int64_t>(kWarpChunkPoints / (planes * row_points), 1, rows);
        c.chunk_planes = c.chunk_rows > 1 ? planes : std::clamp<int64_t>(kWarpChunkPoints / row_points, 1, planes);
    } else {
        c.chunk_planes = std::clamp<int64_t>(kWarpChunkPoints / (rows * row_points), 1, planes);
        c.chunk_rows = c.chunk_planes > 1 ? rows : std::clamp<int64_t>(kWarpChunkPoints / row_points, 1, rows);
    }
    c.h_chunks = std::max<int64_t>(1, CeilDiv(c.out_h, c.chunk_rows));
    c.d_chunks = std::max<int64_t>(1, CeilDiv(c.out_d, c.chunk_planes));
    c.chunks = c.h_chunks * c.d_chunks;
    return c;
}

// The chunk's indices along H and D: in bands, the chunks of a band's planes follow each
// other; in planes, the chunks of a plane's rows.
inline int64_t ChunkAlongH(const Chunking& c, int64_t k) {
    return c.order == ChunkOrder::kBands ? k / c.d_chunks : k % c.h_chunks;
}
inline int64_t ChunkAlongD(const Chunking& c, int64_t k) {
    return c.order == ChunkOrder::kBands ? k % c.d_chunks : k / c.h_chunks;
}

// The index of the chunk at (along_h, along_d) of the chunk grid.
inline int64_t ChunkIndex(const Chunking& c, int64_t along_h, int64_t along_d) {
    return c.order == ChunkOrder::kBands ? along_h * c.d_chunks + along_d : along_d * c.h_chunks + along_h;
}

inline Chunk ChunkAt(const Chunking& c, int64_t k) {
    Chunk chunk;
    chunk.h0 = ChunkAlongH(c, k) * c.chunk_rows;
    chunk.rows = std::max<int64_t>(0, std::min(c.chunk_rows, c.out_h - chunk.h0));
    chunk.d0 = ChunkAlongD(c, k) * c.chunk_planes;
    chunk.planes = std::max<int64_t>(0, std::min(c.chunk_planes, c.out_d - chunk.d0));
    return chunk;
}

// F.affine_grid's base coordinates of each axis, in double (exact from the compute type):
// x (W), then y (H), then z (D), out_w + out_h + out_d values.
struct BaseCoordinates {
    const double *x, *y, *z;
};

// A chunk's coordinates, rounded once to the element type, into `grid` (planes, rows, Wo, 3),
// dense: affine, F.affine_grid's base coordinates times theta in double; displacement,
// VoxelMorph's SpatialTransformer's arithmetic in the compute type.
void FillWarpGrid(ElementType type, WarpKind kind, const View5& parameters, const BaseCoordinates& base,
                  const Chunking& c, int64_t n, const Chunk& chunk, void* grid);

// flowGrad of a chunk from its gridGrad (dense, as FillWarpGrid's grid), through VoxelMorph's
// normalization as autograd differentiates it: (2 * gridGrad) / (size - 1).
void WriteWarpFlowGrad(ElementType type, const void* grid_grad, const Chunking& c, int64_t n, const Chunk& chunk,
                       const View5& flow_grad);

// thetaGrad's terms of a chunk, gridGrad x (x, y, z, 1), added to `sum` (theta's 12
// entries, row-major) in an order fixed by the shape: the same bits for any thread count.
// `partials`: 6 doubles per grid row of a chunk.
void AddWarpThetaGrad(ElementType type, const void* grid_grad, const BaseCoordinates& base, const Chunking& c,
                      const Chunk& chunk, double* partials, double sum[12]);

}  // namespace gs3d::kernels
