/* gridsampler3d: aclnnGridSampler3D, the forward 3-D grid sampler, with CANN's signature. */
#ifndef GRIDSAMPLER3D_ACLNNOP_ACLNN_GRID_SAMPLER3D_H_
#define GRIDSAMPLER3D_ACLNNOP_ACLNN_GRID_SAMPLER3D_H_

#include "aclnn/aclnn_base.h"
#include "aclnn_util.h"

#ifdef __cplusplus
extern "C" {
#endif

/* First phase: checks the arguments and builds the executor.
 * interpolationMode: 0 bilinear (trilinear), 1 nearest. paddingMode: 0 zeros, 1 border,
 * 2 reflection. input (N, C, D, H, W), or (N, D, H, W, C) when its format is NDHWC;
 * grid (N, Do, Ho, Wo, 3); out (N, C, Do, Ho, Wo) read in input's layout. */
ACLNN_API aclnnStatus aclnnGridSampler3DGetWorkspaceSize(const aclTensor* input, const aclTensor* grid,
                                                         int64_t interpolationMode, int64_t paddingMode,
                                                         bool alignCorners, aclTensor* out,
                                                         uint64_t* workspaceSize, aclOpExecutor** executor);

/* Second phase: enqueues the executor on stream (NULL: the default stream) and frees it. */
ACLNN_API aclnnStatus aclnnGridSampler3D(void* workspace, uint64_t workspaceSize, aclOpExecutor* executor,
                                         aclrtStream stream);

#ifdef __cplusplus
}
#endif

#endif /* GRIDSAMPLER3D_ACLNNOP_ACLNN_GRID_SAMPLER3D_H_ */
