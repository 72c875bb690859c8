// Tricubic's phase 2 and the backward's scatter (blocks-inl.h describes the phases): the
// scalar moves of each point's 16 tap rows of 4 values along x, from one channel of the input
// into the block's buffer and, with the backward's amounts, from the buffer into one channel
// of the accumulator.
//
// Compiled into each SIMD target: included by tricubic/forward-inl.h and backward-inl.h
// (after foreach_target.h) only; Highway's per-target include guard.
#if defined(GS3D_KERNELS_TRICUBIC_MOVES_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef GS3D_KERNELS_TRICUBIC_MOVES_INL_H_
#undef GS3D_KERNELS_TRICUBIC_MOVES_INL_H_
#else
#define GS3D_KERNELS_TRICUBIC_MOVES_INL_H_
#endif

#include <hwy/highway.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "kernels/common/element_types.h"
#include "kernels/tricubic/blocks-inl.h"

HWY_BEFORE_NAMESPACE();
namespace gs3d::kernels {
namespace HWY_NAMESPACE {
namespace {

namespace hn = hwy::HWY_NAMESPACE;

// Whether a vector holds a row's 4 taps (fp32 from SSE4 on, fp64 from AVX2 on), for
// PickWindowLanes.
template <typename S>
constexpr bool kWindowLanes = HWY_TARGET != HWY_SCALAR && !HWY_HAVE_SCALABLE && hn::MaxLanes(hn::CappedTag<S, 4>()) == 4;

// The 4 values of window (4 in a row) at lane[i], or 0 where lane[i] is -1, into out.
template <typename S>
HWY_INLINE void PickWindowLanes(const S* window, const CubicIndex<S>* lane, S* out) {
    const hn::CappedTag<S, 4> d4;
    const hn::RebindToSigned<decltype(d4)> di4;
    const auto li = hn::LoadU(di4, lane);
    const auto picked = hn::TableLookupLanes(hn::LoadU(d4, window), hn::IndicesFromVec(d4, hn::Max(li, hn::Zero(di4))));
    hn::StoreU(hn::IfThenZeroElse(hn::RebindMask(d4, hn::Lt(li, hn::Zero(di4))), picked), d4, out);
}

// The 16 tap rows of two consecutive points inside (their first taps at a and c; x packed)
// into the buffer (out: row 0 of the first), the two points' row in one store where a vector
// holds 8 values: x86 stores about one vector a cycle, whatever its width. Each row addressed
// from its plane's first row (CubicPhase2's 16 row offsets, held in vector registers by GCC
// within the kernels' loops, measured about 1% slower).
template <typename S>
HWY_INLINE void MoveRowPairs(const S* a, const S* c, const int64_t* stride, S* out) {
    for (int k = 0; k < 4; ++k)
        for (int j = 0; j < 4; ++j) {
            const S* row_a = a + k * stride[2] + j * stride[1];
            const S* row_c = c + k * stride[2] + j * stride[1];
            S* pair = out + (4 * k + j) * kCubicLanes;
#if HWY_TARGET != HWY_SCALAR
            const hn::CappedTag<S, 4> d4;
            const hn::CappedTag<S, 8> d8;
            if constexpr (hn::MaxLanes(d8) == 8 && hn::MaxLanes(d4) == 4) {
                hn::StoreU(hn::Combine(d8, hn::LoadU(d4, row_c), hn::LoadU(d4, row_a)), d8, pair);
                continue;
            }
#endif
            std::memcpy(pair, row_a, 4 * sizeof(S));
            std::memcpy(pair + 4, row_c, 4 * sizeof(S));
        }
}

// Phase 2: one channel's tap rows (in_c: its element 0; stride: the x, y, z strides).
template <typename T, typename S>
HWY_INLINE void CubicPhase2(const T* in_c, const int64_t* stride, CubicBlock<S>* b) {
    int64_t row_offset[16];  // of a point's tap rows from its first tap
    for (int r = 0; r < 16; ++r) row_offset[r] = (r >> 2) * stride[2] + (r & 3) * stride[1];
    const bool runs = stride[0] == 1 && std::is_same_v<T, S>;  // a row's 4 taps moved as one
    const int64_t width = b->width;
    auto first_tap = [&](int p) {
        return in_c + b->first_index[2][p] * stride[2] + b->first_index[1][p] * stride[1] + b->first_index[0][p] * stride[0];
    };
    for (int p = 0; p < b->count; ++p) {
        if (b->Inside(p)) {
            const T* base = first_tap(p);
            if (runs) {
                if constexpr (std::is_same_v<T, S>) {
                    if (p + 1 < b->count && b->Inside(p + 1)) {
                        MoveRowPairs(base, first_tap(p + 1), stride, b->values[0] + 4 * p);
                        ++p;
                        continue;
                    }
                }
                for (int k = 0; k < 4; ++k) {  // addressed from each plane's first row, as MoveRowPairs
                    const T* plane = base + k * stride[2];
                    for (int j = 0; j < 4; ++j) std::memcpy(b->values[4 * k + j] + 4 * p, plane + j * stride[1], 4 * sizeof(S));
                }
                continue;
            }
            for (int r = 0; r < 16; ++r)
                for (int i = 0; i < 4; ++i) b->values[r][4 * p + i] = ToCompute(base[row_offset[r] + i * stride[0]]);
            continue;
        }
        // Without branches: each tap read through a pointer, to a zero where it reads 0 (tested
        // tap by tap, the edge points took a third of the forward for a tenth of its points).
        static const T kZeros[4] = {};
        int64_t offset[3][4];
        bool reads[3][4];
        for (int a = 0; a < 3; ++a)
            for (int k = 0; k < 4; ++k) {
                const int64_t index = b->index[a][k][p];
                reads[a][k] = index >= 0;
                offset[a][k] = reads[a][k] ? index * stride[a] : 0;
            }
        const bool x_run = runs && b->XRun(p);  // a row moved as one
        // Else, where a vector holds the 4 taps, a row's window of 4 that holds every tap that
        // reads (padded taps lie at most 3 apart), its lanes picked and those that read 0 zeroed.
        CubicIndex<S> lane[4];
        int64_t window = 0;
        const bool x_window = !x_run && runs && kWindowLanes<S> && width >= 4;
        if (x_window) {
            window = width - 4;
            for (int i = 0; i < 4; ++i) window = reads[0][i] ? std::min(window, offset[0][i]) : window;
            for (int i = 0; i < 4; ++i) lane[i] = static_cast<CubicIndex<S>>(reads[0][i] ? offset[0][i] - window : -1);
        }
        if (x_run || x_window) {
            // each row's first value to move (its run, or its window), or zeros: the pointers
            // first, then the moves, each case in a loop of its own without branches
            const int64_t x_first = x_run ? offset[0][0] : window;
            const T* from[16];
            for (int r = 0; r < 16; ++r)
                from[r] = (reads[2][r >> 2] & reads[1][r & 3]) ? in_c + offset[2][r >> 2] + offset[1][r & 3] + x_first : kZeros;
            if (x_run) {
                for (int r = 0; r < 16; ++r) std::memcpy(b->values[r] + 4 * p, from[r], 4 * sizeof(S));
            } else if constexpr (kWindowLanes<S> && std::is_same_v<T, S>) {
                for (int r = 0; r < 16; ++r) PickWindowLanes(from[r], lane, b->values[r] + 4 * p);
            }
            continue;
        }
        for (int r = 0; r < 16; ++r) {
            const bool row_reads = reads[2][r >> 2] & reads[1][r & 3];
            const T* row = in_c + offset[2][r >> 2] + offset[1][r & 3];
            for (int i = 0; i < 4; ++i)
                b->values[r][4 * p + i] = ToCompute(*((row_reads & reads[0][i]) ? row + offset[0][i] : kZeros));
        }
    }
}

// Adds the amounts of the block's points, in point order and each point's taps in (z, y, x)
// order, into one channel of the accumulator (acc_c: its element 0; stride: x, y, z), the
// taps in planes [z_begin, z_end) only.
template <typename S>
HWY_INLINE void CubicScatter(const CubicBlock<S>& b, S* acc_c, const int64_t* stride, int64_t z_begin, int64_t z_end) {
    int64_t row_offset[16];  // of a point's tap rows from its first tap
    for (int r = 0; r < 16; ++r) row_offset[r] = (r >> 2) * stride[2] + (r & 3) * stride[1];
    const hn::CappedTag<S, 4> d4;  // a run of 4 taps in one vector, or in two
    const int lanes = static_cast<int>(hn::Lanes(d4));
    const S(*values)[kCubicLanes] = b.values;
    auto add_run = [&](S* run, const S* amounts) {  // 4 taps along x, stride 1
        for (int i = 0; i < 4; i += lanes) hn::StoreU(hn::Add(hn::LoadU(d4, run + i), hn::LoadU(d4, amounts + i)), d4, run + i);
    };
    S sink[16][4] = {};
    for (int p = 0; p < b.count; ++p) {
        if (b.Inside(p)) {
            const int64_t z0 = b.first_index[2][p];
            S* base = acc_c + z0 * stride[2] + b.first_index[1][p] * stride[1] + b.first_index[0][p] * stride[0];
            // the rows of the taps in this thread's planes
            const int r_begin = 4 * static_cast<int>(std::min<int64_t>(4, std::max<int64_t>(0, z_begin - z0)));
            const int r_end = 4 * static_cast<int>(std::min<int64_t>(4, std::max<int64_t>(0, z_end - z0)));
            for (int r = r_begin; r < r_end; ++r) {
                S* run = base + row_offset[r];
                if (stride[0] == 1) {
                    add_run(run, values[r] + 4 * p);
                } else {
                    for (int i = 0; i < 4; ++i) run[i * stride[0]] += values[r][4 * p + i];
                }
            }
            continue;
        }
        // Without branches: a tap that takes nothing (outside, or in another thread's planes)
        // adds into a sink of its own (one sink for all would chain the adds).
        int64_t x_offset[4];
        for (int i = 0; i < 4; ++i) x_offset[i] = b.index[0][i][p] * stride[0];
        const bool x_run = stride[0] == 1 && b.XRun(p);  // a row's 4 added as one
        for (int r = 0; r < 16; ++r) {
            const int64_t z = b.index[2][r >> 2][p], y = b.index[1][r & 3][p];
            const bool row_takes = (z >= z_begin) & (z < z_end) & (y >= 0);
            S* row = acc_c + (row_takes ? z * stride[2] + y * stride[1] : 0);
            if (x_run) {
                add_run(row_takes ? row + x_offset[0] : sink[r], values[r] + 4 * p);
                continue;
            }
            for (int i = 0; i < 4; ++i) *((row_takes & (b.index[0][i][p] >= 0)) ? row + x_offset[i] : &sink[r][i]) += values[r][4 * p + i];
        }
    }
}

}  // namespace
}  // namespace HWY_NAMESPACE
}  // namespace gs3d::kernels
HWY_AFTER_NAMESPACE();

#endif  // GS3D_KERNELS_TRICUBIC_MOVES_INL_H_
