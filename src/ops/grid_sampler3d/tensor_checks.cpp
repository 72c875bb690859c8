#include "ops/grid_sampler3d/tensor_checks.h"

#include <algorithm>
#include <cstdint>
#include <vector>

#include "runtime/recent_error.h"

namespace gs3d::grid_sampler3d {
namespace {

const char* DtypeName(aclDataType type) {
    switch (type) {
        case ACL_FLOAT: return "FLOAT";
        case ACL_FLOAT16: return "FLOAT16";
        case ACL_BF16: return "BFLOAT16";
        case ACL_DOUBLE: return "DOUBLE";
        case ACL_INT8: return "INT8";
        case ACL_INT32: return "INT32";
        case ACL_INT64: return "INT64";
        case ACL_UINT8: return "UINT8";
        case ACL_BOOL: return "BOOL";
        default: return "an unsupported type";
    }
}

// Position in the logical (N, C, D, H, W) order of each given dim of a volume tensor.
constexpr int kChannelLastToLogical[5] = {0, 2, 3, 4, 1};

// The byte range [begin, end) that a tensor's view touches; empty for a tensor without elements.
struct ByteRange {
    uintptr_t begin = 0, end = 0;
};

ByteRange RangeOf(const aclTensor* t) {
    ByteRange range;
    if (t->ElementCount() == 0 || !t->data) return range;
    const int64_t element_size = ElementSize(t->data_type);
    int64_t last = 0;
    for (size_t i = 0; i < t->view_dims.size(); ++i) last += (t->view_dims[i] - 1) * t->strides[i];
    range.begin = reinterpret_cast<uintptr_t>(t->data) + static_cast<uintptr_t>(t->offset * element_size);
    range.end = range.begin + static_cast<uintptr_t>((last + 1) * element_size);
    return range;
}

}  // namespace

aclnnStatus CheckNotNull(const char* api, const Arg& arg) {
    if (arg.tensor) return ACLNN_SUCCESS;
    return RecordError(ACLNN_ERR_PARAM_NULLPTR, "%s: %s is null", api, arg.name);
}

aclnnStatus CheckSupportedDtype(const char* api, const Arg& arg) {
    switch (arg.tensor->data_type) {
        case ACL_FLOAT: case ACL_FLOAT16: case ACL_BF16: case ACL_DOUBLE: return ACLNN_SUCCESS;
        default:
            return RecordError(ACLNN_ERR_PARAM_INVALID,
                               "%s: %s has dtype %s (%d); expected FLOAT, FLOAT16, BFLOAT16 or DOUBLE", api, arg.name,
                               DtypeName(arg.tensor->data_type), (int)arg.tensor->data_type);
    }
}

aclnnStatus CheckSameDtype(const char* api, const Arg& arg, const Arg& reference) {
    if (arg.tensor->data_type == reference.tensor->data_type) return ACLNN_SUCCESS;
    return RecordError(ACLNN_ERR_PARAM_INVALID, "%s: %s has dtype %s but %s has %s; they must be equal", api, arg.name,
                       DtypeName(arg.tensor->data_type), reference.name, DtypeName(reference.tensor->data_type));
}

aclnnStatus CheckSupportedFormat(const char* api, const Arg& arg) {
    aclFormat f = arg.tensor->format;
    if (f == ACL_FORMAT_ND || f == ACL_FORMAT_NCDHW || f == ACL_FORMAT_NDHWC) return ACLNN_SUCCESS;
    return RecordError(ACLNN_ERR_PARAM_INVALID, "%s: %s has format %d; expected ND (2), NCDHW (30) or NDHWC (27)", api,
                       arg.name, (int)f);
}

aclnnStatus CheckModes(const char* api, int64_t interpolation_mode, int64_t padding_mode, bool tricubic) {
    if (padding_mode < 0 || padding_mode > 2)
        return RecordError(ACLNN_ERR_PARAM_INVALID,
                           "%s: paddingMode %lld is not supported; expected 0 (zeros), 1 (border) or 2 (reflection)",
                           api, (long long)padding_mode);
    const bool known = interpolation_mode == 0 || interpolation_mode == 1 || (tricubic && interpolation_mode == 2);
    if (!known)
        return RecordError(ACLNN_ERR_PARAM_INVALID, "%s: interpolationMode %lld is not supported; expected %s", api,
                           (long long)interpolation_mode,
                           tricubic ? "0 (bilinear), 1 (nearest) or 2 (tricubic)" : "0 (bilinear) or 1 (nearest)");
    return ACLNN_SUCCESS;
}

aclnnStatus CheckRank5(const char* api, const Arg& arg) {
    if (arg.tensor->view_dims.size() == 5) return ACLNN_SUCCESS;
    return RecordError(ACLNN_ERR_PARAM_INVALID, "%s: %s must have 5 dims, got shape %s", api, arg.name,
                       ShapeString(arg.tensor).c_str());
}

aclnnStatus CheckSameShape(const char* api, const Arg& arg, const Arg& reference) {
    if (arg.tensor->view_dims == reference.tensor->view_dims) return ACLNN_SUCCESS;
    return RecordError(ACLNN_ERR_PARAM_INVALID, "%s: %s has shape %s; expected the shape of %s, %s", api, arg.name,
                       ShapeString(arg.tensor).c_str(), reference.name, ShapeString(reference.tensor).c_str());
}

aclnnStatus CheckInputVolumeNotEmpty(const char* api, const Arg& input, bool channel_last) {
    for (int i = 2; i < 5; ++i)
        if (VolumeDim(input.tensor, channel_last, i) == 0)
            return RecordError(ACLNN_ERR_PARAM_INVALID, "%s: %s has shape %s; its D, H and W must not be 0", api,
                               input.name, ShapeString(input.tensor).c_str());
    return ACLNN_SUCCESS;
}

aclnnStatus CheckHasData(const char* api, const Arg& arg) {
    if (arg.tensor->data || arg.tensor->ElementCount() == 0) return ACLNN_SUCCESS;
    return RecordError(ACLNN_ERR_PARAM_NULLPTR, "%s: %s has %lld elements but its data is null", api, arg.name,
                       (long long)arg.tensor->ElementCount());
}

aclnnStatus CheckNoSelfOverlap(const char* api, const Arg& output) {
    const aclTensor* t = output.tensor;
    if (t->ElementCount() == 0) return ACLNN_SUCCESS;
    // Sufficient for distinct addresses: ordered by stride, each stride exceeds the extent
    // of all smaller-strided dims together.
    std::vector<std::pair<int64_t, int64_t>> dims;  // (stride, size) of dims with size > 1
    for (size_t i = 0; i < t->view_dims.size(); ++i)
        if (t->view_dims[i] > 1) dims.emplace_back(t->strides[i], t->view_dims[i]);
    std::sort(dims.begin(), dims.end());
    int64_t extent = 0;  // largest offset reachable with the dims so far
    for (const auto& [stride, size] : dims) {
        if (stride <= extent)
            return RecordError(ACLNN_ERR_PARAM_INVALID,
                               "%s: %s has overlapping strides (some elements share memory); outputs must not", api,
                               output.name);
        extent += (size - 1) * stride;
    }
    return ACLNN_SUCCESS;
}

aclnnStatus CheckDisjoint(const char* api, const Arg& output, const Arg& other) {
    ByteRange a = RangeOf(output.tensor), b = RangeOf(other.tensor);
    if (a.begin == a.end || b.begin == b.end || a.end <= b.begin || b.end <= a.begin) return ACLNN_SUCCESS;
    return RecordError(ACLNN_ERR_PARAM_INVALID, "%s: %s overlaps the memory of %s; outputs must not alias other tensors",
                       api, output.name, other.name);
}

bool IsChannelLast(const aclTensor* input) { return input->format == ACL_FORMAT_NDHWC; }

int64_t VolumeDim(const aclTensor* tensor, bool channel_last, int i) {
    static constexpr int kLogicalToChannelLast[5] = {0, 4, 1, 2, 3};
    return tensor->view_dims[channel_last ? kLogicalToChannelLast[i] : i];
}

std::string ShapeString(const aclTensor* tensor) {
    std::string s = "(";
    for (size_t i = 0; i < tensor->view_dims.size(); ++i) {
        if (i) s += ", ";
        s += std::to_string(tensor->view_dims[i]);
    }
    return s + ")";
}

kernels::ElementType ToElementType(aclDataType type) {
    switch (type) {
        case ACL_FLOAT16: return kernels::ElementType::kFloat16;
        case ACL_BF16: return kernels::ElementType::kBFloat16;
        case ACL_DOUBLE: return kernels::ElementType::kFloat64;
        default: return kernels::ElementType::kFloat32;
    }
}

namespace {
char* ViewBase(const aclTensor* t) {
    return static_cast<char*>(t->data) + t->offset * ElementSize(t->data_type);
}
}  // namespace

kernels::View5 VolumeView(const aclTensor* tensor, bool channel_last) {
    kernels::View5 view;
    view.data = tensor->data ? ViewBase(tensor) : nullptr;
    for (int i = 0; i < 5; ++i) {
        int logical = channel_last ? kChannelLastToLogical[i] : i;
        view.size[logical] = tensor->view_dims[i];
        view.stride[logical] = tensor->strides[i];
    }
    return view;
}

kernels::View5 GridView(const aclTensor* tensor) { return VolumeView(tensor, false); }

kernels::View5 MatrixView(const aclTensor* tensor) {
    kernels::View5 view;
    view.data = tensor->data ? ViewBase(tensor) : nullptr;
    for (int i = 0; i < 5; ++i) {
        view.size[i] = i < 3 ? tensor->view_dims[i] : 1;
        view.stride[i] = i < 3 ? tensor->strides[i] : 0;
    }
    return view;
}

}  // namespace gs3d::grid_sampler3d
