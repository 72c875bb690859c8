// The fused warps' C API (include/gridsampler3d/warp3d.h) against the double reference
// sampler at coordinates computed here (F.affine_grid's base times theta; VoxelMorph's
// normalization of position + flow), thetaGrad and flowGrad against central finite
// differences of the library's own fp64 forward, and the argument checks (status, message,
// outputs untouched on refusal). Outputs of (20, 7, 1000) points: several chunks of the
// library's workspace (65536 points each), so the sums across chunks are checked too, and rows
// of 1001 points, so that every SIMD target's rows end in a staged piece (warps/rows.cpp).
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "acl/acl.h"
#include "gridsampler3d/warp3d.h"
#include "support/op_runner.h"
#include "support/simd_target.h"
#include "support/test_tensor.h"

namespace gs3d_test {
namespace {

constexpr int64_t kN = 2, kC = 2, kD = 5, kH = 6, kW = 7;     // input
struct OutDims {
    int64_t d, h, w;
};
constexpr OutDims kOut = {20, 7, 1001};  // output: 140140 points per item, in 3 chunks
constexpr double kStep = 1e-6;                                  // finite differences

// F.affine_grid's base coordinate i of `steps` (linspace(-1, 1), times (steps - 1) / steps
// without aligned corners), in double.
double Base(int64_t i, int64_t steps, bool align) {
    if (steps <= 1) return 0;
    const double v = -1 + 2.0 * static_cast<double>(i) / static_cast<double>(steps - 1);
    return align ? v : v * static_cast<double>(steps - 1) / static_cast<double>(steps);
}

Array5 AffineGrid(const std::vector<double>& theta, bool align, OutDims out = kOut) {
    const int64_t out_d = out.d, out_h = out.h, out_w = out.w;
    Array5 grid(kN, out_d, out_h, out_w, 3);
    for (int64_t n = 0; n < kN; ++n)
        for (int64_t d = 0; d < out_d; ++d)
            for (int64_t h = 0; h < out_h; ++h)
                for (int64_t w = 0; w < out_w; ++w) {
                    const double b[4] = {Base(w, out_w, align), Base(h, out_h, align), Base(d, out_d, align), 1};
                    for (int c = 0; c < 3; ++c) {
                        double v = 0;
                        for (int k = 0; k < 4; ++k) v += theta[n * 12 + c * 4 + k] * b[k];
                        grid.at(n, d, h, w, c) = v;
                    }
                }
    return grid;
}

Array5 FlowGrid(const Array5& flow, OutDims out = kOut) {  // flow (N, 3, D, H, W) in voxels along (D, H, W)
    const int64_t out_d = out.d, out_h = out.h, out_w = out.w;
    Array5 grid(kN, out_d, out_h, out_w, 3);
    const int64_t sizes[3] = {out_w, out_h, out_d};
    for (int64_t n = 0; n < kN; ++n)
        for (int64_t d = 0; d < out_d; ++d)
            for (int64_t h = 0; h < out_h; ++h)
                for (int64_t w = 0; w < out_w; ++w) {
                    const int64_t position[3] = {w, h, d};
                    for (int c = 0; c < 3; ++c)
                        grid.at(n, d, h, w, c) =
                            2 * ((position[c] + flow.at(n, 2 - c, d, h, w)) / static_cast<double>(sizes[c] - 1) - 0.5);
                }
    return grid;
}

// A small theta: near the identity, so most points land inside and some outside.
std::vector<double> RandomTheta(std::mt19937& rng) {
    std::normal_distribution<double> noise(0, 0.2);
    std::vector<double> theta(kN * 12);
    for (int64_t i = 0; i < kN * 12; ++i) theta[i] = (i % 12 == i % 12 / 4 * 5 ? 1.1 : 0) + noise(rng);
    return theta;
}

Array5 RandomFlow(std::mt19937& rng, OutDims out = kOut) {
    std::normal_distribution<double> voxels(0, 1.5);
    Array5 flow(kN, 3, out.d, out.h, out.w);
    for (double& v : flow.values) v = voxels(rng);
    return flow;
}

// The warp's output, inputGrad and parameters' gradient in fp64 for the given parameters.
void RunWarp(bool affine, const RefOptions& o, const Array5& input_values, const std::vector<double>& theta,
         const Array5& flow, const Array5& grad_values, Array5* out_values, Array5* input_grad_values,
         std::vector<double>* parameters_grad_values, OutDims dims = kOut) {
    const int64_t out_d = dims.d, out_h = dims.h, out_w = dims.w;
    TestTensor input(VolumeDims(kN, kC, kD, kH, kW, false), ACL_DOUBLE, ACL_FORMAT_NCDHW);
    TestTensor grad(VolumeDims(kN, kC, out_d, out_h, out_w, false), ACL_DOUBLE, ACL_FORMAT_NCDHW);
    TestTensor out(VolumeDims(kN, kC, out_d, out_h, out_w, false), ACL_DOUBLE, ACL_FORMAT_NCDHW);
    TestTensor input_grad(VolumeDims(kN, kC, kD, kH, kW, false), ACL_DOUBLE, ACL_FORMAT_NCDHW);
    StoreVolume(input_values, false, &input);
    StoreVolume(grad_values, false, &grad);
    if (affine) {
        TestTensor parameters({kN, 3, 4}, ACL_DOUBLE), parameters_grad({kN, 3, 4}, ACL_DOUBLE);
        for (int64_t i = 0; i < kN * 12; ++i) parameters.Set(i, theta[i]);
        ASSERT_EQ(RunTwoPhases(gs3dAffineWarp3DGetWorkspaceSize, gs3dAffineWarp3D, TestStream(), input.get(), parameters.get(),
                      int64_t{o.interpolation}, int64_t{o.padding}, o.align_corners, out.get()),
                  ACLNN_SUCCESS)
            << aclGetRecentErrMsg();
        ASSERT_EQ(RunTwoPhases(gs3dAffineWarp3DBackwardGetWorkspaceSize, gs3dAffineWarp3DBackward, TestStream(), grad.get(), input.get(),
                      parameters.get(), int64_t{o.interpolation}, int64_t{o.padding}, o.align_corners,
                      static_cast<const aclBoolArray*>(nullptr), input_grad.get(), parameters_grad.get()),
                  ACLNN_SUCCESS)
            << aclGetRecentErrMsg();
        parameters_grad_values->resize(kN * 12);
        for (int64_t i = 0; i < kN * 12; ++i) (*parameters_grad_values)[i] = parameters_grad.Get(i);
    } else {
        TestTensor parameters(VolumeDims(kN, 3, out_d, out_h, out_w, false), ACL_DOUBLE, ACL_FORMAT_NCDHW);
        TestTensor parameters_grad(VolumeDims(kN, 3, out_d, out_h, out_w, false), ACL_DOUBLE, ACL_FORMAT_NCDHW);
        StoreVolume(flow, false, &parameters);
        ASSERT_EQ(RunTwoPhases(gs3dDisplacementWarp3DGetWorkspaceSize, gs3dDisplacementWarp3D, TestStream(), input.get(), parameters.get(),
                      int64_t{o.interpolation}, int64_t{o.padding}, out.get()),
                  ACLNN_SUCCESS)
            << aclGetRecentErrMsg();
        ASSERT_EQ(RunTwoPhases(gs3dDisplacementWarp3DBackwardGetWorkspaceSize, gs3dDisplacementWarp3DBackward, TestStream(), grad.get(),
                      input.get(), parameters.get(), int64_t{o.interpolation}, int64_t{o.padding},
                      static_cast<const aclBoolArray*>(nullptr), input_grad.get(), parameters_grad.get()),
                  ACLNN_SUCCESS)
            << aclGetRecentErrMsg();
        *parameters_grad_values = LoadVolume(parameters_grad, false).values;
    }
    *out_values = LoadVolume(out, false);
    *input_grad_values = LoadVolume(input_grad, false);
}

class Warp3D : public ::testing::TestWithParam<std::tuple<int, int, bool, bool>> {
 protected:
    bool Affine() const { return std::get<3>(GetParam()); }
    bool Align() const { return Affine() ? std::get<2>(GetParam()) : true; }
    RefOptions Options() const { return {std::get<0>(GetParam()), std::get<1>(GetParam()), Align()}; }
};

TEST_P(Warp3D, MatchesTheReferenceAtTheWarpsCoordinates) {
    std::mt19937 rng(17);
    const RefOptions o = {std::get<0>(GetParam()), std::get<1>(GetParam()), Align()};
    const int64_t out_d = kOut.d, out_h = kOut.h, out_w = kOut.w;
    const Array5 input = RandomArray(rng, kN, kC, kD, kH, kW);
    const Array5 grad = RandomArray(rng, kN, kC, out_d, out_h, out_w);
    const std::vector<double> theta = RandomTheta(rng);
    const Array5 flow = RandomFlow(rng);
    const Array5 grid = Affine() ? AffineGrid(theta, Align()) : FlowGrid(flow);
    Array5 out, input_grad, input_grad_reference, grid_grad;
    std::vector<double> parameters_grad;
    RunWarp(Affine(), o, input, theta, flow, grad, &out, &input_grad, &parameters_grad);
    BackwardMagnitudes magnitudes;
    ReferenceBackward(grad, input, grid, o, &input_grad_reference, &grid_grad, &magnitudes);
    EXPECT_EQ(CompareArrays(out, ReferenceForward(input, grid, o), ACL_DOUBLE), "") << "out";
    if (o.interpolation == 2) {
        // Tricubic's border piles the clipped taps of every point outside onto the edge voxels:
        // sums of up to 10^5 terms of either sign, whose rounding (in another order than the
        // reference's) 64 ulps of the largest element does not bound; 64 ulps of each
        // element's sum of |terms| does (thetaGrad's bound below).
        for (int64_t i = 0; i < input_grad.Count(); ++i)
            EXPECT_NEAR(input_grad.values[i], input_grad_reference.values[i],
                        64 * 0x1p-52 * magnitudes.input_grad.values[i] + 1e-300)
                << "inputGrad[" << i << "]";
    } else {
        EXPECT_EQ(CompareArrays(input_grad, input_grad_reference, ACL_DOUBLE), "") << "inputGrad";
    }
    // The parameters' gradient from the reference gridGrad: times the base coordinates and
    // summed (theta), or scaled by the normalization (flow).
    if (Affine()) {
        for (int64_t n = 0; n < kN; ++n)
            for (int c = 0; c < 3; ++c)
                for (int k = 0; k < 4; ++k) {
                    double expected = 0, magnitude = 0;
                    for (int64_t d = 0; d < out_d; ++d)
                        for (int64_t h = 0; h < out_h; ++h)
                            for (int64_t w = 0; w < out_w; ++w) {
                                const double b[4] = {Base(w, out_w, Align()), Base(h, out_h, Align()),
                                                     Base(d, out_d, Align()), 1};
                                expected += grid_grad.at(n, d, h, w, c) * b[k];
                                magnitude += std::fabs(grid_grad.at(n, d, h, w, c) * b[k]);
                            }
                    // Sums of 140140 terms in other orders: 64 ulps of the terms' magnitude.
                    EXPECT_NEAR(parameters_grad[n * 12 + c * 4 + k], expected, 64 * 0x1p-52 * magnitude + 1e-300)
                        << "thetaGrad[" << n << "][" << c << "][" << k << "]";
                }
    } else {
        Array5 expected(kN, 3, out_d, out_h, out_w);
        const int64_t sizes[3] = {out_w, out_h, out_d};
        for (int64_t i = 0; i < grid_grad.Count(); ++i) {
            const int c = static_cast<int>(i % 3);
            const int64_t point = i / 3, w = point % out_w, h = point / out_w % out_h, d = point / (out_w * out_h) % out_d,
                          n = point / (out_w * out_h * out_d);
            expected.at(n, 2 - c, d, h, w) = 2 * grid_grad.values[i] / static_cast<double>(sizes[c] - 1);
        }
        Array5 actual(kN, 3, out_d, out_h, out_w);
        actual.values = parameters_grad;
        EXPECT_EQ(CompareArrays(actual, expected, ACL_DOUBLE), "") << "flowGrad";
    }
}

// thetaGrad against central differences of the library's fp64 forward, bilinear only (the
// nearest sample is piecewise constant in theta), on a small output whose every coordinate
// lies away from the kinks (integer source indices, clip and reflection boundaries) by
// far more than a step moves it: theta drawn until that holds.
class Warp3DThetaGrad : public ::testing::TestWithParam<std::tuple<int, bool>> {};

TEST_P(Warp3DThetaGrad, IsTheDerivative) {
    const RefOptions o = {0, std::get<0>(GetParam()), std::get<1>(GetParam())};
    constexpr OutDims kSmall = {3, 4, 5};
    std::mt19937 rng(23);
    const Array5 input = RandomArray(rng, kN, kC, kD, kH, kW);
    const Array5 grad = RandomArray(rng, kN, kC, kSmall.d, kSmall.h, kSmall.w);
    const int64_t sizes[3] = {kW, kH, kD};
    auto smooth = [&](const std::vector<double>& theta) {
        const Array5 grid = AffineGrid(theta, o.align_corners, kSmall);
        for (int64_t i = 0; i < grid.Count(); ++i) {
            const double g = grid.values[i];
            const int64_t size = sizes[i % 3];
            const AxisIndex lo = ReferenceSourceIndex(g - 1e-4, size, o), mid = ReferenceSourceIndex(g, size, o),
                            hi = ReferenceSourceIndex(g + 1e-4, size, o);
            if (std::floor(lo.index) != std::floor(hi.index) || lo.derivative != mid.derivative ||
                hi.derivative != mid.derivative)
                return false;
        }
        return true;
    };
    std::vector<double> theta = RandomTheta(rng);
    while (!smooth(theta)) theta = RandomTheta(rng);
    Array5 out, input_grad;
    std::vector<double> theta_grad, unused;
    RunWarp(true, o, input, theta, Array5(), grad, &out, &input_grad, &theta_grad, kSmall);
    auto loss = [&](const std::vector<double>& t) {
        Array5 o_values, ig;
        RunWarp(true, o, input, t, Array5(), grad, &o_values, &ig, &unused, kSmall);
        double sum = 0;
        for (int64_t i = 0; i < o_values.Count(); ++i) sum += o_values.values[i] * grad.values[i];
        return sum;
    };
    for (int64_t i = 0; i < kN * 12; ++i) {
        std::vector<double> up = theta, down = theta;
        up[i] += kStep;
        down[i] -= kStep;
        const double difference = (loss(up) - loss(down)) / (2 * kStep);
        // Central differences of a smooth function: O(step^2) plus rounding of sums of 60
        // terms of magnitude 16 over a step of 1e-6, far below 1e-6.
        EXPECT_NEAR(theta_grad[i], difference, 1e-6 * std::max(1.0, std::fabs(difference))) << "theta[" << i << "]";
    }
}

INSTANTIATE_TEST_SUITE_P(ModesPaddingsAlignmentKinds, Warp3D,
                         ::testing::Combine(::testing::Values(0, 1, 2), ::testing::Values(0, 1, 2), ::testing::Bool(),
                                            ::testing::Bool()));
INSTANTIATE_TEST_SUITE_P(PaddingsAlignment, Warp3DThetaGrad,
                         ::testing::Combine(::testing::Values(0, 1, 2), ::testing::Bool()));

// A refusal returns the status, names the argument, and leaves the outputs untouched.
TEST(Warp3DChecks, RefusalsNameTheArgumentAndWriteNothing) {
    TestTensor input(VolumeDims(1, 1, 4, 4, 4, false), ACL_FLOAT, ACL_FORMAT_NCDHW);
    TestTensor out(VolumeDims(1, 1, 3, 3, 3, false), ACL_FLOAT, ACL_FORMAT_NCDHW);
    TestTensor theta({1, 3, 4}, ACL_FLOAT), bad_theta({1, 3, 3}, ACL_FLOAT), double_theta({1, 3, 4}, ACL_DOUBLE);
    TestTensor flow(VolumeDims(1, 3, 3, 3, 3, false), ACL_FLOAT, ACL_FORMAT_NCDHW);
    TestTensor thin_flow(VolumeDims(1, 3, 1, 3, 3, false), ACL_FLOAT, ACL_FORMAT_NCDHW);
    TestTensor thin_out(VolumeDims(1, 1, 1, 3, 3, false), ACL_FLOAT, ACL_FORMAT_NCDHW);
    out.Fill(7);
    thin_out.Fill(7);
    uint64_t bytes = 0;
    aclOpExecutor* executor = nullptr;
    auto refused = [&](aclnnStatus status, aclnnStatus expected, const std::string& words) {
        EXPECT_EQ(status, expected);
        EXPECT_NE(std::string(aclGetRecentErrMsg()).find(words), std::string::npos) << aclGetRecentErrMsg();
    };
    refused(gs3dAffineWarp3DGetWorkspaceSize(input.get(), nullptr, 0, 0, false, out.get(), &bytes, &executor),
            ACLNN_ERR_PARAM_NULLPTR, "theta");
    refused(gs3dAffineWarp3DGetWorkspaceSize(input.get(), bad_theta.get(), 0, 0, false, out.get(), &bytes, &executor),
            ACLNN_ERR_PARAM_INVALID, "theta has shape");
    refused(gs3dAffineWarp3DGetWorkspaceSize(input.get(), double_theta.get(), 0, 0, false, out.get(), &bytes, &executor),
            ACLNN_ERR_PARAM_INVALID, "dtype");
    refused(gs3dAffineWarp3DGetWorkspaceSize(input.get(), theta.get(), 3, 0, false, out.get(), &bytes, &executor),
            ACLNN_ERR_PARAM_INVALID, "expected 0 (bilinear), 1 (nearest) or 2 (tricubic)");
    refused(gs3dAffineWarp3DGetWorkspaceSize(input.get(), theta.get(), 0, 0, false, input.get(), &bytes, &executor),
            ACLNN_ERR_PARAM_INVALID, "overlaps");
    refused(gs3dDisplacementWarp3DGetWorkspaceSize(input.get(), thin_flow.get(), 0, 0, thin_out.get(), &bytes, &executor),
            ACLNN_ERR_PARAM_INVALID, "at least 2");
    refused(gs3dDisplacementWarp3DGetWorkspaceSize(input.get(), flow.get(), 0, 0, thin_out.get(), &bytes, &executor),
            ACLNN_ERR_PARAM_INVALID, "flow has shape");
    TestTensor grad(VolumeDims(1, 1, 3, 3, 3, false), ACL_FLOAT, ACL_FORMAT_NCDHW);
    TestTensor input_grad(VolumeDims(1, 1, 4, 4, 4, false), ACL_FLOAT, ACL_FORMAT_NCDHW), theta_grad({1, 3, 4}, ACL_FLOAT);
    input_grad.Fill(7);
    theta_grad.Fill(7);
    const bool three[3] = {true, true, true};
    aclBoolArray* mask = aclCreateBoolArray(three, 3);
    refused(gs3dAffineWarp3DBackwardGetWorkspaceSize(grad.get(), input.get(), theta.get(), 0, 0, false, mask,
                                                     input_grad.get(), theta_grad.get(), &bytes, &executor),
            ACLNN_ERR_PARAM_INVALID, "outputMask");
    aclDestroyBoolArray(mask);
    refused(gs3dAffineWarp3DBackwardGetWorkspaceSize(grad.get(), input.get(), theta.get(), 0, 0, false, nullptr,
                                                     input_grad.get(), bad_theta.get(), &bytes, &executor),
            ACLNN_ERR_PARAM_INVALID, "thetaGrad");
    for (int64_t i = 0; i < out.count(); ++i) EXPECT_EQ(out.Get(i), 7);
    for (int64_t i = 0; i < thin_out.count(); ++i) EXPECT_EQ(thin_out.Get(i), 7);
    for (int64_t i = 0; i < input_grad.count(); ++i) EXPECT_EQ(input_grad.Get(i), 7);
    for (int64_t i = 0; i < theta_grad.count(); ++i) EXPECT_EQ(theta_grad.Get(i), 7);
}

// The displacement forward takes its chunks plane after plane, and a plane of more points
// than a chunk in groups of rows (warps/rows.h): a plane of 260 x 260 points, two chunks each.
TEST(Warp3DRows, PlanesLargerThanAChunk) {
    std::mt19937 rng(31);
    constexpr OutDims kWide = {2, 260, 260};
    const RefOptions o = {0, 0, true};
    const Array5 input = RandomArray(rng, kN, kC, kD, kH, kW), grad = RandomArray(rng, kN, kC, kWide.d, kWide.h, kWide.w);
    const Array5 flow = RandomFlow(rng, kWide);
    Array5 out, input_grad, input_grad_reference, grid_grad;
    std::vector<double> flow_grad;
    RunWarp(false, o, input, {}, flow, grad, &out, &input_grad, &flow_grad, kWide);
    const Array5 grid = FlowGrid(flow, kWide);
    ReferenceBackward(grad, input, grid, o, &input_grad_reference, &grid_grad);
    EXPECT_EQ(CompareArrays(out, ReferenceForward(input, grid, o), ACL_DOUBLE), "") << "out";
    EXPECT_EQ(CompareArrays(input_grad, input_grad_reference, ACL_DOUBLE), "") << "inputGrad";
}

// A flow packed along W (NCDHW) has its coordinates and flowGrad loaded and stored in
// vectors; one given channels-last is staged a piece at a time (warps/rows.cpp). Both by the
// same vector code: the same bits in fp32 (a path's mistake, a lane or an axis out of place,
// shows as a difference), rows of 37 points ending in a staged piece on every target.
TEST(Warp3DRows, PackedRowsEqualStagedRows) {
    std::mt19937 rng(29);
    constexpr OutDims kRows = {3, 4, 37};
    const Array5 input_values = RandomArray(rng, 1, 1, kD, kH, kW), grad_values = RandomArray(rng, 1, 1, kRows.d, kRows.h, kRows.w);
    Array5 flow_values(1, 3, kRows.d, kRows.h, kRows.w);
    std::normal_distribution<double> voxels(0, 1.5);
    for (double& v : flow_values.values) v = voxels(rng);
    Array5 results[2][3];  // per flow layout: out, inputGrad, flowGrad
    for (const bool channels_last : {false, true}) {
        TestTensor input(VolumeDims(1, 1, kD, kH, kW, false), ACL_FLOAT, ACL_FORMAT_NCDHW);
        TestTensor grad(VolumeDims(1, 1, kRows.d, kRows.h, kRows.w, false), ACL_FLOAT, ACL_FORMAT_NCDHW);
        TestTensor out(VolumeDims(1, 1, kRows.d, kRows.h, kRows.w, false), ACL_FLOAT, ACL_FORMAT_NCDHW);
        TestTensor input_grad(VolumeDims(1, 1, kD, kH, kW, false), ACL_FLOAT, ACL_FORMAT_NCDHW);
        const aclFormat format = channels_last ? ACL_FORMAT_NDHWC : ACL_FORMAT_NCDHW;
        TestTensor flow(VolumeDims(1, 3, kRows.d, kRows.h, kRows.w, channels_last), ACL_FLOAT, format);
        TestTensor flow_grad(VolumeDims(1, 3, kRows.d, kRows.h, kRows.w, channels_last), ACL_FLOAT, format);
        StoreVolume(input_values, false, &input);
        StoreVolume(grad_values, false, &grad);
        StoreVolume(flow_values, channels_last, &flow);
        ASSERT_EQ(RunTwoPhases(gs3dDisplacementWarp3DGetWorkspaceSize, gs3dDisplacementWarp3D, TestStream(), input.get(),
                               flow.get(), int64_t{0}, int64_t{1}, out.get()),
                  ACLNN_SUCCESS)
            << aclGetRecentErrMsg();
        ASSERT_EQ(RunTwoPhases(gs3dDisplacementWarp3DBackwardGetWorkspaceSize, gs3dDisplacementWarp3DBackward, TestStream(),
                               grad.get(), input.get(), flow.get(), int64_t{0}, int64_t{1},
                               static_cast<const aclBoolArray*>(nullptr), input_grad.get(), flow_grad.get()),
                  ACLNN_SUCCESS)
            << aclGetRecentErrMsg();
        results[channels_last][0] = LoadVolume(out, false);
        results[channels_last][1] = LoadVolume(input_grad, false);
        results[channels_last][2] = LoadVolume(flow_grad, channels_last);
    }
    const char* names[3] = {"out", "inputGrad", "flowGrad"};
    for (int k = 0; k < 3; ++k) EXPECT_EQ(results[0][k].values, results[1][k].values) << names[k];
}

// Every SIMD target gives the same bits (design.md: only channels-last gridGrad sums follow
// the vector width): the warps' rows in vectors of each width, and thetaGrad's four chains in
// one vector of four, two of two or four of one. fp64, rows of 37 points (a staged end).
TEST(Warp3DRows, SameBitsOnEverySimdTarget) {
    std::mt19937 rng(37);
    constexpr OutDims kSmall = {3, 5, 37};
    const RefOptions o = {0, 0, false};
    const Array5 input = RandomArray(rng, kN, kC, kD, kH, kW), grad = RandomArray(rng, kN, kC, kSmall.d, kSmall.h, kSmall.w);
    const std::vector<double> theta = RandomTheta(rng);
    const Array5 flow = RandomFlow(rng, kSmall);
    for (const bool affine : {true, false}) {
        std::vector<double> first;
        std::string first_target;
        int targets = 0;
        ForEachSimdTarget([&](const std::string& target) {
            Array5 out, input_grad;
            std::vector<double> parameters_grad;
            RunWarp(affine, o, input, theta, flow, grad, &out, &input_grad, &parameters_grad, kSmall);
            std::vector<double> all = out.values;
            all.insert(all.end(), input_grad.values.begin(), input_grad.values.end());
            all.insert(all.end(), parameters_grad.begin(), parameters_grad.end());
            ++targets;
            if (first.empty()) {
                first = all, first_target = target;
                return;
            }
            EXPECT_EQ(all, first) << (affine ? "affine" : "displacement") << " on " << target << " against "
                                  << first_target;
        });
        EXPECT_GE(targets, 1);
    }
}

// flowGrad's dims are read in the flow's format, as inputGrad's are in the input's: a flow
// given NDHWC (N, Do, Ho, Wo, 3) and a flowGrad of those dims in ND format get the same values
// as an NDHWC flowGrad (the fuzzer found the ND one read as NCDHW, writing past its storage).
TEST(Warp3DChecks, FlowGradIsReadInTheFlowsFormat) {
    std::mt19937 rng(5);
    TestTensor input(VolumeDims(1, 1, 4, 4, 4, false), ACL_DOUBLE, ACL_FORMAT_NCDHW);
    TestTensor grad(VolumeDims(1, 1, 2, 3, 4, false), ACL_DOUBLE, ACL_FORMAT_NCDHW);
    TestTensor flow({1, 2, 3, 4, 3}, ACL_DOUBLE, ACL_FORMAT_NDHWC);
    TestTensor input_grad(VolumeDims(1, 1, 4, 4, 4, false), ACL_DOUBLE, ACL_FORMAT_NCDHW);
    TestTensor as_nd({1, 2, 3, 4, 3}, ACL_DOUBLE, ACL_FORMAT_ND), as_ndhwc({1, 2, 3, 4, 3}, ACL_DOUBLE, ACL_FORMAT_NDHWC);
    for (int64_t i = 0; i < input.count(); ++i) input.Set(i, RandomValue(rng));
    for (int64_t i = 0; i < grad.count(); ++i) grad.Set(i, RandomValue(rng));
    for (int64_t i = 0; i < flow.count(); ++i) flow.Set(i, RandomValue(rng) / 8);
    for (TestTensor* flow_grad : {&as_nd, &as_ndhwc})
        ASSERT_EQ(RunTwoPhases(gs3dDisplacementWarp3DBackwardGetWorkspaceSize, gs3dDisplacementWarp3DBackward, TestStream(), grad.get(),
                            input.get(), flow.get(), int64_t{0}, int64_t{0}, static_cast<const aclBoolArray*>(nullptr),
                            input_grad.get(), flow_grad->get()),
                  ACLNN_SUCCESS)
            << aclGetRecentErrMsg();
    for (int64_t i = 0; i < as_nd.count(); ++i) EXPECT_EQ(as_nd.Get(i), as_ndhwc.Get(i)) << i;
    EXPECT_TRUE(as_nd.OutsideViewUntouched());
}

}  // namespace
}  // namespace gs3d_test
