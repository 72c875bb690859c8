// Row phases (pairs-inl.h): the forward's block, and the row helpers every forward path uses
// (forward/kernel-inl.h includes this file).
//
// Compiled into each SIMD target: included after foreach_target.h; Highway's per-target
// include guard.
#if defined(GS3D_KERNELS_ROW_PHASES_FORWARD_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef GS3D_KERNELS_ROW_PHASES_FORWARD_INL_H_
#undef GS3D_KERNELS_ROW_PHASES_FORWARD_INL_H_
#else
#define GS3D_KERNELS_ROW_PHASES_FORWARD_INL_H_
#endif

#include <hwy/highway.h>

#include <cstdint>

#include "kernels/grid_sampler3d_kernels.h"
#include "kernels/row_phases/pairs-inl.h"
#include "kernels/blocks/cells-inl.h"

HWY_BEFORE_NAMESPACE();
namespace gs3d::kernels {
namespace HWY_NAMESPACE {
namespace {  // internal to each element type's kernels_*.cpp

// Lanes i .. min(i + lanes, count) - 1 of v into out_c[j * out_ws], rounded to T: a full
// vector into a packed row converted and stored in vectors (StoreLanes), else lane by lane.
// (A row's points at stride out_ws, or one point's channels at the channel stride.)
template <typename T, class D>
HWY_INLINE void StoreRowLanes(D d, hn::Vec<D> v, T* HWY_RESTRICT out_c, int i, int count, int64_t out_ws) {
    using S = hn::TFromD<D>;
    const int lanes = static_cast<int>(hn::Lanes(d));
    if constexpr (kStoresLanes<T, S>) {
        if (out_ws == 1 && i + lanes <= count) {
            StoreLanes(d, v, out_c + i);
            return;
        }
    }
    HWY_ALIGN S value[hn::MaxLanes(d)];
    hn::Store(v, d, value);
    for (int j = 0; j < lanes && i + j < count; ++j) StoreElement<T>(value[j], out_c + (i + j) * out_ws);
}

// The source indices (x, y, z) of `count` (<= kBlock) consecutive points of a grid row from
// w_begin, in vector form (BlockSourceIndices: bitwise PyTorch's scalar code, reflection
// included), into index[axis][i]. The point paths take them from here: computed point by
// point, the reflection's fmod and floor made the channels-last forward with reflection
// twice as slow as with zeros padding at (2, 8, 64).
template <typename T, typename S = ComputeType<T>>
HWY_INLINE void RowSourceIndices(const ForwardArgs& args, const T* grid_row, int64_t w_begin, int count,
                                 S (*HWY_RESTRICT index)[kBlock]) {
    const hn::ScalableTag<S> d;
    const int lanes = static_cast<int>(hn::Lanes(d));
    const int padded = (count + lanes - 1) / lanes * lanes;
    const View5& in = args.input;
    const int64_t gs = args.grid.stride[3], cs = args.grid.stride[4];
    HWY_ALIGN S coord[3][kBlock];
    LoadGridRow(grid_row + w_begin * gs, gs, cs, count, padded, coord);
    BlockSourceIndices3<S, false>(coord, padded, in.size, args.options, index[0], index[1], index[2], nullptr, nullptr,
                                  nullptr);
}

// A row segment of up to kBlock bilinear points in row phases, where the input's corners pair
// up (CornerPairsServe): phase 1 the source indices and each point's cell (RowCells); per
// channel, phase 2 the pairs loaded, phase 3 value = 0 + v0 * w0 + ... + v7 * w7 in vector
// form with the corners outside masked out (PyTorch skips them), rounded once on store:
// bitwise the gathered corners' sums.
template <typename T, typename S = ComputeType<T>>
HWY_NOINLINE void RowPhasesForwardBlock(const ForwardArgs& args, const T* in_n, const T* grid_row, T* out_row,
                                        int64_t w_begin, int count, const TrilinearGeometry& geometry) {
    const hn::ScalableTag<S> d;
    const int lanes = static_cast<int>(hn::Lanes(d));
    const int padded = (count + lanes - 1) / lanes * lanes;
    const View5& in = args.input;
    HWY_ALIGN S coord[3][kBlock];
    LoadGridRow(grid_row + w_begin * args.grid.stride[3], args.grid.stride[3], args.grid.stride[4], count, padded, coord);
    HWY_ALIGN RowCells<S> cells;
    cells.template Compute<false>(coord, count, padded, in.size, args.options, geometry, nullptr, nullptr);
    HWY_ALIGN S pairs[4][2 * kBlock];
    const int64_t out_ws = args.out.stride[4];
    for (int64_t c = 0; c < in.size[1]; ++c) {
        LoadCornerPairs(in_n + c * in.stride[1], cells.rows, count, padded, pairs);
        T* out_c = out_row + c * args.out.stride[1] + w_begin * out_ws;
        for (int i = 0; i < padded; i += lanes) {
            hn::Vec<decltype(d)> value[8];
            const LaneCells<decltype(d)> cell(d, cells, i);
            PairValues(d, pairs, i, value);
            auto sum = hn::Zero(d);
            for (int k = 0; k < 8; ++k) {
                auto term = hn::Mul(value[k], cell.Weight(k));
                if (!cells.all_inside) term = hn::IfThenElseZero(cell.Ok(k), term);
                sum = hn::Add(sum, term);
            }
            StoreRowLanes(d, sum, out_c, i, count, out_ws);
        }
    }
}

}  // namespace
}  // namespace HWY_NAMESPACE
}  // namespace gs3d::kernels
HWY_AFTER_NAMESPACE();

#endif  // GS3D_KERNELS_ROW_PHASES_FORWARD_INL_H_
