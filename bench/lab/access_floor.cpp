// How close the bilinear backward comes to the floor of its memory accesses, on the
// benchmark's workload, timed in turn with the library's backward on the same data: the
// one-channel scan, or with C > 1 the channels-last blocks (below).
//
// Why: bench.py's "bound" column is the bytes that must cross the memory bus over the copy
// bandwidth (2.9 ms at (1, 1, 128)), and by it the backward looks 8% efficient. But its cost
// is not streaming: each grid point reads 8 corners of the input and adds into 8 corners of
// inputGrad, at lines that the noise spreads over about 14 x 14 rows x planes. This program
// does only those accesses, with the least arithmetic, in the kernel's order: the floor of
// any kernel that visits the points in that order.
//
// The floor, per point (offsets and weights computed beforehand, not timed): a 16-byte record
// read in visiting order (as the grid's 12 bytes and gradOutput's 4), the four corner pairs
// (x0, x0 + 1) of the input read, the four pairs of the accumulator read-modified-written, and
// 12 bytes of gridGrad written. Each thread takes the points whose first corner's plane lies
// in its slab of planes (the scan's split at one batch item), in grid order (plan/row_order.h, as
// the scan), into an accumulator of its own (no races; the kernel's slabs meet at one plane).
// Corners are clamped into the volume, so every point reads and writes 8 elements.
//
// With C > 1 (4, 8, 16 or 32) it models the channels-last backward instead (NDHWC input,
// gradOutput, inputGrad and the library's RunChannelsLastBlock): N batch items, each cut into
// the sorted plan's 8 slabs along D, the even slabs' tasks first, then (after a barrier: the
// library's graph waits only for the neighbours) the odd ones; a task takes the points whose
// first corner's plane lies in its slab, in grid order, and zero-fills its slab and the next
// first if it is even. Per point: a 16-byte record, gradOutput's C channels read in grid
// order, the four corner pairs' 2 x C input values read and 2 x C inputGrad values
// read-modified-written (one run each, as the library's), the least arithmetic for gridGrad's
// three sums (products with gradOutput, summed across lanes) and 12 bytes of gridGrad
// written. The library's calls: the NDHWC backward on the same arrays, and the NCDHW one (the
// same blocks between copies of the input to channels last and of inputGrad back, and
// gradOutput's channels gathered from C planes).
//
// With "nearest" (any C, NCDHW) it models the nearest backward's scan instead: each batch item
// cut into as few slabs of planes as make the tasks a multiple of the threads (the scan's
// split), a task taking the item's rows in grid order and the points whose voxel lies in its
// slab, each plane zeroed (all channels) just before the first row that reaches it,
// each row's gridGrad zeros written, and the points that fall inside gathered into chunks of
// 1024 whose scatter runs channel pair by channel pair: per point and channel, gradOutput read
// and one element of inputGrad read-modified-written. Voxels and the rows' highest planes are
// computed beforehand (not timed).
//
// Usage: access_floor [S 128] [noise 0.05] [rounds 20] [C 1] [N 1] [bilinear|nearest]
//        (threads: OMP_NUM_THREADS)
// Each round times the floor and the library's call(s) in turn, the order rotated every round.
// Prints the medians of the times and of each call's ratio to the floor in its round.
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <numeric>
#include <string>
#include <vector>

#include "acl/acl.h"
#include "aclnnop/aclnn_grid_sampler3d_backward.h"
#include "kernels/plan/backward.h"
#include "kernels/plan/row_order.h"
#include "registration_workload.h"

