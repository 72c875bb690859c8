// aclnnGridSampler3DBackwardGetWorkspaceSize / aclnnGridSampler3DBackward: checks in CANN's
// order (docs/design.md, "CANN's rules we keep"), then a plan (the kernel's views) held by
// the executor. gs3dGridSampler3DBackward* (gridsampler3d/tricubic3d.h) are the same calls
// with interpolationMode 2 (tricubic) accepted.
#include <limits>
#include <new>

#include "aclnnop/aclnn_grid_sampler3d_backward.h"
#include "gridsampler3d/tricubic3d.h"
#include "kernels/plan/backward.h"
#include "ops/executor.h"
#include "ops/grid_sampler3d/tensor_checks.h"
#include "runtime/recent_error.h"

namespace gs3d::grid_sampler3d {
namespace {

constexpr Api kAclnn{"aclnnGridSampler3DBackwardGetWorkspaceSize", "aclnnGridSampler3DBackward", false};
constexpr Api kExtension{"gs3dGridSampler3DBackwardGetWorkspaceSize", "gs3dGridSampler3DBackward", true};

aclnnStatus CheckShapes(const char* api_name, const Arg& grad_output, const Arg& input, const Arg& grid, const Arg& input_grad,
                        const Arg& grid_grad, bool channel_last) {
    for (const Arg& arg : {input, grid, grad_output}) GS3D_RETURN_IF_ERROR(CheckRank5(api_name, arg));
    const aclTensor* g = grid.tensor;
    const int64_t n = VolumeDim(input.tensor, channel_last, 0);
    const int64_t c = VolumeDim(input.tensor, channel_last, 1);
    if (g->view_dims[0] != n || VolumeDim(grad_output.tensor, channel_last, 0) != n)
        return RecordError(ACLNN_ERR_PARAM_INVALID, "%s: N differs: input %s, grid %s, gradOutput %s", api_name,
                           ShapeString(input.tensor).c_str(), ShapeString(g).c_str(),
                           ShapeString(grad_output.tensor).c_str());
    if (VolumeDim(grad_output.tensor, channel_last, 1) != c)
        return RecordError(ACLNN_ERR_PARAM_INVALID, "%s: gradOutput has shape %s; its C must equal input's, %lld (%s)",
                           api_name, ShapeString(grad_output.tensor).c_str(), (long long)c,
                           channel_last ? "NDHWC" : "NCDHW");
    for (int i = 2; i < 5; ++i)
        if (VolumeDim(grad_output.tensor, channel_last, i) != g->view_dims[i - 1])
            return RecordError(ACLNN_ERR_PARAM_INVALID, "%s: grid has shape %s; its D, H, W must equal gradOutput's %s",
                               api_name, ShapeString(g).c_str(), ShapeString(grad_output.tensor).c_str());
    if (g->view_dims[4] != 3)
        return RecordError(ACLNN_ERR_PARAM_INVALID, "%s: grid has shape %s; its last dim must be 3", api_name,
                           ShapeString(g).c_str());
    GS3D_RETURN_IF_ERROR(CheckSameShape(api_name, input_grad, input));
    GS3D_RETURN_IF_ERROR(CheckSameShape(api_name, grid_grad, grid));
    return CheckInputVolumeNotEmpty(api_name, input, channel_last);
}

aclnnStatus GetWorkspaceSize(const Api& api, const aclTensor* grad_output_tensor, const aclTensor* input_tensor,
                             const aclTensor* grid_tensor, int64_t interpolation_mode, int64_t padding_mode,
                             bool align_corners, const aclBoolArray* output_mask, aclTensor* input_grad_tensor,
                             aclTensor* grid_grad_tensor, uint64_t* workspace_size, aclOpExecutor** executor) {
    const char* api_name = api.name;
    if (!workspace_size || !executor)
        return RecordError(ACLNN_ERR_PARAM_NULLPTR, "%s: %s is null", api_name, !workspace_size ? "workspaceSize" : "executor");
    const Arg grad_output{"gradOutput", grad_output_tensor}, input{"input", input_tensor}, grid{"grid", grid_tensor},
        input_grad{"inputGrad", input_grad_tensor}, grid_grad{"gridGrad", grid_grad_tensor};
    for (const Arg& arg : {grad_output, input, grid, input_grad, grid_grad}) GS3D_RETURN_IF_ERROR(CheckNotNull(api_name, arg));
    GS3D_RETURN_IF_ERROR(CheckSupportedDtype(api_name, input));
    for (const Arg& arg : {grad_output, grid, input_grad, grid_grad}) GS3D_RETURN_IF_ERROR(CheckSameDtype(api_name, arg, input));
    for (const Arg& arg : {grad_output, input, grid, input_grad, grid_grad})
        GS3D_RETURN_IF_ERROR(CheckSupportedFormat(api_name, arg));
    GS3D_RETURN_IF_ERROR(CheckModes(api_name, interpolation_mode, padding_mode, api.tricubic));
    const bool channel_last = IsChannelLast(input_tensor);
    GS3D_RETURN_IF_ERROR(CheckShapes(api_name, grad_output, input, grid, input_grad, grid_grad, channel_last));
    // A null mask computes both gradients (CANN computes nothing; see the README).
    bool want_input_grad = true, want_grid_grad = true;
    if (output_mask) {
        if (output_mask->values.size() != 2)
            return RecordError(ACLNN_ERR_PARAM_INVALID, "%s: outputMask has %zu values; expected 2", api_name,
                               output_mask->values.size());
        want_input_grad = output_mask->values[0];
        want_grid_grad = output_mask->values[1];
    }
    for (const Arg& arg : {grad_output, input, grid}) GS3D_RETURN_IF_ERROR(CheckHasData(api_name, arg));
    if (want_input_grad) {
        GS3D_RETURN_IF_ERROR(CheckHasData(api_name, input_grad));
        GS3D_RETURN_IF_ERROR(CheckNoSelfOverlap(api_name, input_grad));
        for (const Arg& arg : {grad_output, input, grid}) GS3D_RETURN_IF_ERROR(CheckDisjoint(api_name, input_grad, arg));
        if (want_grid_grad) GS3D_RETURN_IF_ERROR(CheckDisjoint(api_name, input_grad, grid_grad));
    }
    if (want_grid_grad) {
        GS3D_RETURN_IF_ERROR(CheckHasData(api_name, grid_grad));
        GS3D_RETURN_IF_ERROR(CheckNoSelfOverlap(api_name, grid_grad));
        for (const Arg& arg : {grad_output, input, grid}) GS3D_RETURN_IF_ERROR(CheckDisjoint(api_name, grid_grad, arg));
    }

    kernels::BackwardArgs args;
    args.type = ToElementType(input_tensor->data_type);
    args.options.interpolation = static_cast<kernels::Interpolation>(interpolation_mode);
    args.options.padding = static_cast<kernels::Padding>(padding_mode);
    args.options.align_corners = align_corners;
    args.grad_output = VolumeView(grad_output_tensor, channel_last);
    args.input = VolumeView(input_tensor, channel_last);
    args.grid = GridView(grid_tensor);
    args.input_grad = VolumeView(input_grad_tensor, channel_last);
    args.grid_grad = GridView(grid_grad_tensor);
    args.compute_input_grad = want_input_grad;
    args.compute_grid_grad = want_grid_grad;
    // The fp32 accumulator of fp16/bf16 is the input's element count times 4 bytes; the
    // count fits int64 (aclCreateTensor checked it), the bytes may not.
    if (want_input_grad && input_tensor->ElementCount() > std::numeric_limits<int64_t>::max() / 4)
        return RecordError(ACLNN_ERR_PARAM_INVALID, "%s: input %s is too large for the workspace", api_name,
                           ShapeString(input_tensor).c_str());
    // The plan (path, work split, workspace layout) depends on the shapes, strides and
    // options only, so results are bitwise reproducible with or without ACL_OPT_DETERMINISTIC.
    const kernels::BackwardPlan backward_plan = kernels::PlanBackward(args);
    const uint64_t bytes = backward_plan.workspace.bytes;
    aclOpExecutor* plan = NewExecutor(api.launch, bytes, [args, backward_plan](void* workspace) {
        kernels::RunBackward(args, backward_plan, workspace);
    });
    if (!plan) return RecordError(ACLNN_ERR_INNER_CREATE_EXECUTOR, "%s: out of memory creating the executor", api_name);
    *workspace_size = bytes;
    *executor = plan;
    return ACLNN_SUCCESS;
}

}  // namespace
}  // namespace gs3d::grid_sampler3d

