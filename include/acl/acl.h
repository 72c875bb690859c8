/* gridsampler3d: the CANN ACL umbrella header, as CANN ships it. */
#ifndef GRIDSAMPLER3D_ACL_ACL_H_
#define GRIDSAMPLER3D_ACL_ACL_H_

#include "acl_base.h"
#include "acl_rt.h"

#endif /* GRIDSAMPLER3D_ACL_ACL_H_ */
