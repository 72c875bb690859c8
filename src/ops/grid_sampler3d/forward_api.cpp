// aclnnGridSampler3DGetWorkspaceSize / aclnnGridSampler3D: checks in CANN's order, then a
// plan (the kernel's views) held by the executor. gs3dGridSampler3D* (gridsampler3d/tricubic3d.h)
// are the same calls with interpolationMode 2 (tricubic) accepted.
#include <new>

#include "aclnnop/aclnn_grid_sampler3d.h"
#include "gridsampler3d/tricubic3d.h"
#include "kernels/grid_sampler3d_kernels.h"
#include "ops/executor.h"
#include "ops/grid_sampler3d/tensor_checks.h"
#include "runtime/recent_error.h"

namespace gs3d::grid_sampler3d {
namespace {

constexpr Api kAclnn{"aclnnGridSampler3DGetWorkspaceSize", "aclnnGridSampler3D", false};
constexpr Api kExtension{"gs3dGridSampler3DGetWorkspaceSize", "gs3dGridSampler3D", true};

aclnnStatus CheckShapes(const char* api_name, const Arg& input, const Arg& grid, const Arg& out, bool channel_last) {
    GS3D_RETURN_IF_ERROR(CheckRank5(api_name, input));
    GS3D_RETURN_IF_ERROR(CheckRank5(api_name, grid));
    GS3D_RETURN_IF_ERROR(CheckRank5(api_name, out));
    const aclTensor* g = grid.tensor;
    if (g->view_dims[4] != 3)
        return RecordError(ACLNN_ERR_PARAM_INVALID, "%s: grid has shape %s; its last dim must be 3", api_name,
                           ShapeString(g).c_str());
    const int64_t n = VolumeDim(input.tensor, channel_last, 0);
    const int64_t c = VolumeDim(input.tensor, channel_last, 1);
    bool out_matches = VolumeDim(out.tensor, channel_last, 0) == n && VolumeDim(out.tensor, channel_last, 1) == c;
    for (int i = 2; i < 5; ++i) out_matches = out_matches && VolumeDim(out.tensor, channel_last, i) == g->view_dims[i - 1];
    if (g->view_dims[0] != n)
        return RecordError(ACLNN_ERR_PARAM_INVALID, "%s: grid has shape %s; its N must equal input's, %lld", api_name,
                           ShapeString(g).c_str(), (long long)n);
    if (!out_matches)
        return RecordError(ACLNN_ERR_PARAM_INVALID,
                           "%s: out has shape %s; expected input's N and C and grid's D, H, W (%s layout)", api_name,
                           ShapeString(out.tensor).c_str(), channel_last ? "NDHWC" : "NCDHW");
    return CheckInputVolumeNotEmpty(api_name, input, channel_last);
}

aclnnStatus GetWorkspaceSize(const Api& api, const aclTensor* input_tensor, const aclTensor* grid_tensor, int64_t interpolation_mode,
                             int64_t padding_mode, bool align_corners, aclTensor* out_tensor, uint64_t* workspace_size,
                             aclOpExecutor** executor) {
    const char* api_name = api.name;
    if (!workspace_size || !executor)
        return RecordError(ACLNN_ERR_PARAM_NULLPTR, "%s: %s is null", api_name, !workspace_size ? "workspaceSize" : "executor");
    const Arg input{"input", input_tensor}, grid{"grid", grid_tensor}, out{"out", out_tensor};
    for (const Arg& arg : {input, grid, out}) GS3D_RETURN_IF_ERROR(CheckNotNull(api_name, arg));
    GS3D_RETURN_IF_ERROR(CheckSupportedDtype(api_name, input));
    GS3D_RETURN_IF_ERROR(CheckSameDtype(api_name, grid, input));
    GS3D_RETURN_IF_ERROR(CheckSameDtype(api_name, out, input));
    for (const Arg& arg : {input, grid, out}) GS3D_RETURN_IF_ERROR(CheckSupportedFormat(api_name, arg));
    GS3D_RETURN_IF_ERROR(CheckModes(api_name, interpolation_mode, padding_mode, api.tricubic));
    const bool channel_last = IsChannelLast(input_tensor);
    GS3D_RETURN_IF_ERROR(CheckShapes(api_name, input, grid, out, channel_last));
    for (const Arg& arg : {input, grid, out}) GS3D_RETURN_IF_ERROR(CheckHasData(api_name, arg));
    GS3D_RETURN_IF_ERROR(CheckNoSelfOverlap(api_name, out));
    GS3D_RETURN_IF_ERROR(CheckDisjoint(api_name, out, input));
    GS3D_RETURN_IF_ERROR(CheckDisjoint(api_name, out, grid));

    kernels::ForwardArgs args;
    args.type = ToElementType(input_tensor->data_type);
    args.options.interpolation = static_cast<kernels::Interpolation>(interpolation_mode);
    args.options.padding = static_cast<kernels::Padding>(padding_mode);
    args.options.align_corners = align_corners;
    args.input = VolumeView(input_tensor, channel_last);
    args.grid = GridView(grid_tensor);
    args.out = VolumeView(out_tensor, channel_last);
    const kernels::ForwardPlan forward_plan = kernels::PlanForward(args);
    const uint64_t bytes = forward_plan.workspace_bytes;
    aclOpExecutor* plan = NewExecutor(api.launch, bytes, [args, forward_plan](void* workspace) {
        kernels::RunForward(args, forward_plan, workspace);
    });
    if (!plan) return RecordError(ACLNN_ERR_INNER_CREATE_EXECUTOR, "%s: out of memory creating the executor", api_name);
    *workspace_size = bytes;
    *executor = plan;
    return ACLNN_SUCCESS;
}

}  // namespace
}  // namespace gs3d::grid_sampler3d

extern "C" {

aclnnStatus aclnnGridSampler3DGetWorkspaceSize(const aclTensor* input, const aclTensor* grid, int64_t interpolationMode,
                                               int64_t paddingMode, bool alignCorners, aclTensor* out,
                                               uint64_t* workspaceSize, aclOpExecutor** executor) {
    return gs3d::grid_sampler3d::GetWorkspaceSize(gs3d::grid_sampler3d::kAclnn, input, grid, interpolationMode,
                                                  paddingMode, alignCorners, out, workspaceSize, executor);
}

aclnnStatus aclnnGridSampler3D(void* workspace, uint64_t workspaceSize, aclOpExecutor* executor, aclrtStream stream) {
    return gs3d::LaunchExecutor(gs3d::grid_sampler3d::kAclnn.launch, workspace, workspaceSize, executor, stream);
}

aclnnStatus gs3dGridSampler3DGetWorkspaceSize(const aclTensor* input, const aclTensor* grid, int64_t interpolationMode,
                                              int64_t paddingMode, bool alignCorners, aclTensor* out,
                                              uint64_t* workspaceSize, aclOpExecutor** executor) {
    return gs3d::grid_sampler3d::GetWorkspaceSize(gs3d::grid_sampler3d::kExtension, input, grid, interpolationMode,
                                                  paddingMode, alignCorners, out, workspaceSize, executor);
}

aclnnStatus gs3dGridSampler3D(void* workspace, uint64_t workspaceSize, aclOpExecutor* executor, aclrtStream stream) {
    return gs3d::LaunchExecutor(gs3d::grid_sampler3d::kExtension.launch, workspace, workspaceSize, executor, stream);
}

}  // extern "C"
