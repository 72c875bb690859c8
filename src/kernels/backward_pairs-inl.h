// The backward of blocks sampled one channel at a time in row phases (RunPairBlock): per
// point, the corners x0 and x0 + 1 of each of its four corner rows read and accumulated as
// one pair (corner_pairs-inl.h), the arithmetic in vectors, no gathers.
//
// Compiled into each SIMD target: included after foreach_target.h; Highway's per-target
// include guard.
#if defined(GS3D_KERNELS_BACKWARD_PAIRS_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef GS3D_KERNELS_BACKWARD_PAIRS_INL_H_
#undef GS3D_KERNELS_BACKWARD_PAIRS_INL_H_
#else
#define GS3D_KERNELS_BACKWARD_PAIRS_INL_H_
#endif

#include <hwy/highway.h>

#include <algorithm>
#include <cstdint>
#include <type_traits>

#include "kernels/backward_blocks-inl.h"
#include "kernels/corner_pairs-inl.h"

HWY_BEFORE_NAMESPACE();
namespace gs3d::kernels {
namespace HWY_NAMESPACE {
namespace {  // internal to each element type's kernels_*.cpp

// Whether RunPairBlock serves a problem: the corners pair up in the accumulator and, for
// gridGrad, in the input (corner_pairs-inl.h).
template <typename T>
HWY_INLINE bool PairBlocksServe(const Problem<T>& pb) {
    return CornerPairsServe(pb.acc_geometry) && CornerPairsServe(pb.in_geometry);
}

// Channels [c_begin, c_end) of a block that PrepareBlock filled (phase 1), in row phases:
// per channel, the amounts for each corner row's pair in vectors (ScatterPairs); phase 2, per
// point in the block's order (even points, then odd ones), four pair read-modify-writes of the
// accumulator and, for gridGrad, four pair loads of the input, at clamped addresses (no
// branch); phase 3, the grid gradient's terms in vectors, in PyTorch's order, as RunBlock
// computes them (the same bits). In a scan task's block that is not whole (a row across two
// slabs), the points whose corners are not all inside and in the slab go corner by corner,
// in the same order. The caller checks PairBlocksServe.
template <typename T, bool kGridGrad, typename S = ComputeType<T>>
HWY_NOINLINE void RunPairBlock(const Problem<T>& pb, int64_t n, PreparedBlock<S>& block, int64_t c_begin,
                               int64_t c_end) {
    const hn::ScalableTag<S> d;
    const int lanes = static_cast<int>(hn::Lanes(d));
    const BackwardArgs& a = pb.args;
    const BlockCells<S>& cells = block.cells;
    const int count = cells.count, padded = cells.padded;
    HWY_ALIGN CornerRows<S> acc_rows, in_rows;
    acc_rows.Compute(cells, pb.acc_geometry);
    if (kGridGrad && !pb.same_geometry) in_rows.Compute(cells, pb.in_geometry);
    const CornerRows<S>& value_rows = pb.same_geometry ? acc_rows : in_rows;
    HWY_ALIGN S g[kBlock], amounts[4][2 * kBlock], values[4][2 * kBlock];
    S* HWY_RESTRICT gix = block.gix;
    S* HWY_RESTRICT giy = block.giy;
    S* HWY_RESTRICT giz = block.giz;
    const auto zero = hn::Zero(d);
    if (c_begin == 0)
        for (int i = 0; i < padded; i += lanes) {
            hn::Store(zero, d, gix + i), hn::Store(zero, d, giy + i), hn::Store(zero, d, giz + i);
        }
    // With C = 0 the input and the accumulator have no data to offset.
    const T* in_n = pb.channels ? pb.in + n * a.input.stride[0] : nullptr;
    S* acc_n = pb.channels ? pb.acc + n * pb.acc_stride[0] : nullptr;
    const int64_t* acc_delta = pb.acc_geometry.corner_delta;
    for (int64_t c = c_begin; c < c_end; ++c) {
        const T* gout_c = pb.gout + c * a.grad_output.stride[1];
        int loaded = 0;
        if (block.unit_grad_output)
            for (; loaded + lanes <= count; loaded += lanes)
                hn::Store(LoadLanes(d, gout_c + block.grad_output[0] + loaded), d, g + loaded);
        for (int i = loaded; i < count; ++i) g[i] = LoadElement(gout_c + block.grad_output[i]);
        for (int i = count; i < padded; ++i) g[i] = 0;
        ScatterPairs(cells, g, amounts);

        // Phase 2.
        S* HWY_RESTRICT acc_c = acc_n + c * pb.acc_stride[1];
        const T* HWY_RESTRICT in_c = in_n + c * a.input.stride[1];
        auto add_pairs = [&](int i) HWY_ATTR {
            for (int r = 0; r < 4; ++r) {
                S* HWY_RESTRICT to = acc_c + acc_rows.row[r][i];
#if HWY_TARGET == HWY_SCALAR  // one lane: no pairs (PairBlocksServe is false); compiled all the same
                to[0] += amounts[r][2 * i], to[1] += amounts[r][2 * i + 1];
#else
                const hn::CappedTag<S, 2> pair;  // one 64- or 128-bit read-modify-write
                hn::StoreU(hn::Add(hn::LoadU(pair, to), hn::LoadU(pair, amounts[r] + 2 * i)), pair, to);
#endif
            }
        };
        if (block.whole) {
            for (int j = 0; j < count; ++j) add_pairs(block.order[j]);
        } else {
            for (int j = 0; j < count; ++j) {
                const int i = block.order[j];
                if (block.point_scatter[i] != 0) {
                    add_pairs(i);
                    continue;
                }
                for (int k = 0; k < 8; ++k)
                    if (block.scatter[k][i] != 0) acc_c[block.acc_base[i] + acc_delta[k]] += cells.weight[k][i] * g[i];
            }
        }
        if constexpr (!kGridGrad) continue;
        LoadCornerPairs(in_c, value_rows, count, padded, values);

        // Phase 3.
        auto terms = [&](auto all_inside) HWY_ATTR {
            for (int i = 0; i < padded; i += lanes) {
                const auto vg = hn::Load(d, g + i);
                auto gx = hn::Load(d, gix + i), gy = hn::Load(d, giy + i), gz = hn::Load(d, giz + i);
                const decltype(gx) wxs[2] = {hn::Load(d, cells.wx[0] + i), hn::Load(d, cells.wx[1] + i)},
                                   wys[2] = {hn::Load(d, cells.wy[0] + i), hn::Load(d, cells.wy[1] + i)},
                                   wzs[2] = {hn::Load(d, cells.wz[0] + i), hn::Load(d, cells.wz[1] + i)};
                hn::Vec<decltype(d)> v[8];
                CornerValues(d, cells, values, i, v);
                for (int k = 0; k < 8; ++k) {
                    const int kx = k & 1, ky = (k >> 1) & 1, kz = k >> 2;
                    // PyTorch: gix -= tnw_val * (iy_bse - iy) * (iz_bse - iz) * gOut, and so on.
                    auto tx = hn::Mul(hn::Mul(hn::Mul(v[k], wys[ky]), wzs[kz]), vg);
                    auto ty = hn::Mul(hn::Mul(hn::Mul(v[k], wxs[kx]), wzs[kz]), vg);
                    auto tz = hn::Mul(hn::Mul(hn::Mul(v[k], wxs[kx]), wys[ky]), vg);
                    if constexpr (!decltype(all_inside)::value) {
                        const auto mask = hn::Ne(hn::Load(d, cells.inside[k] + i), zero);
                        tx = hn::IfThenElseZero(mask, tx), ty = hn::IfThenElseZero(mask, ty),
                        tz = hn::IfThenElseZero(mask, tz);
                    }
                    gx = kx ? hn::Add(gx, tx) : hn::Sub(gx, tx);
                    gy = ky ? hn::Add(gy, ty) : hn::Sub(gy, ty);
                    gz = kz ? hn::Add(gz, tz) : hn::Sub(gz, tz);
                }
                hn::Store(gx, d, gix + i), hn::Store(gy, d, giy + i), hn::Store(gz, d, giz + i);
            }
        };
        if (cells.all_inside)
            terms(std::true_type{});
        else
            terms(std::false_type{});
    }
    if (kGridGrad && c_end == pb.channels) WriteBlockGridGrad(pb, block);
}

}  // namespace
}  // namespace HWY_NAMESPACE
}  // namespace gs3d::kernels
HWY_AFTER_NAMESPACE();

#endif  // GS3D_KERNELS_BACKWARD_PAIRS_INL_H_
