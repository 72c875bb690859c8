/*
 * gridsampler3d's tricubic extension: the grid sampler's two calls, forward and backward,
 * with the same parameters, checks, status codes and messages as aclnnGridSampler3D* (whose
 * interpolationMode 2 is refused, as CANN refuses it), where interpolationMode may also be
 * 2: tricubic, PyTorch's 2-D bicubic convolution (A = -0.75, 4 taps per axis at floor(i) - 1
 * ... floor(i) + 2) on the three axes, 64 taps per point; the padding applies to each tap's
 * index (zeros: a tap outside reads 0; border: clipped; reflection: reflected, then
 * clipped). Modes 0 and 1 compute what the aclnn calls compute. The fused warps
 * (gridsampler3d/warp3d.h) take interpolationMode 2 too.
 */
#ifndef GRIDSAMPLER3D_TRICUBIC3D_H_
#define GRIDSAMPLER3D_TRICUBIC3D_H_

#include <stdbool.h>
#include <stdint.h>

#include "aclnn/aclnn_base.h"
#include "aclnnop/aclnn_util.h"

#ifdef __cplusplus
extern "C" {
#endif

/* interpolationMode: 0 bilinear, 1 nearest, 2 tricubic. Otherwise as aclnnGridSampler3DGetWorkspaceSize. */
ACLNN_API aclnnStatus gs3dGridSampler3DGetWorkspaceSize(const aclTensor* input, const aclTensor* grid,
                                                        int64_t interpolationMode, int64_t paddingMode,
                                                        bool alignCorners, aclTensor* out, uint64_t* workspaceSize,
                                                        aclOpExecutor** executor);
ACLNN_API aclnnStatus gs3dGridSampler3D(void* workspace, uint64_t workspaceSize, aclOpExecutor* executor,
                                        aclrtStream stream);

/* interpolationMode: 0 bilinear, 1 nearest, 2 tricubic. Otherwise as aclnnGridSampler3DBackwardGetWorkspaceSize. */
ACLNN_API aclnnStatus gs3dGridSampler3DBackwardGetWorkspaceSize(
    const aclTensor* gradOutput, const aclTensor* input, const aclTensor* grid, int64_t interpolationMode,
    int64_t paddingMode, bool alignCorners, const aclBoolArray* outputMask, aclTensor* inputGrad,
    aclTensor* gridGrad, uint64_t* workspaceSize, aclOpExecutor** executor);
ACLNN_API aclnnStatus gs3dGridSampler3DBackward(void* workspace, uint64_t workspaceSize, aclOpExecutor* executor,
                                                aclrtStream stream);

#ifdef __cplusplus
}
#endif

#endif /* GRIDSAMPLER3D_TRICUBIC3D_H_ */
