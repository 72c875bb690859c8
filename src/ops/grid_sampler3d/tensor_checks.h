// Argument checks and view conversions shared by the forward and backward grid sampler APIs.
// Each check returns ACLNN_SUCCESS or records a message naming the argument and returns the
// aclnn status code.
#pragma once

#include <string>

#include "aclnn/aclnn_base.h"
#include "kernels/grid_sampler3d_kernels.h"
#include "tensor/tensor.h"

namespace gs3d::grid_sampler3d {

// A grid sampler call: the names it reports itself by (its GetWorkspaceSize, its launch), and
// whether it takes tricubic (the gs3d extension calls do, the aclnn ones do not).
struct Api {
    const char* name;
    const char* launch;
    bool tricubic;
};

// A tensor argument and its name in the API's signature, for messages.
struct Arg {
    const char* name;
    const aclTensor* tensor;
};

aclnnStatus CheckNotNull(const char* api, const Arg& arg);
// The input's dtype is one the op computes (FLOAT, FLOAT16, BF16, DOUBLE).
aclnnStatus CheckSupportedDtype(const char* api, const Arg& arg);
aclnnStatus CheckSameDtype(const char* api, const Arg& arg, const Arg& reference);
// ND, NCDHW or NDHWC.
aclnnStatus CheckSupportedFormat(const char* api, const Arg& arg);
// interpolationMode 0 (bilinear) or 1 (nearest), and 2 (tricubic) where `tricubic` (the gs3d
// extension calls; the aclnn ones refuse it, as CANN does).
aclnnStatus CheckModes(const char* api, int64_t interpolation_mode, int64_t padding_mode, bool tricubic);
aclnnStatus CheckRank5(const char* api, const Arg& arg);
aclnnStatus CheckSameShape(const char* api, const Arg& arg, const Arg& reference);
// Volume tensors are (N, C, D, H, W), or (N, D, H, W, C) when the input is NDHWC.
aclnnStatus CheckInputVolumeNotEmpty(const char* api, const Arg& input, bool channel_last);
// A tensor with elements must have data.
aclnnStatus CheckHasData(const char* api, const Arg& arg);
// An output must not write one element twice, nor overlap memory that the op reads or that
// another output writes (the kernels would read half-written values).
aclnnStatus CheckNoSelfOverlap(const char* api, const Arg& output);
aclnnStatus CheckDisjoint(const char* api, const Arg& output, const Arg& other);

bool IsChannelLast(const aclTensor* input);
// Logical dim i (0 = N, 1 = C, 2 = D, 3 = H, 4 = W) of a volume tensor.
int64_t VolumeDim(const aclTensor* tensor, bool channel_last, int i);
std::string ShapeString(const aclTensor* tensor);

kernels::ElementType ToElementType(aclDataType type);
// The tensor as the kernels see it: volumes in (N, C, D, H, W) order, grids as given.
kernels::View5 VolumeView(const aclTensor* tensor, bool channel_last);
kernels::View5 GridView(const aclTensor* tensor);
// A rank-3 tensor, such as an affine warp's theta (N, 3, 4), as a View5 (N, 3, 4, 1, 1).
kernels::View5 MatrixView(const aclTensor* tensor);

}  // namespace gs3d::grid_sampler3d

// Returns from the calling API with the status of a failed check.
#define GS3D_RETURN_IF_ERROR(expr)                            \
    do {                                                      \
        const aclnnStatus gs3d_status_ = (expr);              \
        if (gs3d_status_ != ACLNN_SUCCESS) return gs3d_status_; \
    } while (0)
