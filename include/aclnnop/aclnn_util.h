/* gridsampler3d: export macro of the aclnn operator headers, as CANN ships it. */
#ifndef GRIDSAMPLER3D_ACLNNOP_ACLNN_UTIL_H_
#define GRIDSAMPLER3D_ACLNNOP_ACLNN_UTIL_H_

#define ACLNN_API __attribute__((visibility("default")))

#endif /* GRIDSAMPLER3D_ACLNNOP_ACLNN_UTIL_H_ */
