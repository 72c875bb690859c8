// The kernels' entry points: each picks the translation unit of the element type
// (kernels_float32.cpp and its siblings), which picks the best SIMD target (Highway's
// dynamic dispatch).
#include "kernels/plan/backward.h"
#include "kernels/common/element_types.h"
#include "kernels/grid_sampler3d_kernels.h"

namespace gs3d::kernels {

ForwardPlan PlanForward(const ForwardArgs& args) {
    ForwardPlan plan;
    const View5& in = args.input;
    const int64_t points = args.grid.size[0] * args.grid.size[1] * args.grid.size[2] * args.grid.size[3];
    const int64_t voxels = in.size[2] * in.size[3] * in.size[4];
    plan.from_channels_last_copy =
        args.options.interpolation == Interpolation::kBilinear && in.size[1] >= kChannelsLastCopyMinChannels &&
        points > 0 && voxels > 0 && in.stride[4] >= 1 && in.stride[3] >= in.size[4] * in.stride[4] &&
        in.stride[2] >= in.size[3] * in.stride[3] && in.stride[1] >= in.size[2] * in.stride[2];
    plan.unit_channels = in.stride[1] == 1 && args.out.stride[1] == 1;
    if (plan.from_channels_last_copy)
        plan.workspace_bytes = static_cast<size_t>(in.size[1] * voxels) * ElementBytes(args.type);
    return plan;
}

void RunForward(const ForwardArgs& args, const ForwardPlan& plan, void* workspace) {
    switch (args.type) {
        case ElementType::kFloat32: return RunForwardOf<float>(args, plan, workspace);
        case ElementType::kFloat64: return RunForwardOf<double>(args, plan, workspace);
        case ElementType::kFloat16: return RunForwardOf<Half>(args, plan, workspace);
        case ElementType::kBFloat16: return RunForwardOf<BFloat16>(args, plan, workspace);
    }
}

void RunBackward(const BackwardArgs& args, const BackwardPlan& plan, void* workspace) {
    switch (args.type) {
        case ElementType::kFloat32: return RunBackwardOf<float>(args, plan, workspace);
        case ElementType::kFloat64: return RunBackwardOf<double>(args, plan, workspace);
        case ElementType::kFloat16: return RunBackwardOf<Half>(args, plan, workspace);
        case ElementType::kBFloat16: return RunBackwardOf<BFloat16>(args, plan, workspace);
    }
}

}  // namespace gs3d::kernels
