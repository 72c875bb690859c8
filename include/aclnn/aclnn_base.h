/* gridsampler3d: the aclnn base header, as CANN ships it (the meta API lives in acl_meta.h). */
#ifndef GRIDSAMPLER3D_ACLNN_ACLNN_BASE_H_
#define GRIDSAMPLER3D_ACLNN_ACLNN_BASE_H_

#include "aclnn/acl_meta.h"

#endif /* GRIDSAMPLER3D_ACLNN_ACLNN_BASE_H_ */
