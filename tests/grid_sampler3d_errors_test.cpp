// Every refused input of both ops, with its exact aclnn status code and a message through
// aclGetRecentErrMsg that names the argument. A refused call creates no executor.
#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "aclnnop/aclnn_grid_sampler3d.h"
#include "aclnnop/aclnn_grid_sampler3d_backward.h"
#include "support/op_runner.h"
#include "support/test_tensor.h"

namespace gs3d_test {
namespace {

using Tensor = std::unique_ptr<TestTensor>;

Tensor Make(std::vector<int64_t> dims, aclDataType type = ACL_FLOAT, aclFormat format = ACL_FORMAT_ND) {
    return std::make_unique<TestTensor>(std::move(dims), type, format);
}

std::string RecentMessage() {
    const char* message = aclGetRecentErrMsg();
    return message ? message : "";
}

// A valid backward call: input (1, 2, 3, 4, 5), grid (1, 2, 2, 2, 3); each test breaks one thing.
class BackwardErrors : public ::testing::Test {
 protected:
    Tensor grad = Make({1, 2, 2, 2, 2}), input = Make({1, 2, 3, 4, 5}), grid = Make({1, 2, 2, 2, 3}),
           input_grad = Make({1, 2, 3, 4, 5}), grid_grad = Make({1, 2, 2, 2, 3});
    int64_t interpolation = 0, padding = 0;
    std::vector<bool> mask{true, true};
    bool use_mask = true;
    uint64_t workspace_size = 0;
    aclOpExecutor* executor = nullptr;