namespace {

struct PointRecord {  // 16 bytes, as the grid's and gradOutput's per point
    int32_t first;     // the first corner's element offset
    int32_t grid_grad; // where its gridGrad goes (3 floats)
    float grad;        // gradOutput
    float weight;      // its x weight (one weight: the least arithmetic)
};

struct ChannelsLastRecord {  // 16 bytes, as the grid's 12 and a 4-byte index
    int32_t first;           // the first corner's element offset (channel 0)
    int32_t point;           // its gradOutput's channels at point * C, its gridGrad at 3 * point
    float weight;            // its x weight
    float unused;
};

// A grid point's first corner and its x fraction (align_corners false: ((g + 1) * S - 1) / 2),
// the corner clamped into the volume so that every point reads and writes 8 elements.
struct FirstCorner {
    int64_t x, y, z;
    float fraction_x;
};

FirstCorner CornerOf(const float* g, int64_t s) {
    int64_t first[3];
    float fraction[3];
    for (int axis = 0; axis < 3; ++axis) {
        const float index = ((g[axis] + 1) * static_cast<float>(s) - 1) / 2;
        first[axis] = std::clamp<int64_t>(static_cast<int64_t>(std::floor(index)), 0, s - 2);
        fraction[axis] = index - std::floor(index);
    }
    return {first[0], first[1], first[2], fraction[0]};
}

double Milliseconds(std::chrono::steady_clock::time_point start) {
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
}

double Median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
}

// The one-channel floor (the scan's split and row order at one batch item); see the top.
std::function<double()> OneChannelFloor(int64_t s, const std::vector<float>& input, const std::vector<float>& grad,
                                        const std::vector<float>& grid, std::vector<float>& floor_grid_grad) {
    const int64_t points = s * s * s;
    const int threads = std::max(1, omp_get_max_threads());
    const int64_t slab_depth = (s + threads - 1) / threads;
    auto records = std::make_shared<std::vector<std::vector<PointRecord>>>(threads);
    for (gs3d::kernels::BandedRows row(s, s, s); !row.Done(); row.Next())  // the scan's order: plane after plane
        for (int64_t w = 0; w < s; ++w) {
            const int64_t p = (row.d * s + row.h) * s + w;
            const FirstCorner c = CornerOf(&grid[3 * p], s);
            (*records)[c.z / slab_depth].push_back(
                {static_cast<int32_t>((c.z * s + c.y) * s + c.x), static_cast<int32_t>(3 * p), grad[p], c.fraction_x});
        }
    auto accumulators = std::make_shared<std::vector<std::vector<float>>>(threads, std::vector<float>(points));
    return [=, &input, &floor_grid_grad] {
        const int64_t plane = s * s;
        const int64_t corner_rows[4] = {0, s, plane, plane + s};  // (y, z) of the four pairs
        const auto start = std::chrono::steady_clock::now();
#pragma omp parallel num_threads(threads)
        {
            const int t = omp_get_thread_num();
            float* acc = (*accumulators)[t].data();
            const float* in = input.data();
            float* gg = floor_grid_grad.data();
            // Its slab's planes and the one after (the points' second corners), zeroed first.
            const int64_t z_begin = t * slab_depth, z_end = std::min(s, z_begin + slab_depth + 1);
            if (z_begin < z_end) std::fill(acc + z_begin * plane, acc + z_end * plane, 0.0f);
            for (const PointRecord& r : (*records)[t]) {
                float sums[4];
                for (int k = 0; k < 4; ++k) {
                    const int64_t at = r.first + corner_rows[k];
                    sums[k] = in[at] + in[at + 1] * r.weight;
                    acc[at] += r.grad;
                    acc[at + 1] += r.grad * r.weight;
                }
                gg[r.grid_grad] = sums[0] + sums[1];
                gg[r.grid_grad + 1] = sums[2] + sums[3];
                gg[r.grid_grad + 2] = sums[0] - sums[3];
            }
        }
        return Milliseconds(start);
    };
}

