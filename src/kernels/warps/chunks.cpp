#include "kernels/warps/chunks.h"

#include <algorithm>

#include "kernels/common/element_types.h"
#include "kernels/warps/rows.h"

namespace gs3d::kernels {
namespace {

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

// Every axis's base coordinates into `values` (out_w + out_h + out_d doubles).
template <typename S>
BaseCoordinates FillBaseCoordinates(const Chunking& c, bool align_corners, double* values) {
    const BaseCoordinates base{values, values + c.out_w, values + c.out_w + c.out_h};
    for (int64_t i = 0; i < c.out_w; ++i) values[i] = BaseCoordinate<S>(i, c.out_w, align_corners);
    for (int64_t i = 0; i < c.out_h; ++i) values[c.out_w + i] = BaseCoordinate<S>(i, c.out_h, align_corners);
    for (int64_t i = 0; i < c.out_d; ++i) values[c.out_w + c.out_h + i] = BaseCoordinate<S>(i, c.out_d, align_corners);
    return base;
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
    return (ChunkAlongH(c, k) == c.h_chunks - 1 ? 1 : 0) + (ChunkAlongD(c, k) == c.d_chunks - 1 ? 2 : 0);
}

size_t BaseBytes(const Chunking& c) {
    return AlignWorkspace(static_cast<size_t>(c.out_w + c.out_h + c.out_d) * sizeof(double));
}

size_t ChunkGridBytes(const Chunking& c, ElementType type) {
    return AlignWorkspace(static_cast<size_t>(c.chunk_planes * c.chunk_rows * c.out_w * 3) * ElementBytes(type));
}

// The forward's chunk order (warps/rows.h): a displacement warp reads a flow as large as the
// grid, in long runs in planes (8% faster at 128^3); an affine warp reads only the input,
// where a rotation's bands keep more of what neighbouring rows read in cache (planes were
// 14% slower).
ChunkOrder ForwardChunkOrder(WarpKind kind) {
    return kind == WarpKind::kDisplacement ? ChunkOrder::kPlanes : ChunkOrder::kBands;
}

}  // namespace

WarpPlan PlanWarpForward(const WarpForwardArgs& args) {
    const Chunking c = ChunkingOf(args.out, ForwardChunkOrder(args.kind));
    WarpPlan plan;
    plan.chunks = c.chunks;
    plan.forward = PlanForward(ChunkForwardArgs(args, c, nullptr, 0, ChunkAt(c, 0)));
    plan.base_offset = AlignWorkspace(plan.forward.workspace_bytes);
    plan.grid_offset = plan.base_offset + BaseBytes(c);
    plan.bytes = plan.grid_offset + ChunkGridBytes(c, args.type);
    return plan;
}

WarpPlan PlanWarpBackward(const WarpBackwardArgs& args) {
    const Chunking c = ChunkingOf(args.grad_output, ChunkOrder::kBands);
    WarpPlan plan;
    plan.chunks = c.chunks;
    // A plan per chunk shape (full, or the last along H, D or both); the kernels' part of the
    // workspace is the largest of them, and the accumulator, at offset 0 in each, the one
    // part that lives from chunk to chunk.
    size_t kernel_bytes = 0;
    for (int shape = 0; shape < 4; ++shape) {
        const int64_t k = ChunkIndex(c, shape & 1 ? c.h_chunks - 1 : 0, shape & 2 ? c.d_chunks - 1 : 0);
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
    const Chunking c = ChunkingOf(args.out, ForwardChunkOrder(args.kind));
    char* base = static_cast<char*>(workspace);
    DispatchElement(args.type, [&](auto element) {
        using T = decltype(element);
        T* grid = reinterpret_cast<T*>(base + plan.grid_offset);
        const BaseCoordinates coordinates = FillBaseCoordinates<ComputeType<T>>(
            c, args.options.align_corners, reinterpret_cast<double*>(base + plan.base_offset));
        for (int64_t n = 0; n < c.batch; ++n)
            for (int64_t k = 0; k < c.chunks; ++k) {
                const Chunk chunk = ChunkAt(c, k);
                FillWarpGrid(args.type, args.kind, args.parameters, coordinates, c, n, chunk, grid);
                ForwardArgs f = ChunkForwardArgs(args, c, grid, n, chunk);
                f.input_copied = k > 0;  // the item's channels-last copy, made by its first chunk
                RunForward(f, plan.forward, workspace);
            }
    });
}

void RunWarpBackward(const WarpBackwardArgs& args, const WarpPlan& plan, void* workspace) {
    if (!args.compute_input_grad && !args.compute_parameters_grad) return;
    const Chunking c = ChunkingOf(args.grad_output, ChunkOrder::kBands);
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
                FillWarpGrid(args.type, args.kind, args.parameters, coordinates, c, n, chunk, grid);
                RunBackward(ChunkBackwardArgs(args, c, grid, grid_grad, n, k), plan.backward[ChunkShape(c, k)], workspace);
                if (!args.compute_parameters_grad) continue;
                if (theta_grad)
                    AddWarpThetaGrad(args.type, grid_grad, coordinates, c, chunk, partials, sum);
                else
                    WriteWarpFlowGrad(args.type, grid_grad, c, n, chunk, args.parameters_grad);
            }
            if (theta_grad)
                for (int k = 0; k < 12; ++k)
                    *ElementAt<T>(args.parameters_grad, n, k / 4, k % 4) =
                        FromCompute<T>(static_cast<ComputeType<T>>(sum[k]));
        }
    });
}

}  // namespace gs3d::kernels
