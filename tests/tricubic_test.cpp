// The tricubic extension (include/gridsampler3d/tricubic3d.h) beyond the reference matrix
// (grid_sampler3d_matrix_test) and the finite differences: its calls' checks and messages,
// modes 0 and 1 through it equal to the aclnn calls, NaN, inf and huge coordinates, and the
// same bits for any thread count and on every SIMD target.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "aclnnop/aclnn_grid_sampler3d.h"
#include "gridsampler3d/cpu_device.h"
#include "gridsampler3d/tricubic3d.h"
#include "support/backward_case.h"
#include "support/op_runner.h"
#include "support/simd_target.h"
#include "support/test_tensor.h"

namespace gs3d_test {
namespace {

std::string RecentMessage() {
    const char* message = aclGetRecentErrMsg();
    return message ? message : "";
}

TEST(TricubicExtension, TakesModeTwoWhichAclnnRefuses) {
    TestTensor input({1, 2, 3, 4, 5}, ACL_FLOAT), grid({1, 2, 2, 2, 3}, ACL_FLOAT), out({1, 2, 2, 2, 2}, ACL_FLOAT);
    uint64_t bytes = 0;
    aclOpExecutor* executor = nullptr;
    EXPECT_EQ(aclnnGridSampler3DGetWorkspaceSize(input.get(), grid.get(), 2, 0, false, out.get(), &bytes, &executor),
              ACLNN_ERR_PARAM_INVALID);
    EXPECT_EQ(executor, nullptr);
    EXPECT_EQ(RunForward(input.get(), grid.get(), RefOptions{2, 0, false}, out.get()), ACLNN_SUCCESS);
    for (int64_t mode : {-1, 3}) {
        EXPECT_EQ(gs3dGridSampler3DGetWorkspaceSize(input.get(), grid.get(), mode, 0, false, out.get(), &bytes, &executor),
                  ACLNN_ERR_PARAM_INVALID);
        EXPECT_EQ(executor, nullptr);
        EXPECT_EQ(RecentMessage(), "gs3dGridSampler3DGetWorkspaceSize: interpolationMode " + std::to_string(mode) +
                                       " is not supported; expected 0 (bilinear), 1 (nearest) or 2 (tricubic) (code 161002)");
    }
}

TEST(TricubicExtension, ChecksAsTheAclnnCallsDoUnderItsOwnName) {
    TestTensor grad({1, 2, 2, 2, 2}, ACL_FLOAT), input({1, 2, 3, 4, 5}, ACL_FLOAT), grid({1, 2, 2, 2, 2}, ACL_FLOAT),
        input_grad({1, 2, 3, 4, 5}, ACL_FLOAT), grid_grad({1, 2, 2, 2, 2}, ACL_FLOAT);
    uint64_t bytes = 0;
    aclOpExecutor* executor = nullptr;
    EXPECT_EQ(gs3dGridSampler3DBackwardGetWorkspaceSize(grad.get(), input.get(), grid.get(), 2, 0, false, nullptr,
                                                        input_grad.get(), grid_grad.get(), &bytes, &executor),
              ACLNN_ERR_PARAM_INVALID);
    EXPECT_EQ(executor, nullptr);
    const std::string message = RecentMessage();
    EXPECT_EQ(message.rfind("gs3dGridSampler3DBackwardGetWorkspaceSize: grid has shape", 0), 0u) << message;
    EXPECT_EQ(gs3dGridSampler3DBackwardGetWorkspaceSize(grad.get(), input.get(), grid.get(), 2, 3, false, nullptr,
                                                        input_grad.get(), grid_grad.get(), &bytes, &executor),
              ACLNN_ERR_PARAM_INVALID);
    EXPECT_NE(RecentMessage().find("paddingMode 3"), std::string::npos);
}

// Bilinear and nearest through the extension are the aclnn calls' results, bit for bit.
TEST(TricubicExtension, BilinearAndNearestAreTheAclnnResults) {
    for (int interpolation : {0, 1}) {
        BackwardCase ours(ACL_FLOAT, 2, 3, 5, 6, 7, 3, 4, 5, 31u), theirs(ACL_FLOAT, 2, 3, 5, 6, 7, 3, 4, 5, 31u);
        const RefOptions options{interpolation, 1, false};
        uint64_t bytes = 0;
        aclOpExecutor* executor = nullptr;
        ASSERT_EQ(theirs.Run(std::vector<bool>{true, true}, options), ACLNN_SUCCESS);  // aclnn
        ASSERT_EQ(gs3dGridSampler3DBackwardGetWorkspaceSize(ours.grad.get(), ours.input.get(), ours.grid.get(),
                                                            interpolation, 1, false, nullptr, ours.input_grad.get(),
                                                            ours.grid_grad.get(), &bytes, &executor),
                  ACLNN_SUCCESS);
        void* workspace = nullptr;
        if (bytes) ASSERT_EQ(aclrtMalloc(&workspace, bytes, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS);
        ASSERT_EQ(gs3dGridSampler3DBackward(workspace, bytes, executor, TestStream()), ACLNN_SUCCESS);
        ASSERT_EQ(aclrtSynchronizeStream(TestStream()), ACL_SUCCESS);
        if (workspace) aclrtFree(workspace);
        for (int64_t i = 0; i < ours.input_grad.count(); ++i)
            ASSERT_TRUE(BitwiseEqual(ours.input_grad.Get(i), theirs.input_grad.Get(i))) << "inputGrad " << i;
        for (int64_t i = 0; i < ours.grid_grad.count(); ++i)
            ASSERT_TRUE(BitwiseEqual(ours.grid_grad.Get(i), theirs.grid_grad.Get(i))) << "gridGrad " << i;
    }
}

// NaN and inf coordinates give NaN outputs (the weights of a NaN fraction), as PyTorch's 2-D
// bicubic does; huge finite ones sample taps far outside (zeros: 0), at the edge (border) or
// reflected back inside (reflection), as the reference computes; nothing is read or written
// out of bounds on the way (the sanitizer run covers this suite too).
TEST(TricubicHostile, NanInfAndHugeCoordinates) {
    const double kNan = std::numeric_limits<double>::quiet_NaN(), kInf = std::numeric_limits<double>::infinity();
    const std::vector<double> unusual = {kNan, kInf, -kInf, 3e9, -3e9, 0.25};
    for (int padding : {0, 1, 2}) {
        SCOPED_TRACE("padding " + std::to_string(padding));
        const RefOptions options{2, padding, false};
        BackwardCase c(ACL_DOUBLE, 1, 2, 4, 5, 6, 1, static_cast<int64_t>(unusual.size()), 3, 5u);
        for (size_t p = 0; p < unusual.size(); ++p)
            for (int axis = 0; axis < 3; ++axis) {  // point (0, p, axis): the unusual value on one axis
                c.grid_values.at(0, 0, static_cast<int64_t>(p), axis, axis) = unusual[p];
                c.grid.Set(c.grid_values.Index(0, 0, static_cast<int64_t>(p), axis, axis), unusual[p]);
            }
        TestTensor out({1, 2, 1, static_cast<int64_t>(unusual.size()), 3}, ACL_DOUBLE);
        ASSERT_EQ(RunForward(c.input.get(), c.grid.get(), options, out.get()), ACLNN_SUCCESS);
        ASSERT_EQ(c.Run(std::vector<bool>{true, true}, options), ACLNN_SUCCESS);
        const Array5 values = LoadVolume(out, false);
        Array5 finite_grid = c.grid_values;  // the reference takes the finite points only
        for (double& v : finite_grid.values)
            if (!std::isfinite(v)) v = 0;
        const Array5 expected = ReferenceForward(c.input_values, finite_grid, options);
        for (int64_t channel = 0; channel < 2; ++channel)
            for (int64_t p = 0; p < static_cast<int64_t>(unusual.size()); ++p)
                for (int64_t axis = 0; axis < 3; ++axis) {
                    const double v = values.at(0, channel, 0, p, axis);
                    if (!std::isfinite(unusual[static_cast<size_t>(p)]))
                        EXPECT_TRUE(std::isnan(v)) << "point " << p << " axis " << axis << ": " << v;
                    else
                        EXPECT_NEAR(v, expected.at(0, channel, 0, p, axis), 1e-12) << "point " << p << " axis " << axis;
                }
        // A NaN point's scatter adds NaN weights (as PyTorch's would); no element becomes inf.
        for (int64_t i = 0; i < c.input_grad.count(); ++i) EXPECT_FALSE(std::isinf(c.input_grad.Get(i))) << i;
    }
}

// Every inputGrad element sums its contributions in grid order whatever the thread count
// (each thread owns a slab of planes), and gridGrad is per point: the same bits for 1, 2 and 3
// threads, near the identity (rows crossing the slabs) and on random points.
TEST(TricubicThreads, SameBitsForAnyThreadCount) {
    for (bool near_identity : {true, false}) {
        SCOPED_TRACE(near_identity ? "near identity" : "random points");
        std::vector<std::vector<double>> results;
        for (int32_t threads : {1, 2, 3}) {
            ASSERT_EQ(gs3dSetNumThreads(threads), ACL_SUCCESS);
            BackwardCase c(ACL_FLOAT, 2, 3, 9, 10, 11, 8, 9, 10, 77u);
            if (near_identity) {
                std::mt19937 rng(3);
                c.grid_values = NearIdentityGrid(rng, 2, 8, 9, 10, 0.05);
                StoreGrid(c.grid_values, &c.grid);
            }
            ASSERT_EQ(c.Run(std::vector<bool>{true, true}, RefOptions{2, 2, false}), ACLNN_SUCCESS);
            std::vector<double> bits;
            for (int64_t i = 0; i < c.input_grad.count(); ++i) bits.push_back(c.input_grad.Get(i));
            for (int64_t i = 0; i < c.grid_grad.count(); ++i) bits.push_back(c.grid_grad.Get(i));
            results.push_back(bits);
        }
        for (size_t t = 1; t < results.size(); ++t)
            for (size_t i = 0; i < results[0].size(); ++i)
                ASSERT_TRUE(BitwiseEqual(results[t][i], results[0][i])) << "threads " << t + 1 << ", element " << i;
    }
    ASSERT_EQ(gs3dSetNumThreads(0), ACL_SUCCESS);
}

// Every SIMD target gives the same bits (design.md), for every padding: the taps' padding in
// vectors (reflection's marked lanes and the targets without vector reflection in scalar
// code), the edge points' moves, the paired moves and the elementwise sums of each vector
// width. A random grid over a small volume puts most points at the edges; some coordinates
// are NaN, inf or huge.
TEST(TricubicTargets, SameBitsOnEverySimdTarget) {
    const double kInf = std::numeric_limits<double>::infinity();
    const std::vector<double> unusual = {std::numeric_limits<double>::quiet_NaN(), kInf, -kInf, 3e9, -3e9, 1e6, -7.5};
    for (const aclDataType type : {ACL_FLOAT, ACL_DOUBLE})
        for (int padding : {0, 1, 2})
            for (bool align : {false, true}) {
                SCOPED_TRACE("type " + std::to_string(type) + " padding " + std::to_string(padding) + " align " +
                             std::to_string(align));
                const RefOptions options{2, padding, align};
                std::vector<double> first;
                std::string first_target;
                ForEachSimdTarget([&](const std::string& target) {
                    BackwardCase c(type, 1, 2, 6, 7, 9, 2, 3, 37, 11u);
                    for (size_t i = 0; i < unusual.size(); ++i) {  // on point (0, 1, 5 i), axis i % 3
                        const int64_t at = c.grid_values.Index(0, 0, 1, static_cast<int64_t>(5 * i), static_cast<int64_t>(i % 3));
                        c.grid_values.values[static_cast<size_t>(at)] = unusual[i];
                        c.grid.Set(at, unusual[i]);
                    }
                    TestTensor out({1, 2, 2, 3, 37}, type);
                    ASSERT_EQ(RunForward(c.input.get(), c.grid.get(), options, out.get()), ACLNN_SUCCESS);
                    ASSERT_EQ(c.Run(std::vector<bool>{true, true}, options), ACLNN_SUCCESS);
                    std::vector<double> all;
                    for (const TestTensor* t : {&out, &c.input_grad, &c.grid_grad})
                        for (int64_t i = 0; i < t->count(); ++i) all.push_back(t->Get(i));
                    if (first.empty()) {
                        first = all, first_target = target;
                        return;
                    }
                    ASSERT_EQ(all.size(), first.size());
                    for (size_t i = 0; i < all.size(); ++i)
                        ASSERT_TRUE(BitwiseEqual(all[i], first[i]))
                            << "element " << i << ": " << all[i] << " on " << target << ", " << first[i] << " on " << first_target;
                });
                EXPECT_FALSE(first.empty());
            }
}

}  // namespace
}  // namespace gs3d_test
