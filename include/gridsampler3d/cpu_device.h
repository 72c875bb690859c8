/*
 * gridsampler3d's own additions to the API, for the CPU that stands in for the device.
 * CANN has no counterpart: on an NPU the number of cores an operator uses is not the caller's
 * to choose.
 */
#ifndef GRIDSAMPLER3D_CPU_DEVICE_H_
#define GRIDSAMPLER3D_CPU_DEVICE_H_

#include <stdint.h>

#include "acl/acl_base.h"

#ifdef __cplusplus
extern "C" {
#endif

/*
 * The number of threads each kernel launched from now on uses, process-wide and for every
 * stream. 0 restores the default: OMP_NUM_THREADS, or else OpenMP's default (one per core).
 * A negative count is ACL_ERROR_INVALID_PARAM. Results do not depend on it (the work split
 * depends on the shape only). Needs no aclInit. Where the count equals the number of CPUs
 * the process may run on (2 or more), each stream's threads are bound one per CPU, unless
 * the environment has GRIDSAMPLER3D_BIND_THREADS=0 or OMP_PROC_BIND (OpenMP's binding).
 */
ACL_FUNC_VISIBILITY aclError gs3dSetNumThreads(int32_t numThreads);

/* The number of threads a kernel launched now would use (never 0). */
ACL_FUNC_VISIBILITY aclError gs3dGetNumThreads(int32_t *numThreads);

#ifdef __cplusplus
}
#endif

#endif /* GRIDSAMPLER3D_CPU_DEVICE_H_ */
