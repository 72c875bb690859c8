/* gridsampler3d: aclnnGridSampler3DBackward, the gradients of the 3-D grid sampler, with
 * CANN's signature. */
#ifndef GRIDSAMPLER3D_ACLNNOP_ACLNN_GRID_SAMPLER3D_BACKWARD_H_
#define GRIDSAMPLER3D_ACLNNOP_ACLNN_GRID_SAMPLER3D_BACKWARD_H_

#include "aclnn/aclnn_base.h"
#include "aclnn_util.h"

#ifdef __cplusplus
extern "C" {
#endif

/* First phase: checks the arguments and builds the executor. outputMask (length 2, or NULL
 * for both) selects inputGrad and gridGrad; an unselected output is left untouched. */
ACLNN_API aclnnStatus aclnnGridSampler3DBackwardGetWorkspaceSize(
    const aclTensor* gradOutput, const aclTensor* input, const aclTensor* grid, int64_t interpolationMode,
    int64_t paddingMode, bool alignCorners, const aclBoolArray* outputMask, aclTensor* inputGrad,
    aclTensor* gridGrad, uint64_t* workspaceSize, aclOpExecutor** executor);

/* Second phase: enqueues the executor on stream (NULL: the default stream) and frees it. */
ACLNN_API aclnnStatus aclnnGridSampler3DBackward(void* workspace, uint64_t workspaceSize,
                                                 aclOpExecutor* executor, aclrtStream stream);

#ifdef __cplusplus
}
#endif

#endif /* GRIDSAMPLER3D_ACLNNOP_ACLNN_GRID_SAMPLER3D_BACKWARD_H_ */
