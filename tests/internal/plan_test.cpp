// The plans alone (ForwardPlan in grid_sampler3d_kernels.h, BackwardPlan in plan/backward.h),
// from views with no data: the path each kind of call takes, and a workspace whose parts are
// aligned, disjoint and sized from the shapes (sizes computed here, not read from the plan's
// code).
#include <gtest/gtest.h>
#include <omp.h>

#include <algorithm>
#include <cstdint>
#include <vector>

#include "kernels/plan/backward.h"

namespace gs3d::kernels {
namespace {

// A dense view of logical shape `size` (N, C, D, H, W) or (N, D, H, W, 3), laid out in the
// memory order `order` (the logical axes, outermost first).
View5 Dense(std::vector<int64_t> size, std::vector<int> order) {
    View5 view;
    int64_t stride = 1;
    for (int i = 4; i >= 0; --i) {
        view.size[order[i]] = size[order[i]];
        view.stride[order[i]] = stride;
        stride *= size[order[i]];
    }
    return view;
}

const std::vector<int> kNcdhw = {0, 1, 2, 3, 4}, kNdhwc = {0, 2, 3, 4, 1};

// A backward of input (N, C, D, H, W) sampled at an (N, Do, Ho, Wo) grid.
BackwardArgs Args(ElementType type, int64_t n, int64_t c, int64_t d, int64_t h, int64_t w, int64_t out_d,
                  int64_t out_h, int64_t out_w, const std::vector<int>& layout,
                  Interpolation interpolation = Interpolation::kBilinear) {
    BackwardArgs args;
    args.type = type;
    args.options.interpolation = interpolation;
    args.input = args.input_grad = Dense({n, c, d, h, w}, layout);
    args.grad_output = Dense({n, c, out_d, out_h, out_w}, layout);
    args.grid = args.grid_grad = Dense({n, out_d, out_h, out_w, 3}, kNcdhw);
    return args;
}

size_t Aligned(size_t bytes) { return (bytes + 63) / 64 * 64; }

// Every part 64-byte aligned, inside the workspace, and apart from every other.
void ExpectPartsLaidOut(const WorkspaceLayout& layout) {
    std::vector<WorkspacePart> parts;
    for (const WorkspacePart& part :
         {layout.accumulator, layout.keys, layout.order, layout.row_lowest, layout.row_highest})
        if (part.bytes) parts.push_back(part);
    std::sort(parts.begin(), parts.end(), [](auto a, auto b) { return a.offset < b.offset; });
    size_t end = 0;
    for (const WorkspacePart& part : parts) {
        EXPECT_EQ(part.offset % 64, 0u);
        EXPECT_GE(part.offset, end);
        end = part.offset + part.bytes;
    }
    EXPECT_LE(end, layout.bytes);
}

TEST(BackwardPlan, OneChannelScansOrSortsEveryPoint) {
    const BackwardArgs args = Args(ElementType::kFloat32, 2, 1, 16, 8, 8, 4, 5, 70000, kNcdhw);
    const BackwardPlan plan = PlanBackward(args);
    EXPECT_EQ(plan.path, BackwardPath::kScanElseSortedSlabs);
    EXPECT_TRUE(plan.grid_grad);
    EXPECT_FALSE(plan.unit_channels);  // NCDHW: a point's one channel has no neighbour
    EXPECT_EQ(plan.slabs.slab_depth, 2);
    EXPECT_EQ(plan.slabs.slabs, 8);
    const size_t points = 2 * 4 * 5 * 70000, segments = 2 * 4 * 5 * 2;  // a row of 70000 is 2 segments
    EXPECT_EQ(plan.workspace.accumulator.bytes, 0u);  // fp32 sums in place
    EXPECT_EQ(plan.workspace.keys.bytes, Aligned(points));
    EXPECT_EQ(plan.workspace.order.bytes, Aligned(2 * points));
    EXPECT_EQ(plan.workspace.row_lowest.bytes, Aligned(4 * segments));
    EXPECT_EQ(plan.workspace.row_highest.bytes, Aligned(4 * segments));
    ExpectPartsLaidOut(plan.workspace);
}

TEST(BackwardPlan, HalfPrecisionSumsInAFloatCopyOfInputGrad) {
    for (ElementType type : {ElementType::kFloat16, ElementType::kBFloat16}) {
        const BackwardArgs args = Args(type, 2, 3, 5, 6, 7, 4, 4, 4, kNdhwc);
        const BackwardPlan plan = PlanBackward(args);
        EXPECT_EQ(plan.path, BackwardPath::kScanElseSortedSlabs);
        EXPECT_EQ(plan.workspace.accumulator.bytes, Aligned(2 * 3 * 5 * 6 * 7 * 4));
        const int64_t contiguous[5] = {3 * 5 * 6 * 7, 5 * 6 * 7, 6 * 7, 7, 1};
        EXPECT_TRUE(std::equal(contiguous, contiguous + 5, plan.workspace.accumulator_stride));
        // The copy is NCDHW, so channels are apart even where the input has them together.
        EXPECT_FALSE(plan.unit_channels);
        ExpectPartsLaidOut(plan.workspace);
    }
    EXPECT_TRUE(PlanBackward(Args(ElementType::kFloat32, 2, 3, 5, 6, 7, 4, 4, 4, kNdhwc)).unit_channels);
}

TEST(BackwardPlan, ManyChannelsNcdhwGoChannelsLastItemByItem) {
    for (ElementType type : {ElementType::kFloat32, ElementType::kFloat64, ElementType::kFloat16}) {
        const BackwardArgs args = Args(type, 3, 8, 5, 6, 7, 4, 4, 9, kNcdhw);
        const BackwardPlan plan = PlanBackward(args);
        EXPECT_EQ(plan.path, BackwardPath::kChannelsLastCopy);
        EXPECT_TRUE(plan.unit_channels);
        const size_t compute_bytes = type == ElementType::kFloat64 ? 8 : 4;
        EXPECT_EQ(plan.workspace.accumulator.bytes, Aligned(8 * 5 * 6 * 7 * compute_bytes));  // one item
        const int64_t channels_last[5] = {8 * 5 * 6 * 7, 1, 6 * 7 * 8, 7 * 8, 8};
        EXPECT_TRUE(std::equal(channels_last, channels_last + 5, plan.workspace.accumulator_stride));
        EXPECT_EQ(plan.workspace.keys.bytes, Aligned(4 * 4 * 9));  // one item's points
        ExpectPartsLaidOut(plan.workspace);
    }
    // Not below the threshold, not for nearest, not channels-last.
    EXPECT_EQ(PlanBackward(Args(ElementType::kFloat32, 3, kChannelsLastBackwardMinChannels - 1, 5, 6, 7, 4, 4, 9, kNcdhw)).path,
              BackwardPath::kScanElseSortedSlabs);
    EXPECT_EQ(PlanBackward(Args(ElementType::kFloat32, 3, 8, 5, 6, 7, 4, 4, 9, kNcdhw, Interpolation::kNearest)).path,
              BackwardPath::kScanElseSortedSlabs);
    EXPECT_EQ(PlanBackward(Args(ElementType::kFloat32, 3, 8, 5, 6, 7, 4, 4, 9, kNdhwc)).path,
              BackwardPath::kScanElseSortedSlabs);
}

TEST(BackwardPlan, TheMaskDecidesWhatRuns) {
    BackwardArgs args = Args(ElementType::kFloat16, 2, 8, 5, 6, 7, 4, 4, 9, kNcdhw);
    args.compute_input_grad = false;
    BackwardPlan plan = PlanBackward(args);
    EXPECT_EQ(plan.path, BackwardPath::kGridGradOnly);
    EXPECT_EQ(plan.workspace.bytes, 0u);  // nothing is scattered, nothing sorted
    args.compute_grid_grad = false;
    plan = PlanBackward(args);
    EXPECT_EQ(plan.path, BackwardPath::kNothing);
    EXPECT_EQ(plan.workspace.bytes, 0u);
    args.compute_input_grad = true;
    plan = PlanBackward(args);
    EXPECT_EQ(plan.path, BackwardPath::kChannelsLastCopy);
    EXPECT_FALSE(plan.grid_grad);
}

TEST(BackwardPlan, PointsBeyondTheSortsCountsGoChannelByChannel) {
    // 2^32 - 1 points in one batch item: no sort, no sort parts (views without data).
    const BackwardArgs args = Args(ElementType::kFloat32, 1, 1, 4, 4, 4, 65535, 65537, 1, kNcdhw);
    const BackwardPlan plan = PlanBackward(args);
    EXPECT_EQ(plan.path, BackwardPath::kPerChannel);
    EXPECT_EQ(plan.workspace.bytes, 0u);
    const BackwardArgs fewer = Args(ElementType::kFloat32, 1, 1, 4, 4, 4, 65534, 65537, 1, kNcdhw);
    EXPECT_EQ(PlanBackward(fewer).path, BackwardPath::kScanElseSortedSlabs);  // 65537 points fewer
}

TEST(BackwardPlan, DoesNotDependOnTheThreadCount) {
    const BackwardArgs args = Args(ElementType::kFloat32, 2, 1, 64, 8, 8, 4, 5, 9, kNcdhw);
    const int threads = omp_get_max_threads();
    omp_set_num_threads(1);
    const BackwardPlan one = PlanBackward(args);
    omp_set_num_threads(7);
    const BackwardPlan seven = PlanBackward(args);
    omp_set_num_threads(threads);
    EXPECT_EQ(one.path, seven.path);
    EXPECT_EQ(one.slabs.slab_depth, seven.slabs.slab_depth);
    EXPECT_EQ(one.slabs.slabs, seven.slabs.slabs);
    EXPECT_EQ(one.workspace.bytes, seven.workspace.bytes);
    EXPECT_EQ(one.slabs.slabs, kMaxSlabs);  // 64 planes in 8 slabs of 8
}

ForwardArgs ForwardOf(const BackwardArgs& backward) {
    ForwardArgs args;
    args.type = backward.type;
    args.options = backward.options;
    args.input = backward.input;
    args.grid = backward.grid;
    args.out = backward.grad_output;
    return args;
}

TEST(ForwardPlan, ManyChannelsNcdhwSampleAChannelsLastCopy) {
    for (ElementType type : {ElementType::kFloat32, ElementType::kFloat64, ElementType::kFloat16}) {
        const ForwardPlan plan = PlanForward(ForwardOf(Args(type, 2, 4, 5, 6, 7, 3, 3, 3, kNcdhw)));
        EXPECT_TRUE(plan.from_channels_last_copy);
        EXPECT_FALSE(plan.unit_channels);
        EXPECT_EQ(plan.workspace_bytes, 4 * 5 * 6 * 7 * ElementBytes(type));  // one batch item
    }
    const ForwardPlan three = PlanForward(ForwardOf(Args(ElementType::kFloat32, 2, 3, 5, 6, 7, 3, 3, 3, kNcdhw)));
    EXPECT_FALSE(three.from_channels_last_copy);
    EXPECT_EQ(three.workspace_bytes, 0u);
    EXPECT_FALSE(PlanForward(ForwardOf(Args(ElementType::kFloat32, 2, 4, 5, 6, 7, 3, 3, 3, kNcdhw,
                                            Interpolation::kNearest)))
                     .from_channels_last_copy);
    const ForwardPlan last = PlanForward(ForwardOf(Args(ElementType::kFloat32, 2, 4, 5, 6, 7, 3, 3, 3, kNdhwc)));
    EXPECT_FALSE(last.from_channels_last_copy);
    EXPECT_TRUE(last.unit_channels);
    ForwardArgs broadcast = ForwardOf(Args(ElementType::kFloat32, 2, 4, 5, 6, 7, 3, 3, 3, kNcdhw));
    broadcast.input.stride[2] = 0;  // every plane the same memory: a copy would be larger
    EXPECT_FALSE(PlanForward(broadcast).from_channels_last_copy);
}

TEST(BackwardPlan, OneBatchItemViewsItemNAlone) {
    BackwardArgs args = Args(ElementType::kFloat64, 3, 2, 4, 4, 4, 2, 2, 2, kNdhwc);
    std::vector<double> storage(3 * 2 * 4 * 4 * 4);
    args.input.data = storage.data();
    args.grid.data = nullptr;  // absent views stay absent
    const BackwardArgs item = OneBatchItem(args, 2);
    EXPECT_EQ(item.input.data, storage.data() + 2 * args.input.stride[0]);
    EXPECT_EQ(item.grid.data, nullptr);
    for (const View5* view : {&item.input, &item.grid, &item.grad_output, &item.input_grad, &item.grid_grad})
        EXPECT_EQ(view->size[0], 1);
}

}  // namespace
}  // namespace gs3d::kernels
