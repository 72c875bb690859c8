#include "kernels/warp_chunks.h"

#include <algorithm>

#include "kernels/element_types.h"

namespace gs3d::kernels {
namespace {

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

// F.affine_grid's base coordinate i of `steps` along one axis, in the compute type as
// PyTorch computes it in the dtype: linspace(-1, 1, steps) (from both ends, as its kernel),
// times (steps - 1) / steps when the corners are not aligned; 0 for a single step.
template <typename S>
S BaseCoordinate(int64_t i, int64_t steps, bool align_corners) {
    if (steps <= 1) return S(0);
    const S step = S(2) / static_cast<S>(steps - 1);
    S v = i < steps / 2 ? S(-1) + step * static_cast<S>(i) : S(1) - step * static_cast<S>(steps - i - 1);
    if (!align_corners) v = v * static_cast<S>(steps - 1) / static_cast<S>(steps);
    return v;
}

// The output's shape and its chunks: bands of rows along H over every plane (D), as the
// backward's scan orders its rows (row_order.h: band after band, each plane after plane), so
// that a chunked warp visits the rows in the order one call on the whole grid would; where one
// row of H over every plane is too many points, planes in groups too.
struct Chunking {
    int64_t batch, out_d, out_h, out_w;
    int64_t chunk_rows, chunk_planes;  // along H and D
    int64_t h_chunks, d_chunks, chunks;
};

// Chunk k: planes [d0, d0 + planes), rows [h0, h0 + rows) of each.
struct Chunk {
    int64_t d0, planes, h0, rows;
    int64_t Rows() const { return planes * rows; }  // grid rows (d, h) in it
};

Chunking ChunkingOf(const View5& out) {
    Chunking c{out.size[0], out.size[2], out.size[3], out.size[4], 1, 1, 1, 1, 1};
    const int64_t row_points = std::max<int64_t>(1, c.out_w);
    c.chunk_rows = std::clamp<int64_t>(kWarpChunkPoints / std::max<int64_t>(1, c.out_d * row_points), 1,
                                       std::max<int64_t>(1, c.out_h));
    c.chunk_planes = c.chunk_rows > 1 ? std::max<int64_t>(1, c.out_d)
                                      : std::clamp<int64_t>(kWarpChunkPoints / row_points, 1, std::max<int64_t>(1, c.out_d));
    c.h_chunks = std::max<int64_t>(1, CeilDiv(c.out_h, c.chunk_rows));
    c.d_chunks = std::max<int64_t>(1, CeilDiv(c.out_d, c.chunk_planes));
    c.chunks = c.h_chunks * c.d_chunks;
    return c;
}

Chunk ChunkAt(const Chunking& c, int64_t k) {
    Chunk chunk;
    chunk.h0 = k / c.d_chunks * c.chunk_rows;
    chunk.rows = std::max<int64_t>(0, std::min(c.chunk_rows, c.out_h - chunk.h0));
    chunk.d0 = k % c.d_chunks * c.chunk_planes;
    chunk.planes = std::max<int64_t>(0, std::min(c.chunk_planes, c.out_d - chunk.d0));
    return chunk;
}

// A chunk's part of batch item n of a volume view (N, C, D, H, W).
View5 ChunkOf(const View5& view, size_t element_bytes, int64_t n, const Chunk& chunk) {
    View5 s = BatchItem(view, element_bytes, n);
    if (s.data)
        s.data = static_cast<char*>(s.data) +
                 (chunk.d0 * view.stride[2] + chunk.h0 * view.stride[3]) * static_cast<int64_t>(element_bytes);
    s.size[2] = chunk.planes;
    s.size[3] = chunk.rows;
    return s;
}

// A chunk's coordinates (or their gradient) in the workspace: (1, planes, rows, Wo, 3), dense.
View5 ChunkGrid(void* data, const Chunking& c, const Chunk& chunk) {
    View5 g;
    g.data = data;
    const int64_t size[5] = {1, chunk.planes, chunk.rows, c.out_w, 3};
    const int64_t stride[5] = {chunk.Rows() * c.out_w * 3, chunk.rows * c.out_w * 3, c.out_w * 3, 3, 1};
    std::copy(size, size + 5, g.size);
    std::copy(stride, stride + 5, g.stride);
    return g;
}

template <typename T>
const T* At(const View5& v, int64_t i0, int64_t i1, int64_t i2 = 0, int64_t i3 = 0, int64_t i4 = 0) {
    return static_cast<const T*>(v.data) + i0 * v.stride[0] + i1 * v.stride[1] + i2 * v.stride[2] + i3 * v.stride[3] +
           i4 * v.stride[4];
}

// F.affine_grid's base coordinates of each axis, in double (exact from the compute type):
// x (W), then y (H), then z (D), out_w + out_h + out_d values.
struct BaseCoordinates {
    const double *x, *y, *z;
};

template <typename S>
BaseCoordinates FillBaseCoordinates(const Chunking& c, bool align_corners, double* values) {
    const BaseCoordinates base{values, values + c.out_w, values + c.out_w + c.out_h};
    for (int64_t i = 0; i < c.out_w; ++i) values[i] = BaseCoordinate<S>(i, c.out_w, align_corners);
    for (int64_t i = 0; i < c.out_h; ++i) values[c.out_w + i] = BaseCoordinate<S>(i, c.out_h, align_corners);
    for (int64_t i = 0; i < c.out_d; ++i) values[c.out_w + c.out_h + i] = BaseCoordinate<S>(i, c.out_d, align_corners);
    return base;
}

// Rows are computed in pieces of this many points, one coordinate at a time into a buffer
// (loops the compiler vectorizes, divisions included), then interleaved as (x, y, z).
constexpr int64_t kPiece = 256;

// Calls f(row, d, h, w0, count) for every piece of up to kPiece points of each grid row of a
// chunk (row: its index in the chunk), the rows in parallel.
template <typename F>
void ForEachRowPiece(const Chunking& c, const Chunk& chunk, F&& f) {
#pragma omp parallel for schedule(static)
    for (int64_t row = 0; row < chunk.Rows(); ++row) {
        const int64_t d = chunk.d0 + row / chunk.rows, h = chunk.h0 + row % chunk.rows;
        for (int64_t w0 = 0; w0 < c.out_w; w0 += kPiece) f(row, d, h, w0, std::min(kPiece, c.out_w - w0));
    }
}

// The coordinates of a chunk of batch item n, as F.affine_grid or VoxelMorph's
// SpatialTransformer computes them, rounded once to T.
template <typename T>
void FillChunkGrid(WarpKind kind, const View5& parameters, const BaseCoordinates& base, const Chunking& c, int64_t n,
                   const Chunk& chunk, T* grid) {
    using S = ComputeType<T>;
    const int64_t sizes[3] = {c.out_w, c.out_h, c.out_d};
    const int64_t step = parameters.stride[4];
    ForEachRowPiece(c, chunk, [&](int64_t row, int64_t d, int64_t h, int64_t w0, int64_t count) {
        T* out = grid + (row * c.out_w + w0) * 3;
        for (int k = 0; k < 3; ++k) {
            S value[kPiece];
            if (kind == WarpKind::kAffine) {
                // The dot product in double, rounded once: PyTorch's bmm sums in the dtype, in
                // BLAS's order; this is at least as close to the exact value.
                const double x_part = ToCompute(*At<T>(parameters, n, k, 0));
                const double row_part = ToCompute(*At<T>(parameters, n, k, 1)) * base.y[h] +
                                        ToCompute(*At<T>(parameters, n, k, 2)) * base.z[d] +
                                        ToCompute(*At<T>(parameters, n, k, 3));
                const double* x = base.x + w0;
                for (int64_t i = 0; i < count; ++i) value[i] = static_cast<S>(x_part * x[i] + row_part);
            } else {
                // VoxelMorph: 2 * ((position + flow) / (size - 1) - 0.5), x from the flow's channel 2.
                const T* flow = At<T>(parameters, n, 2 - k, d, h, w0);
                const S scale = static_cast<S>(sizes[k] - 1), fixed = static_cast<S>(k == 1 ? h : d);
                // Positions along W as int32 (exact in fp32 below 2^24, as PyTorch's arange
                // holds them), which the compiler converts in vectors.
                const auto first = static_cast<int32_t>(w0);
                for (int32_t i = 0; i < count; ++i) {
                    const S position = k == 0 ? static_cast<S>(first + i) : fixed;
                    value[i] = S(2) * ((position + ToCompute(flow[i * step])) / scale - S(0.5));
                }
            }
            for (int64_t i = 0; i < count; ++i) out[i * 3 + k] = FromCompute<T>(value[i]);
        }
    });
}

// flowGrad of a chunk from its gridGrad, through VoxelMorph's normalization as autograd
// differentiates it: (2 * gridGrad) / (size - 1).
template <typename T>
void WriteFlowGrad(const T* grid_grad, const Chunking& c, int64_t n, const Chunk& chunk, const View5& flow_grad) {
    using S = ComputeType<T>;
    const int64_t sizes[3] = {c.out_w, c.out_h, c.out_d};
    const int64_t step = flow_grad.stride[4];
    ForEachRowPiece(c, chunk, [&](int64_t row, int64_t d, int64_t h, int64_t w0, int64_t count) {
        const T* from = grid_grad + (row * c.out_w + w0) * 3;
        for (int k = 0; k < 3; ++k) {
            S value[kPiece];
            for (int64_t i = 0; i < count; ++i) value[i] = ToCompute(from[i * 3 + k]);
            const S scale = static_cast<S>(sizes[k] - 1);
            for (int64_t i = 0; i < count; ++i) value[i] = (S(2) * value[i]) / scale;
            T* to = const_cast<T*>(At<T>(flow_grad, n, 2 - k, d, h, w0));
            for (int64_t i = 0; i < count; ++i) to[i * step] = FromCompute<T>(value[i]);
        }
    });
}

// thetaGrad's terms of a chunk: gridGrad x (x, y, z, 1), summed in double per row in
// parallel (6 sums a row: by x and plain, per component), then the rows in order into `sum`:
// the same order for any thread count.
template <typename T>
void AddThetaGrad(const T* grid_grad, const BaseCoordinates& base, const Chunking& c, const Chunk& chunk,
                  double* partials, double sum[12]) {
    const int64_t rows = chunk.Rows();
#pragma omp parallel for schedule(static)
    for (int64_t row = 0; row < rows; ++row) {
        const T* from = grid_grad + row * c.out_w * 3;
        // Four sums per term, every fourth point each, then added in order: four chains of
        // additions instead of one (the sum's latency bound), in an order fixed by the shape.
        double by_x[4][3] = {}, plain[4][3] = {};
        for (int64_t w = 0; w < c.out_w; ++w)
            for (int k = 0; k < 3; ++k) {
                const double g = ToCompute(from[w * 3 + k]);
                by_x[w & 3][k] += g * base.x[w];
                plain[w & 3][k] += g;
            }
        for (int k = 0; k < 3; ++k) {
            partials[row * 6 + k] = (by_x[0][k] + by_x[1][k]) + (by_x[2][k] + by_x[3][k]);
            partials[row * 6 + 3 + k] = (plain[0][k] + plain[1][k]) + (plain[2][k] + plain[3][k]);
        }
    }
    for (int64_t row = 0; row < rows; ++row) {
        const double y = base.y[chunk.h0 + row % chunk.rows], z = base.z[chunk.d0 + row / chunk.rows];
        for (int k = 0; k < 3; ++k) {
            const double plain = partials[row * 6 + 3 + k];
            sum[k * 4 + 0] += partials[row * 6 + k];
            sum[k * 4 + 1] += plain * y;
            sum[k * 4 + 2] += plain * z;
            sum[k * 4 + 3] += plain;
        }
    }
}

ForwardArgs ChunkForwardArgs(const WarpForwardArgs& args, const Chunking& c, void* grid, int64_t n, const Chunk& chunk) {
    const size_t bytes = ElementBytes(args.type);
    ForwardArgs f;
    f.type = args.type;
    f.options = args.options;
    f.input = BatchItem(args.input, bytes, n);
    f.grid = ChunkGrid(grid, c, chunk);
    f.out = ChunkOf(args.out, bytes, n, chunk);
    return f;
}

BackwardArgs ChunkBackwardArgs(const WarpBackwardArgs& args, const Chunking& c, void* grid, void* grid_grad, int64_t n,
                               int64_t k) {
    const size_t bytes = ElementBytes(args.type);
    const Chunk chunk = ChunkAt(c, k);
    BackwardArgs b;
    b.type = args.type;
    b.options = args.options;
    b.grad_output = ChunkOf(args.grad_output, bytes, n, chunk);
    b.input = BatchItem(args.input, bytes, n);
    b.input_grad = BatchItem(args.input_grad, bytes, n);
    b.grid = ChunkGrid(grid, c, chunk);
    b.grid_grad = ChunkGrid(grid_grad, c, chunk);
    b.compute_input_grad = args.compute_input_grad;
    b.compute_grid_grad = args.compute_parameters_grad;
    b.first_chunk = k == 0;
    b.last_chunk = k == c.chunks - 1;
    b.scan_any_span = true;
    b.stream_grid_grad = false;
    return b;
}

// Which of the plan's backward plans serves chunk k: partial along H (1) and along D (2).
int ChunkShape(const Chunking& c, int64_t k) {
    return (k / c.d_chunks == c.h_chunks - 1 ? 1 : 0) + (k % c.d_chunks == c.d_chunks - 1 ? 2 : 0);
}

size_t BaseBytes(const Chunking& c) {
    return AlignWorkspace(static_cast<size_t>(c.out_w + c.out_h + c.out_d) * sizeof(double));
}

size_t ChunkGridBytes(const Chunking& c, ElementType type) {
    return AlignWorkspace(static_cast<size_t>(c.chunk_planes * c.chunk_rows * c.out_w * 3) * ElementBytes(type));
}

}  // namespace

WarpPlan PlanWarpForward(const WarpForwardArgs& args) {
    const Chunking c = ChunkingOf(args.out);
    WarpPlan plan;
    plan.chunks = c.chunks;
    plan.forward = PlanForward(ChunkForwardArgs(args, c, nullptr, 0, ChunkAt(c, 0)));
    plan.base_offset = AlignWorkspace(plan.forward.workspace_bytes);
    plan.grid_offset = plan.base_offset + BaseBytes(c);
    plan.bytes = plan.grid_offset + ChunkGridBytes(c, args.type);
    return plan;
}

WarpPlan PlanWarpBackward(const WarpBackwardArgs& args) {
    const Chunking c = ChunkingOf(args.grad_output);
    WarpPlan plan;
    plan.chunks = c.chunks;
    // A plan per chunk shape (full, or the last along H, D or both); the kernels' part of the
    // workspace is the largest of them, and the accumulator, at offset 0 in each, the one
    // part that lives from chunk to chunk.
    size_t kernel_bytes = 0;
    for (int shape = 0; shape < 4; ++shape) {
        const int64_t k = std::min(c.chunks - 1, (shape & 1 ? (c.h_chunks - 1) * c.d_chunks : 0) +
                                                     (shape & 2 ? c.d_chunks - 1 : 0));
        plan.backward[shape] = PlanBackward(ChunkBackwardArgs(args, c, nullptr, nullptr, 0, k));
        kernel_bytes = std::max(kernel_bytes, plan.backward[shape].workspace.bytes);
    }
    plan.base_offset = AlignWorkspace(kernel_bytes);
    plan.grid_offset = plan.base_offset + BaseBytes(c);
    const size_t grid_bytes = ChunkGridBytes(c, args.type);
    plan.grid_grad_offset = plan.grid_offset + grid_bytes;
    plan.partials_offset = plan.grid_grad_offset + (args.compute_parameters_grad ? grid_bytes : 0);
    const bool theta_grad = args.compute_parameters_grad && args.kind == WarpKind::kAffine;
    const auto chunk_rows = static_cast<size_t>(c.chunk_planes * c.chunk_rows);
    plan.bytes = plan.partials_offset + (theta_grad ? AlignWorkspace(chunk_rows * 6 * sizeof(double)) : 0);
    return plan;
}

void RunWarpForward(const WarpForwardArgs& args, const WarpPlan& plan, void* workspace) {
    const Chunking c = ChunkingOf(args.out);
    char* base = static_cast<char*>(workspace);
    DispatchElement(args.type, [&](auto element) {
        using T = decltype(element);
        T* grid = reinterpret_cast<T*>(base + plan.grid_offset);
        const BaseCoordinates coordinates = FillBaseCoordinates<ComputeType<T>>(
            c, args.options.align_corners, reinterpret_cast<double*>(base + plan.base_offset));
        for (int64_t n = 0; n < c.batch; ++n)
            for (int64_t k = 0; k < c.chunks; ++k) {
                const Chunk chunk = ChunkAt(c, k);
                FillChunkGrid<T>(args.kind, args.parameters, coordinates, c, n, chunk, grid);
                ForwardArgs f = ChunkForwardArgs(args, c, grid, n, chunk);
                f.input_copied = k > 0;  // the item's channels-last copy, made by its first chunk
                RunForward(f, plan.forward, workspace);
            }
    });
}

void RunWarpBackward(const WarpBackwardArgs& args, const WarpPlan& plan, void* workspace) {
    if (!args.compute_input_grad && !args.compute_parameters_grad) return;
    const Chunking c = ChunkingOf(args.grad_output);
    char* base = static_cast<char*>(workspace);
    DispatchElement(args.type, [&](auto element) {
        using T = decltype(element);
        T* grid = reinterpret_cast<T*>(base + plan.grid_offset);
        T* grid_grad = reinterpret_cast<T*>(base + plan.grid_grad_offset);
        auto* partials = reinterpret_cast<double*>(base + plan.partials_offset);
        const BaseCoordinates coordinates = FillBaseCoordinates<ComputeType<T>>(
            c, args.options.align_corners, reinterpret_cast<double*>(base + plan.base_offset));
        const bool theta_grad = args.compute_parameters_grad && args.kind == WarpKind::kAffine;
        for (int64_t n = 0; n < c.batch; ++n) {
            double sum[12] = {0};
            for (int64_t k = 0; k < c.chunks; ++k) {
                const Chunk chunk = ChunkAt(c, k);
                FillChunkGrid<T>(args.kind, args.parameters, coordinates, c, n, chunk, grid);
                RunBackward(ChunkBackwardArgs(args, c, grid, grid_grad, n, k), plan.backward[ChunkShape(c, k)], workspace);
                if (!args.compute_parameters_grad) continue;
                if (theta_grad)
                    AddThetaGrad<T>(grid_grad, coordinates, c, chunk, partials, sum);
                else
                    WriteFlowGrad<T>(grid_grad, c, n, chunk, args.parameters_grad);
            }
            if (theta_grad)
                for (int k = 0; k < 12; ++k)
                    *const_cast<T*>(At<T>(args.parameters_grad, n, k / 4, k % 4)) =
                        FromCompute<T>(static_cast<ComputeType<T>>(sum[k]));
        }
    });
}

}  // namespace gs3d::kernels
