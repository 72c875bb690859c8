// The forward and backward kernels for float elements. Each element type has its own
// translation unit so that the build compiles them in parallel (one forward and one backward
// unit for all types took 3 and 9 minutes of a 10-minute build on 2 cores, 2026-12-05).
#define GS3D_KERNEL_ELEMENT float
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "kernels/kernels_float32.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep

#include "kernels/kernel_entry-inl.h"
