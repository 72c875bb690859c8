// The fused warps' per-row arithmetic (warps/rows.h), compiled per SIMD target: a row's
// coordinates and flowGrad loaded, computed and stored in vectors, (x, y, z) interleaved by
// the target's shuffles, where the row is in the compute type and packed along W (fp32 and
// fp64, NCDHW flows). Other rows (fp16, bf16, channels-last flows) and every row's last
// points are staged in the compute type, a piece at a time, and computed by the same vector
// code: the same bits either way. In baseline x86-64 code, one value at a time, the
// displacement warp's coordinates and flowGrad took a fifth of its forward + backward.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "kernels/warps/rows.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep

#include <hwy/highway.h>

#include <cstdint>
#include <type_traits>

#include "kernels/common/simd_loads-inl.h"
#include "kernels/warps/rows.h"

HWY_BEFORE_NAMESPACE();
namespace gs3d::kernels {
namespace HWY_NAMESPACE {
namespace {

// Calls f(row, d, h) for every grid row of a chunk (row: its index in the chunk), in parallel.
template <typename F>
void ForEachRow(const Chunk& chunk, F&& f) {
#pragma omp parallel for schedule(static)
    for (int64_t row = 0; row < chunk.Rows(); ++row) f(row, chunk.d0 + row / chunk.rows, chunk.h0 + row % chunk.rows);
}

// Whether a row of T is loaded and stored in vectors: in the compute type (and packed along
// W, checked at run time). Other rows, and every row's last points, go in pieces of up to
// kPiece points staged in the compute type, computed by the same vector code.
template <typename T>
constexpr bool kRowsInVectors = std::is_same_v<T, ComputeType<T>>;
constexpr int64_t kPiece = 256;  // a multiple of every target's lanes

// VoxelMorph's normalized coordinate of a voxel position plus its flow along an axis of
// `scale` = size - 1 voxels: 2 * ((position + flow) / scale - 0.5).
template <class D>
HWY_INLINE hn::Vec<D> VoxelMorphCoordinate(D d, hn::Vec<D> position, hn::Vec<D> flow, hn::Vec<D> scale) {
    return hn::Mul(hn::Set(d, 2), hn::Sub(hn::Div(hn::Add(position, flow), scale), hn::Set(d, 0.5)));
}

// flowGrad from gridGrad along an axis of `scale` = size - 1: (2 * gridGrad) / scale.
template <class D>
HWY_INLINE hn::Vec<D> FlowGradient(D d, hn::Vec<D> grid_grad, hn::Vec<D> scale) {
    return hn::Div(hn::Mul(hn::Set(d, 2), grid_grad), scale);
}

// Points [w, w + count) of row `values` (x, y, z: count values each, staged in the compute
// type, room for a whole number of vectors) computed in place by f(dv, axis, first, vector),
// first: the vector's first point.
template <typename S, typename F>
HWY_INLINE void ComputeStaged(S (*HWY_RESTRICT values)[kPiece], int64_t w, int64_t count, F&& f) {
    const hn::ScalableTag<S> dv;
    const int64_t lanes = static_cast<int64_t>(hn::Lanes(dv));
    for (int k = 0; k < 3; ++k)
        for (int64_t i = 0; i < count; i += lanes)
            hn::Store(f(dv, k, w + i, hn::Load(dv, values[k] + i)), dv, values[k] + i);
}

// Row (d, h) of a displacement warp's coordinates; x from the flow's channel 2 (W).
template <typename T>
void FillDisplacementRow(const View5& flow, const Chunking& c, int64_t n, int64_t d, int64_t h, T* HWY_RESTRICT out) {
    using S = ComputeType<T>;
    const T* from[3] = {ElementAt<T>(flow, n, 2, d, h), ElementAt<T>(flow, n, 1, d, h), ElementAt<T>(flow, n, 0, d, h)};
    const S scale[3] = {static_cast<S>(c.out_w - 1), static_cast<S>(c.out_h - 1), static_cast<S>(c.out_d - 1)};
    const S fixed[2] = {static_cast<S>(h), static_cast<S>(d)};  // positions along H and D
    const int64_t step = flow.stride[4];
    const hn::ScalableTag<S> dv;
    const int64_t lanes = static_cast<int64_t>(hn::Lanes(dv));
    int64_t w = 0;
    // Positions along W as PyTorch's arange holds them: w rounded to the compute type (exact
    // below 2^24 in fp32, where the vector path's Iota adds lanes to it exactly).
    if constexpr (kRowsInVectors<T>) {
        if (step == 1 && c.out_w < (int64_t{1} << 24)) {
            const auto scale_x = hn::Set(dv, scale[0]), scale_y = hn::Set(dv, scale[1]), scale_z = hn::Set(dv, scale[2]);
            const auto y = hn::Set(dv, fixed[0]), z = hn::Set(dv, fixed[1]);
            for (; w + lanes <= c.out_w; w += lanes) {
                const auto gx = VoxelMorphCoordinate(dv, hn::Iota(dv, static_cast<S>(w)), hn::LoadU(dv, from[0] + w), scale_x);
                const auto gy = VoxelMorphCoordinate(dv, y, hn::LoadU(dv, from[1] + w), scale_y);
                const auto gz = VoxelMorphCoordinate(dv, z, hn::LoadU(dv, from[2] + w), scale_z);
                hn::StoreInterleaved3(gx, gy, gz, dv, out + 3 * w);
            }
        }
    }
    for (; w < c.out_w; w += kPiece) {
        const int64_t count = std::min(kPiece, c.out_w - w), padded = hwy::RoundUpTo(count, lanes);
        HWY_ALIGN S values[3][kPiece], positions[kPiece];
        for (int64_t i = 0; i < padded; ++i) {
            const bool in_row = i < count;
            positions[i] = static_cast<S>(w + i);
            for (int k = 0; k < 3; ++k) values[k][i] = in_row ? LoadElement(from[k] + (w + i) * step) : S(0);
        }
        ComputeStaged(values, w, count, [&](auto dk, int k, int64_t first, auto flow_values) {
            const auto position = k == 0 ? hn::Load(dk, positions + (first - w)) : hn::Set(dk, fixed[k - 1]);
            return VoxelMorphCoordinate(dk, position, flow_values, hn::Set(dk, scale[k]));
        });
        for (int64_t i = 0; i < count; ++i)
            for (int k = 0; k < 3; ++k) StoreElement(values[k][i], out + 3 * (w + i) + k);
    }
}

// Row (d, h) of an affine warp's coordinates: theta[n] x (x_w, y_h, z_d, 1), the dot product
// in double, rounded once. (PyTorch's bmm sums in the dtype, in BLAS's order; this is at
// least as close to the exact value.)
template <typename T>
void FillAffineRow(const View5& theta, const BaseCoordinates& base, const Chunking& c, int64_t n, int64_t d, int64_t h,
                   T* HWY_RESTRICT out) {
    using S = ComputeType<T>;
    double x_part[3], row_part[3];
    for (int k = 0; k < 3; ++k) {
        const double t[4] = {LoadElement(ElementAt<T>(theta, n, k, 0)), LoadElement(ElementAt<T>(theta, n, k, 1)),
                             LoadElement(ElementAt<T>(theta, n, k, 2)), LoadElement(ElementAt<T>(theta, n, k, 3))};
        x_part[k] = t[0];
        row_part[k] = t[1] * base.y[h] + t[2] * base.z[d] + t[3];
    }
    const hn::ScalableTag<double> dd;
    const hn::Rebind<S, decltype(dd)> ds;  // as many lanes of the compute type
    const int64_t lanes = static_cast<int64_t>(hn::Lanes(dd));
    auto coordinate = [&](int k, hn::Vec<decltype(dd)> x) {
        const auto v = hn::Add(hn::Mul(hn::Set(dd, x_part[k]), x), hn::Set(dd, row_part[k]));
        if constexpr (std::is_same_v<S, double>)
            return v;
        else
            return hn::DemoteTo(ds, v);
    };
    int64_t w = 0;
    if constexpr (kRowsInVectors<T>) {
        for (; w + lanes <= c.out_w; w += lanes) {
            const auto x = hn::LoadU(dd, base.x + w);
            hn::StoreInterleaved3(coordinate(0, x), coordinate(1, x), coordinate(2, x), ds, out + 3 * w);
        }
    }
    for (; w < c.out_w; w += kPiece) {
        const int64_t count = std::min(kPiece, c.out_w - w), padded = hwy::RoundUpTo(count, lanes);
        HWY_ALIGN double x[kPiece];
        HWY_ALIGN S values[3][kPiece];
        for (int64_t i = 0; i < padded; ++i) x[i] = i < count ? base.x[w + i] : 0.0;
        for (int k = 0; k < 3; ++k)
            for (int64_t i = 0; i < count; i += lanes) hn::Store(coordinate(k, hn::Load(dd, x + i)), ds, values[k] + i);
        for (int64_t i = 0; i < count; ++i)
            for (int k = 0; k < 3; ++k) StoreElement(values[k][i], out + 3 * (w + i) + k);
    }
}

template <typename T>
void FillGrid(WarpKind kind, const View5& parameters, const BaseCoordinates& base, const Chunking& c, int64_t n,
              const Chunk& chunk, T* grid) {
    ForEachRow(chunk, [&](int64_t row, int64_t d, int64_t h) {
        T* out = grid + row * c.out_w * 3;
        if (kind == WarpKind::kAffine)
            FillAffineRow(parameters, base, c, n, d, h, out);
        else
            FillDisplacementRow(parameters, c, n, d, h, out);
    });
}

template <typename T>
void FlowGrad(const T* grid_grad, const Chunking& c, int64_t n, const Chunk& chunk, const View5& flow_grad) {
    using S = ComputeType<T>;
    const S scale[3] = {static_cast<S>(c.out_w - 1), static_cast<S>(c.out_h - 1), static_cast<S>(c.out_d - 1)};
    const int64_t step = flow_grad.stride[4];
    const hn::ScalableTag<S> dv;
    const int64_t lanes = static_cast<int64_t>(hn::Lanes(dv));
    ForEachRow(chunk, [&](int64_t row, int64_t d, int64_t h) {
        const T* HWY_RESTRICT from = grid_grad + row * c.out_w * 3;
        T* to[3] = {ElementAt<T>(flow_grad, n, 2, d, h), ElementAt<T>(flow_grad, n, 1, d, h),
                    ElementAt<T>(flow_grad, n, 0, d, h)};
        int64_t w = 0;
        if constexpr (kRowsInVectors<T>) {
            if (step == 1) {
                for (; w + lanes <= c.out_w; w += lanes) {
                    hn::Vec<decltype(dv)> gx, gy, gz;
                    hn::LoadInterleaved3(dv, from + 3 * w, gx, gy, gz);
                    hn::StoreU(FlowGradient(dv, gx, hn::Set(dv, scale[0])), dv, to[0] + w);
                    hn::StoreU(FlowGradient(dv, gy, hn::Set(dv, scale[1])), dv, to[1] + w);
                    hn::StoreU(FlowGradient(dv, gz, hn::Set(dv, scale[2])), dv, to[2] + w);
                }
            }
        }
        for (; w < c.out_w; w += kPiece) {
            const int64_t count = std::min(kPiece, c.out_w - w), padded = hwy::RoundUpTo(count, lanes);
            HWY_ALIGN S values[3][kPiece];
            for (int64_t i = 0; i < padded; ++i)
                for (int k = 0; k < 3; ++k) values[k][i] = i < count ? LoadElement(from + 3 * (w + i) + k) : S(0);
            ComputeStaged(values, w, count, [&](auto dk, int k, int64_t, auto grid_grad) {
                return FlowGradient(dk, grid_grad, hn::Set(dk, scale[k]));
            });
            for (int k = 0; k < 3; ++k)
                for (int64_t i = 0; i < count; ++i) StoreElement(values[k][i], to[k] + (w + i) * step);
        }
    });
}

// Points [w, w + Lanes(d4)) of a gridGrad row `from`, (x, y, z) each in a vector of doubles.
template <class D4, typename T>
HWY_INLINE void LoadGridGradPoints(D4 d4, const T* HWY_RESTRICT from, int64_t w, hn::Vec<D4> g[3]) {
    if constexpr (std::is_same_v<T, double>) {
        hn::LoadInterleaved3(d4, from + 3 * w, g[0], g[1], g[2]);
    } else if constexpr (std::is_same_v<T, float>) {
        const hn::Rebind<float, D4> df;
        hn::Vec<decltype(df)> x, y, z;
        hn::LoadInterleaved3(df, from + 3 * w, x, y, z);
        g[0] = hn::PromoteTo(d4, x), g[1] = hn::PromoteTo(d4, y), g[2] = hn::PromoteTo(d4, z);
    } else {
        HWY_ALIGN double staged[3][hn::MaxLanes(d4)];
        for (size_t j = 0; j < hn::Lanes(d4); ++j)
            for (int k = 0; k < 3; ++k) staged[k][j] = LoadElement(from + 3 * (w + static_cast<int64_t>(j)) + k);
        for (int k = 0; k < 3; ++k) g[k] = hn::Load(d4, staged[k]);
    }
}

template <typename T>
void ThetaGrad(const T* grid_grad, const BaseCoordinates& base, const Chunking& c, const Chunk& chunk,
               double* partials, double sum[12]) {
    // Per row in parallel, 6 sums a row (by x and plain, per component) in double, each in
    // four chains of every fourth point added in order at the end (one chain is bound by the
    // additions' latency); then the rows in order into `sum`. The chains are the lanes of
    // four doubles (two vectors of two, or four of one, on narrower targets), so every
    // target sums in the same order.
    const hn::CappedTag<double, 4> d4;
    constexpr size_t kLanes = hn::MaxLanes(d4);
    constexpr size_t kGroups = 4 / kLanes;  // vectors per four chains
    using V = hn::Vec<decltype(d4)>;
    ForEachRow(chunk, [&](int64_t row, int64_t, int64_t) {
        const T* HWY_RESTRICT from = grid_grad + row * c.out_w * 3;
        V by_x_lanes[kGroups][3], plain_lanes[kGroups][3];
        for (size_t j = 0; j < kGroups; ++j)
            for (int k = 0; k < 3; ++k) by_x_lanes[j][k] = plain_lanes[j][k] = hn::Zero(d4);
        int64_t w = 0;
        for (; w + 4 <= c.out_w; w += 4)
            for (size_t j = 0; j < kGroups; ++j) {
                const int64_t first = w + static_cast<int64_t>(j * kLanes);
                V g[3];
                LoadGridGradPoints(d4, from, first, g);
                const V x = hn::LoadU(d4, base.x + first);
                for (int k = 0; k < 3; ++k) {
                    by_x_lanes[j][k] = hn::Add(by_x_lanes[j][k], hn::Mul(g[k], x));
                    plain_lanes[j][k] = hn::Add(plain_lanes[j][k], g[k]);
                }
            }
        HWY_ALIGN double by_x[3][4], plain[3][4];  // [component][chain]
        for (size_t j = 0; j < kGroups; ++j)
            for (int k = 0; k < 3; ++k) {
                hn::Store(by_x_lanes[j][k], d4, by_x[k] + j * kLanes);
                hn::Store(plain_lanes[j][k], d4, plain[k] + j * kLanes);
            }
        for (; w < c.out_w; ++w)
            for (int k = 0; k < 3; ++k) {
                const double g = LoadElement(from + w * 3 + k);
                by_x[k][w & 3] += g * base.x[w];
                plain[k][w & 3] += g;
            }
        for (int k = 0; k < 3; ++k) {
            partials[row * 6 + k] = (by_x[k][0] + by_x[k][1]) + (by_x[k][2] + by_x[k][3]);
            partials[row * 6 + 3 + k] = (plain[k][0] + plain[k][1]) + (plain[k][2] + plain[k][3]);
        }
    });
    for (int64_t row = 0; row < chunk.Rows(); ++row) {
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

}  // namespace

void FillWarpGridForTarget(ElementType type, WarpKind kind, const View5& parameters, const BaseCoordinates& base,
                           const Chunking& c, int64_t n, const Chunk& chunk, void* grid) {
    DispatchElement(type, [&](auto element) {
        FillGrid(kind, parameters, base, c, n, chunk, static_cast<decltype(element)*>(grid));
    });
}

void WriteWarpFlowGradForTarget(ElementType type, const void* grid_grad, const Chunking& c, int64_t n,
                                const Chunk& chunk, const View5& flow_grad) {
    DispatchElement(type, [&](auto element) {
        FlowGrad(static_cast<const decltype(element)*>(grid_grad), c, n, chunk, flow_grad);
    });
}

void AddWarpThetaGradForTarget(ElementType type, const void* grid_grad, const BaseCoordinates& base,
                               const Chunking& c, const Chunk& chunk, double* partials, double sum[12]) {
    DispatchElement(type, [&](auto element) {
        ThetaGrad(static_cast<const decltype(element)*>(grid_grad), base, c, chunk, partials, sum);
    });
}

}  // namespace HWY_NAMESPACE
}  // namespace gs3d::kernels
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace gs3d::kernels {

HWY_EXPORT(FillWarpGridForTarget);
HWY_EXPORT(WriteWarpFlowGradForTarget);
HWY_EXPORT(AddWarpThetaGradForTarget);

void FillWarpGrid(ElementType type, WarpKind kind, const View5& parameters, const BaseCoordinates& base,
                  const Chunking& c, int64_t n, const Chunk& chunk, void* grid) {
    HWY_DYNAMIC_DISPATCH(FillWarpGridForTarget)(type, kind, parameters, base, c, n, chunk, grid);
}

void WriteWarpFlowGrad(ElementType type, const void* grid_grad, const Chunking& c, int64_t n, const Chunk& chunk,
                       const View5& flow_grad) {
    HWY_DYNAMIC_DISPATCH(WriteWarpFlowGradForTarget)(type, grid_grad, c, n, chunk, flow_grad);
}

void AddWarpThetaGrad(ElementType type, const void* grid_grad, const BaseCoordinates& base, const Chunking& c,
                      const Chunk& chunk, double* partials, double sum[12]) {
    HWY_DYNAMIC_DISPATCH(AddWarpThetaGradForTarget)(type, grid_grad, base, c, chunk, partials, sum);
}

}  // namespace gs3d::kernels
#endif  // HWY_ONCE
