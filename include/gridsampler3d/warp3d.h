/*
 * gridsampler3d's fused warps: the grid sampler driven by an affine map or a displacement
 * field, forward and backward, without the (N, D, H, W, 3) grid ever being built (it is
 * computed chunk by chunk in the workspace). Two phases each, in the aclnn style: a
 * GetWorkspaceSize call checks the arguments (CANN's status codes, a message for
 * aclGetRecentErrMsg, nothing allocated on refusal) and returns an executor; the launch
 * enqueues it on a stream (NULL: the default stream) and frees it.
 *
 * Modes, padding, dtypes (FLOAT, FLOAT16, BF16, DOUBLE; one for every tensor of a call) and
 * layouts (NCDHW, NDHWC, any strides) are the grid sampler's. Coordinates are computed in the
 * compute type (fp32 for fp16 and bf16, fp64 for double) and rounded once to the dtype, as
 * the composition's grid would be.
 */
#ifndef GRIDSAMPLER3D_WARP3D_H_
#define GRIDSAMPLER3D_WARP3D_H_

#include <stdbool.h>
#include <stdint.h>

#include "aclnn/aclnn_base.h"
#include "aclnnop/aclnn_util.h"

#ifdef __cplusplus
extern "C" {
#endif

/*
 * Affine warp: out = grid_sample(input, affine_grid(theta, out's size, alignCorners),
 * interpolationMode, paddingMode, alignCorners), as PyTorch's F.affine_grid and
 * F.grid_sample. theta is (N, 3, 4); out is (N, C, Do, Ho, Wo) (its size is the warp's
 * output size). The backward writes inputGrad (the input's shape) and thetaGrad (N, 3, 4),
 * as selected by outputMask (length 2, or NULL for both); thetaGrad is summed in double in
 * an order fixed by the shapes, so it is the same for any thread count.
 */
ACLNN_API aclnnStatus gs3dAffineWarp3DGetWorkspaceSize(const aclTensor* input, const aclTensor* theta,
                                                       int64_t interpolationMode, int64_t paddingMode,
                                                       bool alignCorners, aclTensor* out, uint64_t* workspaceSize,
                                                       aclOpExecutor** executor);
ACLNN_API aclnnStatus gs3dAffineWarp3D(void* workspace, uint64_t workspaceSize, aclOpExecutor* executor,
                                       aclrtStream stream);
ACLNN_API aclnnStatus gs3dAffineWarp3DBackwardGetWorkspaceSize(
    const aclTensor* gradOutput, const aclTensor* input, const aclTensor* theta, int64_t interpolationMode,
    int64_t paddingMode, bool alignCorners, const aclBoolArray* outputMask, aclTensor* inputGrad,
    aclTensor* thetaGrad, uint64_t* workspaceSize, aclOpExecutor** executor);
ACLNN_API aclnnStatus gs3dAffineWarp3DBackward(void* workspace, uint64_t workspaceSize, aclOpExecutor* executor,
                                               aclrtStream stream);

/*
 * Displacement warp, as VoxelMorph's SpatialTransformer: flow is (N, 3, Do, Ho, Wo) (NDHWC
 * format: (N, Do, Ho, Wo, 3)) in voxels along D, H and W; output voxel (d, h, w) samples the
 * input at (d, h, w) + flow[n, :, d, h, w], normalized by the flow's size with
 * align_corners = true (each of Do, Ho, Wo must be at least 2: the normalization divides by
 * size - 1). out is (N, C, Do, Ho, Wo). The backward writes inputGrad and flowGrad (the
 * flow's shape), as selected by outputMask.
 */
ACLNN_API aclnnStatus gs3dDisplacementWarp3DGetWorkspaceSize(const aclTensor* input, const aclTensor* flow,
                                                             int64_t interpolationMode, int64_t paddingMode,
                                                             aclTensor* out, uint64_t* workspaceSize,
                                                             aclOpExecutor** executor);
ACLNN_API aclnnStatus gs3dDisplacementWarp3D(void* workspace, uint64_t workspaceSize, aclOpExecutor* executor,
                                             aclrtStream stream);
ACLNN_API aclnnStatus gs3dDisplacementWarp3DBackwardGetWorkspaceSize(
    const aclTensor* gradOutput, const aclTensor* input, const aclTensor* flow, int64_t interpolationMode,
    int64_t paddingMode, const aclBoolArray* outputMask, aclTensor* inputGrad, aclTensor* flowGrad,
    uint64_t* workspaceSize, aclOpExecutor** executor);
ACLNN_API aclnnStatus gs3dDisplacementWarp3DBackward(void* workspace, uint64_t workspaceSize,
                                                     aclOpExecutor* executor, aclrtStream stream);

#ifdef __cplusplus
}
#endif

#endif /* GRIDSAMPLER3D_WARP3D_H_ */
