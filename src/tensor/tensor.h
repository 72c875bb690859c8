// aclTensor and aclBoolArray: what a tensor view is (shape, strides, offset, format, storage)
// and what a bool array holds. Created only through aclCreateTensor / aclCreateBoolArray,
// which refuse inconsistent views.
#pragma once

#include <cstdint>
#include <vector>

#include "aclnn/aclnn_base.h"

struct aclTensor {
    std::vector<int64_t> view_dims;
    std::vector<int64_t> strides;  // elements
    int64_t offset = 0;            // elements
    std::vector<int64_t> storage_dims;
    aclDataType data_type = ACL_DT_UNDEFINED;
    aclFormat format = ACL_FORMAT_UNDEFINED;
    void* data = nullptr;

    int64_t ElementCount() const;  // of the view; checked not to overflow at creation
};

struct aclBoolArray {
    std::vector<bool> values;
};

namespace gs3d {

// Bytes of one element, or 0 for types without a fixed byte size (string, int4, uint1).
int64_t ElementSize(aclDataType type);

}  // namespace gs3d