    aclnnStatus Call(const aclTensor* g, const aclTensor* in, const aclTensor* gr, aclTensor* ig, aclTensor* gg,
                     uint64_t* ws, aclOpExecutor** ex) {
        bool values[4] = {};
        for (size_t i = 0; i < mask.size() && i < 4; ++i) values[i] = mask[i];
        aclBoolArray* m = use_mask ? aclCreateBoolArray(values, mask.size()) : nullptr;
        aclnnStatus status =
            aclnnGridSampler3DBackwardGetWorkspaceSize(g, in, gr, interpolation, padding, false, m, ig, gg, ws, ex);
        aclDestroyBoolArray(m);
        return status;
    }
    aclnnStatus Call() {
        return Call(grad->get(), input->get(), grid->get(), input_grad->get(), grid_grad->get(), &workspace_size,
                    &executor);
    }
    // Expects `code` from the current setup and a message that mentions `word`.
    void ExpectRefused(aclnnStatus code, const std::string& word) {
        aclGetRecentErrMsg();  // clear
        EXPECT_EQ(Call(), code);
        EXPECT_EQ(executor, nullptr);
        const std::string message = RecentMessage();
        EXPECT_NE(message.find(word), std::string::npos) << message;
    }
    void TearDown() override {
        if (executor) aclnnGridSampler3DBackward(nullptr, 0, executor, TestStream());  // consume it
        aclrtSynchronizeStream(TestStream());
    }
};

TEST_F(BackwardErrors, ValidCallSucceeds) {
    EXPECT_EQ(Call(), ACLNN_SUCCESS);
    ASSERT_NE(executor, nullptr);
    std::vector<char> workspace(workspace_size);
    EXPECT_EQ(aclnnGridSampler3DBackward(workspace.data(), workspace_size, executor, TestStream()), ACLNN_SUCCESS);
    executor = nullptr;
    EXPECT_EQ(aclrtSynchronizeStream(TestStream()), ACL_SUCCESS);
}

TEST_F(BackwardErrors, NullWorkspaceSize) {
    EXPECT_EQ(Call(grad->get(), input->get(), grid->get(), input_grad->get(), grid_grad->get(), nullptr, &executor),
              ACLNN_ERR_PARAM_NULLPTR);
    EXPECT_NE(RecentMessage().find("workspaceSize"), std::string::npos);
}
TEST_F(BackwardErrors, NullExecutor) {
    EXPECT_EQ(Call(grad->get(), input->get(), grid->get(), input_grad->get(), grid_grad->get(), &workspace_size, nullptr),
              ACLNN_ERR_PARAM_NULLPTR);
    EXPECT_NE(RecentMessage().find("executor"), std::string::npos);
}
TEST_F(BackwardErrors, NullGradOutput) {
    EXPECT_EQ(Call(nullptr, input->get(), grid->get(), input_grad->get(), grid_grad->get(), &workspace_size, &executor),
              ACLNN_ERR_PARAM_NULLPTR);
    EXPECT_NE(RecentMessage().find("gradOutput"), std::string::npos);
}
TEST_F(BackwardErrors, NullInput) {
    EXPECT_EQ(Call(grad->get(), nullptr, grid->get(), input_grad->get(), grid_grad->get(), &workspace_size, &executor),
              ACLNN_ERR_PARAM_NULLPTR);
    EXPECT_NE(RecentMessage().find("input"), std::string::npos);
}
TEST_F(BackwardErrors, NullGrid) {
    EXPECT_EQ(Call(grad->get(), input->get(), nullptr, input_grad->get(), grid_grad->get(), &workspace_size, &executor),
              ACLNN_ERR_PARAM_NULLPTR);
    EXPECT_NE(RecentMessage().find("grid"), std::string::npos);
}
TEST_F(BackwardErrors, NullInputGrad) {
    EXPECT_EQ(Call(grad->get(), input->get(), grid->get(), nullptr, grid_grad->get(), &workspace_size, &executor),
              ACLNN_ERR_PARAM_NULLPTR);
    EXPECT_NE(RecentMessage().find("inputGrad"), std::string::npos);
}
TEST_F(BackwardErrors, NullGridGrad) {
    EXPECT_EQ(Call(grad->get(), input->get(), grid->get(), input_grad->get(), nullptr, &workspace_size, &executor),
              ACLNN_ERR_PARAM_NULLPTR);
    EXPECT_NE(RecentMessage().find("gridGrad"), std::string::npos);
}
TEST_F(BackwardErrors, NullCheckedBeforeDtype) {
    input = Make({1, 2, 3, 4, 5}, ACL_INT32);
    EXPECT_EQ(Call(grad->get(), input->get(), grid->get(), input_grad->get(), nullptr, &workspace_size, &executor),
              ACLNN_ERR_PARAM_NULLPTR);
}

TEST_F(BackwardErrors, UnsupportedInputDtype) {
    for (aclDataType type : {ACL_INT32, ACL_INT8, ACL_INT64, ACL_UINT8, ACL_BOOL, ACL_COMPLEX64}) {
        input = Make({1, 2, 3, 4, 5}, type);
        grad = Make({1, 2, 2, 2, 2}, type);
        grid = Make({1, 2, 2, 2, 3}, type);
        input_grad = Make({1, 2, 3, 4, 5}, type);
        grid_grad = Make({1, 2, 2, 2, 3}, type);
        ExpectRefused(ACLNN_ERR_PARAM_INVALID, "input");
    }
}
TEST_F(BackwardErrors, GradOutputDtypeDiffers) {
    grad = Make({1, 2, 2, 2, 2}, ACL_FLOAT16);
    ExpectRefused(ACLNN_ERR_PARAM_INVALID, "gradOutput");
}
TEST_F(BackwardErrors, GridDtypeDiffers) {
    grid = Make({1, 2, 2, 2, 3}, ACL_DOUBLE);
    ExpectRefused(ACLNN_ERR_PARAM_INVALID, "grid");
}
TEST_F(BackwardErrors, InputGradDtypeDiffers) {
    input_grad = Make({1, 2, 3, 4, 5}, ACL_BF16);
    ExpectRefused(ACLNN_ERR_PARAM_INVALID, "inputGrad");
}
TEST_F(BackwardErrors, GridGradDtypeDiffers) {
    grid_grad = Make({1, 2, 2, 2, 3}, ACL_FLOAT16);
    ExpectRefused(ACLNN_ERR_PARAM_INVALID, "gridGrad");
}
TEST_F(BackwardErrors, UnsupportedFormat) {
    input_grad = Make({1, 2, 3, 4, 5}, ACL_FLOAT, ACL_FORMAT_NCHW);
    ExpectRefused(ACLNN_ERR_PARAM_INVALID, "inputGrad");
}
TEST_F(BackwardErrors, PaddingModeOutOfRange) {
    for (int64_t mode : {-1, 3, 100}) {
        padding = mode;
        ExpectRefused(ACLNN_ERR_PARAM_INVALID, "paddingMode");
    }
}
TEST_F(BackwardErrors, InterpolationModeOutOfRange) {
    for (int64_t mode : {-1, 2 /* bicubic: 2-D only */, 7}) {
        interpolation = mode;
        ExpectRefused(ACLNN_ERR_PARAM_INVALID, "interpolationMode");
    }
}
TEST_F(BackwardErrors, PaddingCheckedBeforeInterpolation) {
    padding = 5;
    interpolation = 5;
    ExpectRefused(ACLNN_ERR_PARAM_INVALID, "paddingMode");
}
TEST_F(BackwardErrors, ModesCheckedBeforeShapes) {
    padding = 5;
    grid = Make({1, 2, 2, 2, 4});
    ExpectRefused(ACLNN_ERR_PARAM_INVALID, "paddingMode");
}
TEST_F(BackwardErrors, InputNot5D) {
    input = Make({1, 2, 3, 4});
    ExpectRefused(ACLNN_ERR_PARAM_INVALID, "input");
}
TEST_F(BackwardErrors, GridNot5D) {
    grid = Make({1, 2, 2, 2, 3, 1});
    ExpectRefused(ACLNN_ERR_PARAM_INVALID, "grid");
}
TEST_F(BackwardErrors, GradOutputNot5D) {
    grad = Make({1, 2, 2, 2});
    ExpectRefused(ACLNN_ERR_PARAM_INVALID, "gradOutput");
}
TEST_F(BackwardErrors, BatchOfGridDiffers) {
    grid = Make({2, 2, 2, 2, 3});
    ExpectRefused(ACLNN_ERR_PARAM_INVALID, "N differs");
}
TEST_F(BackwardErrors, BatchOfGradOutputDiffers) {
    grad = Make({2, 2, 2, 2, 2});
    ExpectRefused(ACLNN_ERR_PARAM_INVALID, "N differs");
}
TEST_F(BackwardErrors, ChannelsOfGradOutputDiffer) {
    grad = Make({1, 3, 2, 2, 2});
    ExpectRefused(ACLNN_ERR_PARAM_INVALID, "gradOutput");
}
TEST_F(BackwardErrors, GridSpatialDimsDifferFromGradOutput) {
    grid = Make({1, 2, 3, 2, 3});
    grid_grad = Make({1, 2, 3, 2, 3});
    ExpectRefused(ACLNN_ERR_PARAM_INVALID, "grid");
}
TEST_F(BackwardErrors, GridLastDimNot3) {
    grid = Make({1, 2, 2, 2, 2});
    grid_grad = Make({1, 2, 2, 2, 2});
    ExpectRefused(ACLNN_ERR_PARAM_INVALID, "last dim");
}
TEST_F(BackwardErrors, InputGradShapeDiffers) {
    input_grad = Make({1, 2, 3, 4, 6});
    ExpectRefused(ACLNN_ERR_PARAM_INVALID, "inputGrad");
}
TEST_F(BackwardErrors, GridGradShapeDiffers) {
    grid_grad = Make({1, 2, 2, 1, 3});
    ExpectRefused(ACLNN_ERR_PARAM_INVALID, "gridGrad");
}
TEST_F(BackwardErrors, InputVolumeDimZero) {
    for (int axis = 2; axis < 5; ++axis) {
        std::vector<int64_t> dims{1, 2, 3, 4, 5};
        dims[static_cast<size_t>(axis)] = 0;
        input = Make(dims);
        input_grad = Make(dims);
        ExpectRefused(ACLNN_ERR_PARAM_INVALID, "must not be 0");
    }
}
TEST_F(BackwardErrors, ChannelLastShapesReadInInputLayout) {
    // NDHWC input: gradOutput (N, Do, Ho, Wo, C); an NCDHW-shaped gradOutput is refused.
    input = Make({1, 3, 4, 5, 2}, ACL_FLOAT, ACL_FORMAT_NDHWC);
    input_grad = Make({1, 3, 4, 5, 2}, ACL_FLOAT, ACL_FORMAT_NDHWC);
    grad = Make({1, 2, 2, 2, 2}, ACL_FLOAT, ACL_FORMAT_NDHWC);
    EXPECT_EQ(Call(), ACLNN_SUCCESS);
    aclnnGridSampler3DBackward(nullptr, 0, executor, TestStream());
    executor = nullptr;
    ASSERT_EQ(aclrtSynchronizeStream(TestStream()), ACL_SUCCESS);  // before the tensors go
    grid = Make({1, 2, 2, 3, 3});
    grid_grad = Make({1, 2, 2, 3, 3});
    grad = Make({1, 2, 2, 2, 3}, ACL_FLOAT, ACL_FORMAT_NDHWC);  // C = 3 in the NDHWC reading
    ExpectRefused(ACLNN_ERR_PARAM_INVALID, "gradOutput");
}
TEST_F(BackwardErrors, OutputMaskLengthNot2) {
    for (size_t length : {0, 1, 3}) {
        mask.assign(length, true);
        ExpectRefused(ACLNN_ERR_PARAM_INVALID, "outputMask");
    }
}
TEST_F(BackwardErrors, NullOutputMaskComputesBoth) {
    use_mask = false;
    EXPECT_EQ(Call(), ACLNN_SUCCESS);
}
TEST_F(BackwardErrors, TensorWithElementsButNoData) {
    const int64_t dims[5] = {1, 2, 3, 4, 5}, storage[1] = {120};
    aclTensor* no_data = aclCreateTensor(dims, 5, ACL_FLOAT, nullptr, 0, ACL_FORMAT_ND, storage, 1, nullptr);
    ASSERT_NE(no_data, nullptr);
    EXPECT_EQ(Call(grad->get(), no_data, grid->get(), input_grad->get(), grid_grad->get(), &workspace_size, &executor),
              ACLNN_ERR_PARAM_NULLPTR);
    EXPECT_NE(RecentMessage().find("data is null"), std::string::npos);
    aclDestroyTensor(no_data);
}
TEST_F(BackwardErrors, OutputWithOverlappingStrides) {
    // inputGrad whose W stride is 0: five logical elements share one address.
    const int64_t dims[5] = {1, 2, 3, 4, 5}, strides[5] = {12, 6, 2, 1, 0}, storage[1] = {24};
    std::vector<float> data(24);
    aclTensor* overlapping = aclCreateTensor(dims, 5, ACL_FLOAT, strides, 0, ACL_FORMAT_ND, storage, 1, data.data());
    ASSERT_NE(overlapping, nullptr);
    EXPECT_EQ(Call(grad->get(), input->get(), grid->get(), overlapping, grid_grad->get(), &workspace_size, &executor),
              ACLNN_ERR_PARAM_INVALID);
    EXPECT_NE(RecentMessage().find("overlapping"), std::string::npos);
    aclDestroyTensor(overlapping);
}
TEST_F(BackwardErrors, InputGradAliasesInput) {
    EXPECT_EQ(Call(grad->get(), input->get(), grid->get(), input->get(), grid_grad->get(), &workspace_size, &executor),
              ACLNN_ERR_PARAM_INVALID);
    EXPECT_NE(RecentMessage().find("overlaps"), std::string::npos);
}
TEST_F(BackwardErrors, GridGradAliasesGrid) {
    EXPECT_EQ(Call(grad->get(), input->get(), grid->get(), input_grad->get(), grid->get(), &workspace_size, &executor),
              ACLNN_ERR_PARAM_INVALID);
}
TEST_F(BackwardErrors, UnwrittenOutputMayAlias) {
    // gridGrad is not computed, so it may be any tensor of the right shape, even grid itself.
    mask = {true, false};
    EXPECT_EQ(Call(grad->get(), input->get(), grid->get(), input_grad->get(), grid->get(), &workspace_size, &executor),
              ACLNN_SUCCESS);
}

// A valid forward call; each test breaks one thing.
class ForwardErrors : public ::testing::Test {
 protected:
    Tensor input = Make({1, 2, 3, 4, 5}), grid = Make({1, 2, 2, 2, 3}), out = Make({1, 2, 2, 2, 2});
    int64_t interpolation = 0, padding = 0;
    uint64_t workspace_size = 0;
    aclOpExecutor* executor = nullptr;

