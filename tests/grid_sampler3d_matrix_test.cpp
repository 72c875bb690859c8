// The full matrix against the independent double reference: interpolation (bilinear,
// nearest, and tricubic through the gs3d extension calls) x padding x
// alignCorners x dtype x layout (NCDHW, NDHWC; contiguous, padded, reversed strides, offset),
// random sizes 1 to 9 per input dim, grids inside, on and outside [-1, 1]. Each case checks
// the forward, both backward outputs, and that nothing outside the views was written.
#include <gtest/gtest.h>

#include <random>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include "gridsampler3d/cpu_device.h"
#include "support/op_runner.h"
#include "support/test_tensor.h"

namespace gs3d_test {
namespace {

struct LayoutCase {
    bool channel_last;
    Layout layout;
    int64_t offset;
};

using MatrixParam = std::tuple<int, int, bool, aclDataType, LayoutCase>;

// Random cases of one matrix cell: sizes drawn from the given ranges, channel counts from
// `channel_counts`; forward, both backward outputs and the untouched memory around the views.
struct SizeRanges {
    int64_t in_min, in_max, out_min, out_max;
    std::vector<int64_t> channel_counts;
    double near_identity_sigma = 0;  // > 0: NearIdentityGrid with this noise instead of random grids
    int64_t width = 0;               // > 0: the input's and the output's W, instead of a size from the ranges
};

void CheckRandomCases(const MatrixParam& param, const SizeRanges& ranges, int repeats, unsigned seed) {
    const auto [interpolation, padding, align, type, layout] = param;
    const RefOptions options{interpolation, padding, align};
    const aclFormat format = layout.channel_last ? ACL_FORMAT_NDHWC : ACL_FORMAT_NCDHW;
    std::mt19937 rng(seed + static_cast<unsigned>(interpolation * 1000 + padding * 100 + align * 10 + type));
    std::uniform_int_distribution<int64_t> in_size(ranges.in_min, ranges.in_max),
        out_size(ranges.out_min, ranges.out_max), batch(1, 2);
    std::uniform_int_distribution<size_t> channel_pick(0, ranges.channel_counts.size() - 1);
    for (int repeat = 0; repeat < repeats; ++repeat) {
        const int64_t n = batch(rng), c = ranges.channel_counts[channel_pick(rng)], d = in_size(rng),
                      h = in_size(rng), w = ranges.width > 0 ? ranges.width : in_size(rng);
        const int64_t od = out_size(rng), oh = out_size(rng), ow = ranges.width > 0 ? ranges.width : out_size(rng);
        std::ostringstream label;
        label << "N" << n << " C" << c << " in " << d << "x" << h << "x" << w << " out " << od << "x" << oh << "x"
              << ow << " " << DtypeName(type) << " " << LayoutName(layout.layout)
              << (layout.channel_last ? " NDHWC" : " NCDHW");
        SCOPED_TRACE(label.str());

        const Array5 input_values = RandomArray(rng, n, c, d, h, w);
        const Array5 grid_values = ranges.near_identity_sigma > 0
                                       ? NearIdentityGrid(rng, n, od, oh, ow, ranges.near_identity_sigma)
                                       : RandomArray(rng, n, od, oh, ow, 3, /*grid=*/true);
        const Array5 grad_values = RandomArray(rng, n, c, od, oh, ow);

        TestTensor input(VolumeDims(n, c, d, h, w, layout.channel_last), type, format, layout.layout, layout.offset);
        TestTensor grid({n, od, oh, ow, 3}, type, ACL_FORMAT_ND, layout.layout, layout.offset);
        TestTensor grad(VolumeDims(n, c, od, oh, ow, layout.channel_last), type, format, layout.layout, layout.offset);
        TestTensor out(VolumeDims(n, c, od, oh, ow, layout.channel_last), type, format, layout.layout, layout.offset);
        TestTensor input_grad(VolumeDims(n, c, d, h, w, layout.channel_last), type, format, layout.layout,
                              layout.offset);
        TestTensor grid_grad({n, od, oh, ow, 3}, type, ACL_FORMAT_ND, layout.layout, layout.offset);
        StoreVolume(input_values, layout.channel_last, &input);
        StoreGrid(grid_values, &grid);
        StoreVolume(grad_values, layout.channel_last, &grad);
        input_grad.Fill(7);  // the op must overwrite, not accumulate into, inputGrad

        ASSERT_EQ(RunForward(input.get(), grid.get(), options, out.get()), ACLNN_SUCCESS);
        ASSERT_EQ(RunBackward(grad.get(), input.get(), grid.get(), options, std::nullopt, input_grad.get(),
                              grid_grad.get()),
                  ACLNN_SUCCESS);

        Array5 expected_input_grad, expected_grid_grad;
        ReferenceBackward(grad_values, input_values, grid_values, options, &expected_input_grad, &expected_grid_grad);
        EXPECT_EQ(CompareArrays(LoadVolume(out, layout.channel_last), ReferenceForward(input_values, grid_values, options),
                                type),
                  "")
            << "forward";
        EXPECT_EQ(CompareArrays(LoadVolume(input_grad, layout.channel_last), expected_input_grad, type), "")
            << "inputGrad";
        EXPECT_EQ(CompareArrays(LoadGrid(grid_grad), expected_grid_grad, type), "") << "gridGrad";
        for (const TestTensor* t : {&input, &grid, &grad, &out, &input_grad, &grid_grad})
            EXPECT_TRUE(t->OutsideViewUntouched());
    }
}

class GridSamplerMatrix : public ::testing::TestWithParam<MatrixParam> {};

TEST_P(GridSamplerMatrix, ForwardAndBackwardMatchReference) {
    CheckRandomCases(GetParam(), SizeRanges{1, 9, 1, 5, {1, 2, 3}}, 3, 1234u);
}

// Wider channels (the channel-vector path of NDHWC: full vectors, rests of 8 and of 4 lanes
// (13 = 8 + 4 + 1, 29 = 16 + 8 + 4 + 1 on AVX-512) and a scalar rest) and grids of several
// SIMD blocks and slabs, with points near and outside the borders (the vector forms of the
// source index, floor and round against the reference).
class GridSamplerWide : public ::testing::TestWithParam<MatrixParam> {};

TEST_P(GridSamplerWide, ForwardAndBackwardMatchReference) {
    CheckRandomCases(GetParam(), SizeRanges{3, 12, 6, 11, {4, 5, 8, 9, 13, 16, 17, 29, 35}}, 2, 77u);
}

// Many channels apart (NCDHW, contiguous and padded): the per-channel chunks of blocks
// (BlockChunk) over 32 to 49 channels, every mode, fp32 and bf16.
class GridSamplerManyChannels : public ::testing::TestWithParam<MatrixParam> {};

TEST_P(GridSamplerManyChannels, ForwardAndBackwardMatchReference) {
    CheckRandomCases(GetParam(), SizeRanges{3, 9, 4, 9, {32, 35, 45, 49}}, 2, 4242u);
}

// Grids close to the identity, as in registration, under 2 and 3 threads: the backward
// scans (one slab per thread; bilinear with one channel, nearest with any), so rows cross
// slab boundaries, and corners and gridGrad are split between the slabs' tasks. (Not 5:
// growing the OpenMP team to 5 threads on this 2-core machine leaves 3 blocks of libomp's
// own, 4320 bytes, that LeakSanitizer reports at exit; docs/reliability.md.)
class GridSamplerNearIdentity : public ::testing::TestWithParam<MatrixParam> {};

TEST_P(GridSamplerNearIdentity, ForwardAndBackwardMatchReference) {
    for (int32_t threads : {2, 3}) {
        SCOPED_TRACE("threads " + std::to_string(threads));
        ASSERT_EQ(gs3dSetNumThreads(threads), ACL_SUCCESS);
        CheckRandomCases(GetParam(), SizeRanges{8, 14, 8, 14, {1, 1, 3}, 0.05}, 1, 99u + threads);
    }
    ASSERT_EQ(gs3dSetNumThreads(0), ACL_SUCCESS);  // back to the default
}

// Rows wide enough (160 elements) that the backward visits them in several bands along H
// (plan/row_order.h: the scan's bands are 4 rows here, the sorted slabs' 5 or 8): near the
// identity, one channel and 3 scan (bilinear in bands, nearest in grid order) or take the
// sorted slabs, 5 the channels-last copy.
class GridSamplerBands : public ::testing::TestWithParam<MatrixParam> {};

TEST_P(GridSamplerBands, ForwardAndBackwardMatchReference) {
    for (int32_t threads : {1, 2}) {
        SCOPED_TRACE("threads " + std::to_string(threads));
        ASSERT_EQ(gs3dSetNumThreads(threads), ACL_SUCCESS);
        CheckRandomCases(GetParam(), SizeRanges{12, 16, 9, 14, {1, 3, 5}, 0.05, 160}, 1, 2026u + threads);
    }
    ASSERT_EQ(gs3dSetNumThreads(0), ACL_SUCCESS);  // back to the default
}

std::string ParamName(const ::testing::TestParamInfo<MatrixParam>& info) {
    const auto [interpolation, padding, align, type, layout] = info.param;
    static const char* kPadding[] = {"zeros", "border", "reflection"};
    static const char* kInterpolation[] = {"bilinear", "nearest", "tricubic"};
    std::string name = std::string(kInterpolation[interpolation]) + "_" + kPadding[padding] +
                       (align ? "_align" : "_noalign") + "_" + DtypeName(type) + "_" +
                       (layout.channel_last ? "ndhwc" : "ncdhw") + "_" + LayoutName(layout.layout);
    if (layout.offset) name += "_offset";
    return name;
}

INSTANTIATE_TEST_SUITE_P(
    AllModes, GridSamplerMatrix,
    ::testing::Combine(::testing::Values(0, 1, 2), ::testing::Values(0, 1, 2), ::testing::Bool(),
                       ::testing::Values(ACL_FLOAT, ACL_FLOAT16, ACL_BF16, ACL_DOUBLE),
                       ::testing::Values(LayoutCase{false, Layout::kContiguous, 0},
                                         LayoutCase{true, Layout::kContiguous, 0},
                                         LayoutCase{false, Layout::kPadded, 5}, LayoutCase{true, Layout::kReversed, 3})),
    ParamName);

INSTANTIATE_TEST_SUITE_P(
    AllModes, GridSamplerWide,
    ::testing::Combine(::testing::Values(0, 1, 2), ::testing::Values(0, 1, 2), ::testing::Bool(),
                       ::testing::Values(ACL_FLOAT, ACL_FLOAT16, ACL_DOUBLE),
                       ::testing::Values(LayoutCase{false, Layout::kContiguous, 0},
                                         LayoutCase{true, Layout::kContiguous, 0},
                                         LayoutCase{true, Layout::kReversed, 3})),
    ParamName);

INSTANTIATE_TEST_SUITE_P(
    AllModes, GridSamplerManyChannels,
    ::testing::Combine(::testing::Values(0, 1), ::testing::Values(0, 1, 2), ::testing::Bool(),
                       ::testing::Values(ACL_FLOAT, ACL_BF16),
                       ::testing::Values(LayoutCase{false, Layout::kContiguous, 0},
                                         LayoutCase{false, Layout::kPadded, 5})),
    ParamName);

INSTANTIATE_TEST_SUITE_P(
    AllModes, GridSamplerNearIdentity,
    ::testing::Combine(::testing::Values(0, 1, 2), ::testing::Values(0, 1, 2), ::testing::Bool(),
                       ::testing::Values(ACL_FLOAT, ACL_FLOAT16, ACL_BF16, ACL_DOUBLE),
                       ::testing::Values(LayoutCase{false, Layout::kContiguous, 0},
                                         LayoutCase{true, Layout::kContiguous, 0},
                                         LayoutCase{false, Layout::kPadded, 5})),
    ParamName);

INSTANTIATE_TEST_SUITE_P(
    AllModes, GridSamplerBands,
    ::testing::Combine(::testing::Values(0, 1), ::testing::Values(0, 1, 2), ::testing::Bool(),
                       ::testing::Values(ACL_FLOAT, ACL_DOUBLE),
                       ::testing::Values(LayoutCase{false, Layout::kContiguous, 0},
                                         LayoutCase{true, Layout::kContiguous, 0})),
    ParamName);

}  // namespace
}  // namespace gs3d_test
