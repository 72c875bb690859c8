/* aclCreateTensor called from C, as an application would: C passes any int for an enum
 * parameter (values outside the enumerators included), which C++ cannot do without undefined
 * behaviour, so the fuzzer's dtype and format codes go through here. */
#include "c_caller.h"

aclTensor* FuzzCreateTensor(const int64_t* viewDims, uint64_t viewDimsNum, int dataType, const int64_t* stride,
                            int64_t offset, int format, const int64_t* storageDims, uint64_t storageDimsNum,
                            void* tensorData) {
    return aclCreateTensor(viewDims, viewDimsNum, (aclDataType)dataType, stride, offset, (aclFormat)format,
                           storageDims, storageDimsNum, tensorData);
}
