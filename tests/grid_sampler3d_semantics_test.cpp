// Semantics beyond the value matrix: outputMask, empty tensors, broadcast (stride 0) inputs,
// hostile grid values, in-order asynchronous streams and run-to-run determinism.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "aclnnop/aclnn_grid_sampler3d.h"
#include "support/op_runner.h"
#include "support/test_tensor.h"

namespace gs3d_test {
namespace {

const RefOptions kBilinearZeros{0, 0, false};

struct BackwardCase {
    TestTensor grad, input, grid, input_grad, grid_grad;
    Array5 grad_values, input_values, grid_values;
    BackwardCase(aclDataType type, int64_t n, int64_t c, int64_t d, int64_t h, int64_t w, int64_t od, int64_t oh,
                 int64_t ow, unsigned seed)
        : grad({n, c, od, oh, ow}, type),
          input({n, c, d, h, w}, type),
          grid({n, od, oh, ow, 3}, type),
          input_grad({n, c, d, h, w}, type),
          grid_grad({n, od, oh, ow, 3}, type) {
        std::mt19937 rng(seed);
        grad_values = RandomArray(rng, n, c, od, oh, ow);
        input_values = RandomArray(rng, n, c, d, h, w);
        grid_values = RandomArray(rng, n, od, oh, ow, 3, true);
        StoreVolume(grad_values, false, &grad);
        StoreVolume(input_values, false, &input);
        StoreGrid(grid_values, &grid);
    }
    aclnnStatus Run(std::optional<std::vector<bool>> mask, const RefOptions& options = kBilinearZeros) {
        return RunBackward(grad.get(), input.get(), grid.get(), options, mask, input_grad.get(), grid_grad.get());
    }
};

// Decoding is exact, so equal doubles mean equal element bits (signed zeros included).
bool BitwiseEqual(double a, double b) { return std::memcmp(&a, &b, sizeof a) == 0; }

bool AllEqual(const TestTensor& t, double value) {
    for (int64_t i = 0; i < t.count(); ++i)
        if (t.Get(i) != value) return false;
    return true;
}

TEST(OutputMask, FalseLeavesInputGradUntouched) {
    BackwardCase bc(ACL_FLOAT, 1, 2, 3, 3, 3, 2, 2, 2, 1);
    bc.input_grad.Fill(42);
    ASSERT_EQ(bc.Run(std::vector<bool>{false, true}), ACLNN_SUCCESS);
    EXPECT_TRUE(AllEqual(bc.input_grad, 42));
    Array5 expected_input_grad, expected_grid_grad;
    ReferenceBackward(bc.grad_values, bc.input_values, bc.grid_values, kBilinearZeros, &expected_input_grad,
                      &expected_grid_grad);
    EXPECT_EQ(CompareArrays(LoadGrid(bc.grid_grad), expected_grid_grad, ACL_FLOAT), "");
}

TEST(OutputMask, FalseLeavesGridGradUntouched) {
    BackwardCase bc(ACL_BF16, 1, 2, 3, 3, 3, 2, 2, 2, 2);
    bc.grid_grad.Fill(-5);
    ASSERT_EQ(bc.Run(std::vector<bool>{true, false}), ACLNN_SUCCESS);
    EXPECT_TRUE(AllEqual(bc.grid_grad, -5));
    Array5 expected_input_grad, expected_grid_grad;
    ReferenceBackward(bc.grad_values, bc.input_values, bc.grid_values, kBilinearZeros, &expected_input_grad,
                      &expected_grid_grad);
    EXPECT_EQ(CompareArrays(LoadVolume(bc.input_grad, false), expected_input_grad, ACL_BF16), "");
}

TEST(OutputMask, BothFalseTouchesNothing) {
    BackwardCase bc(ACL_DOUBLE, 1, 1, 2, 2, 2, 1, 1, 1, 3);
    bc.input_grad.Fill(1);
    bc.grid_grad.Fill(2);
    ASSERT_EQ(bc.Run(std::vector<bool>{false, false}), ACLNN_SUCCESS);
    EXPECT_TRUE(AllEqual(bc.input_grad, 1));
    EXPECT_TRUE(AllEqual(bc.grid_grad, 2));
}

TEST(EmptyTensors, EmptyGridGivesZeroInputGrad) {
    for (aclDataType type : {ACL_FLOAT, ACL_FLOAT16, ACL_BF16, ACL_DOUBLE}) {
        BackwardCase bc(type, 1, 2, 3, 3, 3, 0, 2, 2, 4);
        bc.input_grad.Fill(9);
        ASSERT_EQ(bc.Run(std::nullopt), ACLNN_SUCCESS) << DtypeName(type);
        EXPECT_TRUE(AllEqual(bc.input_grad, 0)) << DtypeName(type);
    }
}

TEST(EmptyTensors, ZeroChannelsGiveZeroGridGrad) {
    BackwardCase bc(ACL_FLOAT, 1, 0, 3, 3, 3, 2, 2, 2, 5);
    bc.grid_grad.Fill(9);
    ASSERT_EQ(bc.Run(std::nullopt), ACLNN_SUCCESS);
    EXPECT_TRUE(AllEqual(bc.grid_grad, 0));
}

TEST(EmptyTensors, ZeroBatchSucceeds) {
    BackwardCase bc(ACL_FLOAT, 0, 2, 3, 3, 3, 2, 2, 2, 6);
    EXPECT_EQ(bc.Run(std::nullopt), ACLNN_SUCCESS);
    TestTensor input({0, 2, 3, 3, 3}, ACL_FLOAT), grid({0, 2, 2, 2, 3}, ACL_FLOAT), out({0, 2, 2, 2, 2}, ACL_FLOAT);
    EXPECT_EQ(RunForward(input.get(), grid.get(), kBilinearZeros, out.get()), ACLNN_SUCCESS);
}

TEST(EmptyTensors, ForwardWithEmptyOutputSpace) {
    TestTensor input({1, 2, 3, 3, 3}, ACL_FLOAT), grid({1, 2, 0, 2, 3}, ACL_FLOAT), out({1, 2, 2, 0, 2}, ACL_FLOAT);
    EXPECT_EQ(RunForward(input.get(), grid.get(), kBilinearZeros, out.get()), ACLNN_SUCCESS);
}

TEST(Broadcast, StrideZeroInputMatchesMaterialisedInput) {
    // input (1, 3, 4, 5, 6) broadcast from one (4, 5, 6) volume along C: stride 0.
    std::mt19937 rng(7);
    const Array5 volume = RandomArray(rng, 1, 1, 4, 5, 6);
    std::vector<float> storage(volume.values.begin(), volume.values.end());
    const int64_t dims[5] = {1, 3, 4, 5, 6}, strides[5] = {120, 0, 30, 6, 1}, storage_dims[1] = {120};
    aclTensor* broadcast = aclCreateTensor(dims, 5, ACL_FLOAT, strides, 0, ACL_FORMAT_NCDHW, storage_dims, 1,
                                           storage.data());
    ASSERT_NE(broadcast, nullptr);
    Array5 materialised(1, 3, 4, 5, 6);
    for (int64_t c = 0; c < 3; ++c)
        for (int64_t i = 0; i < 120; ++i) materialised.values[static_cast<size_t>(c * 120 + i)] = volume.values[i];
    const Array5 grid_values = RandomArray(rng, 1, 2, 3, 4, 3, true);
    TestTensor grid({1, 2, 3, 4, 3}, ACL_FLOAT), out({1, 3, 2, 3, 4}, ACL_FLOAT);
    StoreGrid(grid_values, &grid);
    ASSERT_EQ(RunForward(broadcast, grid.get(), kBilinearZeros, out.get()), ACLNN_SUCCESS);
    EXPECT_EQ(CompareArrays(LoadVolume(out, false), ReferenceForward(materialised, grid_values, kBilinearZeros),
                            ACL_FLOAT),
              "");
    aclDestroyTensor(broadcast);
}

// NaN, +-inf, huge and denormal grid values: no crash, nothing written outside the views,
// finite results where the inputs are finite and the sample is out of range.
TEST(HostileGrid, NonFiniteAndHugeValuesAreSafe) {
    const double kValues[] = {NAN, INFINITY, -INFINITY, 1e30, -1e30, 3e38, 1e-40, -1.0, 1.0, 0.0};
    for (int interpolation : {0, 1})
        for (int padding : {0, 1, 2})
            for (bool align : {false, true}) {
                const RefOptions options{interpolation, padding, align};
                BackwardCase bc(ACL_FLOAT, 1, 2, 3, 4, 5, 1, 2, 5, 8);
                TestTensor out({1, 2, 1, 2, 5}, ACL_FLOAT);
                for (int64_t i = 0; i < bc.grid.count(); ++i) bc.grid.Set(i, kValues[i % 10]);
                ASSERT_EQ(RunForward(bc.input.get(), bc.grid.get(), options, out.get()), ACLNN_SUCCESS);
                ASSERT_EQ(bc.Run(std::nullopt, options), ACLNN_SUCCESS);
                for (const TestTensor* t : {&out, &bc.input_grad, &bc.grid_grad}) EXPECT_TRUE(t->OutsideViewUntouched());
                if (padding == 0) {
                    // Points 0 (NaN, inf, -inf) and 1 (1e30, -1e30, 3e38) are out of range on
                    // every axis, so they sample nothing; point 2 (1e-40, -1, 1) is inside.
                    for (int64_t c = 0; c < 2; ++c)
                        for (int64_t p = 0; p < 2; ++p) EXPECT_EQ(out.Get(c * 10 + p), 0.0) << "c " << c << " p " << p;
                }
                for (int64_t i = 0; i < bc.input_grad.count(); ++i) EXPECT_TRUE(std::isfinite(bc.input_grad.Get(i)));
            }
}

TEST(HostileGrid, FarOutsideMatchesReference) {
    // Values up to +-512 with few significant bits, so that fp32 index math is exact.
    std::mt19937 rng(11);
    for (int padding : {0, 1, 2})
        for (bool align : {false, true}) {
            const RefOptions options{0, padding, align};
            for (aclDataType type : {ACL_FLOAT, ACL_DOUBLE}) {
                BackwardCase bc(type, 1, 2, 4, 5, 6, 2, 3, 4, 12);
                for (int64_t i = 0; i < bc.grid.count(); ++i) {
                    const double v = std::uniform_int_distribution<int>(-4095, 4095)(rng) / 8.0;
                    bc.grid.Set(i, v);
                    bc.grid_values.values[static_cast<size_t>(i)] = v;
                }
                TestTensor out({1, 2, 2, 3, 4}, type);
                ASSERT_EQ(RunForward(bc.input.get(), bc.grid.get(), options, out.get()), ACLNN_SUCCESS);
                ASSERT_EQ(bc.Run(std::nullopt, options), ACLNN_SUCCESS);
                Array5 expected_input_grad, expected_grid_grad;
                ReferenceBackward(bc.grad_values, bc.input_values, bc.grid_values, options, &expected_input_grad,
                                  &expected_grid_grad);
                EXPECT_EQ(CompareArrays(LoadVolume(out, false),
                                        ReferenceForward(bc.input_values, bc.grid_values, options), type),
                          "");
                EXPECT_EQ(CompareArrays(LoadVolume(bc.input_grad, false), expected_input_grad, type), "");
                EXPECT_EQ(CompareArrays(LoadGrid(bc.grid_grad), expected_grid_grad, type), "");
            }
        }
}

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
                Array5 expected_input_grad, expected_grid_grad;
                ReferenceBackward(bc.grad_values, bc.input_values, bc.grid_values, options, &expected_input_grad,
                                  &expected_grid_grad);
                EXPECT_EQ(CompareArrays(LoadVolume(bc.input_grad, false), expected_input_grad, type), "")
                    << DtypeName(type) << " padding " << padding;
                EXPECT_EQ(CompareArrays(LoadGrid(bc.grid_grad), expected_grid_grad, type), "")
                    << DtypeName(type) << " padding " << padding;
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
// run of them, by paths that depend on the row (backward_kernel-inl.h): a few keys
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
        Array5 expected_input_grad, expected_grid_grad;
        ReferenceBackward(bc.grad_values, bc.input_values, bc.grid_values, options, &expected_input_grad,
                          &expected_grid_grad);
        EXPECT_EQ(CompareArrays(LoadVolume(bc.input_grad, false), expected_input_grad, ACL_FLOAT), "")
            << "padding " << padding;
        EXPECT_EQ(CompareArrays(LoadGrid(bc.grid_grad), expected_grid_grad, ACL_FLOAT), "") << "padding " << padding;
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

// The value of `type` (fp16 or bf16) nearest to x, ties to the even bit pattern, found among
// all of the type's finite values as the tests decode them: independent of the library's
// conversions. x lies well inside the type's range here.
double NearestOfType(double x, aclDataType type) {
    static std::vector<std::pair<double, uint16_t>> table[2];
    auto& values = table[type == ACL_BF16];
    if (values.empty()) {
        for (uint32_t bits = 0; bits <= 0xffff; ++bits) {
            const uint16_t b = static_cast<uint16_t>(bits);
            const double v = DecodeElement(&b, type);
            if (std::isfinite(v) && !(v == 0 && std::signbit(v))) values.emplace_back(v, b);
        }
        std::sort(values.begin(), values.end());
    }
    auto above = std::lower_bound(values.begin(), values.end(), std::make_pair(x, uint16_t{0}));
    if (above == values.begin()) return above->first;
    auto below = above - 1;
    if (above == values.end()) return below->first;
    const double up = above->first - x, down = x - below->first;
    if (up != down) return up < down ? above->first : below->first;
    return (above->second & 1) == 0 ? above->first : below->first;
}

// The forward of the same values in fp32 and in `type` (fp16 or bf16): both outputs' elements
// in order, for the Rounding tests to compare.
void ForwardInFp32AndIn(aclDataType type, const Array5& input_values, const Array5& grid_values,
                        const RefOptions& options, int64_t od, int64_t oh, int64_t ow, std::vector<double>* out32_values,
                        std::vector<double>* out16_values) {
    const int64_t n = input_values.dim[0], c = input_values.dim[1], d = input_values.dim[2], h = input_values.dim[3],
                  w = input_values.dim[4];
    TestTensor input32({n, c, d, h, w}, ACL_FLOAT), grid32({n, od, oh, ow, 3}, ACL_FLOAT),
        out32({n, c, od, oh, ow}, ACL_FLOAT), input16({n, c, d, h, w}, type), grid16({n, od, oh, ow, 3}, type),
        out16({n, c, od, oh, ow}, type);
    StoreVolume(input_values, false, &input32);
    StoreVolume(input_values, false, &input16);
    StoreGrid(grid_values, &grid32);
    StoreGrid(grid_values, &grid16);
    ASSERT_EQ(RunForward(input32.get(), grid32.get(), options, out32.get()), ACLNN_SUCCESS);
    ASSERT_EQ(RunForward(input16.get(), grid16.get(), options, out16.get()), ACLNN_SUCCESS);
    out32_values->clear();
    out16_values->clear();
    for (int64_t i = 0; i < out16.count(); ++i) {
        out32_values->push_back(out32.Get(i));
        out16_values->push_back(out16.Get(i));
    }
}

// fp16 and bf16 compute in fp32 and round once as they store: the forward's output is the fp32
// forward's on the same values, rounded to nearest even, bit for bit. Rows wide enough for
// whole vectors and a rest; C below 4 (the NCDHW blocks, whose rows store in vectors) and
// from 4 (the channels-last copy).
TEST(Rounding, HalfAndBFloat16ForwardIsFp32ForwardRoundedOnce) {
    std::mt19937 rng(71);
    for (aclDataType type : {ACL_FLOAT16, ACL_BF16})
        for (int64_t c : {1, 3, 6})
            for (int padding : {0, 1}) {
                const RefOptions options{0, padding, false};
                const int64_t n = 1, d = 5, h = 6, w = 40, od = 3, oh = 4, ow = 37;
                const Array5 input_values = RandomArray(rng, n, c, d, h, w),
                             grid_values = NearIdentityGrid(rng, n, od, oh, ow, 0.1);
                std::vector<double> out32, out16;
                ASSERT_NO_FATAL_FAILURE(
                    ForwardInFp32AndIn(type, input_values, grid_values, options, od, oh, ow, &out32, &out16));
                int64_t differ = 0, first = -1;
                for (size_t i = 0; i < out16.size(); ++i)
                    if (!BitwiseEqual(out16[i], NearestOfType(out32[i], type)) && differ++ == 0)
                        first = static_cast<int64_t>(i);
                EXPECT_EQ(differ, 0) << DtypeName(type) << " C " << c << " padding " << padding << ": element "
                                     << first << " is " << (first >= 0 ? out16[first] : 0.0) << ", fp32 gives "
                                     << (first >= 0 ? out32[first] : 0.0);
            }
}

// Infinite and NaN fp16/bf16 input values are read as such on every path, the channels-last
// copies' vector loads included (C >= 4): the forward's output is the fp32 forward's on the
// same values, rounded, with NaN where it has NaN. (Highway's portable fp16 promotion, below
// AVX2, turns inf and NaN into finite values.)
TEST(Rounding, NonFiniteHalfAndBFloat16InputsStayNonFinite) {
    std::mt19937 rng(73);
    for (aclDataType type : {ACL_FLOAT16, ACL_BF16})
        for (int64_t c : {1, 6}) {
            const RefOptions options{0, 0, false};
            const int64_t n = 1, d = 4, h = 5, w = 18, od = 3, oh = 4, ow = 17;
            Array5 input_values = RandomArray(rng, n, c, d, h, w);
            const double kSpecial[3] = {INFINITY, -INFINITY, NAN};
            for (size_t i = 0; i < input_values.values.size(); i += 7) input_values.values[i] = kSpecial[i % 3];
            const Array5 grid_values = NearIdentityGrid(rng, n, od, oh, ow, 0.1);
            std::vector<double> out32, out16;
            ASSERT_NO_FATAL_FAILURE(
                ForwardInFp32AndIn(type, input_values, grid_values, options, od, oh, ow, &out32, &out16));
            int64_t differ = 0, non_finite = 0, first = -1;
            for (size_t i = 0; i < out16.size(); ++i) {
                const double expected = out32[i], got = out16[i];
                non_finite += !std::isfinite(expected);
                const bool same = std::isnan(expected) ? std::isnan(got)
                                  : std::isinf(expected) ? got == expected
                                                          : BitwiseEqual(got, NearestOfType(expected, type));
                if (!same && differ++ == 0) first = static_cast<int64_t>(i);
            }
            EXPECT_GT(non_finite, 0) << "the case must sample the specials";
            EXPECT_EQ(differ, 0) << DtypeName(type) << " C " << c << ": element " << first << " is "
                                 << (first >= 0 ? out16[first] : 0.0) << ", fp32 gives "
                                 << (first >= 0 ? out32[first] : 0.0);
        }
}

TEST(Streams, WorkRunsInOrder) {
    // A chain of forwards, each reading the previous one's output, launched without waiting:
    // only in-order execution gives the composed result.
    std::mt19937 rng(13);
    const int kSteps = 6;
    std::vector<std::unique_ptr<TestTensor>> volumes;
    const Array5 grid_values = RandomArray(rng, 1, 4, 4, 4, 3, true);
    TestTensor grid({1, 4, 4, 4, 3}, ACL_FLOAT);
    StoreGrid(grid_values, &grid);
    Array5 expected = RandomArray(rng, 1, 2, 4, 4, 4);
    for (int i = 0; i <= kSteps; ++i) volumes.push_back(std::make_unique<TestTensor>(std::vector<int64_t>{1, 2, 4, 4, 4}, ACL_FLOAT));
    StoreVolume(expected, false, volumes[0].get());
    for (int i = 0; i < kSteps; ++i) {
        uint64_t workspace_size = 0;
        aclOpExecutor* executor = nullptr;
        ASSERT_EQ(aclnnGridSampler3DGetWorkspaceSize(volumes[i]->get(), grid.get(), 0, 1, false, volumes[i + 1]->get(),
                                                     &workspace_size, &executor),
                  ACLNN_SUCCESS);
        ASSERT_EQ(aclnnGridSampler3D(nullptr, 0, executor, TestStream()), ACLNN_SUCCESS);
        expected = ReferenceForward(expected, grid_values, RefOptions{0, 1, false});
    }
    ASSERT_EQ(aclrtSynchronizeStream(TestStream()), ACL_SUCCESS);
    EXPECT_EQ(CompareArrays(LoadVolume(*volumes[kSteps], false), expected, ACL_FLOAT), "");
}

TEST(Streams, DefaultStreamIsNull) {
    TestTensor input({1, 1, 2, 2, 2}, ACL_FLOAT), grid({1, 1, 1, 1, 3}, ACL_FLOAT), out({1, 1, 1, 1, 1}, ACL_FLOAT);
    for (int64_t i = 0; i < 8; ++i) input.Set(i, static_cast<double>(i));
    for (int64_t i = 0; i < 3; ++i) grid.Set(i, 0.0);  // the centre: the mean of the 8 voxels
    uint64_t workspace_size = 0;
    aclOpExecutor* executor = nullptr;
    ASSERT_EQ(aclnnGridSampler3DGetWorkspaceSize(input.get(), grid.get(), 0, 0, false, out.get(), &workspace_size,
                                                 &executor),
              ACLNN_SUCCESS);
    ASSERT_EQ(aclnnGridSampler3D(nullptr, 0, executor, nullptr), ACLNN_SUCCESS);
    ASSERT_EQ(aclrtSynchronizeStream(nullptr), ACL_SUCCESS);
    EXPECT_EQ(out.Get(0), 3.5);
}

TEST(Determinism, RepeatedRunsAreBitwiseEqual) {
    ASSERT_EQ(aclrtCtxSetSysParamOpt(ACL_OPT_DETERMINISTIC, 1), ACL_SUCCESS);
    for (aclDataType type : {ACL_FLOAT, ACL_FLOAT16}) {
        BackwardCase bc(type, 2, 5, 9, 8, 7, 6, 5, 4, 14);
        ASSERT_EQ(bc.Run(std::nullopt), ACLNN_SUCCESS);
        std::vector<double> first_input_grad, first_grid_grad;
        for (int64_t i = 0; i < bc.input_grad.count(); ++i) first_input_grad.push_back(bc.input_grad.Get(i));
        for (int64_t i = 0; i < bc.grid_grad.count(); ++i) first_grid_grad.push_back(bc.grid_grad.Get(i));
        for (int repeat = 0; repeat < 3; ++repeat) {
            ASSERT_EQ(bc.Run(std::nullopt), ACLNN_SUCCESS);
            for (int64_t i = 0; i < bc.input_grad.count(); ++i)
                ASSERT_TRUE(BitwiseEqual(bc.input_grad.Get(i), first_input_grad[i])) << i;
            for (int64_t i = 0; i < bc.grid_grad.count(); ++i)
                ASSERT_TRUE(BitwiseEqual(bc.grid_grad.Get(i), first_grid_grad[i])) << i;
        }
    }
    ASSERT_EQ(aclrtCtxSetSysParamOpt(ACL_OPT_DETERMINISTIC, 0), ACL_SUCCESS);
}

}  // namespace
}  // namespace gs3d_test
