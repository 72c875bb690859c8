// The kernels' entry points: each picks the translation unit of the element type
// (kernels_float32.cpp and its siblings), which picks the best SIMD target (Highway's
// dynamic dispatch).
#include "kernels/element_types.h"
#include "kernels/grid_sampler3d_kernels.h"

namespace gs3d::kernels {

size_t ForwardWorkspaceBytes(const ForwardArgs& args) {
    if (!SamplesFromChannelsLastCopy(args)) return 0;
    const View5& in = args.input;
    return static_cast<size_t>(in.size[1] * in.size[2] * in.size[3] * in.size[4]) * ElementBytes(args.type);
}

void RunForward(const ForwardArgs& args, void* workspace) {
    switch (args.type) {
        case ElementType::kFloat32: return RunForwardOf<float>(args, workspace);
        case ElementType::kFloat64: return RunForwardOf<double>(args, workspace);
        case ElementType::kFloat16: return RunForwardOf<Half>(args, workspace);
        case ElementType::kBFloat16: return RunForwardOf<BFloat16>(args, workspace);
    }
}

void RunBackward(const BackwardArgs& args, void* workspace) {
    switch (args.type) {
        case ElementType::kFloat32: return RunBackwardOf<float>(args, workspace);
        case ElementType::kFloat64: return RunBackwardOf<double>(args, workspace);
        case ElementType::kFloat16: return RunBackwardOf<Half>(args, workspace);
        case ElementType::kBFloat16: return RunBackwardOf<BFloat16>(args, workspace);
    }
}

}  // namespace gs3d::kernels
