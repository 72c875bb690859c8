#include "kernels/plan/backward.h"

#include <algorithm>

namespace gs3d::kernels {
namespace {

bool AccumulatesInFloat(ElementType type) { return type == ElementType::kFloat16 || type == ElementType::kBFloat16; }

// Grid points per batch item, where the sort's 32-bit counts and the blocks' int32 offsets hold.
int64_t PointsPerItem(const BackwardArgs& args) { return args.grid.size[1] * args.grid.size[2] * args.grid.size[3]; }

bool FromChannelsLastCopy(const BackwardArgs& args) {
    const View5& ig = args.input_grad;
    const int64_t channels = ig.size[1], voxels = ig.size[2] * ig.size[3] * ig.size[4];
    const int64_t points = PointsPerItem(args);
    if (args.options.interpolation != Interpolation::kBilinear || channels < kChannelsLastBackwardMinChannels ||
        voxels == 0 || points == 0 || args.grid.size[0] == 0)
        return false;
    // Offsets into the channels-last buffers as int32 (the SIMD blocks' gathers), the sorted
    // plan's point count, and gradOutput's channels gathered.
    if (channels * voxels > INT32_MAX || points >= static_cast<int64_t>(UINT32_MAX) ||
        !GatherableChannelStride(args.grad_output.stride[1]))
        return false;
    return ig.stride[4] == 1 && ig.stride[3] == ig.size[4] && ig.stride[2] == ig.size[3] * ig.size[4] &&
           ig.stride[1] == voxels;
}

SlabPlan PlanSlabs(const BackwardArgs& args) {
    SlabPlan plan;
    const int64_t depth = args.input.size[2];
    plan.slab_depth = std::max<int64_t>(1, CeilDiv(depth, kMaxSlabs));
    plan.slabs = std::max<int64_t>(1, CeilDiv(depth, plan.slab_depth));
    return plan;
}

// Sizes of the parts; offsets follow in layout order.
void SizeSortParts(const BackwardArgs& args, int64_t batch, WorkspaceLayout* layout) {
    const auto rows = static_cast<size_t>(args.grid.size[1] * args.grid.size[2]);
    const auto points = static_cast<size_t>(batch) * rows * static_cast<size_t>(args.grid.size[3]);
    const auto segments = static_cast<size_t>(std::max<int64_t>(1, SegmentsPerRow(args.grid.size[3])));
    layout->keys.bytes = AlignWorkspace(points * sizeof(uint8_t));
    layout->order.bytes = AlignWorkspace(points * sizeof(uint16_t));
    layout->row_lowest.bytes = layout->row_highest.bytes =
        AlignWorkspace(static_cast<size_t>(batch) * rows * segments * sizeof(uint32_t));
}

void PlaceParts(WorkspaceLayout* layout) {
    size_t next = 0;
    for (WorkspacePart* part :
         {&layout->accumulator, &layout->keys, &layout->order, &layout->row_lowest, &layout->row_highest}) {
        part->offset = part->bytes ? next : 0;
        next += part->bytes;
    }
    layout->bytes = next;
}

}  // namespace

BackwardPlan PlanBackward(const BackwardArgs& args) {
    BackwardPlan plan;
    plan.grid_grad = args.compute_grid_grad;
    plan.slabs = PlanSlabs(args);
    WorkspaceLayout& layout = plan.workspace;
    const int64_t* size = args.input_grad.size;
    if (!args.compute_input_grad) {
        plan.path = args.compute_grid_grad ? BackwardPath::kGridGradOnly : BackwardPath::kNothing;
    } else if (args.options.interpolation == Interpolation::kTricubic) {
        plan.path = BackwardPath::kTricubic;
    } else if (FromChannelsLastCopy(args)) {
        plan.path = BackwardPath::kChannelsLastCopy;
        plan.unit_channels = true;
        const size_t compute_bytes = args.type == ElementType::kFloat64 ? 8 : 4;  // fp16 and bf16 in fp32
        const auto elements = static_cast<size_t>(size[1] * size[2] * size[3] * size[4]);
        layout.accumulator.bytes = AlignWorkspace(elements * compute_bytes);
        const int64_t channels_last[5] = {size[1] * size[2] * size[3] * size[4], 1, size[3] * size[4] * size[1],
                                          size[4] * size[1], size[1]};  // (D, H, W, C) of one item
        std::copy(channels_last, channels_last + 5, layout.accumulator_stride);
        SizeSortParts(args, 1, &layout);  // the items run one after the other
        PlaceParts(&layout);
        return plan;
    } else {
        plan.path = PointsPerItem(args) >= static_cast<int64_t>(UINT32_MAX) ? BackwardPath::kPerChannel
                                                                           : BackwardPath::kScanElseSortedSlabs;
    }
    // fp16 and bf16 sum inputGrad in an fp32 copy, contiguous (N, C, D, H, W).
    layout.accumulator_stride[4] = 1;
    for (int i = 4; i > 0; --i) layout.accumulator_stride[i - 1] = layout.accumulator_stride[i] * size[i];
    const bool in_float = AccumulatesInFloat(args.type);
    if (in_float && args.compute_input_grad) {
        size_t elements = 1;
        for (int i = 0; i < 5; ++i) elements *= static_cast<size_t>(size[i]);
        layout.accumulator.bytes = AlignWorkspace(elements * sizeof(float));
    }
    const int64_t accumulator_channel_stride = in_float ? layout.accumulator_stride[1] : args.input_grad.stride[1];
    plan.unit_channels = args.input.stride[1] == 1 && accumulator_channel_stride == 1 &&
                         GatherableChannelStride(args.grad_output.stride[1]);
    if (plan.path == BackwardPath::kScanElseSortedSlabs) SizeSortParts(args, args.grid.size[0], &layout);
    PlaceParts(&layout);
    return plan;
}

BackwardWorkspace WorkspaceAt(const WorkspaceLayout& layout, void* workspace) {
    char* base = static_cast<char*>(workspace);
    auto at = [base](const WorkspacePart& part) { return part.bytes ? base + part.offset : nullptr; };
    BackwardWorkspace ws;
    ws.accumulator = reinterpret_cast<float*>(at(layout.accumulator));
    ws.accumulator_stride = layout.accumulator_stride;
    ws.keys = reinterpret_cast<uint8_t*>(at(layout.keys));
    ws.order = reinterpret_cast<uint16_t*>(at(layout.order));
    ws.row_lowest = reinterpret_cast<uint32_t*>(at(layout.row_lowest));
    ws.row_highest = reinterpret_cast<uint32_t*>(at(layout.row_highest));
    return ws;
}

BackwardArgs OneBatchItem(const BackwardArgs& args, int64_t n) {
    BackwardArgs item = args;
    for (View5* view : {&item.grad_output, &item.input, &item.grid, &item.input_grad, &item.grid_grad})
        *view = BatchItem(*view, ElementBytes(args.type), n);
    return item;
}

}  // namespace gs3d::kernels
