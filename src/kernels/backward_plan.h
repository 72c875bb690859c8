// The backward kernel's work split and workspace layout. Both depend on the shapes only,
// never on the thread count, so results are the same for any OMP_NUM_THREADS.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/grid_sampler3d_kernels.h"

namespace gs3d::kernels {

// Slabs per batch item at most: thick slabs, so that each grid row spans few of them (a
// slab task takes a row's points in its slab: with thin slabs, a noisy row meets several and
// gives each task a few points, in part-filled blocks, after a walk over its keys), and
// still 4 tasks per phase for each batch item (8 slabs: even ones, then odd ones).
// Against 32 slabs, 8 were 10-20% faster on noisy grids and the same without noise; 16
// lay in between. The cost: a batch item has no more than 4 tasks at a time, so a
// batch of one scales to 4 threads at most in this plan.
constexpr int64_t kMaxSlabs = 8;

// The input volume of each batch item is cut into slabs along D. Every grid point gets the
// slab of its first corner along D as its key: its corners then lie in that slab and the
// next one, so tasks that own every other slab never write the same element.
struct SlabPlan {
    bool usable = false;     // false: more than 2^32 - 1 points per batch item, or no inputGrad
    int64_t slab_depth = 1;  // input depths (D) per slab
    int64_t slabs = 0;       // per batch item
};

SlabPlan PlanSlabs(const BackwardArgs& args);

// The sorted plan sorts each grid row in segments of at most this many points, so that a
// point's place in its segment fits the 16 bits of `order` (rows longer than this, such as a
// point list given as a grid of shape (N, 1, 1, P, 3), take several).
constexpr int64_t kSegmentPoints = 65536;
inline int64_t SegmentsPerRow(int64_t out_w) { return (out_w + kSegmentPoints - 1) / kSegmentPoints; }

// Pointers into the workspace; null where the plan needs no such part.
struct BackwardWorkspace {
    // fp16/bf16 inputGrad in fp32, contiguous (N, C, D, H, W), with its strides; or the
    // channels-last backward's (BackwardFromChannelsLastCopy) of one batch item, (D, H, W, C)
    // in the compute type (fp64: doubles), its strides its own.
    float* accumulator = nullptr;
    int64_t accumulator_stride[5] = {0, 0, 0, 0, 0};
    // Sorted slabs: per grid point (of one batch item for the channels-last backward), the slabs of its row segment's points, sorted; and the
    // segment's points (w from the segment's first) in key order. 1 + 2 bytes per point.
    uint8_t* keys = nullptr;
    uint16_t* order = nullptr;
    // Per row segment (sorted slabs; (n, d, h) then segment) the smallest key in it and the
    // largest, or per grid row (n, d, h) the first and last plane of its points (scan).
    uint32_t* row_lowest = nullptr;
    uint32_t* row_highest = nullptr;
};

BackwardWorkspace LayOutWorkspace(const BackwardArgs& args, void* workspace);

// Batch item n of the arguments alone: every view of size 1 along N, its data offset to item n.
BackwardArgs OneBatchItem(const BackwardArgs& args, int64_t n);

// The channels-last backward's accumulator (BackwardFromChannelsLastCopy): one batch item's
// inputGrad, (D, H, W, C) in the compute type, this many bytes (aligned).
size_t ChannelsLastAccumulatorBytes(const BackwardArgs& args);

}  // namespace gs3d::kernels