extern "C" {

aclnnStatus aclnnGridSampler3DBackwardGetWorkspaceSize(const aclTensor* gradOutput, const aclTensor* input,
                                                       const aclTensor* grid, int64_t interpolationMode,
                                                       int64_t paddingMode, bool alignCorners,
                                                       const aclBoolArray* outputMask, aclTensor* inputGrad,
                                                       aclTensor* gridGrad, uint64_t* workspaceSize,
                                                       aclOpExecutor** executor) {
    return gs3d::grid_sampler3d::GetWorkspaceSize(gs3d::grid_sampler3d::kAclnn, gradOutput, input, grid,
                                                  interpolationMode, paddingMode, alignCorners, outputMask, inputGrad,
                                                  gridGrad, workspaceSize, executor);
}

aclnnStatus aclnnGridSampler3DBackward(void* workspace, uint64_t workspaceSize, aclOpExecutor* executor,
                                       aclrtStream stream) {
    return gs3d::LaunchExecutor(gs3d::grid_sampler3d::kAclnn.launch, workspace, workspaceSize, executor, stream);
}

aclnnStatus gs3dGridSampler3DBackwardGetWorkspaceSize(const aclTensor* gradOutput, const aclTensor* input,
                                                      const aclTensor* grid, int64_t interpolationMode,
                                                      int64_t paddingMode, bool alignCorners,
                                                      const aclBoolArray* outputMask, aclTensor* inputGrad,
                                                      aclTensor* gridGrad, uint64_t* workspaceSize,
                                                      aclOpExecutor** executor) {
    return gs3d::grid_sampler3d::GetWorkspaceSize(gs3d::grid_sampler3d::kExtension, gradOutput, input, grid,
                                                  interpolationMode, paddingMode, alignCorners, outputMask, inputGrad,
                                                  gridGrad, workspaceSize, executor);
}

aclnnStatus gs3dGridSampler3DBackward(void* workspace, uint64_t workspaceSize, aclOpExecutor* executor,
                                      aclrtStream stream) {
    return gs3d::LaunchExecutor(gs3d::grid_sampler3d::kExtension.launch, workspace, workspaceSize, executor, stream);
}

}  // extern "C"