    aclnnStatus Call() {
        return aclnnGridSampler3DGetWorkspaceSize(input->get(), grid->get(), interpolation, padding, true, out->get(),
                                                  &workspace_size, &executor);
    }
    void ExpectRefused(aclnnStatus code, const std::string& word) {
        aclGetRecentErrMsg();
        EXPECT_EQ(Call(), code);
        EXPECT_EQ(executor, nullptr);
        const std::string message = RecentMessage();
        EXPECT_NE(message.find(word), std::string::npos) << message;
    }
    void TearDown() override {
        if (executor) aclnnGridSampler3D(nullptr, 0, executor, TestStream());
        aclrtSynchronizeStream(TestStream());
    }
};

TEST_F(ForwardErrors, ValidCallSucceeds) { EXPECT_EQ(Call(), ACLNN_SUCCESS); }
TEST_F(ForwardErrors, NullPointers) {
    EXPECT_EQ(aclnnGridSampler3DGetWorkspaceSize(input->get(), grid->get(), 0, 0, false, out->get(), nullptr, &executor),
              ACLNN_ERR_PARAM_NULLPTR);
    EXPECT_EQ(aclnnGridSampler3DGetWorkspaceSize(input->get(), grid->get(), 0, 0, false, out->get(), &workspace_size,
                                                 nullptr),
              ACLNN_ERR_PARAM_NULLPTR);
    EXPECT_EQ(aclnnGridSampler3DGetWorkspaceSize(nullptr, grid->get(), 0, 0, false, out->get(), &workspace_size, &executor),
              ACLNN_ERR_PARAM_NULLPTR);
    EXPECT_NE(RecentMessage().find("input"), std::string::npos);
    EXPECT_EQ(aclnnGridSampler3DGetWorkspaceSize(input->get(), nullptr, 0, 0, false, out->get(), &workspace_size, &executor),
              ACLNN_ERR_PARAM_NULLPTR);
    EXPECT_NE(RecentMessage().find("grid"), std::string::npos);
    EXPECT_EQ(aclnnGridSampler3DGetWorkspaceSize(input->get(), grid->get(), 0, 0, false, nullptr, &workspace_size, &executor),
              ACLNN_ERR_PARAM_NULLPTR);
    EXPECT_NE(RecentMessage().find("out"), std::string::npos);
}
TEST_F(ForwardErrors, UnsupportedDtype) {
    input = Make({1, 2, 3, 4, 5}, ACL_INT64);
    grid = Make({1, 2, 2, 2, 3}, ACL_INT64);
    out = Make({1, 2, 2, 2, 2}, ACL_INT64);
    ExpectRefused(ACLNN_ERR_PARAM_INVALID, "input");
}
TEST_F(ForwardErrors, GridDtypeDiffers) {
    grid = Make({1, 2, 2, 2, 3}, ACL_FLOAT16);
    ExpectRefused(ACLNN_ERR_PARAM_INVALID, "grid");
}
TEST_F(ForwardErrors, OutDtypeDiffers) {
    out = Make({1, 2, 2, 2, 2}, ACL_DOUBLE);
    ExpectRefused(ACLNN_ERR_PARAM_INVALID, "out");
}
TEST_F(ForwardErrors, UnsupportedFormat) {
    input = Make({1, 2, 3, 4, 5}, ACL_FLOAT, ACL_FORMAT_NC1HWC0);
    ExpectRefused(ACLNN_ERR_PARAM_INVALID, "input");
}
TEST_F(ForwardErrors, PaddingModeOutOfRange) {
    padding = 3;
    ExpectRefused(ACLNN_ERR_PARAM_INVALID, "paddingMode");
}
TEST_F(ForwardErrors, InterpolationModeOutOfRange) {
    interpolation = 2;
    ExpectRefused(ACLNN_ERR_PARAM_INVALID, "interpolationMode");
}
TEST_F(ForwardErrors, Not5D) {
    out = Make({1, 2, 2, 2});
    ExpectRefused(ACLNN_ERR_PARAM_INVALID, "out");
}
TEST_F(ForwardErrors, GridLastDimNot3) {
    grid = Make({1, 2, 2, 2, 1});
    ExpectRefused(ACLNN_ERR_PARAM_INVALID, "last dim");
}
TEST_F(ForwardErrors, GridBatchDiffers) {
    grid = Make({3, 2, 2, 2, 3});
    ExpectRefused(ACLNN_ERR_PARAM_INVALID, "grid");
}
TEST_F(ForwardErrors, OutShapeDiffers) {
    out = Make({1, 2, 2, 3, 2});
    ExpectRefused(ACLNN_ERR_PARAM_INVALID, "out");
}
TEST_F(ForwardErrors, InputVolumeDimZero) {
    input = Make({1, 2, 3, 0, 5});
    ExpectRefused(ACLNN_ERR_PARAM_INVALID, "must not be 0");
}
TEST_F(ForwardErrors, OutAliasesInput) {
    input = Make({1, 2, 2, 2, 2});
    EXPECT_EQ(aclnnGridSampler3DGetWorkspaceSize(input->get(), grid->get(), 0, 0, false, input->get(), &workspace_size,
                                                 &executor),
              ACLNN_ERR_PARAM_INVALID);
}

// The second phase.
class LaunchErrors : public ::testing::Test {
 protected:
    Tensor grad = Make({1, 1, 2, 2, 2}, ACL_FLOAT16), input = Make({1, 1, 3, 3, 3}, ACL_FLOAT16),
           grid = Make({1, 2, 2, 2, 3}, ACL_FLOAT16), input_grad = Make({1, 1, 3, 3, 3}, ACL_FLOAT16),
           grid_grad = Make({1, 2, 2, 2, 3}, ACL_FLOAT16);
    uint64_t workspace_size = 0;
    aclOpExecutor* executor = nullptr;

