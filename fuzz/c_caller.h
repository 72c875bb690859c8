/* See c_caller.c. */
#ifndef GRIDSAMPLER3D_FUZZ_C_CALLER_H_
#define GRIDSAMPLER3D_FUZZ_C_CALLER_H_

#include <stdint.h>

#include "aclnn/aclnn_base.h"

#ifdef __cplusplus
extern "C" {
#endif

aclTensor* FuzzCreateTensor(const int64_t* viewDims, uint64_t viewDimsNum, int dataType, const int64_t* stride,
                            int64_t offset, int format, const int64_t* storageDims, uint64_t storageDimsNum,
                            void* tensorData);

#ifdef __cplusplus
}
#endif

#endif
