// The forward and backward kernels for Half elements. Each element type has its own
// translation unit so that the build compiles them in parallel.
#define GS3D_KERNEL_ELEMENT Half
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "kernels/kernels_float16.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep

#include "kernels/kernel_entry-inl.h"