// fp32 lanes in GCC's and clang's vector extension: 16 lanes are one AVX-512 register where
// the function is compiled for it (ChannelsLastPointsAvx512), four SSE ones otherwise. The
// helpers that take or return them are always inlined into those two functions, so no vector
// crosses a call: the compilers' note that such calls change the ABI (-Wpsabi) does not apply.
#pragma GCC diagnostic ignored "-Wpsabi"
typedef float Lanes16 __attribute__((vector_size(64), aligned(4)));
typedef float Lanes8 __attribute__((vector_size(32), aligned(4)));
typedef float Lanes4 __attribute__((vector_size(16), aligned(4)));

inline __attribute__((always_inline)) float SumLanes(const Lanes4& v) { return (v[0] + v[2]) + (v[1] + v[3]); }
inline __attribute__((always_inline)) float SumLanes(const Lanes8& v) {
    return SumLanes(__builtin_shufflevector(v, v, 0, 1, 2, 3) + __builtin_shufflevector(v, v, 4, 5, 6, 7));
}
inline __attribute__((always_inline)) float SumLanes(const Lanes16& v) {
    return SumLanes(__builtin_shufflevector(v, v, 0, 1, 2, 3, 4, 5, 6, 7) +
                    __builtin_shufflevector(v, v, 8, 9, 10, 11, 12, 13, 14, 15));
}

// A corner pair's 2 x C channels in vectors: C = 4 in one of 8 lanes, more in 16-lane ones.
template <int C>
struct PairVectors {
    using Vec = Lanes16;
    static constexpr int kLanes = 16, kCount = 2 * C / 16;
    // Lanes [16 v, 16 v + 16) of (g, g), gradOutput's channels for x0 and then for x1.
    static inline __attribute__((always_inline)) Vec Grads(const float* g, int v) {
        Vec out;
        if constexpr (C >= 16) {
            std::memcpy(&out, g + (16 * v) % C, sizeof out);
        } else {  // C = 8: both halves
            Lanes8 half;
            std::memcpy(&half, g, sizeof half);
            out = __builtin_shufflevector(half, half, 0, 1, 2, 3, 4, 5, 6, 7, 0, 1, 2, 3, 4, 5, 6, 7);
        }
        return out;
    }
};
template <>
struct PairVectors<4> {
    using Vec = Lanes8;
    static constexpr int kLanes = 8, kCount = 1;
    static inline __attribute__((always_inline)) Vec Grads(const float* g, int) {
        Lanes4 quarter;
        std::memcpy(&quarter, g, sizeof quarter);
        return __builtin_shufflevector(quarter, quarter, 0, 1, 2, 3, 0, 1, 2, 3);
    }
};

struct ChannelsLastTask {
    const ChannelsLastRecord* records;
    int64_t count;
    const float* input;  // (N, D, H, W, C)
    const float* grad;   // (N, D, H, W, C) as the grid's points
    float* acc;          // (N, D, H, W, C)
    float* grid_grad;    // (N, D, H, W, 3)
    int64_t row, plane;  // element strides of H and D
};

// One task's points: per pair (y, z) one run of 2 x C input values read and one of 2 x C
// accumulator values read-modified-written (the x pair's channels side by side).
template <int C>
inline __attribute__((always_inline)) void ChannelsLastPoints(const ChannelsLastTask& task) {
    using Pair = PairVectors<C>;
    using Vec = typename Pair::Vec;
    const int64_t corner_rows[4] = {0, task.row, task.plane, task.plane + task.row};
    for (int64_t i = 0; i < task.count; ++i) {
        const ChannelsLastRecord& r = task.records[i];
        const int64_t point = r.point;
        const float* g = task.grad + point * C;
        Vec scaled[Pair::kCount], grads[Pair::kCount];
        for (int v = 0; v < Pair::kCount; ++v) {
            grads[v] = Pair::Grads(g, v);
            scaled[v] = grads[v] * (Pair::kLanes * v < C ? 1 - r.weight : r.weight);
        }
        Vec sums[4];
        for (int k = 0; k < 4; ++k) {
            const int64_t at = r.first + corner_rows[k];
            sums[k] = Vec{};
            for (int v = 0; v < Pair::kCount; ++v) {
                Vec in, acc;
                std::memcpy(&in, task.input + at + Pair::kLanes * v, sizeof in);
                std::memcpy(&acc, task.acc + at + Pair::kLanes * v, sizeof acc);
                sums[k] += in * grads[v];
                acc += scaled[v];
                std::memcpy(task.acc + at + Pair::kLanes * v, &acc, sizeof acc);
            }
        }
        float* gg = task.grid_grad + 3 * point;
        gg[0] = SumLanes(sums[0] + sums[1]);
        gg[1] = SumLanes(sums[2] + sums[3]);
        gg[2] = SumLanes(sums[0] - sums[3]);
    }
}

