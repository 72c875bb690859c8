// Semantics beyond the value matrix: outputMask, empty tensors, broadcast (stride 0) inputs,
// hostile grid values, fp16/bf16 rounding, in-order asynchronous streams and run-to-run
// determinism. The kernels' own paths on larger problems: grid_sampler3d_kernel_paths_test.
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
#include "support/backward_case.h"
#include "support/op_runner.h"
#include "support/test_tensor.h"

namespace gs3d_test {
namespace {

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
