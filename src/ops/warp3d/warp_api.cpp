// gs3dAffineWarp3D* and gs3dDisplacementWarp3D* (include/gridsampler3d/warp3d.h): the grid
// sampler's checks in its order, with theta or flow in the grid's place, then the warp's
// plan (warps/chunks.h) held by the executor.
#include <functional>
#include <initializer_list>
#include <limits>
#include <tuple>

#include "gridsampler3d/warp3d.h"
#include "kernels/warps/chunks.h"
#include "ops/executor.h"
#include "ops/grid_sampler3d/tensor_checks.h"
#include "runtime/recent_error.h"

namespace gs3d::warp3d {
namespace {

using grid_sampler3d::Arg;
using kernels::WarpKind;

// What differs between the two warps' APIs.
struct Warp {
    WarpKind kind;
    const char* api;         // the first phase's name, for messages
    const char* launch_api;  // the second phase's
    const char* parameters;  // "theta" or "flow"
    const char* parameters_grad;
};

constexpr Warp kAffine{WarpKind::kAffine, "gs3dAffineWarp3DGetWorkspaceSize", "gs3dAffineWarp3D", "theta", "thetaGrad"};
constexpr Warp kAffineBackward{WarpKind::kAffine, "gs3dAffineWarp3DBackwardGetWorkspaceSize",
                               "gs3dAffineWarp3DBackward", "theta", "thetaGrad"};
constexpr Warp kDisplacement{WarpKind::kDisplacement, "gs3dDisplacementWarp3DGetWorkspaceSize",
                             "gs3dDisplacementWarp3D", "flow", "flowGrad"};
constexpr Warp kDisplacementBackward{WarpKind::kDisplacement, "gs3dDisplacementWarp3DBackwardGetWorkspaceSize",
                                     "gs3dDisplacementWarp3DBackward", "flow", "flowGrad"};

// The parameters (or their gradient, of the same dims) as the kernels see them: theta
// (N, 3, 4, 1, 1), flow (N, 3, Do, Ho, Wo), its dims read in the flow's format (NDHWC or
// not), as inputGrad's are in the input's.
kernels::View5 ParametersView(const Warp& warp, const aclTensor* tensor, const aclTensor* flow) {
    return warp.kind == WarpKind::kAffine ? grid_sampler3d::MatrixView(tensor)
                                          : grid_sampler3d::VolumeView(tensor, grid_sampler3d::IsChannelLast(flow));
}

// input (N, C, D, H, W), `volume` (out or gradOutput: N, C, Do, Ho, Wo), and theta (N, 3, 4)
// or flow (N, 3, Do, Ho, Wo) with Do, Ho, Wo at least 2.
aclnnStatus CheckShapes(const Warp& warp, const Arg& input, const Arg& parameters, const Arg& volume,
                        bool channel_last) {
    using grid_sampler3d::ShapeString;
    using grid_sampler3d::VolumeDim;
    for (const Arg& arg : {input, volume}) GS3D_RETURN_IF_ERROR(grid_sampler3d::CheckRank5(warp.api, arg));
    const int64_t n = VolumeDim(input.tensor, channel_last, 0), c = VolumeDim(input.tensor, channel_last, 1);
    if (VolumeDim(volume.tensor, channel_last, 0) != n || VolumeDim(volume.tensor, channel_last, 1) != c)
        return RecordError(ACLNN_ERR_PARAM_INVALID, "%s: %s has shape %s; its N and C must equal input's, %lld and %lld (%s)",
                           warp.api, volume.name, ShapeString(volume.tensor).c_str(), (long long)n, (long long)c,
                           channel_last ? "NDHWC" : "NCDHW");
    const aclTensor* p = parameters.tensor;
    if (warp.kind == WarpKind::kAffine) {
        if (p->view_dims.size() != 3 || p->view_dims[0] != n || p->view_dims[1] != 3 || p->view_dims[2] != 4)
            return RecordError(ACLNN_ERR_PARAM_INVALID, "%s: theta has shape %s; expected (%lld, 3, 4)", warp.api,
                               ShapeString(p).c_str(), (long long)n);
    } else {
        GS3D_RETURN_IF_ERROR(grid_sampler3d::CheckRank5(warp.api, parameters));
        const bool flow_last = grid_sampler3d::IsChannelLast(p);
        bool matches = VolumeDim(p, flow_last, 0) == n && VolumeDim(p, flow_last, 1) == 3;
        for (int i = 2; i < 5; ++i) matches = matches && VolumeDim(p, flow_last, i) == VolumeDim(volume.tensor, channel_last, i);
        if (!matches)
            return RecordError(ACLNN_ERR_PARAM_INVALID,
                               "%s: flow has shape %s; expected N = %lld, 3 channels and %s's D, H, W (%s format)",
                               warp.api, ShapeString(p).c_str(), (long long)n, volume.name,
                               flow_last ? "NDHWC" : "NCDHW");
        for (int i = 2; i < 5; ++i)
            if (VolumeDim(p, flow_last, i) < 2)
                return RecordError(ACLNN_ERR_PARAM_INVALID,
                                   "%s: flow has shape %s; its D, H and W must be at least 2 (the voxel positions "
                                   "are normalized by size - 1)",
                                   warp.api, ShapeString(p).c_str());
    }
    return grid_sampler3d::CheckInputVolumeNotEmpty(warp.api, input, channel_last);
}

// The checks both phases share, in the grid sampler's order: nulls, dtypes, formats, modes.
aclnnStatus CheckArguments(const Warp& warp, std::initializer_list<Arg> args, const Arg& input, int64_t interpolation,
                           int64_t padding) {
    for (const Arg& arg : args) GS3D_RETURN_IF_ERROR(grid_sampler3d::CheckNotNull(warp.api, arg));
    GS3D_RETURN_IF_ERROR(grid_sampler3d::CheckSupportedDtype(warp.api, input));
    for (const Arg& arg : args) GS3D_RETURN_IF_ERROR(grid_sampler3d::CheckSameDtype(warp.api, arg, input));
    for (const Arg& arg : args) GS3D_RETURN_IF_ERROR(grid_sampler3d::CheckSupportedFormat(warp.api, arg));
    return grid_sampler3d::CheckModes(warp.api, interpolation, padding, /*tricubic=*/true);
}

kernels::SamplerOptions Options(int64_t interpolation, int64_t padding, bool align_corners) {
    kernels::SamplerOptions options;
    options.interpolation = static_cast<kernels::Interpolation>(interpolation);
    options.padding = static_cast<kernels::Padding>(padding);
    options.align_corners = align_corners;
    return options;
}

aclnnStatus Finish(const Warp& warp, uint64_t bytes, std::function<void(void*)> run, uint64_t* workspace_size,
                   aclOpExecutor** executor) {
    aclOpExecutor* plan = NewExecutor(warp.launch_api, bytes, std::move(run));
    if (!plan) return RecordError(ACLNN_ERR_INNER_CREATE_EXECUTOR, "%s: out of memory creating the executor", warp.api);
    *workspace_size = bytes;
    *executor = plan;
    return ACLNN_SUCCESS;
}

aclnnStatus ForwardWorkspace(const Warp& warp, const aclTensor* input_tensor, const aclTensor* parameters_tensor,
                             int64_t interpolation, int64_t padding, bool align_corners, aclTensor* out_tensor,
                             uint64_t* workspace_size, aclOpExecutor** executor) {
    if (!workspace_size || !executor)
        return RecordError(ACLNN_ERR_PARAM_NULLPTR, "%s: %s is null", warp.api, !workspace_size ? "workspaceSize" : "executor");
    const Arg input{"input", input_tensor}, parameters{warp.parameters, parameters_tensor}, out{"out", out_tensor};
    GS3D_RETURN_IF_ERROR(CheckArguments(warp, {input, parameters, out}, input, interpolation, padding));
    const bool channel_last = grid_sampler3d::IsChannelLast(input_tensor);
    GS3D_RETURN_IF_ERROR(CheckShapes(warp, input, parameters, out, channel_last));
    for (const Arg& arg : {input, parameters, out}) GS3D_RETURN_IF_ERROR(grid_sampler3d::CheckHasData(warp.api, arg));
    GS3D_RETURN_IF_ERROR(grid_sampler3d::CheckNoSelfOverlap(warp.api, out));
    for (const Arg& arg : {input, parameters}) GS3D_RETURN_IF_ERROR(grid_sampler3d::CheckDisjoint(warp.api, out, arg));

    kernels::WarpForwardArgs args;
    args.type = grid_sampler3d::ToElementType(input_tensor->data_type);
    args.options = Options(interpolation, padding, align_corners);
    args.kind = warp.kind;
    args.input = grid_sampler3d::VolumeView(input_tensor, channel_last);
    args.parameters = ParametersView(warp, parameters_tensor, parameters_tensor);
    args.out = grid_sampler3d::VolumeView(out_tensor, channel_last);
    const kernels::WarpPlan plan = kernels::PlanWarpForward(args);
    return Finish(warp, plan.bytes, [args, plan](void* workspace) { kernels::RunWarpForward(args, plan, workspace); },
                  workspace_size, executor);
}

aclnnStatus BackwardWorkspace(const Warp& warp, const aclTensor* grad_output_tensor, const aclTensor* input_tensor,
                              const aclTensor* parameters_tensor, int64_t interpolation, int64_t padding,
                              bool align_corners, const aclBoolArray* output_mask, aclTensor* input_grad_tensor,
                              aclTensor* parameters_grad_tensor, uint64_t* workspace_size, aclOpExecutor** executor) {
    if (!workspace_size || !executor)
        return RecordError(ACLNN_ERR_PARAM_NULLPTR, "%s: %s is null", warp.api, !workspace_size ? "workspaceSize" : "executor");
    const Arg grad_output{"gradOutput", grad_output_tensor}, input{"input", input_tensor},
        parameters{warp.parameters, parameters_tensor}, input_grad{"inputGrad", input_grad_tensor},
        parameters_grad{warp.parameters_grad, parameters_grad_tensor};
    GS3D_RETURN_IF_ERROR(
        CheckArguments(warp, {grad_output, input, parameters, input_grad, parameters_grad}, input, interpolation, padding));
    const bool channel_last = grid_sampler3d::IsChannelLast(input_tensor);
    GS3D_RETURN_IF_ERROR(CheckShapes(warp, input, parameters, grad_output, channel_last));
    GS3D_RETURN_IF_ERROR(grid_sampler3d::CheckSameShape(warp.api, input_grad, input));
    GS3D_RETURN_IF_ERROR(grid_sampler3d::CheckSameShape(warp.api, parameters_grad, parameters));
    bool want_input_grad = true, want_parameters_grad = true;  // a null mask: both
    if (output_mask) {
        if (output_mask->values.size() != 2)
            return RecordError(ACLNN_ERR_PARAM_INVALID, "%s: outputMask has %zu values; expected 2", warp.api,
                               output_mask->values.size());
        want_input_grad = output_mask->values[0];
        want_parameters_grad = output_mask->values[1];
    }
    for (const Arg& arg : {grad_output, input, parameters})
        GS3D_RETURN_IF_ERROR(grid_sampler3d::CheckHasData(warp.api, arg));
    for (const auto& [wanted, output, other_output] :
         {std::tuple{want_input_grad, input_grad, parameters_grad}, std::tuple{want_parameters_grad, parameters_grad, input_grad}}) {
        if (!wanted) continue;
        GS3D_RETURN_IF_ERROR(grid_sampler3d::CheckHasData(warp.api, output));
        GS3D_RETURN_IF_ERROR(grid_sampler3d::CheckNoSelfOverlap(warp.api, output));
        for (const Arg& arg : {grad_output, input, parameters})
            GS3D_RETURN_IF_ERROR(grid_sampler3d::CheckDisjoint(warp.api, output, arg));
        if (want_input_grad && want_parameters_grad)
            GS3D_RETURN_IF_ERROR(grid_sampler3d::CheckDisjoint(warp.api, output, other_output));
    }
    if (want_input_grad && input_tensor->ElementCount() > std::numeric_limits<int64_t>::max() / 4)
        return RecordError(ACLNN_ERR_PARAM_INVALID, "%s: input %s is too large for the workspace", warp.api,
                           grid_sampler3d::ShapeString(input_tensor).c_str());

    kernels::WarpBackwardArgs args;
    args.type = grid_sampler3d::ToElementType(input_tensor->data_type);
    args.options = Options(interpolation, padding, align_corners);
    args.kind = warp.kind;
    args.grad_output = grid_sampler3d::VolumeView(grad_output_tensor, channel_last);
    args.input = grid_sampler3d::VolumeView(input_tensor, channel_last);
    args.parameters = ParametersView(warp, parameters_tensor, parameters_tensor);
    args.input_grad = grid_sampler3d::VolumeView(input_grad_tensor, channel_last);
    args.parameters_grad = ParametersView(warp, parameters_grad_tensor, parameters_tensor);
    args.compute_input_grad = want_input_grad;
    args.compute_parameters_grad = want_parameters_grad;
    const kernels::WarpPlan plan = kernels::PlanWarpBackward(args);
    return Finish(warp, plan.bytes, [args, plan](void* workspace) { kernels::RunWarpBackward(args, plan, workspace); },
                  workspace_size, executor);
}

}  // namespace
}  // namespace gs3d::warp3d