template <int C>
__attribute__((target("avx512f"))) void ChannelsLastPointsAvx512(const ChannelsLastTask& task) {
    ChannelsLastPoints<C>(task);
}
template <int C>
void ChannelsLastPointsBaseline(const ChannelsLastTask& task) {
    ChannelsLastPoints<C>(task);
}

// The channels-last floor (the sorted plan's 8 slabs per item, even tasks then odd); see the top.
template <int C>
std::function<double()> ChannelsLastFloor(int64_t s, int64_t batch, const std::vector<float>& input,
                                          const std::vector<float>& grad, const std::vector<float>& grid,
                                          std::vector<float>& floor_grid_grad) {
    constexpr int64_t kSlabs = gs3d::kernels::kMaxSlabs;  // the sorted plan's, as the library cuts it
    const int64_t slab_depth = (s + kSlabs - 1) / kSlabs, slabs = (s + slab_depth - 1) / slab_depth;
    const int64_t row = s * C, plane = s * row, volume = s * plane;
    auto records = std::make_shared<std::vector<std::vector<ChannelsLastRecord>>>(batch * slabs);  // task n * slabs + slab
    for (int64_t p = 0; p < batch * s * s * s; ++p) {
        const int64_t n = p / (s * s * s);
        const FirstCorner c = CornerOf(&grid[3 * p], s);
        (*records)[n * slabs + c.z / slab_depth].push_back(
            {static_cast<int32_t>(n * volume + c.z * plane + c.y * row + c.x * C), static_cast<int32_t>(p), c.fraction_x, 0});
    }
    auto accumulator = std::make_shared<std::vector<float>>(batch * volume);
    const bool avx512 = __builtin_cpu_supports("avx512f");
    const int threads = std::max(1, omp_get_max_threads());
    return [=, &input, &grad, &floor_grid_grad] {
        const auto start = std::chrono::steady_clock::now();
#pragma omp parallel num_threads(threads)
        for (int odd = 0; odd < 2; ++odd) {
#pragma omp for schedule(dynamic, 1)
            for (int64_t k = 0; k < batch * ((slabs + 1 - odd) / 2); ++k) {
                const int64_t per_item = (slabs + 1 - odd) / 2, n = k / per_item, slab = 2 * (k % per_item) + odd;
                float* acc = accumulator->data();
                if (!odd) {  // its slab's planes and the next slab's, zeroed first
                    const int64_t z_end = std::min(s, (slab + 2) * slab_depth);
                    std::fill(acc + n * volume + slab * slab_depth * plane, acc + n * volume + z_end * plane, 0.0f);
                }
                const std::vector<ChannelsLastRecord>& mine = (*records)[n * slabs + slab];
                const ChannelsLastTask task{mine.data(), static_cast<int64_t>(mine.size()), input.data(), grad.data(),
                                            acc, floor_grid_grad.data(), row, plane};
                avx512 ? ChannelsLastPointsAvx512<C>(task) : ChannelsLastPointsBaseline<C>(task);
            }  // the barrier: the odd tasks after every even one
        }
        return Milliseconds(start);
    };
}

