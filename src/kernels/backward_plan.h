// The backward kernel's work split and workspace layout. Both depend on the shapes only,
// never on the thread count, so results are the same for any OMP_NUM_THREADS.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/grid_sampler3d_kernels.h"

namespace gs3d::kernels {

// The bin of a grid point that touches no voxel.
constexpr uint16_t kSkipPoint = 0xFFFF;

// Grid points are binned by the D-slab of their first corner: the slab decides which task
// may write (even slabs, then odd ones, in parallel). Within a bin points keep grid order.
struct SlabPlan {
    bool usable = false;       // false: more than 2^32 - 1 points per batch item, or no inputGrad
    int64_t slab_depth = 1;    // input depths (D) per slab
    int64_t slabs = 0;         // per batch item: the bins
    int64_t rows_per_chunk = 1;  // grid rows (d, h) per binning chunk
    int64_t chunks_per_batch = 0;
};

SlabPlan PlanSlabs(const BackwardArgs& args);

// Pointers into the workspace; null where the plan needs no such part.
struct BackwardWorkspace {
    float* accumulator = nullptr;  // fp16/bf16 inputGrad in fp32, contiguous (N, C, D, H, W)
    int64_t accumulator_stride[5] = {0, 0, 0, 0, 0};
    uint16_t* keys = nullptr;      // per grid point: its slab, or kSkipPoint
    uint32_t* order = nullptr;     // per batch item: point indices, grouped by bin
    uint32_t* counts = nullptr;    // per (n, chunk, slab): count, then first position
    uint32_t* bin_begin = nullptr;  // per (n, slab + 1): where each slab's bin starts in `order`
};

BackwardWorkspace LayOutWorkspace(const BackwardArgs& args, void* workspace);

}  // namespace gs3d::kernels
