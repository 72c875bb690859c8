#include "support/test_tensor.h"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <stdexcept>

namespace gs3d_test {
namespace {
constexpr unsigned char kSentinel = 0xA5;
}

const char* LayoutName(Layout layout) {
    switch (layout) {
        case Layout::kContiguous: return "contiguous";
        case Layout::kPadded: return "padded";
        case Layout::kReversed: return "reversed";
    }
    return "?";
}

int64_t ElementBytes(aclDataType type) {
    switch (type) {
        case ACL_FLOAT16: case ACL_BF16: return 2;
        case ACL_DOUBLE: case ACL_INT64: return 8;
        case ACL_INT8: case ACL_UINT8: case ACL_BOOL: return 1;
        default: return 4;
    }
}

double DecodeElement(const void* element, aclDataType type) {
    switch (type) {
        case ACL_DOUBLE: {
            double v;
            std::memcpy(&v, element, 8);
            return v;
        }
        case ACL_FLOAT: {
            float v;
            std::memcpy(&v, element, 4);
            return v;
        }
        case ACL_BF16: {
            uint16_t b;
            std::memcpy(&b, element, 2);
            uint32_t u = static_cast<uint32_t>(b) << 16;
            float v;
            std::memcpy(&v, &u, 4);
            return v;
        }
        case ACL_FLOAT16: {
            uint16_t b;
            std::memcpy(&b, element, 2);
            const double sign = (b & 0x8000) ? -1.0 : 1.0;
            const int exponent = (b >> 10) & 0x1f;
            const int mantissa = b & 0x3ff;
            if (exponent == 0) return sign * std::ldexp(mantissa, -24);
            if (exponent == 31) return mantissa ? NAN : sign * INFINITY;
            return sign * std::ldexp(1024 + mantissa, exponent - 25);
        }
        default: {
            int32_t v;
            std::memcpy(&v, element, 4);
            return v;
        }
    }
}

void EncodeExactElement(double value, aclDataType type, void* element) {
    switch (type) {
        case ACL_DOUBLE:
            std::memcpy(element, &value, 8);
            return;
        case ACL_FLOAT: {
            float v = static_cast<float>(value);
            std::memcpy(element, &v, 4);
            return;
        }
        case ACL_BF16: {
            float v = static_cast<float>(value);
            uint32_t u;
            std::memcpy(&u, &v, 4);
            if ((u & 0xffff) != 0 && !std::isnan(value)) throw std::logic_error("value not exact in bf16");
            uint16_t b = static_cast<uint16_t>(u >> 16);
            if (std::isnan(value)) b = 0x7fc0;
            std::memcpy(element, &b, 2);
            return;
        }
        case ACL_FLOAT16: {
            uint16_t b;
            if (std::isnan(value)) {
                b = 0x7e00;
            } else if (std::isinf(value)) {
                b = value > 0 ? 0x7c00 : 0xfc00;
            } else {
                const uint16_t sign = std::signbit(value) ? 0x8000 : 0;
                const double magnitude = std::fabs(value);
                int exponent;
                std::frexp(magnitude, &exponent);  // magnitude = m * 2^exponent, m in [0.5, 1)
                if (magnitude == 0) {
                    b = sign;
                } else if (exponent - 1 >= -14) {  // normal: 1.f * 2^(exponent - 1)
                    const double mantissa = std::ldexp(magnitude, 11 - exponent) - 1024;  // integer if exact
                    if (mantissa != std::floor(mantissa) || exponent - 1 > 15) throw std::logic_error("not exact in fp16");
                    b = static_cast<uint16_t>(sign | ((exponent - 1 + 15) << 10) | static_cast<int>(mantissa));
                } else {  // subnormal: k * 2^-24
                    const double k = std::ldexp(magnitude, 24);
                    if (k != std::floor(k)) throw std::logic_error("not exact in fp16");
                    b = static_cast<uint16_t>(sign | static_cast<int>(k));
                }
            }
            std::memcpy(element, &b, 2);
            return;
        }
        default: {
            int32_t v = static_cast<int32_t>(value);
            std::memcpy(element, &v, 4);
            return;
        }
    }
}

TestTensor::TestTensor(std::vector<int64_t> dims, aclDataType type, aclFormat format, Layout layout, int64_t offset)
    : dims_(std::move(dims)), type_(type), offset_(offset), element_bytes_(ElementBytes(type)) {
    const size_t rank = dims_.size();
    strides_.assign(rank, 1);
    count_ = 1;
    for (int64_t d : dims_) count_ *= d;
    if (layout == Layout::kReversed) {
        for (size_t i = 1; i < rank; ++i) strides_[i] = strides_[i - 1] * std::max<int64_t>(dims_[i - 1], 1);
    } else {
        const int64_t inner = layout == Layout::kPadded ? 2 : 1;
        const int64_t gap = layout == Layout::kPadded ? 1 : 0;
        if (rank) strides_[rank - 1] = inner;
        for (size_t i = rank - 1; i-- > 0;)
            strides_[i] = strides_[i + 1] * (std::max<int64_t>(dims_[i + 1], 1) + gap);
    }
    int64_t last = offset_;
    for (size_t i = 0; i < rank; ++i) last += (std::max<int64_t>(dims_[i], 1) - 1) * strides_[i];
    const int64_t storage_elements = last + 1 + 3;  // a few spare elements past the view
    constexpr size_t kAlignment = 64;
    storage_.assign(static_cast<size_t>(storage_elements * element_bytes_) + kAlignment - 1, kSentinel);
    const auto misalignment = reinterpret_cast<uintptr_t>(storage_.data()) % kAlignment;
    data_ = storage_.data() + (misalignment ? kAlignment - misalignment : 0);
    in_view_.assign(static_cast<size_t>(storage_elements), false);
    for (int64_t i = 0; i < count_; ++i) in_view_[static_cast<size_t>(StorageIndex(i))] = true;
    const int64_t storage_dims[1] = {storage_elements};
    tensor_ = aclCreateTensor(dims_.data(), rank, type, strides_.data(), offset_, format, storage_dims, 1, data_);
    if (!tensor_) throw std::runtime_error("aclCreateTensor refused a test tensor");
}

TestTensor::~TestTensor() { aclDestroyTensor(tensor_); }

int64_t TestTensor::StorageIndex(int64_t linear) const {
    int64_t index = offset_;
    for (size_t i = dims_.size(); i-- > 0;) {
        index += (linear % dims_[i]) * strides_[i];
        linear /= dims_[i];
    }
    return index;
}

void TestTensor::Set(int64_t linear, double value) {
    EncodeExactElement(value, type_, &data_[static_cast<size_t>(StorageIndex(linear) * element_bytes_)]);
}

double TestTensor::Get(int64_t linear) const {
    return DecodeElement(&data_[static_cast<size_t>(StorageIndex(linear) * element_bytes_)], type_);
}

void TestTensor::Fill(double value) {
    for (int64_t i = 0; i < count_; ++i) Set(i, value);
}

bool TestTensor::OutsideViewUntouched() const {
    for (size_t e = 0; e < in_view_.size(); ++e) {
        if (in_view_[e]) continue;
        for (int64_t b = 0; b < element_bytes_; ++b)
            if (data_[e * static_cast<size_t>(element_bytes_) + static_cast<size_t>(b)] != kSentinel) return false;
    }
    return true;
}

std::vector<int64_t> VolumeDims(int64_t n, int64_t c, int64_t d, int64_t h, int64_t w, bool channel_last) {
    if (channel_last) return {n, d, h, w, c};
    return {n, c, d, h, w};
}

namespace {
// Row-major index in the tensor's given dims of logical element (n, c, d, h, w).
int64_t GivenIndex(const std::vector<int64_t>& g, bool channel_last, int64_t n, int64_t c, int64_t d, int64_t h,
                   int64_t w) {
    if (channel_last) return (((n * g[1] + d) * g[2] + h) * g[3] + w) * g[4] + c;
    return (((n * g[1] + c) * g[2] + d) * g[3] + h) * g[4] + w;
}

template <typename F>
void ForEachLogical(const Array5& a, F&& f) {
    for (int64_t n = 0; n < a.dim[0]; ++n)
        for (int64_t c = 0; c < a.dim[1]; ++c)
            for (int64_t d = 0; d < a.dim[2]; ++d)
                for (int64_t h = 0; h < a.dim[3]; ++h)
                    for (int64_t w = 0; w < a.dim[4]; ++w) f(n, c, d, h, w);
}
}  // namespace

void StoreVolume(const Array5& values, bool channel_last, TestTensor* tensor) {
    ForEachLogical(values, [&](int64_t n, int64_t c, int64_t d, int64_t h, int64_t w) {
        tensor->Set(GivenIndex(tensor->dims(), channel_last, n, c, d, h, w), values.at(n, c, d, h, w));
    });
}

Array5 LoadVolume(const TestTensor& tensor, bool channel_last) {
    const auto& g = tensor.dims();
    Array5 a = channel_last ? Array5(g[0], g[4], g[1], g[2], g[3]) : Array5(g[0], g[1], g[2], g[3], g[4]);
    ForEachLogical(a, [&](int64_t n, int64_t c, int64_t d, int64_t h, int64_t w) {
        a.at(n, c, d, h, w) = tensor.Get(GivenIndex(g, channel_last, n, c, d, h, w));
    });
    return a;
}

void StoreGrid(const Array5& values, TestTensor* tensor) {
    for (int64_t i = 0; i < values.Count(); ++i) tensor->Set(i, values.values[static_cast<size_t>(i)]);
}

Array5 LoadGrid(const TestTensor& tensor) {
    const auto& g = tensor.dims();
    Array5 a(g[0], g[1], g[2], g[3], g[4]);
    for (int64_t i = 0; i < a.Count(); ++i) a.values[static_cast<size_t>(i)] = tensor.Get(i);
    return a;
}

}  // namespace gs3d_test