    void Build() {
        ASSERT_EQ(aclnnGridSampler3DBackwardGetWorkspaceSize(grad->get(), input->get(), grid->get(), 0, 0, false,
                                                             nullptr, input_grad->get(), grid_grad->get(),
                                                             &workspace_size, &executor),
                  ACLNN_SUCCESS);
        ASSERT_GT(workspace_size, 0u);  // fp16 accumulates inputGrad in fp32
    }
};

TEST_F(LaunchErrors, NullExecutor) {
    EXPECT_EQ(aclnnGridSampler3DBackward(nullptr, 0, nullptr, TestStream()), ACLNN_ERR_PARAM_NULLPTR);
    EXPECT_EQ(aclnnGridSampler3D(nullptr, 0, nullptr, TestStream()), ACLNN_ERR_PARAM_NULLPTR);
}
TEST_F(LaunchErrors, WorkspaceTooSmallLeavesOutputsUntouched) {
    Build();
    input_grad->Fill(3);
    grid_grad->Fill(3);
    std::vector<float> workspace(workspace_size);
    EXPECT_EQ(aclnnGridSampler3DBackward(workspace.data(), workspace_size - 1, executor, TestStream()),
              ACLNN_ERR_PARAM_INVALID);
    EXPECT_NE(RecentMessage().find("workspaceSize"), std::string::npos);
    ASSERT_EQ(aclrtSynchronizeStream(TestStream()), ACL_SUCCESS);
    for (int64_t i = 0; i < input_grad->count(); ++i) EXPECT_EQ(input_grad->Get(i), 3);
    for (int64_t i = 0; i < grid_grad->count(); ++i) EXPECT_EQ(grid_grad->Get(i), 3);
}
TEST_F(LaunchErrors, NullWorkspaceWhenOneIsNeeded) {
    Build();
    EXPECT_EQ(aclnnGridSampler3DBackward(nullptr, workspace_size, executor, TestStream()), ACLNN_ERR_PARAM_NULLPTR);
}
TEST_F(LaunchErrors, ExecutorLaunchedTwice) {
    Build();
    std::vector<float> workspace(workspace_size);
    EXPECT_EQ(aclnnGridSampler3DBackward(workspace.data(), workspace_size, executor, TestStream()), ACLNN_SUCCESS);
    EXPECT_EQ(aclnnGridSampler3DBackward(workspace.data(), workspace_size, executor, TestStream()),
              ACLNN_ERR_PARAM_INVALID);
    EXPECT_NE(RecentMessage().find("not live"), std::string::npos);
    EXPECT_EQ(aclrtSynchronizeStream(TestStream()), ACL_SUCCESS);
}
TEST_F(LaunchErrors, ExecutorOfTheOtherOp) {
    Build();
    std::vector<float> workspace(workspace_size);
    EXPECT_EQ(aclnnGridSampler3D(workspace.data(), workspace_size, executor, TestStream()), ACLNN_ERR_PARAM_INVALID);
}
TEST_F(LaunchErrors, DestroyedStream) {
    Build();
    aclrtStream stream = nullptr;
    ASSERT_EQ(aclrtCreateStream(&stream), ACL_SUCCESS);
    ASSERT_EQ(aclrtDestroyStream(stream), ACL_SUCCESS);
    std::vector<float> workspace(workspace_size);
    EXPECT_EQ(aclnnGridSampler3DBackward(workspace.data(), workspace_size, executor, stream), ACLNN_ERR_PARAM_INVALID);
    EXPECT_NE(RecentMessage().find("stream"), std::string::npos);
}

}  // namespace
}  // namespace gs3d_test
