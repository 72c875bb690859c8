#include "tensor/tensor.h"

#include <new>

#include "runtime/raw_enum.h"
#include "runtime/recent_error.h"

namespace gs3d {
namespace {

// CANN's limit on the rank of a tensor.
constexpr uint64_t kMaxDims = 8;

bool KnownDataType(int t) {
    switch (t) {
        case ACL_FLOAT: case ACL_FLOAT16: case ACL_INT8: case ACL_INT32: case ACL_UINT8:
        case ACL_INT16: case ACL_UINT16: case ACL_UINT32: case ACL_INT64: case ACL_UINT64:
        case ACL_DOUBLE: case ACL_BOOL: case ACL_STRING: case ACL_COMPLEX64: case ACL_COMPLEX128:
        case ACL_BF16: case ACL_INT4: case ACL_UINT1: case ACL_COMPLEX32:
            return true;
        default:
            return false;
    }
}

bool KnownFormat(int f) {
    switch (f) {
        case ACL_FORMAT_UNDEFINED: case ACL_FORMAT_NCHW: case ACL_FORMAT_NHWC: case ACL_FORMAT_ND:
        case ACL_FORMAT_NC1HWC0: case ACL_FORMAT_FRACTAL_Z: case ACL_FORMAT_NC1HWC0_C04: case ACL_FORMAT_HWCN:
        case ACL_FORMAT_NDHWC: case ACL_FORMAT_FRACTAL_NZ: case ACL_FORMAT_NCDHW: case ACL_FORMAT_NDC1HWC0:
        case ACL_FRACTAL_Z_3D: case ACL_FORMAT_NC: case ACL_FORMAT_NCL:
            return true;
        default:
            return false;
    }
}

// Product of dims, or -1 when a dim is negative or the product overflows int64.
int64_t CheckedProduct(const std::vector<int64_t>& dims) {
    int64_t product = 1;
    for (int64_t d : dims) {
        if (d < 0 || __builtin_mul_overflow(product, d, &product)) return -1;
    }
    return product;
}

aclTensor* Refuse(const char* format, int64_t a = 0, int64_t b = 0) {
    RecordError(ACLNN_ERR_PARAM_INVALID, format, (long long)a, (long long)b);
    return nullptr;
}

aclnnStatus CopyOut(const char* api, const aclTensor* tensor, const std::vector<int64_t>& values, int64_t** out,
                    uint64_t* count) {
    if (!tensor || !out || !count)
        return RecordError(ACLNN_ERR_PARAM_NULLPTR, "%s: %s is null", api, !tensor ? "tensor" : !out ? "array" : "count");
    int64_t* copy = new (std::nothrow) int64_t[values.empty() ? 1 : values.size()];
    if (!copy) return RecordError(ACLNN_ERR_INNER, "%s: out of memory", api);
    for (size_t i = 0; i < values.size(); ++i) copy[i] = values[i];
    *out = copy;
    *count = values.size();
    return ACLNN_SUCCESS;
}

}  // namespace

int64_t ElementSize(aclDataType type) {
    switch (type) {
        case ACL_INT8: case ACL_UINT8: case ACL_BOOL: return 1;
        case ACL_FLOAT16: case ACL_BF16: case ACL_INT16: case ACL_UINT16: return 2;
        case ACL_FLOAT: case ACL_INT32: case ACL_UINT32: case ACL_COMPLEX32: return 4;
        case ACL_DOUBLE: case ACL_INT64: case ACL_UINT64: case ACL_COMPLEX64: return 8;
        case ACL_COMPLEX128: return 16;
        default: return 0;
    }
}

}  // namespace gs3d

int64_t aclTensor::ElementCount() const {
    int64_t count = 1;
    for (int64_t d : view_dims) count *= d;
    return count;
}

