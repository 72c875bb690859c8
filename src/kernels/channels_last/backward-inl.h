// The backward's blocks with the channels last (input, gradOutput and the accumulator with
// channel stride 1): per point, the channels in vectors; and the runner that picks between
// these and RunBlock for a prepared block, alone or in chunks of blocks.
//
// Compiled into each SIMD target: included after foreach_target.h; Highway's per-target
// include guard.
#if defined(GS3D_KERNELS_CHANNELS_LAST_BACKWARD_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef GS3D_KERNELS_CHANNELS_LAST_BACKWARD_INL_H_
#undef GS3D_KERNELS_CHANNELS_LAST_BACKWARD_INL_H_
#else
#define GS3D_KERNELS_CHANNELS_LAST_BACKWARD_INL_H_
#endif

#include <hwy/cache_control.h>
#include <hwy/highway.h>

#include <algorithm>
#include <cstdint>
#include <type_traits>
#include <vector>

#include "kernels/blocks/backward-inl.h"
#include "kernels/backward/point-inl.h"
#include "kernels/blocks/cells-inl.h"

HWY_BEFORE_NAMESPACE();
namespace gs3d::kernels {
namespace HWY_NAMESPACE {
namespace {  // internal to each element type's kernels_*.cpp

// What ChannelsLastPoint needs of a point: its gradOutput (channel c at gout[c * gout_stride];
// gout_index: lane l's offset l * gout_stride, for gathers), corners (accumulator and input;
// null where outside), which are inside and scattered, and the weights.
template <typename T, typename S>
struct ChannelsLastCorners {
    const T* gout;
    int64_t gout_stride;
    const hwy::MakeSigned<S>* gout_index;
    S* acc[8];
    const T* in[8];
    bool inside[8], scatter[8];
    S weight[8], wx[2], wy[2], wz[2];
};

// Channels [c, c + lanes) of a point's gradOutput: a load (channels next to each other,
// stride 1) or a gather (gradOutput laid out with channels apart, as NCDHW; fp16 and bf16,
// which have no 16-bit gathers, element by element). A run-time choice, not a template
// parameter: twice the instantiations of the channels-last runner made the sanitizer
// builds' compile of the backward too slow for CI.
template <class DV, typename T>
HWY_INLINE hn::Vec<DV> LoadGradOutput(DV dv, const T* gout, int64_t c, int64_t stride,
                                      const hwy::MakeSigned<hn::TFromD<DV>>* index) {
    using S = hn::TFromD<DV>;
    if (stride == 1) {
        return LoadLanes(dv, gout + c);
    } else if constexpr (std::is_same_v<T, S>) {
        return hn::GatherIndex(dv, gout + c * stride, hn::LoadU(hn::RebindToSigned<DV>(), index));
    } else {
        HWY_ALIGN S lanes[hn::MaxLanes(DV())];
        for (size_t l = 0; l < hn::Lanes(dv); ++l) lanes[l] = LoadElement(gout + (c + static_cast<int64_t>(l)) * stride);
        return hn::Load(dv, lanes);
    }
}

// One point of a channels-last block: its eight corners' scatter (where scatter[k]) and the
// grid gradient (kGridGrad) into *gix, *giy, *giz. The channels run in vectors of D, then the
// rest in at most one vector of 8 and one of 4 lanes (narrower than D), then one by one; each
// vector width's channels are summed in lanes and reduced once (an order fixed by the SIMD
// target and the channel count).
// kAllCorners: every corner is inside and scattered (the common case). The vectors' grid
// gradient then regroups PyTorch's terms (sum over corners of +-v * wy * wz * g, and so on)
// as g times differences of the corners along each axis weighted by the other two axes'
// weights: per channel vector 12 differences and 21 multiplies or fused multiply-adds
// instead of 36 multiplies and 24 adds, and six broadcasts per point.
template <bool kAllCorners, bool kGridGrad, class D, typename T, typename S>
HWY_INLINE void ChannelsLastPoint(D d, int64_t channels, const ChannelsLastCorners<T, S>& p, S* gix, S* giy, S* giz) {
    S sx = 0, sy = 0, sz = 0;
    int64_t c = 0;
    // Forced inline: GCC's choice for this lambda changed with unrelated edits to the headers,
    // and called out of line it made the (1, 32, 48) backward 15-20% slower.
    auto vectors = [&](auto dv, int64_t end) HWY_ATTR __attribute__((always_inline)) {
        const int64_t lanes = static_cast<int64_t>(hn::Lanes(dv));
        auto gx = hn::Zero(dv), gy = hn::Zero(dv), gz = hn::Zero(dv);
        for (; c < end; c += lanes) {
            const auto g = LoadGradOutput(dv, p.gout, c, p.gout_stride, p.gout_index);
            if constexpr (kAllCorners) {
                // Every corner: the sums as differences across each axis weighted by the
                // other two (v1 - v0 along x, then wy, then wz; and so on), six broadcasts.
                hn::Vec<decltype(dv)> v[8];
#pragma GCC unroll 8
                for (int k = 0; k < 8; ++k) {
                    hn::StoreU(hn::Add(hn::LoadU(dv, p.acc[k] + c), hn::Mul(hn::Set(dv, p.weight[k]), g)), dv,
                               p.acc[k] + c);
                    if constexpr (kGridGrad) v[k] = LoadLanes(dv, p.in[k] + c);
                }
                if constexpr (kGridGrad) {
                    const auto wx0 = hn::Set(dv, p.wx[0]), wx1 = hn::Set(dv, p.wx[1]), wy0 = hn::Set(dv, p.wy[0]),
                               wy1 = hn::Set(dv, p.wy[1]), wz0 = hn::Set(dv, p.wz[0]), wz1 = hn::Set(dv, p.wz[1]);
                    // Two pairs of differences, each pair weighted by a and b, then by c0 and c1.
                    auto bilinear = [&](auto d00, auto d10, auto d01, auto d11, auto a, auto b, auto c0, auto c1)
                                        HWY_ATTR {
                                            const auto low = hn::MulAdd(b, d10, hn::Mul(a, d00));
                                            const auto high = hn::MulAdd(b, d11, hn::Mul(a, d01));
                                            return hn::MulAdd(c1, high, hn::Mul(c0, low));
                                        };
                    const auto tx = bilinear(hn::Sub(v[1], v[0]), hn::Sub(v[3], v[2]), hn::Sub(v[5], v[4]),
                                             hn::Sub(v[7], v[6]), wy0, wy1, wz0, wz1);
                    const auto ty = bilinear(hn::Sub(v[2], v[0]), hn::Sub(v[3], v[1]), hn::Sub(v[6], v[4]),
                                             hn::Sub(v[7], v[5]), wx0, wx1, wz0, wz1);
                    const auto tz = bilinear(hn::Sub(v[4], v[0]), hn::Sub(v[5], v[1]), hn::Sub(v[6], v[2]),
                                             hn::Sub(v[7], v[3]), wx0, wx1, wy0, wy1);
                    gx = hn::MulAdd(g, tx, gx);
                    gy = hn::MulAdd(g, ty, gy);
                    gz = hn::MulAdd(g, tz, gz);
                }
                continue;
            }
            // Some corner outside or not scattered (points at the volume's border, a scan
            // task's slab): PyTorch's terms corner by corner, those outside skipped.
            for (int k = 0; k < 8; ++k) {
                if (!p.inside[k]) continue;
                if (p.scatter[k])
                    hn::StoreU(hn::Add(hn::LoadU(dv, p.acc[k] + c), hn::Mul(hn::Set(dv, p.weight[k]), g)), dv,
                               p.acc[k] + c);
                if constexpr (kGridGrad) {
                    const int kx = k & 1, ky = (k >> 1) & 1, kz = k >> 2;
                    const auto v = LoadLanes(dv, p.in[k] + c);
                    const auto tx = hn::Mul(hn::Mul(hn::Mul(v, hn::Set(dv, p.wy[ky])), hn::Set(dv, p.wz[kz])), g);
                    const auto ty = hn::Mul(hn::Mul(hn::Mul(v, hn::Set(dv, p.wx[kx])), hn::Set(dv, p.wz[kz])), g);
                    const auto tz = hn::Mul(hn::Mul(hn::Mul(v, hn::Set(dv, p.wx[kx])), hn::Set(dv, p.wy[ky])), g);
                    gx = kx ? hn::Add(gx, tx) : hn::Sub(gx, tx);
                    gy = ky ? hn::Add(gy, ty) : hn::Sub(gy, ty);
                    gz = kz ? hn::Add(gz, tz) : hn::Sub(gz, tz);
                }
            }
        }
        if constexpr (kGridGrad) {
            sx += hn::GetLane(hn::SumOfLanes(dv, gx));
            sy += hn::GetLane(hn::SumOfLanes(dv, gy));
            sz += hn::GetLane(hn::SumOfLanes(dv, gz));
        }
    };
    const int64_t lanes = static_cast<int64_t>(hn::Lanes(d));
    vectors(d, channels / lanes * lanes);
    if constexpr (hn::MaxLanes(D()) > 8)
        if (channels - c >= 8) vectors(hn::CappedTag<S, 8>(), c + 8);
    if constexpr (hn::MaxLanes(D()) > 4)
        if (channels - c >= 4) vectors(hn::CappedTag<S, 4>(), c + 4);
    // The last channels one by one in PyTorch's terms and order: with fewer channels than
    // vector lanes the result is bitwise that of NCDHW.
    for (; c < channels; ++c) {
        const S g = LoadElement(p.gout + c * p.gout_stride);
        for (int k = 0; k < 8; ++k) {
            if (!kAllCorners && !p.inside[k]) continue;
            if (kAllCorners || p.scatter[k]) p.acc[k][c] += p.weight[k] * g;
            if constexpr (kGridGrad) {
                const int kx = k & 1, ky = (k >> 1) & 1, kz = k >> 2;
                const S v = LoadElement(p.in[k] + c);
                const S tx = v * p.wy[ky] * p.wz[kz] * g, ty = v * p.wx[kx] * p.wz[kz] * g,
                        tz = v * p.wx[kx] * p.wy[ky] * g;
                sx = kx ? sx + tx : sx - tx;
                sy = ky ? sy + ty : sy - ty;
                sz = kz ? sz + tz : sz - tz;
            }
        }
    }
    *gix = sx, *giy = sy, *giz = sz;
}

#if HWY_TARGET != HWY_SCALAR
// Point i of a whole channels-last block (every corner scattered) whose channel count is half
// of D's lanes and whose x stride is the channel count (input and accumulator), with every
// corner inside: the corners x0 and x1 of each (y, z) lie side by side, so one vector holds
// the pair (lanes [0, C) x0's channels, [C, 2C) x1's), and a point takes four vectors
// instead of eight half-empty ones. acc and in: the point's first corner. The scatter
// computes each element as ChannelsLastPoint does (acc + w * g). The grid gradient keeps
// gradOutput out of the corner sums: per channel c, d/dx = g_c * sum over corners of
// +-v * wy * wz (and so on), the sums with fused multiply-adds, g applied once, then the
// channels summed (an order fixed by the SIMD target and the channel count).
template <bool kGridGrad, class D, typename T, typename S>
HWY_INLINE void ChannelsLastPairPoint(D d, const T* HWY_RESTRICT gout, int64_t gout_stride,
                                      const hwy::MakeSigned<S>* gout_index, S* HWY_RESTRICT acc,
                                      const T* HWY_RESTRICT in, const int64_t* acc_delta, const int64_t* in_delta,
                                      const BlockCells<S>& cells, int i, S* gix, S* giy, S* giz) {
    const hn::Half<D> dh;
    const auto gh = LoadGradOutput(dh, gout, 0, gout_stride, gout_index);
    const auto g = hn::Combine(d, gh, gh);
    const S wy[2] = {cells.wy[0][i], cells.wy[1][i]}, wz[2] = {cells.wz[0][i], cells.wz[1][i]};
    const auto wx = hn::Combine(d, hn::Set(dh, cells.wx[1][i]), hn::Set(dh, cells.wx[0][i]));
    // Per lane (x0 or x1): wx * wz for each kz, wx * wy for each ky.
    const decltype(wx) wxz[2] = {hn::Mul(wx, hn::Set(d, wz[0])), hn::Mul(wx, hn::Set(d, wz[1]))},
                       wxy[2] = {hn::Mul(wx, hn::Set(d, wy[0])), hn::Mul(wx, hn::Set(d, wy[1]))};
    auto sx = hn::Zero(d), sy = hn::Zero(d), sz = hn::Zero(d);
#pragma GCC unroll 4
    for (int k = 0; k < 8; k += 2) {
        const int ky = (k >> 1) & 1, kz = k >> 2;
        const auto w = hn::Combine(d, hn::Set(dh, cells.weight[k + 1][i]), hn::Set(dh, cells.weight[k][i]));
        S* HWY_RESTRICT a = acc + acc_delta[k];
        hn::StoreU(hn::Add(hn::LoadU(d, a), hn::Mul(w, g)), d, a);
        if constexpr (kGridGrad) {
            const auto v = LoadLanes(d, in + in_delta[k]);
            sx = hn::MulAdd(v, hn::Set(d, wy[ky] * wz[kz]), sx);
            sy = ky ? hn::MulAdd(v, wxz[kz], sy) : hn::NegMulAdd(v, wxz[kz], sy);
            sz = kz ? hn::MulAdd(v, wxy[ky], sz) : hn::NegMulAdd(v, wxy[ky], sz);
        }
    }
    if constexpr (kGridGrad) {
        // x1's lanes count +, x0's -; y and z: both halves as summed.
        const auto gx = hn::Mul(gh, hn::Sub(hn::UpperHalf(dh, sx), hn::LowerHalf(dh, sx)));
        const auto gy = hn::Mul(gh, hn::Add(hn::LowerHalf(dh, sy), hn::UpperHalf(dh, sy)));
        const auto gz = hn::Mul(gh, hn::Add(hn::LowerHalf(dh, sz), hn::UpperHalf(dh, sz)));
        *gix = hn::GetLane(hn::SumOfLanes(dh, gx));
        *giy = hn::GetLane(hn::SumOfLanes(dh, gy));
        *giz = hn::GetLane(hn::SumOfLanes(dh, gz));
    }
}
#else
// The scalar target (one lane, no Combine) has no pairs: RunPreparedBlock never asks for them.
template <bool kGridGrad, class D, typename T, typename S>
void ChannelsLastPairPoint(D d, const T* gout, int64_t gout_stride, const hwy::MakeSigned<S>* gout_index, S* acc,
                           const T* in, const int64_t* acc_delta, const int64_t* in_delta, const BlockCells<S>& cells,
                           int i, S* gix, S* giy, S* giz) = delete;
#endif

// Asks for the lines of a channels-last point's eight corners (first corner at `first`,
// corner k at first + delta[k], C elements each) to be brought into the caches: per (y, z)
// the run from corner x0's first channel to corner x1's last, a line at a time.
template <typename V>
HWY_INLINE void PrefetchCornerRows(const V* first, const int64_t* delta, int64_t channels) {
    constexpr int64_t kLine = 64 / sizeof(V);
    for (int k = 0; k < 8; k += 2) {
        const V* begin = first + delta[k];
        const int64_t span = delta[k + 1] - delta[k] + channels;  // elements, from begin
        for (int64_t o = 0; o < span; o += kLine) hwy::Prefetch(begin + o);
        hwy::Prefetch(begin + (span - 1));
    }
}

// RunBlockChannelsLast prefetches the corners of the point kChannelsLastPrefetchAhead points
// ahead, with up to kChannelsLastPrefetchMaxChannels channels: 5-10% up to 8 channels; with
// more, a corner row spans several lines and the prefetches cost more than they save.
constexpr int kChannelsLastPrefetchAhead = 4;
constexpr int64_t kChannelsLastPrefetchMaxChannels = 8;
// And gradOutput's channels of the point kGradOutputPrefetchAhead points ahead, where they lie
// side by side (NDHWC): the sorted plan takes a row's points slab by slab, so each slab's
// task reads a few of the row's points, lines the hardware prefetchers do not foresee (perf:
// a fifth of the runner's samples on that load; about 10% faster with it). With the channels
// apart (one line per channel) it did not help.
constexpr int kGradOutputPrefetchAhead = 8;

// A prepared block with channels last (input, gradOutput and the accumulator have channel
// stride 1): per point, the channels in vectors of D (lanes <= C), the rest in narrower ones
// and one by one (ChannelsLastPoint); kPairs (C is half of D's lanes and the x stride): the
// points with every corner inside in pairs of corners (ChannelsLastPairPoint).
template <class D, typename T, bool kGridGrad, bool kPairs = false, typename S = ComputeType<T>>
HWY_NOINLINE void RunBlockChannelsLast(D d, const Problem<T>& pb, int64_t n, const PreparedBlock<S>& block) {
    const BackwardArgs& a = pb.args;
    const BlockCells<S>& cells = block.cells;
    const int64_t channels = pb.channels;
    // With C = 0 the input and the accumulator have no data to offset (gridGrad, zero, is
    // still written).
    // gridGrad alone (GridGradOnly): no accumulator, and blocks that scatter no corner.
    const T* in_n = channels ? pb.in + n * a.input.stride[0] : nullptr;
    S* acc_n = channels && pb.acc ? pb.acc + n * pb.acc_stride[0] : nullptr;
    const auto* in_base = pb.same_geometry ? block.acc_base : block.in_base;
    const int64_t* acc_delta = pb.acc_geometry.corner_delta;
    const int64_t* in_delta = pb.in_geometry.corner_delta;
    const int64_t ggs = a.grid_grad.stride[4];
    // The corner deltas as locals: the stores through acc and gridGrad cannot alias them, so
    // they stay in registers (through the Problem, every store would reload them).
    int64_t local_acc_delta[8], local_in_delta[8];
    std::copy(acc_delta, acc_delta + 8, local_acc_delta);
    std::copy(in_delta, in_delta + 8, local_in_delta);
    const int64_t gout_stride = a.grad_output.stride[1];
    HWY_ALIGN hwy::MakeSigned<S> gout_index[hn::MaxLanes(D())];
    for (size_t l = 0; l < hn::MaxLanes(D()); ++l) gout_index[l] = static_cast<hwy::MakeSigned<S>>(l * gout_stride);
    auto write_grid_grad = [&](int i, S gix, S giy, S giz) {
        T* gg = pb.ggrid + block.grid_grad[i];
        gg[0] = FromCompute<T>(block.mx[i] * gix);
        gg[ggs] = FromCompute<T>(block.my[i] * giy);
        gg[2 * ggs] = FromCompute<T>(block.mz[i] * giz);
    };
    const bool prefetch = channels > 0 && channels <= kChannelsLastPrefetchMaxChannels;
    const bool prefetch_gout = channels > 0 && gout_stride == 1;
    for (int i = 0; i < cells.count; ++i) {
        const int ahead = i + kChannelsLastPrefetchAhead;
        if (prefetch && ahead < cells.count && (cells.all_inside || cells.point_inside[ahead] != 0)) {
            if (acc_n) PrefetchCornerRows(acc_n + block.acc_base[ahead], local_acc_delta, channels);
            if (kGridGrad) PrefetchCornerRows(in_n + in_base[ahead], local_in_delta, channels);
        }
        if (prefetch_gout && i + kGradOutputPrefetchAhead < cells.count) {
            const T* g = pb.gout + block.grad_output[i + kGradOutputPrefetchAhead];
            hwy::Prefetch(g);
            hwy::Prefetch(g + (channels - 1));
        }
        // Pairs only in whole blocks (the sorted plan's, where every corner inside is
        // scattered), so that a point's gridGrad order depends on its corners being inside,
        // never on which slab's task scatters them.
        if constexpr (kPairs) {
            if (block.whole && (cells.all_inside || cells.point_inside[i] != 0)) {
                S gix, giy, giz;
                ChannelsLastPairPoint<kGridGrad>(
                    d, pb.gout + block.grad_output[i], gout_stride, gout_index, acc_n + block.acc_base[i],
                    kGridGrad ? in_n + in_base[i] : nullptr, local_acc_delta, local_in_delta, cells, i, &gix, &giy, &giz);
                if constexpr (kGridGrad) write_grid_grad(i, gix, giy, giz);
                continue;
            }
        }
        ChannelsLastCorners<T, S> p;
        p.gout = pb.gout + block.grad_output[i];
        p.gout_stride = gout_stride;
        p.gout_index = gout_index;
        p.wx[0] = cells.wx[0][i], p.wx[1] = cells.wx[1][i];
        p.wy[0] = cells.wy[0][i], p.wy[1] = cells.wy[1][i];
        p.wz[0] = cells.wz[0][i], p.wz[1] = cells.wz[1][i];
        S gix, giy, giz;
        if (block.whole && channels > 0 && (cells.all_inside || cells.point_inside[i] != 0)) {
            // Every corner inside and scattered (the common case): no per-corner tests.
            for (int k = 0; k < 8; ++k) {
                p.weight[k] = cells.weight[k][i];
                p.acc[k] = acc_n + (static_cast<int64_t>(block.acc_base[i]) + local_acc_delta[k]);
                p.in[k] = kGridGrad ? in_n + (static_cast<int64_t>(in_base[i]) + local_in_delta[k]) : nullptr;
            }
            ChannelsLastPoint<true, kGridGrad>(d, channels, p, &gix, &giy, &giz);
            if constexpr (kGridGrad) write_grid_grad(i, gix, giy, giz);
            continue;
        }
        // This task writes the point's gridGrad (a scan task: only for its own points), and
        // which corners it scatters (a scan task: those in its slab).
        const bool grid_grad = kGridGrad && (block.whole || block.owned[i]);
        bool all_inside = channels > 0, all_scatter = true;
        for (int k = 0; k < 8; ++k) {
            p.inside[k] = cells.all_inside || cells.inside[k][i] != 0;
            p.scatter[k] = block.whole ? p.inside[k] : block.scatter[k][i] != 0;
            all_inside = all_inside && p.inside[k];
            all_scatter = all_scatter && p.scatter[k];
            p.weight[k] = cells.weight[k][i];
            // Pointers only to corners inside, from the summed offset (a first corner at -1
            // along an axis is not an address in the volume); in_base is set only for gridGrad.
            const bool valid = p.inside[k] && channels;
            p.acc[k] = valid && p.scatter[k] ? acc_n + (static_cast<int64_t>(block.acc_base[i]) + acc_delta[k]) : nullptr;
            p.in[k] = kGridGrad && valid ? in_n + (static_cast<int64_t>(in_base[i]) + in_delta[k]) : nullptr;
        }
        const bool all_corners = all_inside && all_scatter;
        auto run = [&](auto all_tag, auto grid_grad_tag) HWY_ATTR {
            ChannelsLastPoint<decltype(all_tag)::value, decltype(grid_grad_tag)::value>(d, channels, p, &gix,
                                                                                                  &giy, &giz);
        };
        if (all_corners && grid_grad)
            run(std::true_type{}, std::true_type{});
        else if (all_corners && !kGridGrad)
            run(std::true_type{}, std::false_type{});
        else if (grid_grad)
            run(std::false_type{}, std::true_type{});
        else
            run(std::false_type{}, std::false_type{});
        if (grid_grad) {
            write_grid_grad(i, gix, giy, giz);
        }
    }
}

// A prepared block with channels last: the widest vector that the channel count fills, or
// pairs of corners (gradOutput's channels loaded, or gathered where they are apart).
template <typename T, bool kGridGrad, typename S = ComputeType<T>>
HWY_INLINE void RunChannelsLastBlock(const Problem<T>& pb, int64_t n, PreparedBlock<S>& block) {
    const hn::ScalableTag<S> full;
    const hn::CappedTag<S, 8> eight;
    const hn::CappedTag<S, 4> four;
    // Corner pairs in one vector where the x neighbours' channels lie side by side and fill
    // it (C = 8 with AVX-512, 4 with AVX2 or AVX-512, 2 with 128-bit vectors).
    if constexpr (hn::MaxLanes(decltype(full)()) >= 4) {
        const int64_t c = pb.channels;
        const bool side_by_side =
            pb.acc_geometry.corner_delta[1] == c && (!kGridGrad || pb.in_geometry.corner_delta[1] == c);
        if (side_by_side && 2 * c == static_cast<int64_t>(hn::Lanes(full)))
            return RunBlockChannelsLast<decltype(full), T, kGridGrad, true>(full, pb, n, block);
        if (side_by_side && 2 * c == static_cast<int64_t>(hn::Lanes(eight)) && hn::Lanes(full) > 8)
            return RunBlockChannelsLast<decltype(eight), T, kGridGrad, true>(eight, pb, n, block);
    }
    if (pb.channels >= static_cast<int64_t>(hn::Lanes(full)))
        RunBlockChannelsLast<decltype(full), T, kGridGrad>(full, pb, n, block);
    else if (pb.channels >= static_cast<int64_t>(hn::Lanes(eight)))
        RunBlockChannelsLast<decltype(eight), T, kGridGrad>(eight, pb, n, block);
    else
        RunBlockChannelsLast<decltype(four), T, kGridGrad>(four, pb, n, block);
}

// Runs a prepared block: channels in vectors (kUnitChannels: input and accumulator with
// channels last; RunChannelsLastBlock), or points in vectors (RunBlock).
template <typename T, bool kGridGrad, bool kUnitChannels, typename S = ComputeType<T>>
HWY_INLINE void RunPreparedBlock(const Problem<T>& pb, int64_t n, PreparedBlock<S>& block) {
    if constexpr (kUnitChannels) {
        RunChannelsLastBlock<T, kGridGrad>(pb, n, block);
    } else {
        RunBlock<T, kGridGrad>(pb, n, block, 0, pb.channels);
    }
}

// A task's prepared blocks (one batch item), run a chunk at a time. With channels apart
// (NCDHW) and more than one, channel by channel over the chunk: a channel's gathers and
// scatters for all the chunk's points before the next channel's, so that its lines are
// reused from L1 across the blocks instead of every channel's passing through per block.
// Each element's sum keeps its order (the chunk's points in order, per channel), and each
// point's grid gradient its channel order.
template <typename T, bool kGridGrad, bool kUnitChannels, typename S = ComputeType<T>>
class BlockChunk {
  public:
    static constexpr int kBlocks = 8;
    BlockChunk(const Problem<T>& pb, int64_t n) : pb_(pb), n_(n), blocks_(kUnitChannels || pb.channels <= 1 ? 1 : kBlocks) {}
    PreparedBlock<S>& Next() { return blocks_[used_]; }
    // Takes the block filled through Next(); runs the chunk when full. The caller runs the
    // rest at the end.
    void Add() {
        if (++used_ == static_cast<int>(blocks_.size())) Run();
    }
    void Run() {
        if (used_ == 1 || kUnitChannels) {
            for (int b = 0; b < used_; ++b) RunPreparedBlock<T, kGridGrad, kUnitChannels>(pb_, n_, blocks_[b]);
        } else if (used_ > 1) {
            for (int64_t c = 0; c < pb_.channels; ++c)
                for (int b = 0; b < used_; ++b) RunBlock<T, kGridGrad>(pb_, n_, blocks_[b], c, c + 1);
        }
        used_ = 0;
    }

  private:
    const Problem<T>& pb_;
    int64_t n_;
    std::vector<PreparedBlock<S>> blocks_;
    int used_ = 0;
};

}  // namespace
}  // namespace HWY_NAMESPACE
}  // namespace gs3d::kernels
HWY_AFTER_NAMESPACE();

#endif  // GS3D_KERNELS_CHANNELS_LAST_BACKWARD_INL_H_
