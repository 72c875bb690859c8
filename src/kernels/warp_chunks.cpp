#include "kernels/warp_chunks.h"

#include <algorithm>
#include <vector>

#include "kernels/element_types.h"

namespace gs3d::kernels {
namespace {

constexpr size_t kAlignment = 64;
size_t Align(size_t bytes) { return (bytes + kAlignment - 1) / kAlignment * kAlignment; }

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

// The shape of the output and its chunks.
struct Chunking {
    int64_t batch, out_d, out_h, out_w, chunk_planes, chunks;
};

Chunking ChunkingOf(const View5& out) {
    Chunking c{out.size[0], out.size[2], out.size[3], out.size[4], 1, 1};
    c.chunk_planes = std::max<int64_t>(1, std::min(c.out_d, kWarpChunkPoints / std::max<int64_t>(1, c.out_h * c.out_w)));
    c.chunks = std::max<int64_t>(1, (c.out_d + c.chunk_planes - 1) / c.chunk_planes);
    return c;
}

// Batch item n of a volume view (N, C, D, H, W), planes [d0, d0 + planes) of it.
View5 Slice(const View5& view, size_t element_bytes, int64_t n, int64_t d0, int64_t planes) {
    View5 s = view;
    if (s.data)
        s.data = static_cast<char*>(s.data) + (n * view.stride[0] + d0 * view.stride[2]) * static_cast<int64_t>(element_bytes);
    s.size[0] = 1;
    s.size[2] = planes;
    return s;
}

// A chunk's coordinates (or their gradient) in the workspace: (1, planes, Ho, Wo, 3), dense.
View5 ChunkGrid(void* data, const Chunking& c, int64_t planes) {
    View5 g;
    g.data = data;
    const int64_t size[5] = {1, planes, c.out_h, c.out_w, 3};
    const int64_t stride[5] = {planes * c.out_h * c.out_w * 3, c.out_h * c.out_w * 3, c.out_w * 3, 3, 1};
    std::copy(size, size + 5, g.size);
    std::copy(stride, stride + 5, g.stride);
    return g;
}

template <typename T>
const T* At(const View5& v, int64_t i0, int64_t i1, int64_t i2 = 0, int64_t i3 = 0, int64_t i4 = 0) {
    return static_cast<const T*>(v.data) + i0 * v.stride[0] + i1 * v.stride[1] + i2 * v.stride[2] + i3 * v.stride[3] +
           i4 * v.stride[4];
}

// The coordinates of planes [d0, d0 + planes) of batch item n, as F.affine_grid or
// VoxelMorph's SpatialTransformer computes them, rounded once to T.
template <typename T>
void FillChunkGrid(WarpKind kind, const View5& parameters, const SamplerOptions& options, const Chunking& c,
                   int64_t n, int64_t d0, int64_t planes, T* grid) {
    using S = ComputeType<T>;
    const int64_t rows = planes * c.out_h;
#pragma omp parallel for schedule(static)
    for (int64_t row = 0; row < rows; ++row) {
        const int64_t d = d0 + row / c.out_h, h = row % c.out_h;
        T* out = grid + row * c.out_w * 3;
        if (kind == WarpKind::kAffine) {
            // The dot product in double, rounded once: PyTorch's bmm sums in the dtype, in
            // BLAS's order; this is at least as close to the exact value.
            const double y = BaseCoordinate<S>(h, c.out_h, options.align_corners);
            const double z = BaseCoordinate<S>(d, c.out_d, options.align_corners);
            double row_part[3], x_part[3];
            for (int k = 0; k < 3; ++k) {
                x_part[k] = ToCompute(*At<T>(parameters, n, k, 0));
                row_part[k] = ToCompute(*At<T>(parameters, n, k, 1)) * y + ToCompute(*At<T>(parameters, n, k, 2)) * z +
                              ToCompute(*At<T>(parameters, n, k, 3));
            }
            for (int64_t w = 0; w < c.out_w; ++w) {
                const double x = BaseCoordinate<S>(w, c.out_w, options.align_corners);
                for (int k = 0; k < 3; ++k)
                    out[w * 3 + k] = FromCompute<T>(static_cast<S>(x_part[k] * x + row_part[k]));
            }
        } else {
            // VoxelMorph: 2 * ((position + flow) / (size - 1) - 0.5), x from the flow's channel 2.
            const int64_t sizes[3] = {c.out_w, c.out_h, c.out_d};
            const int64_t position[3] = {0, h, d};
            for (int64_t w = 0; w < c.out_w; ++w)
                for (int k = 0; k < 3; ++k) {
                    const S p = static_cast<S>(k == 0 ? w : position[k]);
                    const S loc = p + ToCompute(*At<T>(parameters, n, 2 - k, d, h, w));
                    out[w * 3 + k] = FromCompute<T>(S(2) * (loc / static_cast<S>(sizes[k] - 1) - S(0.5)));
                }
        }
    }
}

// flowGrad of planes [d0, d0 + planes) from the chunk's gridGrad, through VoxelMorph's
// normalization as autograd differentiates it: (2 * gridGrad) / (size - 1).
template <typename T>
void WriteFlowGrad(const T* grid_grad, const Chunking& c, int64_t n, int64_t d0, int64_t planes, const View5& flow_grad) {
    using S = ComputeType<T>;
    const int64_t rows = planes * c.out_h;
    const int64_t sizes[3] = {c.out_w, c.out_h, c.out_d};
#pragma omp parallel for schedule(static)
    for (int64_t row = 0; row < rows; ++row) {
        const int64_t d = d0 + row / c.out_h, h = row % c.out_h;
        const T* from = grid_grad + row * c.out_w * 3;
        for (int k = 0; k < 3; ++k) {
            T* to = const_cast<T*>(At<T>(flow_grad, n, 2 - k, d, h, 0));
            const S scale = static_cast<S>(sizes[k] - 1);
            for (int64_t w = 0; w < c.out_w; ++w)
                to[w * flow_grad.stride[4]] = FromCompute<T>((S(2) * ToCompute(from[w * 3 + k])) / scale);
        }
    }
}

// thetaGrad's terms of planes [d0, d0 + planes): gridGrad x (x, y, z, 1), summed in double
// per row in parallel (12 sums a row), then the rows in order into `sum`: the same order
// for any thread count.
template <typename T>
void AddThetaGrad(const T* grid_grad, const SamplerOptions& options, const Chunking& c, int64_t d0, int64_t planes,
                  double* partials, double sum[12]) {
    using S = ComputeType<T>;
    const int64_t rows = planes * c.out_h;
#pragma omp parallel for schedule(static)
    for (int64_t row = 0; row < rows; ++row) {
        const T* from = grid_grad + row * c.out_w * 3;
        double by_x[3] = {0, 0, 0}, plain[3] = {0, 0, 0};
        for (int64_t w = 0; w < c.out_w; ++w) {
            const double x = BaseCoordinate<S>(w, c.out_w, options.align_corners);
            for (int k = 0; k < 3; ++k) {
                const double g = ToCompute(from[w * 3 + k]);
                by_x[k] += g * x;
                plain[k] += g;
            }
        }
        for (int k = 0; k < 3; ++k) {
            partials[row * 6 + k] = by_x[k];
            partials[row * 6 + 3 + k] = plain[k];
        }
    }
    for (int64_t row = 0; row < rows; ++row) {
        const double y = BaseCoordinate<S>(row % c.out_h, c.out_h, options.align_corners);
        const double z = BaseCoordinate<S>(d0 + row / c.out_h, c.out_d, options.align_corners);
        for (int k = 0; k < 3; ++k) {
            const double plain = partials[row * 6 + 3 + k];
            sum[k * 4 + 0] += partials[row * 6 + k];
            sum[k * 4 + 1] += plain * y;
            sum[k * 4 + 2] += plain * z;
            sum[k * 4 + 3] += plain;
        }
    }
}

ForwardArgs ChunkForwardArgs(const WarpForwardArgs& args, const Chunking& c, void* grid, int64_t n, int64_t d0,
                             int64_t planes) {
    const size_t bytes = ElementBytes(args.type);
    ForwardArgs f;
    f.type = args.type;
    f.options = args.options;
    f.input = Slice(args.input, bytes, n, 0, args.input.size[2]);
    f.grid = ChunkGrid(grid, c, planes);
    f.out = Slice(args.out, bytes, n, d0, planes);
    return f;
}

BackwardArgs ChunkBackwardArgs(const WarpBackwardArgs& args, const Chunking& c, void* grid, void* grid_grad, int64_t n,
                               int64_t chunk) {
    const size_t bytes = ElementBytes(args.type);
    const int64_t d0 = chunk * c.chunk_planes, planes = std::min(c.chunk_planes, c.out_d - d0);
    BackwardArgs b;
    b.type = args.type;
    b.options = args.options;
    b.grad_output = Slice(args.grad_output, bytes, n, d0, planes);
    b.input = Slice(args.input, bytes, n, 0, args.input.size[2]);
    b.input_grad = Slice(args.input_grad, bytes, n, 0, args.input.size[2]);
    b.grid = ChunkGrid(grid, c, planes);
    b.grid_grad = ChunkGrid(grid_grad, c, planes);
    b.compute_input_grad = args.compute_input_grad;
    b.compute_grid_grad = args.compute_parameters_grad;
    b.first_chunk = chunk == 0;
    b.last_chunk = chunk == c.chunks - 1;
    return b;
}

int64_t ChunkPlanes(const Chunking& c, int64_t chunk) {
    return std::max<int64_t>(0, std::min(c.chunk_planes, c.out_d - chunk * c.chunk_planes));
}

size_t ChunkGridBytes(const Chunking& c, ElementType type) {
    return Align(static_cast<size_t>(c.chunk_planes * c.out_h * c.out_w * 3) * ElementBytes(type));
}

}  // namespace

WarpPlan PlanWarpForward(const WarpForwardArgs& args) {
    const Chunking c = ChunkingOf(args.out);
    WarpPlan plan;
    plan.chunk_planes = c.chunk_planes;
    plan.chunks = c.chunks;
    plan.forward = PlanForward(ChunkForwardArgs(args, c, nullptr, 0, 0, ChunkPlanes(c, 0)));
    plan.grid_offset = Align(plan.forward.workspace_bytes);
    plan.bytes = plan.grid_offset + ChunkGridBytes(c, args.type);
    return plan;
}

WarpPlan PlanWarpBackward(const WarpBackwardArgs& args) {
    const Chunking c = ChunkingOf(args.grad_output);
    WarpPlan plan;
    plan.chunk_planes = c.chunk_planes;
    plan.chunks = c.chunks;
    plan.backward = PlanBackward(ChunkBackwardArgs(args, c, nullptr, nullptr, 0, 0));
    plan.last_backward = PlanBackward(ChunkBackwardArgs(args, c, nullptr, nullptr, 0, c.chunks - 1));
    // The first part is the largest chunk's; the accumulator, at offset 0 in both plans, is
    // the one part that lives from chunk to chunk.
    plan.grid_offset = Align(std::max(plan.backward.workspace.bytes, plan.last_backward.workspace.bytes));
    const size_t grid_bytes = ChunkGridBytes(c, args.type);
    plan.grid_grad_offset = plan.grid_offset + grid_bytes;
    plan.partials_offset = plan.grid_grad_offset + (args.compute_parameters_grad ? grid_bytes : 0);
    const bool theta_grad = args.compute_parameters_grad && args.kind == WarpKind::kAffine;
    plan.bytes = plan.partials_offset + (theta_grad ? Align(static_cast<size_t>(c.chunk_planes * c.out_h) * 6 * sizeof(double)) : 0);
    return plan;
}

void RunWarpForward(const WarpForwardArgs& args, const WarpPlan& plan, void* workspace) {
    const Chunking c = ChunkingOf(args.out);
    char* base = static_cast<char*>(workspace);
    DispatchElement(args.type, [&](auto element) {
        using T = decltype(element);
        T* grid = reinterpret_cast<T*>(base + plan.grid_offset);
        for (int64_t n = 0; n < c.batch; ++n)
            for (int64_t chunk = 0; chunk < c.chunks; ++chunk) {
                const int64_t d0 = chunk * c.chunk_planes, planes = ChunkPlanes(c, chunk);
                FillChunkGrid<T>(args.kind, args.parameters, args.options, c, n, d0, planes, grid);
                ForwardArgs f = ChunkForwardArgs(args, c, grid, n, d0, planes);
                f.input_copied = chunk > 0;  // the item's channels-last copy, made by its first chunk
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
        const bool theta_grad = args.compute_parameters_grad && args.kind == WarpKind::kAffine;
        for (int64_t n = 0; n < c.batch; ++n) {
            double sum[12] = {0};
            for (int64_t chunk = 0; chunk < c.chunks; ++chunk) {
                const int64_t d0 = chunk * c.chunk_planes, planes = ChunkPlanes(c, chunk);
                FillChunkGrid<T>(args.kind, args.parameters, args.options, c, n, d0, planes, grid);
                const BackwardArgs b = ChunkBackwardArgs(args, c, grid, grid_grad, n, chunk);
                RunBackward(b, chunk == c.chunks - 1 ? plan.last_backward : plan.backward, workspace);
                if (!args.compute_parameters_grad) continue;
                if (theta_grad)
                    AddThetaGrad<T>(grid_grad, args.options, c, d0, planes, partials, sum);
                else
                    WriteFlowGrad<T>(grid_grad, c, n, d0, planes, args.parameters_grad);
            }
            if (theta_grad)
                for (int k = 0; k < 12; ++k)
                    *const_cast<T*>(At<T>(args.parameters_grad, n, k / 4, k % 4)) =
                        FromCompute<T>(static_cast<ComputeType<T>>(sum[k]));
        }
    });
}

}  // namespace gs3d::kernels
