#include "kernels/backward_plan.h"

#include <algorithm>

namespace gs3d::kernels {
namespace {

constexpr size_t kAlignment = 64;

int64_t CeilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

bool NeedsAccumulator(const BackwardArgs& args) {
    return args.compute_input_grad && (args.type == ElementType::kFloat16 || args.type == ElementType::kBFloat16);
}

// Byte sizes of the workspace's parts, in layout order.
struct Parts {
    size_t accumulator = 0, keys = 0, order = 0, row_lowest = 0, row_highest = 0;
};

size_t Align(size_t bytes) { return (bytes + kAlignment - 1) / kAlignment * kAlignment; }

// The plan's parts (keys, order, row ranges) for the batch items of args.
void PlanPartSizes(const BackwardArgs& args, Parts* parts_out) {
    Parts& parts = *parts_out;
    const SlabPlan plan = PlanSlabs(args);
    const auto batch = static_cast<size_t>(args.grid.size[0]);
    const auto rows = static_cast<size_t>(args.grid.size[1] * args.grid.size[2]);
    const auto points = rows * static_cast<size_t>(args.grid.size[3]);
    if (plan.usable) {
        // Row ranges for the scan (one per row) or the sorted slabs (one per segment).
        const auto segments = static_cast<size_t>(std::max<int64_t>(1, SegmentsPerRow(args.grid.size[3])));
        parts.keys = Align(batch * points * sizeof(uint8_t));
        parts.order = Align(batch * points * sizeof(uint16_t));
        parts.row_lowest = parts.row_highest = Align(batch * rows * segments * sizeof(uint32_t));
    }
}

// The channels-last backward: its accumulator, then the plan for one batch item (the items
// run one after the other). Otherwise fp16 and bf16's accumulator of the whole inputGrad,
// then the plan for every item.
Parts PartSizes(const BackwardArgs& args) {
    Parts parts;
    if (BackwardFromChannelsLastCopy(args)) {
        parts.accumulator = ChannelsLastAccumulatorBytes(args);
        PlanPartSizes(OneBatchItem(args, 0), &parts);
        return parts;
    }
    if (NeedsAccumulator(args)) {
        size_t elements = 1;
        for (int64_t s : args.input_grad.size) elements *= static_cast<size_t>(s);
        parts.accumulator = Align(elements * sizeof(float));
    }
    PlanPartSizes(args, &parts);
    return parts;
}

}  // namespace

SlabPlan PlanSlabs(const BackwardArgs& args) {
    SlabPlan plan;
    const int64_t points = args.grid.size[1] * args.grid.size[2] * args.grid.size[3];
    if (!args.compute_input_grad || points >= static_cast<int64_t>(UINT32_MAX)) return plan;
    const int64_t depth = args.input.size[2];
    plan.usable = true;
    plan.slab_depth = std::max<int64_t>(1, CeilDiv(depth, kMaxSlabs));
    plan.slabs = std::max<int64_t>(1, CeilDiv(depth, plan.slab_depth));
    return plan;
}

BackwardWorkspace LayOutWorkspace(const BackwardArgs& args, void* workspace) {
    BackwardWorkspace ws;
    const Parts parts = PartSizes(args);
    char* next = static_cast<char*>(workspace);
    auto take = [&next](size_t bytes) {
        char* p = bytes ? next : nullptr;
        next += bytes;
        return p;
    };
    ws.accumulator = reinterpret_cast<float*>(take(parts.accumulator));
    ws.keys = reinterpret_cast<uint8_t*>(take(parts.keys));
    ws.order = reinterpret_cast<uint16_t*>(take(parts.order));
    ws.row_lowest = reinterpret_cast<uint32_t*>(take(parts.row_lowest));
    ws.row_highest = reinterpret_cast<uint32_t*>(take(parts.row_highest));
    const int64_t* size = args.input_grad.size;
    if (BackwardFromChannelsLastCopy(args)) {  // (D, H, W, C) of one item
        const int64_t strides[5] = {size[1] * size[2] * size[3] * size[4], 1, size[3] * size[4] * size[1],
                                    size[4] * size[1], size[1]};
        std::copy(strides, strides + 5, ws.accumulator_stride);
        return ws;
    }
    ws.accumulator_stride[4] = 1;
    for (int i = 4; i > 0; --i) ws.accumulator_stride[i - 1] = ws.accumulator_stride[i] * size[i];
    return ws;
}

BackwardArgs OneBatchItem(const BackwardArgs& args, int64_t n) {
    BackwardArgs item = args;
    const int64_t bytes = static_cast<int64_t>(ElementBytes(args.type));
    for (View5* view : {&item.grad_output, &item.input, &item.grid, &item.input_grad, &item.grid_grad}) {
        if (view->data) view->data = static_cast<char*>(view->data) + n * view->stride[0] * bytes;
        view->size[0] = 1;
    }
    return item;
}

size_t ChannelsLastAccumulatorBytes(const BackwardArgs& args) {
    const View5& ig = args.input_grad;
    const size_t compute_bytes = args.type == ElementType::kFloat64 ? 8 : 4;  // fp16 and bf16 in fp32
    return Align(static_cast<size_t>(ig.size[1] * ig.size[2] * ig.size[3] * ig.size[4]) * compute_bytes);
}

size_t BackwardWorkspaceBytes(const BackwardArgs& args) {
    const Parts parts = PartSizes(args);
    return parts.accumulator + parts.keys + parts.order + parts.row_lowest + parts.row_highest;
}

}  // namespace gs3d::kernels