extern "C" {

aclTensor* aclCreateTensor(const int64_t* viewDims, uint64_t viewDimsNum, aclDataType dataTypeValue,
                           const int64_t* stride, int64_t offset, aclFormat formatValue, const int64_t* storageDims,
                           uint64_t storageDimsNum, void* tensorData) {
    using gs3d::Refuse;
    const int raw_type = gs3d::RawEnum(dataTypeValue), raw_format = gs3d::RawEnum(formatValue);
    if (viewDimsNum > gs3d::kMaxDims || storageDimsNum > gs3d::kMaxDims)
        return Refuse("aclCreateTensor: at most 8 dims are supported, got %lld view and %lld storage dims",
                      (int64_t)viewDimsNum, (int64_t)storageDimsNum);
    if ((viewDimsNum > 0 && !viewDims) || (storageDimsNum > 0 && !storageDims))
        return Refuse("aclCreateTensor: viewDims or storageDims is null but its count is not 0");
    if (!gs3d::KnownDataType(raw_type)) return Refuse("aclCreateTensor: unknown data type %lld", raw_type);
    if (!gs3d::KnownFormat(raw_format)) return Refuse("aclCreateTensor: unknown format %lld", raw_format);
    // Known values: now they may be held as the enums.
    const aclDataType dataType = static_cast<aclDataType>(raw_type);
    const aclFormat format = static_cast<aclFormat>(raw_format);
    if (offset < 0) return Refuse("aclCreateTensor: offset %lld is negative", offset);

    auto* tensor = new (std::nothrow) aclTensor();
    if (!tensor) return nullptr;
    tensor->view_dims.assign(viewDims, viewDims + viewDimsNum);
    tensor->storage_dims.assign(storageDims, storageDims + storageDimsNum);
    tensor->offset = offset;
    tensor->data_type = dataType;
    tensor->format = format;
    tensor->data = tensorData;
    if (stride) {
        tensor->strides.assign(stride, stride + viewDimsNum);
    } else {  // contiguous strides of the view
        tensor->strides.assign(viewDimsNum, 1);
        for (uint64_t i = viewDimsNum; i-- > 1;) {
            int64_t d = viewDims[i] > 0 ? viewDims[i] : 1;
            if (__builtin_mul_overflow(tensor->strides[i], d, &tensor->strides[i - 1])) tensor->strides[i - 1] = -1;
        }
    }

    const char* problem = nullptr;
    int64_t view_count = gs3d::CheckedProduct(tensor->view_dims);
    int64_t storage_count = gs3d::CheckedProduct(tensor->storage_dims);
    int64_t element_size = gs3d::ElementSize(dataType);
    int64_t storage_bytes = 0;
    if (view_count < 0) problem = "aclCreateTensor: a view dim is negative or the element count overflows int64";
    else if (storage_count < 0) problem = "aclCreateTensor: a storage dim is negative or the element count overflows int64";
    else if (element_size > 0 && __builtin_mul_overflow(storage_count, element_size, &storage_bytes))
        problem = "aclCreateTensor: the storage's byte size overflows int64";
    for (int64_t s : tensor->strides)
        if (!problem && s < 0) problem = "aclCreateTensor: negative strides are not supported";
    if (!problem && view_count > 0) {
        // The last element the view reaches must lie inside the storage.
        int64_t last = offset;
        for (uint64_t i = 0; i < viewDimsNum && !problem; ++i) {
            int64_t step;
            if (__builtin_mul_overflow(tensor->view_dims[i] - 1, tensor->strides[i], &step) ||
                __builtin_add_overflow(last, step, &last))
                problem = "aclCreateTensor: the view's extent overflows int64";
        }
        if (!problem && last >= storage_count) problem = "aclCreateTensor: the view reaches outside its storage";
    }
    if (problem) {
        delete tensor;
        return Refuse(problem);
    }
    return tensor;
}

aclnnStatus aclDestroyTensor(const aclTensor* tensor) {
    delete tensor;
    return ACLNN_SUCCESS;
}

aclBoolArray* aclCreateBoolArray(const bool* value, uint64_t size) {
    if (!value && size > 0) {
        gs3d::RecordError(ACLNN_ERR_PARAM_NULLPTR, "aclCreateBoolArray: value is null but size is %llu",
                          (unsigned long long)size);
        return nullptr;
    }
    auto* array = new (std::nothrow) aclBoolArray();
    if (!array) return nullptr;
    array->values.assign(value, value + size);
    return array;
}

aclnnStatus aclDestroyBoolArray(const aclBoolArray* array) {
    delete array;
    return ACLNN_SUCCESS;
}

aclnnStatus aclGetBoolArraySize(const aclBoolArray* array, uint64_t* size) {
    if (!array || !size)
        return gs3d::RecordError(ACLNN_ERR_PARAM_NULLPTR, "aclGetBoolArraySize: %s is null", !array ? "array" : "size");
    *size = array->values.size();
    return ACLNN_SUCCESS;
}

aclnnStatus aclGetViewShape(const aclTensor* tensor, int64_t** viewDims, uint64_t* viewDimsNum) {
    return gs3d::CopyOut("aclGetViewShape", tensor, tensor ? tensor->view_dims : std::vector<int64_t>{}, viewDims,
                         viewDimsNum);
}

aclnnStatus aclGetViewStrides(const aclTensor* tensor, int64_t** stridesValue, uint64_t* stridesNum) {
    return gs3d::CopyOut("aclGetViewStrides", tensor, tensor ? tensor->strides : std::vector<int64_t>{}, stridesValue,
                         stridesNum);
}

aclnnStatus aclGetStorageShape(const aclTensor* tensor, int64_t** storageDims, uint64_t* storageDimsNum) {
    return gs3d::CopyOut("aclGetStorageShape", tensor, tensor ? tensor->storage_dims : std::vector<int64_t>{},
                         storageDims, storageDimsNum);
}

aclnnStatus aclGetViewOffset(const aclTensor* tensor, int64_t* offset) {
    if (!tensor || !offset)
        return gs3d::RecordError(ACLNN_ERR_PARAM_NULLPTR, "aclGetViewOffset: %s is null", !tensor ? "tensor" : "offset");
    *offset = tensor->offset;
    return ACLNN_SUCCESS;
}

aclnnStatus aclGetFormat(const aclTensor* tensor, aclFormat* format) {
    if (!tensor || !format)
        return gs3d::RecordError(ACLNN_ERR_PARAM_NULLPTR, "aclGetFormat: %s is null", !tensor ? "tensor" : "format");
    *format = tensor->format;
    return ACLNN_SUCCESS;
}

aclnnStatus aclGetDataType(const aclTensor* tensor, aclDataType* dataType) {
    if (!tensor || !dataType)
        return gs3d::RecordError(ACLNN_ERR_PARAM_NULLPTR, "aclGetDataType: %s is null", !tensor ? "tensor" : "dataType");
    *dataType = tensor->data_type;
    return ACLNN_SUCCESS;
}

}  // extern "C"
