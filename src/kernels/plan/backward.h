// The backward's plan: the path, the work split and the workspace layout, made once from the
// arguments' shapes, strides and options (GetWorkspaceSize) and held by the executor. It
// never depends on the thread count, so results are the same for any OMP_NUM_THREADS.
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
    int64_t slab_depth = 1;  // input depths (D) per slab
    int64_t slabs = 0;       // per batch item
};

// The sorted plan sorts each grid row in segments of at most this many points, so that a
// point's place in its segment fits the 16 bits of `order` (rows longer than this, such as a
// point list given as a grid of shape (N, 1, 1, P, 3), take several).
constexpr int64_t kSegmentPoints = 65536;
inline int64_t SegmentsPerRow(int64_t out_w) { return (out_w + kSegmentPoints - 1) / kSegmentPoints; }

// The bilinear backward with inputGrad laid out NCDHW (dense within each batch item) and at
// least this many channels runs batch item by batch item with channels last
// (BackwardPath::kChannelsLastCopy).
constexpr int64_t kChannelsLastBackwardMinChannels = 4;  // 2 channels lose: they run one by one there

// gradOutput's channel stride as the int32 offsets of a gather of up to 16 lanes.
inline bool GatherableChannelStride(int64_t stride) {
    constexpr int64_t kMaxLanes = 16;
    return stride >= -(INT32_MAX / kMaxLanes) && stride <= INT32_MAX / kMaxLanes;
}

enum class BackwardPath {
    kNothing,       // neither gradient asked for
    kGridGradOnly,  // gridGrad alone: rows in parallel, nothing scattered
    // inputGrad with more than 2^32 - 1 points per batch item (the sort's 32-bit counts):
    // whole (n, c) volumes per task (PerChannelBackward).
    kPerChannel,
    // The scan (backward/scan-inl.h) where the grid's rows reach few input planes, which it
    // measures on the grid at launch (the grid's values are not known here); else the sorted
    // slabs (SlabBackward). Both use the same workspace parts.
    kScanElseSortedSlabs,
    // Bilinear, inputGrad dense NCDHW with kChannelsLastBackwardMinChannels or more: batch
    // item by batch item, channels last (ChannelsLastCopyBackward, sorted slabs).
    kChannelsLastCopy,
    // Tricubic (tricubic/backward-inl.h): each thread scatters into its slab of planes.
    kTricubic,
};

// Workspace parts start on 64-byte boundaries (cache lines, and every vector width).
inline size_t AlignWorkspace(size_t bytes) { return (bytes + 63) / 64 * 64; }
inline int64_t CeilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

// Byte offsets of the workspace's parts from its start; a part of 0 bytes is not used.
struct WorkspacePart {
    size_t offset = 0, bytes = 0;
};
struct WorkspaceLayout {
    // fp16/bf16 inputGrad in fp32, contiguous (N, C, D, H, W); or the channels-last path's
    // one batch item, (D, H, W, C) in the compute type (fp64: doubles).
    WorkspacePart accumulator;
    int64_t accumulator_stride[5] = {0, 0, 0, 0, 0};
    // Sorted slabs: per grid point (of one batch item on the channels-last path) its slab,
    // and its place in its row segment in key order, 1 + 2 bytes per point.
    WorkspacePart keys, order;
    // Per row segment the smallest key in it and the largest (sorted slabs), or per grid
    // row the first and last plane of its points (scan).
    WorkspacePart row_lowest, row_highest;
    size_t bytes = 0;  // the whole workspace
};

struct BackwardPlan {
    BackwardPath path = BackwardPath::kNothing;
    bool grid_grad = false;  // gridGrad is computed (with inputGrad, in the same pass)
    // Channels in vectors: the input and the accumulator hold a point's channels next to each
    // other, and gradOutput's channel stride can be gathered.
    bool unit_channels = false;
    SlabPlan slabs;  // the sorted slabs' cut (of every batch item)
    WorkspaceLayout workspace;
};

BackwardPlan PlanBackward(const BackwardArgs& args);

// Pointers into a workspace laid out by a plan; null where the plan has no such part.
struct BackwardWorkspace {
    float* accumulator = nullptr;
    const int64_t* accumulator_stride = nullptr;
    uint8_t* keys = nullptr;
    uint16_t* order = nullptr;
    uint32_t* row_lowest = nullptr;
    uint32_t* row_highest = nullptr;
};

BackwardWorkspace WorkspaceAt(const WorkspaceLayout& layout, void* workspace);

// Batch item n of the arguments alone: every view's BatchItem.
BackwardArgs OneBatchItem(const BackwardArgs& args, int64_t n);

void RunBackward(const BackwardArgs& args, const BackwardPlan& plan, void* workspace);
template <typename T>
void RunBackwardOf(const BackwardArgs& args, const BackwardPlan& plan, void* workspace);

}  // namespace gs3d::kernels