// The nearest scan's floor (slabs of planes per batch item as the scan cuts them, chunks of
// points, channels in pairs); see the top.
std::function<double()> NearestFloor(int64_t s, int64_t batch, int64_t channels, const std::vector<float>& grad,
                                     const std::vector<float>& grid, std::vector<float>& floor_grid_grad) {
    const int64_t plane = s * s, volume = s * plane, rows = s * s;
    // Per point its voxel in its channel volume (-1: outside, zeros padding) and that voxel's
    // plane; per row the lowest and highest plane its points reach (an empty range: none).
    auto voxels = std::make_shared<std::vector<int32_t>>(batch * volume);
    auto voxel_planes = std::make_shared<std::vector<int32_t>>(batch * volume, -1);
    auto row_lowest = std::make_shared<std::vector<int32_t>>(batch * rows, static_cast<int32_t>(s));
    auto row_highest = std::make_shared<std::vector<int32_t>>(batch * rows, -1);
    for (int64_t p = 0; p < batch * volume; ++p) {
        int64_t at[3];
        bool inside = true;
        for (int axis = 0; axis < 3; ++axis) {  // align_corners false, round half to even
            at[axis] = static_cast<int64_t>(std::nearbyint(((grid[3 * p + axis] + 1) * static_cast<float>(s) - 1) / 2));
            inside = inside && at[axis] >= 0 && at[axis] < s;
        }
        (*voxels)[p] = inside ? static_cast<int32_t>((at[2] * s + at[1]) * s + at[0]) : -1;
        if (!inside) continue;
        (*voxel_planes)[p] = static_cast<int32_t>(at[2]);
        (*row_lowest)[p / s] = std::min((*row_lowest)[p / s], static_cast<int32_t>(at[2]));
        (*row_highest)[p / s] = std::max((*row_highest)[p / s], static_cast<int32_t>(at[2]));
    }
    auto accumulator = std::make_shared<std::vector<float>>(batch * channels * volume);
    const int threads = std::max(1, omp_get_max_threads());
    // The scan's split: as few slabs per item as make the tasks a multiple of the threads.
    const int64_t slab_count = threads / std::gcd<int64_t>(threads, batch);
    const int64_t slab_depth = (s + slab_count - 1) / slab_count, slabs = (s + slab_depth - 1) / slab_depth;
    return [=, &grad, &floor_grid_grad] {
        constexpr int kChunk = 1024;
        const auto start = std::chrono::steady_clock::now();
#pragma omp parallel for schedule(dynamic, 1) num_threads(threads)
        for (int64_t task = 0; task < batch * slabs; ++task) {
            const int64_t n = task / slabs, z_begin = task % slabs * slab_depth, z_end = std::min(s, z_begin + slab_depth);
            float* acc = accumulator->data() + n * channels * volume;
            const float* gout = grad.data() + n * channels * volume;
            int32_t voxel[kChunk], point[kChunk];
            int chunk = 0;
            auto flush = [&] {
                int64_t c = 0;
                for (; c + 2 <= channels; c += 2) {
                    float *a0 = acc + c * volume, *a1 = a0 + volume;
                    const float *g0 = gout + c * volume, *g1 = g0 + volume;
                    for (int j = 0; j < chunk; ++j) a0[voxel[j]] += g0[point[j]], a1[voxel[j]] += g1[point[j]];
                }
                for (; c < channels; ++c)
                    for (int j = 0; j < chunk; ++j) acc[c * volume + voxel[j]] += gout[c * volume + point[j]];
                chunk = 0;
            };
            auto zero_planes = [&](int64_t from, int64_t to) {
                for (int64_t c = 0; c < channels; ++c)
                    std::fill(acc + c * volume + from * plane, acc + c * volume + to * plane, 0.0f);
            };
            int64_t zeroed_end = z_begin;
            for (int64_t row = 0; row < rows; ++row) {
                // Each row's gridGrad zeros by the task of its own plane's slab.
                if (row / s / slab_depth == task % slabs)
                    std::fill_n(floor_grid_grad.data() + 3 * (n * volume + row * s), 3 * s, 0.0f);
                const int64_t lowest = (*row_lowest)[n * rows + row], highest = (*row_highest)[n * rows + row];
                if (lowest > highest || lowest >= z_end || highest < z_begin) continue;
                if (highest >= zeroed_end) {
                    const int64_t upto = std::min(z_end, highest + 1);
                    zero_planes(zeroed_end, upto), zeroed_end = upto;
                }
                const int32_t* v = voxels->data() + n * volume + row * s;
                const int32_t* z = voxel_planes->data() + n * volume + row * s;
                for (int64_t w0 = 0; w0 < s; w0 += 64) {  // in the kernel's blocks of 64 points
                    const int64_t w_end = std::min(s, w0 + 64);
                    if (chunk + (w_end - w0) > kChunk) flush();
                    for (int64_t w = w0; w < w_end; ++w) {  // branch-free, as the kernel's
                        voxel[chunk] = v[w], point[chunk] = static_cast<int32_t>(row * s + w);
                        chunk += z[w] >= z_begin && z[w] < z_end;
                    }
                }
            }
            flush();
            zero_planes(zeroed_end, z_end);
        }
        return Milliseconds(start);
    };
}

}  // namespace

