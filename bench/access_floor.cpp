// How close the one-channel bilinear backward comes to the floor of its memory accesses, on
// the benchmark's workload, timed in turn with the library's backward on the same data.
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
// in its slab of planes (the scan's split at one batch item), in band order (row_order.h, as
// the scan), into an accumulator of its own (no races; the kernel's slabs meet at one plane).
// Corners are clamped into the volume, so every point reads and writes 8 elements.
//
// Usage: access_floor [S 128] [noise 0.05] [pairs 20]     (threads: OMP_NUM_THREADS)
// Prints the floor's and the library's median times and the median of their ratio per pair.
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "acl/acl.h"
#include "aclnnop/aclnn_grid_sampler3d_backward.h"
#include "kernels/row_order.h"
#include "registration_workload.h"

namespace {

struct PointRecord {  // 16 bytes, as the grid's and gradOutput's per point
    int32_t first;     // the first corner's element offset
    int32_t grid_grad; // where its gridGrad goes (3 floats)
    float grad;        // gradOutput
    float weight;      // its x weight (one weight: the least arithmetic)
};

double Milliseconds(std::chrono::steady_clock::time_point start) {
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
}

double Median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
    const int64_t s = argc > 1 ? std::atoll(argv[1]) : 128;
    const float noise = argc > 2 ? std::atof(argv[2]) : 0.05f;
    const int pairs = argc > 3 ? std::atoi(argv[3]) : 20;
    if (s < 2 || pairs < 1) {
        std::fprintf(stderr, "usage: access_floor [S >= 2] [noise] [pairs >= 1]\n");
        return 2;
    }
    const int64_t points = s * s * s;
    // The floor writes a gridGrad of its own: the library's outputs are the library's alone.
    std::vector<float> input(points), grad(points), grid(points * 3), input_grad(points), grid_grad(points * 3),
        floor_grid_grad(points * 3);
    FillRegistrationWorkload(input.data(), grad.data(), grid.data(), 1, 1, s, noise);

    // The floor's records: each thread's points in visiting order (band order, its slab).
    const int threads = std::max(1, omp_get_max_threads());
    const int64_t slab_depth = (s + threads - 1) / threads;
    std::vector<std::vector<PointRecord>> records(threads);
    const int64_t band = gs3d::kernels::BandRows(s * static_cast<int64_t>(sizeof(float)), gs3d::kernels::kScanBandBytes);
    for (gs3d::kernels::BandedRows row(s, s, band); !row.Done(); row.Next())
        for (int64_t w = 0; w < s; ++w) {
            const int64_t p = (row.d * s + row.h) * s + w;
            int64_t first[3];
            float fraction[3];
            for (int axis = 0; axis < 3; ++axis) {  // align_corners false: ((g + 1) * S - 1) / 2
                const float index = ((grid[3 * p + axis] + 1) * static_cast<float>(s) - 1) / 2;
                first[axis] = std::clamp<int64_t>(static_cast<int64_t>(std::floor(index)), 0, s - 2);
                fraction[axis] = index - std::floor(index);
            }
            const int owner = static_cast<int>(first[2] / slab_depth);
            records[owner].push_back({static_cast<int32_t>((first[2] * s + first[1]) * s + first[0]),
                                      static_cast<int32_t>(3 * p), grad[p], fraction[0]});
        }
    std::vector<std::vector<float>> accumulators(threads, std::vector<float>(points));
    const int64_t plane = s * s;
    const int64_t corner_rows[4] = {0, s, plane, plane + s};  // (y, z) of the four pairs

    auto floor_call = [&] {
        const auto start = std::chrono::steady_clock::now();
#pragma omp parallel num_threads(threads)
        {
            const int t = omp_get_thread_num();
            float* acc = accumulators[t].data();
            const float* in = input.data();
            float* gg = floor_grid_grad.data();
            // Its slab's planes and the one after (the points' second corners), zeroed first.
            const int64_t z_begin = t * slab_depth, z_end = std::min(s, z_begin + slab_depth + 1);
            if (z_begin < z_end) std::fill(acc + z_begin * plane, acc + z_end * plane, 0.0f);
            for (const PointRecord& r : records[t]) {
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

    aclInit(nullptr);
    aclrtSetDevice(0);
    aclrtStream stream = nullptr;
    aclrtCreateStream(&stream);
    const int64_t vdims[5] = {1, 1, s, s, s}, gdims[5] = {1, s, s, s, 3}, vstore[1] = {points},
                  gstore[1] = {points * 3};
    auto make = [](const int64_t* dims, const int64_t* store, float* data) {
        return aclCreateTensor(dims, 5, ACL_FLOAT, nullptr, 0, ACL_FORMAT_NCDHW, store, 1, data);
    };
    aclTensor *tgo = make(vdims, vstore, grad.data()), *ti = make(vdims, vstore, input.data()),
              *tg = make(gdims, gstore, grid.data()), *tig = make(vdims, vstore, input_grad.data()),
              *tgg = make(gdims, gstore, grid_grad.data());
    bool mask_values[2] = {true, true};
    aclBoolArray* mask = aclCreateBoolArray(mask_values, 2);
    std::vector<char> workspace;
    auto library_call = [&] {
        const auto start = std::chrono::steady_clock::now();
        uint64_t size = 0;
        aclOpExecutor* executor = nullptr;
        aclnnStatus status =
            aclnnGridSampler3DBackwardGetWorkspaceSize(tgo, ti, tg, 0, 0, false, mask, tig, tgg, &size, &executor);
        if (status == 0) {
            if (workspace.size() < size) workspace.resize(size);
            status = aclnnGridSampler3DBackward(workspace.data(), size, executor, stream);
        }
        aclrtSynchronizeStream(stream);
        if (status != 0) {
            std::fprintf(stderr, "access_floor: the library's backward failed (%d): %s\n", status, aclGetRecentErrMsg());
            std::exit(1);
        }
        return Milliseconds(start);
    };

    floor_call(), library_call();  // warm-up: pages, threads, workspace
    std::vector<double> floor_ms, library_ms, ratios;
    for (int p = 0; p < pairs; ++p) {  // in turn, the order swapped every other pair
        double f, l;
        if (p % 2 == 0) {
            f = floor_call(), l = library_call();
        } else {
            l = library_call(), f = floor_call();
        }
        floor_ms.push_back(f), library_ms.push_back(l), ratios.push_back(l / f);
    }
    std::printf("(1, 1, %lld), noise %g, %d thread(s): floor %.2f ms (%.2f ns per point and thread), library %.2f ms; "
                "library / floor per pair: median %.2f\n",
                static_cast<long long>(s), noise, threads, Median(floor_ms), Median(floor_ms) * 1e6 * threads / points,
                Median(library_ms), Median(ratios));
    aclFinalize();
    return 0;
}
