// The backward of a block of bilinear points in row phases (pairs-inl.h), NCDHW a channel at a
// time, where the corners pair up in the accumulator and the input: the scan's blocks of
// whole rows and the sorted slabs' blocks.
//
// Compiled into each SIMD target: included after foreach_target.h; Highway's per-target
// include guard.
#if defined(GS3D_KERNELS_ROW_PHASES_BACKWARD_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef GS3D_KERNELS_ROW_PHASES_BACKWARD_INL_H_
#undef GS3D_KERNELS_ROW_PHASES_BACKWARD_INL_H_
#else
#define GS3D_KERNELS_ROW_PHASES_BACKWARD_INL_H_
#endif

#include <hwy/highway.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "kernels/blocks/backward-inl.h"
#include "kernels/row_phases/pairs-inl.h"

HWY_BEFORE_NAMESPACE();
namespace gs3d::kernels {
namespace HWY_NAMESPACE {
namespace {  // internal to each element type's kernels_*.cpp

// Whether RowPhasesBackwardBlock serves a problem: NCDHW channel by channel with the corners
// paired in the accumulator and the input.
template <typename T>
HWY_INLINE bool RowPhasesServe(const Problem<T>& pb) {
    using S = ComputeType<T>;
    return CornerPairsServe<S>(pb.acc_geometry) && CornerPairsServe<S>(pb.in_geometry);
}

// Phase 1 of a channel for the scatter: the amounts added to each corner row's pair,
// amounts[r][2 i], [2 i + 1], in memory order: the weight of the corner a slot holds times g
// (PyTorch's product), +0 for slots that do not count.
template <typename S>
HWY_INLINE void PairAmounts(const RowCells<S>& cells, int padded, const S* HWY_RESTRICT g,
                            S (*HWY_RESTRICT amounts)[2 * kBlock]) {
    const hn::ScalableTag<S> d;
    const int lanes = static_cast<int>(hn::Lanes(d));
    for (int i = 0; i < padded; i += lanes) {
        const LaneCells<decltype(d)> cell(d, cells, i);
        const auto vg = hn::Load(d, g + i);
        for (int r = 0; r < 4; ++r) {
            auto first = hn::Mul(cell.Weight(2 * r), vg), second = hn::Mul(cell.Weight(2 * r + 1), vg);
            if (!cells.all_inside)
                first = hn::IfThenElseZero(cell.Ok(2 * r), first), second = hn::IfThenElseZero(cell.Ok(2 * r + 1), second);
            hn::StoreInterleaved2(first, second, d, amounts[r] + 2 * i);
        }
    }
}

// Every channel of a block of points: phase 1, the source indices and their
// derivatives, the pairs' offsets; per channel, the pairs' amounts, phase 2 (per point in the
// block's order, even points then odd ones, four pair read-modify-writes of the accumulator
// and for gridGrad four pair loads of the input), phase 3 the grid gradient's terms in
// vectors, in PyTorch's order (the bits of RunBlock). gridGrad = d(index)/d(grid) * the sums.
// z_begin, z_end: the planes of the caller's slab (a scan task's), when the block's points
// reach others too (a row across slabs): then only their corner rows in the slab are scattered
// (the others' amounts go to a scratch pair, so phase 2 keeps no branch) and only the points
// whose first plane, clamped into the volume, lies in the slab get their gridGrad written.
// The sums and their order are those of the whole rows, so results do not depend on the cut.
template <typename T, bool kGridGrad, typename S = ComputeType<T>>
HWY_NOINLINE void RowPhasesBackwardBlock(const Problem<T>& pb, int64_t n, const PointBlock& points, int64_t z_begin,
                                         int64_t z_end) {
    const hn::ScalableTag<S> d;
    const int lanes = static_cast<int>(hn::Lanes(d));
    const BackwardArgs& a = pb.args;
    const int count = points.count, padded = (count + lanes - 1) / lanes * lanes;
    // Phase 1.
    HWY_ALIGN S coord[3][kBlock], m[3][kBlock];
    BlockIndices<S> index;
    if (points.row_segment)
        LoadGridRow(pb.grid + points.grid[0], points.grid_w, a.grid.stride[4], count, padded, coord);
    else
        LoadGridValues([&](int i) { return pb.grid + points.grid[i]; }, a.grid.stride[4], count, padded, coord);
    const bool second_rows = kGridGrad && !pb.same_geometry;  // the input's corner rows apart
    HWY_ALIGN RowCells<S> cells;
    cells.template Compute<true>(coord, count, padded, a.input.size, a.options, pb.acc_geometry, m,
                                 second_rows ? &index : nullptr);
    const CornerRows<S>& acc_rows = cells.rows;
    HWY_ALIGN CornerRows<S> in_rows;
    if (second_rows) in_rows.Compute(index, padded, pb.in_geometry);
    const CornerRows<S>& value_rows = pb.same_geometry ? acc_rows : in_rows;
    uint8_t own_order[kBlock + 1];
    const uint8_t* order = points.row_segment ? nullptr : ScatterOrder(points, own_order);
    const int64_t depth = pb.in_geometry.size[0];
    const bool restricted = z_begin > 0 || z_end < depth;
    uint8_t keep[kBlock], owned[kBlock];  // restricted: corner rows r kept (bit r); gridGrad written
    if (restricted)
        for (int i = 0; i < count; ++i) {
            const bool in_slab[2] = {cells.plane[0][i] >= static_cast<S>(z_begin) && cells.plane[0][i] < static_cast<S>(z_end),
                                     cells.plane[1][i] >= static_cast<S>(z_begin) && cells.plane[1][i] < static_cast<S>(z_end)};
            keep[i] = static_cast<uint8_t>((in_slab[0] ? 3 : 0) | (in_slab[1] ? 12 : 0));
            owned[i] = in_slab[0];
        }

    HWY_ALIGN S g[kBlock], amounts[4][2 * kBlock], values[4][2 * kBlock], sum[3][kBlock];
    const auto zero = hn::Zero(d);
    for (int i = 0; i < padded; i += lanes)
        for (int axis = 0; axis < 3; ++axis) hn::Store(zero, d, sum[axis] + i);
    const bool unit_grad_output = points.row_segment && points.grad_output_w == 1;
    for (int64_t c = 0; c < pb.channels; ++c) {
        const T* gout_c = pb.gout + c * a.grad_output.stride[1];
        int loaded = 0;
        if (unit_grad_output)
            for (; loaded + lanes <= count; loaded += lanes)
                hn::Store(LoadLanes(d, gout_c + points.grad_output[0] + loaded), d, g + loaded);
        if (points.row_segment)
            for (int i = loaded; i < count; ++i) g[i] = LoadElement(gout_c + points.grad_output[0] + i * points.grad_output_w);
        else
            for (int i = loaded; i < count; ++i) g[i] = LoadElement(gout_c + points.grad_output[i]);
        for (int i = count; i < padded; ++i) g[i] = 0;
        PairAmounts(cells, padded, g, amounts);

        // Phase 2: the read-modify-writes and, in the same pass where the input and the
        // accumulator are laid out alike, the input's pairs.
        S* HWY_RESTRICT acc_c = pb.acc + n * pb.acc_stride[0] + c * pb.acc_stride[1];
        const T* HWY_RESTRICT in_c = pb.in + n * a.input.stride[0] + c * a.input.stride[1];
        const bool load_here = kGridGrad && pb.same_geometry && std::is_same_v<T, S>;
        if (kGridGrad && !load_here) LoadCornerPairs(in_c, value_rows, count, padded, values);
        HWY_ALIGN S scratch[2];  // where a restricted block's rows outside the slab go
        const int64_t y_step = acc_rows.y_step;
        auto scatter = [&](auto load_values, auto restrict_rows) HWY_ATTR {
            auto point = [&](int i) HWY_ATTR __attribute__((always_inline)) {
                const int64_t first[2] = {acc_rows.base[0][i], acc_rows.base[1][i]};
                for (int r = 0; r < 4; ++r) {
                    const int64_t offset = first[r >> 1] + (r & 1) * y_step;  // acc_rows.Row(r, i)
                    S* to = acc_c + offset;
                    if constexpr (decltype(restrict_rows)::value) to = (keep[i] >> r & 1) ? to : scratch;
                    if constexpr (decltype(load_values)::value) std::memcpy(values[r] + 2 * i, in_c + offset, 2 * sizeof(S));
#if HWY_TARGET == HWY_SCALAR  // one lane: no pairs (RowPhasesServe is false); compiled all the same
                    to[0] += amounts[r][2 * i], to[1] += amounts[r][2 * i + 1];
#else
                    const hn::CappedTag<S, 2> pair;  // one 64- or 128-bit read-modify-write
                    hn::StoreU(hn::Add(hn::LoadU(pair, to), hn::LoadU(pair, amounts[r] + 2 * i)), pair, to);
#endif
                }
            };
            if (points.row_segment) {  // ScatterOrder's even points then odd ones, counted directly
                for (int i = 0; i < count; i += 2) point(i);
                for (int i = 1; i < count; i += 2) point(i);
            } else {
                for (int j = 0; j < count; ++j) point(order[j]);
            }
        };
        if (restricted) {
            scatter(std::false_type{}, std::true_type{});
            if (load_here) LoadCornerPairs(in_c, value_rows, count, padded, values);
        } else if (load_here) {
            scatter(std::true_type{}, std::false_type{});
            ZeroPairTails(values, count, padded);
        } else {
            scatter(std::false_type{}, std::false_type{});
        }
        if constexpr (!kGridGrad) continue;

        // Phase 3: PyTorch's terms, gix -= tnw_val * (iy_bse - iy) * (iz_bse - iz) * gOut and so
        // on, each product formed once; along the slotted axes (x, y) the slot's sign says
        // whether its corner's term is subtracted or added: gx + (-t) is gx - t bit for bit.
        for (int i = 0; i < padded; i += lanes) {
            hn::Vec<decltype(d)> value[8];
            const LaneCells<decltype(d)> cell(d, cells, i);
            PairValues(d, values, i, value);
            const auto vg = hn::Load(d, g + i);
            auto gx = hn::Load(d, sum[0] + i), gy = hn::Load(d, sum[1] + i), gz = hn::Load(d, sum[2] + i);
#pragma GCC unroll 8  // left rolled, the corner loop indexed the cells' arrays in memory
            for (int k = 0; k < 8; ++k) {
                const int kx = k & 1, ky = (k >> 1) & 1, kz = k >> 2;
                const auto along_x = hn::Mul(value[k], cell.w[0][kx]), along_y = hn::Mul(value[k], cell.w[1][ky]);
                auto tx = hn::Mul(hn::Mul(along_y, cell.w[2][kz]), vg);
                auto ty = hn::Mul(hn::Mul(along_x, cell.w[2][kz]), vg);
                auto tz = hn::Mul(hn::Mul(along_x, cell.w[1][ky]), vg);
                if (cells.all_inside) {  // every slot holds its own corner
                    gx = kx ? hn::Add(gx, tx) : hn::Sub(gx, tx);
                    gy = ky ? hn::Add(gy, ty) : hn::Sub(gy, ty);
                } else {
                    const auto ok = cell.Ok(k);
                    tx = hn::IfThenElseZero(ok, tx), ty = hn::IfThenElseZero(ok, ty), tz = hn::IfThenElseZero(ok, tz);
                    gx = hn::Add(gx, hn::Mul(hn::Load(d, cells.sign[0][kx] + i), tx));
                    gy = hn::Add(gy, hn::Mul(hn::Load(d, cells.sign[1][ky] + i), ty));
                }
                gz = kz ? hn::Add(gz, tz) : hn::Sub(gz, tz);
            }
            hn::Store(gx, d, sum[0] + i), hn::Store(gy, d, sum[1] + i), hn::Store(gz, d, sum[2] + i);
        }
    }
    if constexpr (!kGridGrad) return;
    int i = 0;
    if constexpr (kStoresLanes<T, S>) {  // a packed row's whole vectors: interleaved, then rounded to T
        if (!restricted && points.row_segment && points.grid_grad_w == 3 && a.grid_grad.stride[4] == 1)
            for (T* gg = pb.ggrid + points.grid_grad[0]; i + lanes <= count; i += lanes) {
                hn::Vec<decltype(d)> grad[3];
                for (int axis = 0; axis < 3; ++axis) grad[axis] = hn::Mul(hn::Load(d, m[axis] + i), hn::Load(d, sum[axis] + i));
                if constexpr (std::is_same_v<T, S>) {
                    hn::StoreInterleaved3(grad[0], grad[1], grad[2], d, gg + 3 * i);
                } else {
                    HWY_ALIGN S xyz[3 * hn::MaxLanes(d)];
                    hn::StoreInterleaved3(grad[0], grad[1], grad[2], d, xyz);
                    for (int k = 0; k < 3; ++k) StoreLanes(d, hn::Load(d, xyz + k * lanes), gg + 3 * i + k * lanes);
                }
            }
    }
    const int64_t ggs = a.grid_grad.stride[4];
    for (; i < count; ++i) {
        if (restricted && !owned[i]) continue;  // another slab's task writes it
        T* gg = pb.ggrid + (points.row_segment ? points.grid_grad[0] + i * points.grid_grad_w : points.grid_grad[i]);
        for (int axis = 0; axis < 3; ++axis) StoreElement<T>(m[axis][i] * sum[axis][i], gg + axis * ggs);
    }
}

}  // namespace
}  // namespace HWY_NAMESPACE
}  // namespace gs3d::kernels
HWY_AFTER_NAMESPACE();

#endif  // GS3D_KERNELS_ROW_PHASES_BACKWARD_INL_H_
