// The forward and backward kernels of one element type, GS3D_KERNEL_ELEMENT, defined by the
// translation unit that includes this (kernels_float32.cpp and its siblings): their
// per-target entries and, once, the dispatch to the best target, RunForwardOf<T> and
// RunBackwardOf<T>.
//
// Included once per SIMD target (after foreach_target.h), like the translation unit itself:
// no include guard.
#include <hwy/highway.h>

#include "kernels/backward/kernel-inl.h"
#include "kernels/plan/backward.h"
#include "kernels/forward/kernel-inl.h"
#include "kernels/grid_sampler3d_kernels.h"

HWY_BEFORE_NAMESPACE();
namespace gs3d::kernels {
namespace HWY_NAMESPACE {
namespace {

void RunForwardForTarget(const ForwardArgs& args, const ForwardPlan& plan, void* workspace) {
    ForwardOfType<GS3D_KERNEL_ELEMENT>(args, plan, workspace);
}

void RunBackwardForTarget(const BackwardArgs& args, const BackwardPlan& plan, void* workspace) {
    BackwardOfType<GS3D_KERNEL_ELEMENT>(args, plan, workspace);
}

}  // namespace
}  // namespace HWY_NAMESPACE
}  // namespace gs3d::kernels
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace gs3d::kernels {

HWY_EXPORT(RunForwardForTarget);
HWY_EXPORT(RunBackwardForTarget);

template <>
void RunForwardOf<GS3D_KERNEL_ELEMENT>(const ForwardArgs& args, const ForwardPlan& plan, void* workspace) {
    HWY_DYNAMIC_DISPATCH(RunForwardForTarget)(args, plan, workspace);
}

template <>
void RunBackwardOf<GS3D_KERNEL_ELEMENT>(const BackwardArgs& args, const BackwardPlan& plan, void* workspace) {
    HWY_DYNAMIC_DISPATCH(RunBackwardForTarget)(args, plan, workspace);
}

}  // namespace gs3d::kernels
#endif  // HWY_ONCE
