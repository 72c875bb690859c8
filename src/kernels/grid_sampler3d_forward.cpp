// The forward kernel: out[n, c, d, h, w] = input sampled at grid[n, d, h, w].
// Threads split the grid points; every output element is written by one thread, so the
// result does not depend on the thread count.
#include <cstdint>

#include "kernels/dispatch.h"
#include "kernels/grid_sampler3d_kernels.h"
#include "kernels/trilinear_corners.h"

namespace gs3d::kernels {
namespace {

template <typename T, Interpolation I, Padding P>
void Forward(const ForwardArgs& args) {
    using S = ComputeType<T>;
    const View5& in = args.input;
    const View5& grid = args.grid;
    const View5& out = args.out;
    const auto* in_data = static_cast<const T*>(in.data);
    const auto* grid_data = static_cast<const T*>(grid.data);
    auto* out_data = static_cast<T*>(out.data);
    const int64_t batch = in.size[0], channels = in.size[1];
    const int64_t out_d = grid.size[1], out_h = grid.size[2], out_w = grid.size[3];
    const int64_t points = out_d * out_h * out_w;
    const int64_t in_size[3] = {in.size[2], in.size[3], in.size[4]};
    const int64_t in_stride[3] = {in.stride[2], in.stride[3], in.stride[4]};
    const bool align = args.options.align_corners;

#pragma omp parallel for schedule(static)
    for (int64_t p = 0; p < batch * points; ++p) {
        const int64_t n = p / points, r = p % points;
        const int64_t d = r / (out_h * out_w), h = (r / out_w) % out_h, w = r % out_w;
        const T* g = grid_data + n * grid.stride[0] + d * grid.stride[1] + h * grid.stride[2] + w * grid.stride[3];
        const S ix = SourceIndex<S, P>(ToCompute(g[0]), in_size[2], align);
        const S iy = SourceIndex<S, P>(ToCompute(g[grid.stride[4]]), in_size[1], align);
        const S iz = SourceIndex<S, P>(ToCompute(g[2 * grid.stride[4]]), in_size[0], align);
        const T* in_n = in_data + n * in.stride[0];
        T* out_p = out_data + n * out.stride[0] + d * out.stride[2] + h * out.stride[3] + w * out.stride[4];
        if constexpr (I == Interpolation::kBilinear) {
            TrilinearCorners<S> corners;
            corners.Compute(ix, iy, iz, in_size, in_stride);
            for (int64_t c = 0; c < channels; ++c) {
                const T* in_c = in_n + c * in.stride[1];
                S value = 0;
                for (int k = 0; k < 8; ++k)
                    if (corners.inside[k]) value += ToCompute(in_c[corners.offset[k]]) * corners.weight[k];
                out_p[c * out.stride[1]] = FromCompute<T>(value);
            }
        } else {
            NearestCorner corner;
            corner.Compute(ix, iy, iz, in_size, in_stride);
            for (int64_t c = 0; c < channels; ++c) {
                S value = corner.inside ? ToCompute(in_n[c * in.stride[1] + corner.offset]) : S(0);
                out_p[c * out.stride[1]] = FromCompute<T>(value);
            }
        }
    }
}

}  // namespace

size_t ForwardWorkspaceBytes(const ForwardArgs&) { return 0; }

void RunForward(const ForwardArgs& args, void* /*workspace*/) {
    Dispatch(args.type, args.options, [&](auto type_tag, auto interpolation, auto padding) {
        Forward<typename decltype(type_tag)::type, decltype(interpolation)::value, decltype(padding)::value>(args);
    });
}

}  // namespace gs3d::kernels