extern "C" {

using gs3d::warp3d::BackwardWorkspace;
using gs3d::warp3d::ForwardWorkspace;

aclnnStatus gs3dAffineWarp3DGetWorkspaceSize(const aclTensor* input, const aclTensor* theta, int64_t interpolationMode,
                                             int64_t paddingMode, bool alignCorners, aclTensor* out,
                                             uint64_t* workspaceSize, aclOpExecutor** executor) {
    return ForwardWorkspace(gs3d::warp3d::kAffine, input, theta, interpolationMode, paddingMode, alignCorners, out,
                            workspaceSize, executor);
}

aclnnStatus gs3dAffineWarp3D(void* workspace, uint64_t workspaceSize, aclOpExecutor* executor, aclrtStream stream) {
    return gs3d::LaunchExecutor(gs3d::warp3d::kAffine.launch_api, workspace, workspaceSize, executor, stream);
}

aclnnStatus gs3dAffineWarp3DBackwardGetWorkspaceSize(const aclTensor* gradOutput, const aclTensor* input,
                                                     const aclTensor* theta, int64_t interpolationMode,
                                                     int64_t paddingMode, bool alignCorners,
                                                     const aclBoolArray* outputMask, aclTensor* inputGrad,
                                                     aclTensor* thetaGrad, uint64_t* workspaceSize,
                                                     aclOpExecutor** executor) {
    return BackwardWorkspace(gs3d::warp3d::kAffineBackward, gradOutput, input, theta, interpolationMode, paddingMode,
                             alignCorners, outputMask, inputGrad, thetaGrad, workspaceSize, executor);
}

aclnnStatus gs3dAffineWarp3DBackward(void* workspace, uint64_t workspaceSize, aclOpExecutor* executor,
                                     aclrtStream stream) {
    return gs3d::LaunchExecutor(gs3d::warp3d::kAffineBackward.launch_api, workspace, workspaceSize, executor, stream);
}

aclnnStatus gs3dDisplacementWarp3DGetWorkspaceSize(const aclTensor* input, const aclTensor* flow,
                                                   int64_t interpolationMode, int64_t paddingMode, aclTensor* out,
                                                   uint64_t* workspaceSize, aclOpExecutor** executor) {
    return ForwardWorkspace(gs3d::warp3d::kDisplacement, input, flow, interpolationMode, paddingMode, true, out,
                            workspaceSize, executor);
}

aclnnStatus gs3dDisplacementWarp3D(void* workspace, uint64_t workspaceSize, aclOpExecutor* executor,
                                   aclrtStream stream) {
    return gs3d::LaunchExecutor(gs3d::warp3d::kDisplacement.launch_api, workspace, workspaceSize, executor, stream);
}

aclnnStatus gs3dDisplacementWarp3DBackwardGetWorkspaceSize(const aclTensor* gradOutput, const aclTensor* input,
                                                           const aclTensor* flow, int64_t interpolationMode,
                                                           int64_t paddingMode, const aclBoolArray* outputMask,
                                                           aclTensor* inputGrad, aclTensor* flowGrad,
                                                           uint64_t* workspaceSize, aclOpExecutor** executor) {
    return BackwardWorkspace(gs3d::warp3d::kDisplacementBackward, gradOutput, input, flow, interpolationMode,
                             paddingMode, true, outputMask, inputGrad, flowGrad, workspaceSize, executor);
}

aclnnStatus gs3dDisplacementWarp3DBackward(void* workspace, uint64_t workspaceSize, aclOpExecutor* executor,
                                           aclrtStream stream) {
    return gs3d::LaunchExecutor(gs3d::warp3d::kDisplacementBackward.launch_api, workspace, workspaceSize, executor,
                                stream);
}

}  // extern "C"