int main(int argc, char** argv) {
    const int64_t s = argc > 1 ? std::atoll(argv[1]) : 128;
    const float noise = argc > 2 ? std::atof(argv[2]) : 0.05f;
    const int rounds = argc > 3 ? std::atoi(argv[3]) : 20;
    const int64_t c = argc > 4 ? std::atoll(argv[4]) : 1;
    const int64_t batch = argc > 5 ? std::atoll(argv[5]) : 1;
    const std::string mode = argc > 6 ? argv[6] : "bilinear";
    const bool nearest = mode == "nearest", channels_last = !nearest && c > 1;
    const bool bilinear_shape = c == 1 ? batch == 1 : (c == 4 || c == 8 || c == 16 || c == 32);
    if (s < 2 || rounds < 1 || c < 1 || batch < 1 || !(nearest || (mode == "bilinear" && bilinear_shape)) ||
        batch * c * s * s * s >= INT32_MAX) {
        std::fprintf(stderr,
                     "usage: access_floor [S >= 2] [noise] [rounds >= 1] [C] [N] [bilinear|nearest]\n"
                     "  bilinear: C = 1 with N = 1 (the scan), or C = 4, 8, 16, 32 (channels last); nearest: any C and N\n"
                     "  (N x C x S^3 below 2^31)\n");
        return 2;
    }
    const int64_t points = batch * s * s * s, elements = points * c;
    // The floor writes a gridGrad of its own: the library's outputs are the library's alone.
    std::vector<float> input(elements), grad(elements), grid(points * 3), input_grad(elements), grid_grad(points * 3),
        floor_grid_grad(points * 3);
    FillRegistrationWorkload(input.data(), grad.data(), grid.data(), batch, c, s, noise);
    const std::function<double()> floor_call =
        nearest   ? NearestFloor(s, batch, c, grad, grid, floor_grid_grad)
        : c == 1  ? OneChannelFloor(s, input, grad, grid, floor_grid_grad)
        : c == 4  ? ChannelsLastFloor<4>(s, batch, input, grad, grid, floor_grid_grad)
        : c == 8  ? ChannelsLastFloor<8>(s, batch, input, grad, grid, floor_grid_grad)
        : c == 16 ? ChannelsLastFloor<16>(s, batch, input, grad, grid, floor_grid_grad)
                  : ChannelsLastFloor<32>(s, batch, input, grad, grid, floor_grid_grad);

    aclInit(nullptr);
    aclrtSetDevice(0);
    aclrtStream stream = nullptr;
    aclrtCreateStream(&stream);
    const int64_t vdims[5] = {batch, c, s, s, s}, gdims[5] = {batch, s, s, s, 3}, vstore[1] = {elements},
                  gstore[1] = {points * 3};
    const int64_t ndhwc_strides[5] = {c * s * s * s, 1, s * s * c, s * c, c};  // the arrays as (N, D, H, W, C)
    auto make = [](const int64_t* dims, const int64_t* strides, const int64_t* store, float* data) {
        return aclCreateTensor(dims, 5, ACL_FLOAT, strides, 0, ACL_FORMAT_NCDHW, store, 1, data);
    };
    bool mask_values[2] = {true, true};
    aclBoolArray* mask = aclCreateBoolArray(mask_values, 2);
    std::vector<char> workspace;
    // The library's backward on the arrays as NCDHW (strides null: contiguous) or as NDHWC.
    auto library_call = [&](const int64_t* vstrides) {
        aclTensor *tgo = make(vdims, vstrides, vstore, grad.data()), *ti = make(vdims, vstrides, vstore, input.data()),
                  *tg = make(gdims, nullptr, gstore, grid.data()), *tig = make(vdims, vstrides, vstore, input_grad.data()),
                  *tgg = make(gdims, nullptr, gstore, grid_grad.data());
        const auto start = std::chrono::steady_clock::now();
        uint64_t size = 0;
        aclOpExecutor* executor = nullptr;
        aclnnStatus status =
            aclnnGridSampler3DBackwardGetWorkspaceSize(tgo, ti, tg, nearest ? 1 : 0, 0, false, mask, tig, tgg, &size, &executor);
        if (status == 0) {
            if (workspace.size() < size) workspace.resize(size);
            status = aclnnGridSampler3DBackward(workspace.data(), size, executor, stream);
        }
        aclrtSynchronizeStream(stream);
        const double ms = Milliseconds(start);
        for (aclTensor* t : {tgo, ti, tg, tig, tgg}) aclDestroyTensor(t);
        if (status != 0) {
            std::fprintf(stderr, "access_floor: the library's backward failed (%d): %s\n", status, aclGetRecentErrMsg());
            std::exit(1);
        }
        return ms;
    };
    // What each round times, in turn: the floor and the library's call in the floor's layout,
    // and with channels last also the library's NCDHW call (its copies to and from channels
    // last around the same blocks). The order rotates from round to round.
    std::vector<std::function<double()>> calls = {floor_call, [&] { return library_call(channels_last ? ndhwc_strides : nullptr); }};
    if (channels_last) calls.push_back([&] { return library_call(nullptr); });
    for (auto& call : calls) call();  // warm-up: pages, threads, workspace
    std::vector<std::vector<double>> ms(calls.size()), ratios(calls.size());
    for (int round = 0; round < rounds; ++round) {
        std::vector<double> t(calls.size());
        for (size_t k = 0; k < calls.size(); ++k) {
            const size_t which = (k + round) % calls.size();
            t[which] = calls[which]();
        }
        for (size_t k = 0; k < calls.size(); ++k) ms[k].push_back(t[k]), ratios[k].push_back(t[k] / t[0]);
    }
    const int threads = std::max(1, omp_get_max_threads());
    std::printf("(%lld, %lld, %lld) %s, noise %g, %d thread(s): floor %.2f ms (%.2f ns per point and thread), "
                "library %s %.2f ms",
                static_cast<long long>(batch), static_cast<long long>(c), static_cast<long long>(s), mode.c_str(), noise, threads,
                Median(ms[0]), Median(ms[0]) * 1e6 * threads / points, channels_last ? "ndhwc" : "ncdhw", Median(ms[1]));
    if (channels_last) std::printf(", library ncdhw %.2f ms", Median(ms[2]));
    std::printf("; library / floor per round: median %.2f", Median(ratios[1]));
    if (channels_last) std::printf(" (ncdhw %.2f)", Median(ratios[2]));
    std::printf("\n");
    aclFinalize();
    return 0;
}
