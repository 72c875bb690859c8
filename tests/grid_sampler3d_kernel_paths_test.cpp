// The kernels' paths that only larger or particular problems reach, against the independent
// reference: full SIMD blocks in every slab, rows longer than a sort segment, every key spread
// of the sorted plan, the channels-last copies of wide rows, smooth grids whose corners lie side
// by side, the one-channel pair blocks, offsets past 2^22, and the channels-last kernels on
// other layouts. Run on every SIMD target (tests/CMakeLists.txt), since lane counts decide
// which path a row takes.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "aclnnop/aclnn_grid_sampler3d.h"
#include "support/backward_case.h"
#include "support/op_runner.h"
#include "support/test_tensor.h"

namespace gs3d_test {
namespace {

// Large enough for every slab and binning chunk to hold full SIMD blocks of points, with a
// registration-like grid (identity plus noise) and a random one, against the reference.
TEST(LargerProblems, BackwardMatchesReference) {
    std::mt19937 rng(21);
    for (aclDataType type : {ACL_FLOAT, ACL_FLOAT16, ACL_DOUBLE})
        for (int padding : {0, 1, 2})
            for (bool identity_like : {true, false}) {
                const RefOptions options{0, padding, false};
                BackwardCase bc(type, 2, 3, 20, 18, 16, 16, 15, 14, 30u + static_cast<unsigned>(padding));
                if (identity_like) {
                    for (int64_t n = 0; n < 2; ++n)
                        for (int64_t d = 0; d < 16; ++d)
                            for (int64_t h = 0; h < 15; ++h)
                                for (int64_t w = 0; w < 14; ++w) {
                                    const double base[3] = {(2.0 * w + 1) / 14 - 1, (2.0 * h + 1) / 15 - 1,
                                                            (2.0 * d + 1) / 16 - 1};
                                    for (int axis = 0; axis < 3; ++axis) {
                                        // Few significant bits, so every dtype holds it exactly.
                                        const double v = std::round((base[axis] + RandomGridValue(rng) / 16) * 256) / 256;
                                        bc.grid_values.at(n, d, h, w, axis) = v;
                                    }
                                }
                    StoreGrid(bc.grid_values, &bc.grid);
                }
                ASSERT_EQ(bc.Run(std::nullopt, options), ACLNN_SUCCESS);
                bc.ExpectMatchesReference(options, type, std::string(DtypeName(type)) + " padding " + std::to_string(padding));
            }
}

// Grid rows longer than the sorted plan's segments (kSegmentPoints = 65536 points, so that a
// point's place fits 16 bits): a point list given as rows of (1, 1, 2, 140000, 3), points
// spread over every slab, so that each row is sorted in three segments of mixed keys.
TEST(LargerProblems, RowsLongerThanASortSegmentMatchReference) {
    for (int mode : {0, 1}) {
        const RefOptions options{mode, 0, true};
        BackwardCase bc(ACL_FLOAT, 1, 2, 24, 5, 6, 1, 2, 140000, 40u + static_cast<unsigned>(mode));
        ASSERT_EQ(bc.Run(std::nullopt, options), ACLNN_SUCCESS);
        Array5 expected_input_grad, expected_grid_grad;
        ReferenceBackward(bc.grad_values, bc.input_values, bc.grid_values, options, &expected_input_grad,
                          &expected_grid_grad);
        EXPECT_EQ(CompareArrays(LoadVolume(bc.input_grad, false), expected_input_grad, ACL_FLOAT), "") << "mode " << mode;
        EXPECT_EQ(CompareArrays(LoadGrid(bc.grid_grad), expected_grid_grad, ACL_FLOAT), "") << "mode " << mode;
    }
}

// The sorted plan (bilinear, C > 1) sorts each grid row's points by slab and finds a slab's
// run of them, by paths that depend on the row (backward/kernel-inl.h): a few keys
// in a row are sorted in vectors (SortSegmentFewKeys: at most a quarter of the 16-bit lanes,
// the row's last points past the vectors one by one), more by the counting sort; a row of up
// to four vectors of 8-bit keys counts a slab's run in vectors (KeyRun), a longer one
// (300 points: past AVX-512's 256) by binary search. Rows of 45 and 300 points whose D values
// keep to a few planes or spread over the whole volume take each path; the suite runs on
// every SIMD target, where the lane counts and so the cut-offs differ (with at most 8 slabs,
// AVX-512 sorts every row in vectors: the counting sort runs on AVX2, SSE4 and scalar).
TEST(LargerProblems, SortedSlabRowsOfEveryKeySpreadMatchReference) {
    std::mt19937 rng(61);
    std::uniform_real_distribution<double> unit(-1.0, 1.0);
    for (int64_t width : {45, 300})
        for (double spread : {0.08, 1.1}) {
            BackwardCase bc(ACL_FLOAT, 1, 2, 40, 5, 6, 6, 3, width, 61u + static_cast<unsigned>(width));
            for (int64_t d = 0; d < 6; ++d)
                for (int64_t h = 0; h < 3; ++h)
                    for (int64_t w = 0; w < width; ++w) {
                        const double z = (2.0 * d + 1) / 6 - 1 + spread * unit(rng);
                        const double values[3] = {1.1 * unit(rng), 1.1 * unit(rng), z};
                        for (int axis = 0; axis < 3; ++axis)  // few significant bits: exact in fp32
                            bc.grid_values.at(0, d, h, w, axis) = std::round(values[axis] * 4096) / 4096;
                    }
            StoreGrid(bc.grid_values, &bc.grid);
            ASSERT_EQ(bc.Run(std::nullopt), ACLNN_SUCCESS);
            Array5 expected_input_grad, expected_grid_grad;
            ReferenceBackward(bc.grad_values, bc.input_values, bc.grid_values, kBilinearZeros, &expected_input_grad,
                              &expected_grid_grad);
            EXPECT_EQ(CompareArrays(LoadVolume(bc.input_grad, false), expected_input_grad, ACL_FLOAT), "")
                << "W " << width << " spread " << spread;
            EXPECT_EQ(CompareArrays(LoadGrid(bc.grid_grad), expected_grid_grad, ACL_FLOAT), "")
                << "W " << width << " spread " << spread;
        }
}

// The bilinear forward's channels-last copy (NCDHW, C >= 4) stages each row in blocks of w
// of at most 4096 elements: rows of 40 channels x 120 take two blocks (102 + 18), and 4100
// channels exceed a block, copied element by element. The output's rows, channels apart,
// go through the same pieces of 4096 elements (102 points at 40 channels): 130 points take
// two (102 + 28); in a contiguous and a reversed NCDHW output.
TEST(LargerProblems, ForwardCopyOfWideRowsMatchesReference) {
    struct Shape {
        int64_t c, d, h, w, out_w;
    };
    std::mt19937 rng(51);
    for (const Shape& shape : {Shape{40, 3, 4, 120, 130}, Shape{4100, 2, 2, 3, 7}})
        for (Layout out_layout : {Layout::kContiguous, Layout::kReversed}) {
            TestTensor input({1, shape.c, shape.d, shape.h, shape.w}, ACL_FLOAT),
                grid({1, 2, 3, shape.out_w, 3}, ACL_FLOAT),
                out({1, shape.c, 2, 3, shape.out_w}, ACL_FLOAT, ACL_FORMAT_NCDHW, out_layout);
            const Array5 input_values = RandomArray(rng, 1, shape.c, shape.d, shape.h, shape.w);
            const Array5 grid_values = RandomArray(rng, 1, 2, 3, shape.out_w, 3, true);
            StoreVolume(input_values, false, &input);
            StoreGrid(grid_values, &grid);
            ASSERT_EQ(RunForward(input.get(), grid.get(), kBilinearZeros, out.get()), ACLNN_SUCCESS);
            EXPECT_EQ(CompareArrays(LoadVolume(out, false),
                                    ReferenceForward(input_values, grid_values, kBilinearZeros), ACL_FLOAT),
                      "")
                << "C " << shape.c << " W " << shape.w << " " << LayoutName(out_layout);
            EXPECT_TRUE(out.OutsideViewUntouched());
        }
}

// A smooth grid close to the identity (a registration's field, unlike the noisy grids
// above): most points have their first corner one element from the point before's, so the
// backward's scatter takes their blocks one element at a time (RunBlock's CountBeside), and
// the x displacement's slope breaks some of those runs (checked when the test was written:
// vectors of 8 and of 16 points of both kinds in both blocks). Rows of 100 points (blocks
// of 64 and 36), every corner inside; forward and backward against the reference, zeros
// and border padding.
TEST(SmoothGrids, CornersSideBySideMatchReference) {
    const int64_t d = 6, h = 6, w = 110, od = 3, oh = 3, ow = 100;
    for (int padding : {0, 1}) {
        const RefOptions options{0, padding, false};
        BackwardCase bc(ACL_FLOAT, 1, 1, d, h, w, od, oh, ow, 71);
        // Source index i along an axis of `size` voxels, as a grid value (align_corners
        // false), in steps of 2^-16 so that fp32 holds it exactly.
        auto grid_value = [](double i, int64_t size) { return std::round(((2 * i + 1) / size - 1) * 65536) / 65536; };
        for (int64_t z = 0; z < od; ++z)
            for (int64_t y = 0; y < oh; ++y)
                for (int64_t x = 0; x < ow; ++x) {
                    bc.grid_values.at(0, z, y, x, 0) = grid_value(x + 2.25 + 0.6 * std::sin(x / 9.0), w);
                    bc.grid_values.at(0, z, y, x, 1) = grid_value(y + 1.3 + 0.1 * z, h);
                    bc.grid_values.at(0, z, y, x, 2) = grid_value(z + 1.4 + 0.05 * y, d);
                }
        StoreGrid(bc.grid_values, &bc.grid);
        TestTensor out({1, 1, od, oh, ow}, ACL_FLOAT);
        ASSERT_EQ(RunForward(bc.input.get(), bc.grid.get(), options, out.get()), ACLNN_SUCCESS);
        EXPECT_EQ(CompareArrays(LoadVolume(out, false), ReferenceForward(bc.input_values, bc.grid_values, options),
                                ACL_FLOAT),
                  "")
            << "padding " << padding;
        ASSERT_EQ(bc.Run(std::nullopt, options), ACLNN_SUCCESS);
        bc.ExpectMatchesReference(options, ACL_FLOAT, "padding " + std::to_string(padding));
    }
}

// One channel, W stride 1 (the row phases, row_phases/backward-inl.h): a smooth grid that
// leaves the volume at its edges, so that blocks hold points with every corner inside (the
// corner pairs and the factored grid gradient) and points with corners outside (corner by
// corner); every dtype, padding and alignment, against the reference.
TEST(SmoothGrids, OneChannelPairBlocksMatchReference) {
    const int64_t d = 9, h = 8, w = 70, od = 8, oh = 7, ow = 67;
    for (aclDataType type : {ACL_FLOAT, ACL_DOUBLE, ACL_FLOAT16, ACL_BF16})
        for (int padding : {0, 1, 2})
            for (bool align : {false, true}) {
                const RefOptions options{0, padding, align};
                BackwardCase bc(type, 2, 1, d, h, w, od, oh, ow, 90u + static_cast<unsigned>(padding));
                for (int64_t n = 0; n < 2; ++n)
                    for (int64_t z = 0; z < od; ++z)
                        for (int64_t y = 0; y < oh; ++y)
                            for (int64_t x = 0; x < ow; ++x) {
                                // Identity plus a smooth displacement, 1.1 times wide so the
                                // rows' ends fall outside; 2^-6 steps, exact in every dtype.
                                const double g[3] = {1.1 * ((2.0 * x + 1) / ow - 1) + 0.05 * std::sin(0.3 * y + n),
                                                     (2.0 * y + 1) / oh - 1 + 0.04 * std::cos(0.2 * x),
                                                     (2.0 * z + 1) / od - 1 + 0.03 * std::sin(0.1 * x + 0.5 * y)};
                                for (int axis = 0; axis < 3; ++axis)
                                    bc.grid_values.at(n, z, y, x, axis) = std::round(g[axis] * 64) / 64;
                            }
                StoreGrid(bc.grid_values, &bc.grid);
                ASSERT_EQ(bc.Run(std::nullopt, options), ACLNN_SUCCESS);
                bc.ExpectMatchesReference(options, type, std::string(DtypeName(type)) + " padding " +
                                                             std::to_string(padding) + " align " + std::to_string(align));
            }
}

// fp32 row phases form the corner rows' offsets in floats where every offset of the volume is
// below 2^22, and in int32 lanes beyond: a volume of 66 x 250 x 256 (4,224,000 elements, its
// last offset past 2^22) takes the int32 lanes, forward and backward, on a random and a
// near-identity grid, with zeros and reflection padding.
TEST(LargerProblems, OffsetsPastTwoToThe22MatchReference) {
    const int64_t d = 66, h = 250, w = 256, od = 2, oh = 3, ow = 67;
    std::mt19937 rng(61);
    for (bool random_grid : {true, false})
        for (int padding : {0, 2}) {
            const RefOptions options{0, padding, false};
            BackwardCase bc(ACL_FLOAT, 1, 1, d, h, w, od, oh, ow, 62u);
            if (!random_grid) {
                bc.grid_values = NearIdentityGrid(rng, 1, od, oh, ow, 0.02);
                StoreGrid(bc.grid_values, &bc.grid);
            }
            const std::string what = std::string(random_grid ? "random" : "near identity") + " grid, padding " +
                                     std::to_string(padding);
            TestTensor out({1, 1, od, oh, ow}, ACL_FLOAT);
            ASSERT_EQ(RunForward(bc.input.get(), bc.grid.get(), options, out.get()), ACLNN_SUCCESS);
            EXPECT_EQ(CompareArrays(LoadVolume(out, false), ReferenceForward(bc.input_values, bc.grid_values, options),
                                    ACL_FLOAT),
                      "")
                << what << ": forward";
            ASSERT_EQ(bc.Run(std::nullopt, options), ACLNN_SUCCESS);
            bc.ExpectMatchesReference(options, ACL_FLOAT, what);
        }
}

// The backward with a dense NCDHW inputGrad and 4 channels or more runs with channels last
// (the input copied into inputGrad's memory, gradOutput's channels gathered, inputGrad
// accumulated in the workspace and copied out): inputs and gradOutput in other layouts
// (padded, reversed strides: the gathers' channel stride is then N), several batch items,
// an output grid of another size than the volume, gridGrad wanted or not (no copy of the
// input), channel counts that fill pairs of corners (8), whole vectors and a rest (5, 20);
// fp16 and bf16 accumulate in fp32 there and have no gathers of their own.
TEST(LargerProblems, ChannelsLastBackwardOfOtherLayoutsMatchesReference) {
    std::mt19937 rng(61);
    for (aclDataType type : {ACL_FLOAT, ACL_DOUBLE, ACL_FLOAT16, ACL_BF16})
        for (int64_t c : {5, 8, 20})
            for (Layout layout : {Layout::kContiguous, Layout::kPadded, Layout::kReversed})
                for (bool grid_grad_wanted : {true, false}) {
                    const int64_t n = 2, d = 6, h = 7, w = 9, od = 5, oh = 4, ow = 11;
                    TestTensor grad({n, c, od, oh, ow}, type, ACL_FORMAT_NCDHW, layout),
                        input({n, c, d, h, w}, type, ACL_FORMAT_NCDHW, layout), grid({n, od, oh, ow, 3}, type),
                        input_grad({n, c, d, h, w}, type, ACL_FORMAT_NCDHW), grid_grad({n, od, oh, ow, 3}, type);
                    const Array5 grad_values = RandomArray(rng, n, c, od, oh, ow),
                                 input_values = RandomArray(rng, n, c, d, h, w),
                                 grid_values = NearIdentityGrid(rng, n, od, oh, ow, 0.1);
                    StoreVolume(grad_values, false, &grad);
                    StoreVolume(input_values, false, &input);
                    StoreGrid(grid_values, &grid);
                    ASSERT_EQ(RunBackward(grad.get(), input.get(), grid.get(), kBilinearZeros,
                                          std::vector<bool>{true, grid_grad_wanted}, input_grad.get(), grid_grad.get()),
                              ACLNN_SUCCESS);
                    Array5 expected_input_grad, expected_grid_grad;
                    ReferenceBackward(grad_values, input_values, grid_values, kBilinearZeros, &expected_input_grad,
                                      &expected_grid_grad);
                    const std::string where = std::string(DtypeName(type)) + " C " + std::to_string(c) + " " +
                                              LayoutName(layout) + (grid_grad_wanted ? " with gridGrad" : "");
                    EXPECT_EQ(CompareArrays(LoadVolume(input_grad, false), expected_input_grad, type), "") << where;
                    if (grid_grad_wanted)
                        EXPECT_EQ(CompareArrays(LoadGrid(grid_grad), expected_grid_grad, type), "") << where;
                    EXPECT_EQ(CompareArrays(LoadVolume(input, false), input_values, type), "") << where;  // only read
                }
}

// A backward problem on a near-identity grid with volumes laid out channels apart (NCDHW)
// or last (NDHWC), gradOutput in `grad_layout`; inputGrad starts as 7 everywhere.
struct LayoutCase {
    TestTensor grad, input, grid, input_grad, grid_grad;
    Array5 grad_values, input_values, grid_values;
    LayoutCase(std::mt19937& rng, aclDataType type, bool channels_last, Layout grad_layout, int64_t n, int64_t c,
               int64_t d, int64_t h, int64_t w, int64_t od, int64_t oh, int64_t ow, double noise)
        : grad(VolumeDims(n, c, od, oh, ow, channels_last), type, Format(channels_last), grad_layout),
          input(VolumeDims(n, c, d, h, w, channels_last), type, Format(channels_last)),
          grid({n, od, oh, ow, 3}, type),
          input_grad(VolumeDims(n, c, d, h, w, channels_last), type, Format(channels_last)),
          grid_grad({n, od, oh, ow, 3}, type),
          grad_values(RandomArray(rng, n, c, od, oh, ow)),
          input_values(RandomArray(rng, n, c, d, h, w)),
          grid_values(NearIdentityGrid(rng, n, od, oh, ow, noise)) {
        StoreVolume(grad_values, channels_last, &grad);
        StoreVolume(input_values, channels_last, &input);
        StoreGrid(grid_values, &grid);
        input_grad.Fill(7);
    }
    static aclFormat Format(bool channels_last) { return channels_last ? ACL_FORMAT_NDHWC : ACL_FORMAT_NCDHW; }
    aclnnStatus Run(const RefOptions& options, std::vector<bool> mask) {
        return RunBackward(grad.get(), input.get(), grid.get(), options, mask, input_grad.get(), grid_grad.get());
    }
    void Expected(const RefOptions& options, Array5* expected_input_grad, Array5* expected_grid_grad) const {
        ReferenceBackward(grad_values, input_values, grid_values, options, expected_input_grad, expected_grid_grad);
    }
};

// Input and inputGrad channels last, gradOutput's channels apart (a reversed NDHWC view:
// channel stride N * oD * oH * oW): the channel-stride-1 kernels gather gradOutput, and so
// must their point by point paths (gridGrad alone runs only those; the fuzzer found them
// reading gradOutput as if its channels were next to each other). Bilinear and nearest,
// with and without inputGrad, channel counts below, at and above a vector's lanes.
TEST(Layouts, ChannelsLastInputWithGradOutputChannelsApart) {
    std::mt19937 rng(67);
    for (aclDataType type : {ACL_FLOAT, ACL_DOUBLE, ACL_FLOAT16, ACL_BF16})
        for (int interpolation : {0, 1})
            for (int64_t c : {1, 3, 8, 19})
                for (bool input_grad_wanted : {false, true}) {
                    const RefOptions options{interpolation, 0, false};
                    LayoutCase lc(rng, type, true, Layout::kReversed, 2, c, 5, 6, 7, 4, 3, 9, 0.1);
                    ASSERT_EQ(lc.Run(options, {input_grad_wanted, true}), ACLNN_SUCCESS);
                    Array5 expected_input_grad, expected_grid_grad;
                    lc.Expected(options, &expected_input_grad, &expected_grid_grad);
                    const std::string where = std::string(DtypeName(type)) + (interpolation ? " nearest" : " bilinear") +
                                              " C " + std::to_string(c) + (input_grad_wanted ? " with inputGrad" : "");
                    EXPECT_EQ(CompareArrays(LoadGrid(lc.grid_grad), expected_grid_grad, type), "") << where;
                    if (input_grad_wanted)
                        EXPECT_EQ(CompareArrays(LoadVolume(lc.input_grad, true), expected_input_grad, type), "") << where;
                    else
                        EXPECT_TRUE(AllEqual(lc.input_grad, 7)) << where;
                }
}

// gridGrad alone (outputMask {false, true}) over rows long enough for whole vectors and a
// tail (37 points: the blocks' vector loads of gradOutput and stores of gridGrad), with the
// channels apart and last, below and from 8 channels (the channels-last runner's threshold
// there), every padding, against the double reference; inputGrad left as it was.
TEST(OutputMask, GridGradAloneOverFullRows) {
    std::mt19937 rng(71);
    for (aclDataType type : {ACL_FLOAT, ACL_DOUBLE, ACL_FLOAT16})
        for (bool channels_last : {false, true})
            for (int64_t c : {1, 4, 8, 16})
                for (int padding : {0, 1, 2})
                    for (bool align : {false, true}) {
                        const RefOptions options{0, padding, align};
                        LayoutCase lc(rng, type, channels_last, Layout::kContiguous, 1, c, 4, 5, 37, 3, 2, 37, 0.2);
                        ASSERT_EQ(lc.Run(options, {false, true}), ACLNN_SUCCESS);
                        Array5 expected_input_grad, expected_grid_grad;
                        lc.Expected(options, &expected_input_grad, &expected_grid_grad);
                        const std::string where = std::string(DtypeName(type)) + (channels_last ? " NDHWC" : " NCDHW") +
                                                  " C " + std::to_string(c) + " padding " + std::to_string(padding) +
                                                  (align ? " aligned" : "");
                        EXPECT_EQ(CompareArrays(LoadGrid(lc.grid_grad), expected_grid_grad, type), "") << where;
                        EXPECT_TRUE(AllEqual(lc.input_grad, 7)) << where;
                    }
}

}  // namespace
}  // namespace gs3d_test
