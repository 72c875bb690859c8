// Test tensors: host storage laid out contiguously, with gaps, or in reversed dim order, at
// an offset, filled around the view with a sentinel so that writes outside the view show.
// Values convert to and from the element type independently of the library's conversions.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "aclnn/aclnn_base.h"
#include "support/reference_grid_sampler.h"

namespace gs3d_test {

enum class Layout {
    kContiguous,  // row-major in the given dim order
    kPadded,      // row-major with a gap after every row and an inner stride of 2
    kReversed,    // column-major: the first given dim is the fastest
};
const char* LayoutName(Layout layout);

// Exact decoding of an element type's bits; fp16 and bf16 encoding of values that they
// represent exactly (the tests only store such values: see RandomRepresentable).
double DecodeElement(const void* element, aclDataType type);
void EncodeExactElement(double value, aclDataType type, void* element);
int64_t ElementBytes(aclDataType type);

class TestTensor {
 public:
    TestTensor(std::vector<int64_t> dims, aclDataType type, aclFormat format = ACL_FORMAT_ND,
               Layout layout = Layout::kContiguous, int64_t offset = 0);
    ~TestTensor();
    TestTensor(const TestTensor&) = delete;
    TestTensor& operator=(const TestTensor&) = delete;

    aclTensor* get() const { return tensor_; }
    int64_t count() const { return count_; }
    const std::vector<int64_t>& dims() const { return dims_; }

    // Elements by row-major index over the given dims.
    void Set(int64_t linear, double value);
    double Get(int64_t linear) const;

    // Whether every storage byte outside the view still holds the sentinel.
    bool OutsideViewUntouched() const;
    // Fills the view with one value (e.g. a NaN pattern to see what an op leaves untouched).
    void Fill(double value);

 private:
    int64_t StorageIndex(int64_t linear) const;

    std::vector<int64_t> dims_, strides_;
    aclDataType type_;
    int64_t offset_, count_, element_bytes_;
    // The storage's bytes start at data_, the first 64-byte boundary in storage_ (as
    // aclrtMalloc's and PyTorch's memory do), so that the kernels' paths for aligned rows
    // (streamed stores, kernels/channels_last/copy-inl.h) run in every case that has them;
    // with malloc's own alignment (16 bytes) they ran only where a block fell on 64 by
    // chance (a broken streamed store failed 5 of GridSamplerBands' cases so, 7 now).
    std::vector<unsigned char> storage_;
    unsigned char* data_ = nullptr;
    std::vector<bool> in_view_;  // per storage element
    aclTensor* tensor_ = nullptr;
};

// Converting between the dense (N, C, D, H, W) arrays of the reference and test tensors whose
// given dims are NCDHW, or NDHWC when channel_last.
void StoreVolume(const Array5& values, bool channel_last, TestTensor* tensor);
Array5 LoadVolume(const TestTensor& tensor, bool channel_last);
void StoreGrid(const Array5& values, TestTensor* tensor);
Array5 LoadGrid(const TestTensor& tensor);

// Given dims of a volume of logical dims (N, C, D, H, W).
std::vector<int64_t> VolumeDims(int64_t n, int64_t c, int64_t d, int64_t h, int64_t w, bool channel_last);

}  // namespace gs3d_test
