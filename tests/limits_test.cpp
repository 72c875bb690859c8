// Sizes and faults: element counts and byte sizes that overflow int64 are refused; index math
// is 64-bit (a forward over a broadcast input of more than 2^32 logical elements whose
// storage is a few elements); an allocation that cannot be satisfied returns the runtime's
// error code. (The launch-phase faults, a short workspace, an executor launched twice, a
// destroyed stream, are in grid_sampler3d_errors_test; calls before aclInit and after
// aclFinalize in runtime_api_test.)
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "acl/acl.h"
#include "aclnnop/aclnn_grid_sampler3d.h"
#include "aclnnop/aclnn_grid_sampler3d_backward.h"
#include "support/op_runner.h"

namespace gs3d_test {
namespace {

constexpr int64_t kMax = std::numeric_limits<int64_t>::max();

aclTensor* Create(std::vector<int64_t> dims, aclDataType type, std::vector<int64_t> strides, int64_t storage,
                  void* data) {
    return aclCreateTensor(dims.data(), dims.size(), type, strides.data(), 0, ACL_FORMAT_ND, &storage, 1, data);
}

void ExpectRefused(aclTensor* tensor, const char* words) {
    EXPECT_EQ(tensor, nullptr);
    const char* message = aclGetRecentErrMsg();
    ASSERT_NE(message, nullptr);
    EXPECT_NE(std::string(message).find(words), std::string::npos) << message;
    aclDestroyTensor(tensor);
}

TEST(Limits, ElementCountsAndBytesThatOverflowInt64AreRefused) {
    float x = 0;
    // View: 2^32 * 2^32 elements.
    const int64_t big = int64_t{1} << 32;
    std::vector<int64_t> dims{big, big, 1, 1, 1};
    int64_t storage = 1;
    std::vector<int64_t> zero(5, 0);
    ExpectRefused(aclCreateTensor(dims.data(), 5, ACL_FLOAT, zero.data(), 0, ACL_FORMAT_ND, &storage, 1, &x),
                  "overflows int64");
    // Storage: the count fits, its bytes (8 per double) do not.
    std::vector<int64_t> one{1, 1, 1, 1, 1};
    int64_t huge_storage = kMax / 4;
    ExpectRefused(aclCreateTensor(one.data(), 5, ACL_DOUBLE, nullptr, 0, ACL_FORMAT_ND, &huge_storage, 1, &x),
                  "byte size overflows int64");
    // The view's extent: (dim - 1) * stride past int64.
    ExpectRefused(Create({1, 1, 1, 1, 3}, ACL_FLOAT, {1, 1, 1, 1, kMax / 2 + 1}, 1, &x), "overflows int64");
    // A contiguous view whose strides would overflow.
    std::vector<int64_t> wide{big, big, 2, 1, 1};
    ExpectRefused(aclCreateTensor(wide.data(), 5, ACL_FLOAT, nullptr, 0, ACL_FORMAT_ND, &storage, 1, &x), "int64");
}

// 1-D linear interpolation of values along x with zero padding, alignCorners false: the
// expected forward of an input that does not vary along D and H (independent of the library).
double Interpolate(const std::vector<double>& values, double x, int64_t width) {
    const double ix = ((x + 1) * static_cast<double>(width) - 1) / 2;
    const double x0 = std::floor(ix), t = ix - x0;
    auto at = [&](double i) {
        return i >= 0 && i < static_cast<double>(width) ? values[static_cast<size_t>(i)] : 0.0;
    };
    return at(x0) * (1 - t) + at(x0 + 1) * t;
}

TEST(Limits, IndexMathIs64BitOverBroadcastInputs) {
    // Input (1, 1, 2^16, 2^16, 3): 3 * 2^32 logical elements, strides (0, 0, 0, 0, 1) over a
    // storage of 3. Grid points near the far D and H ends reach indices near 65535 there.
    const int64_t side = int64_t{1} << 16;
    std::vector<double> row{1.0, 2.0, 4.0};
    aclTensor* input = Create({1, 1, side, side, 3}, ACL_DOUBLE, {0, 0, 0, 0, 1}, 3, row.data());
    ASSERT_NE(input, nullptr) << aclGetRecentErrMsg();
    // (x, y, z) with y, z strictly inside (all D and H corners in bounds).
    std::vector<double> grid{-0.9, 0.999, 0.999, 0.1, -0.5, 0.9999, 0.7, 0.3, -0.999, -1.2, 0.0, 0.5};
    aclTensor* g = Create({1, 1, 1, 4, 3}, ACL_DOUBLE, {12, 12, 12, 3, 1}, 12, grid.data());
    std::vector<double> out(4, -1.0);
    aclTensor* o = Create({1, 1, 1, 1, 4}, ACL_DOUBLE, {4, 4, 4, 4, 1}, 4, out.data());
    ASSERT_EQ(RunForward(input, g, RefOptions{0, 0, false}, o), ACLNN_SUCCESS) << aclGetRecentErrMsg();
    for (int p = 0; p < 4; ++p) EXPECT_NEAR(out[p], Interpolate(row, grid[3 * p], 3), 1e-12) << "point " << p;

    // W of 2^32 + 2 with stride 0: x = 0.5 is index 3.2e9, in bounds (32-bit math would wrap
    // it out of bounds and give 0).
    double five = 5.0;
    aclTensor* wide = Create({1, 1, 1, 1, (int64_t{1} << 32) + 2}, ACL_DOUBLE, {0, 0, 0, 0, 0}, 1, &five);
    std::vector<double> grid2{0.5, 0.0, 0.0, 0.999999, 0.0, 0.0};
    aclTensor* g2 = Create({1, 1, 1, 2, 3}, ACL_DOUBLE, {6, 6, 6, 3, 1}, 6, grid2.data());
    std::vector<double> out2(2, -1.0);
    aclTensor* o2 = Create({1, 1, 1, 1, 2}, ACL_DOUBLE, {2, 2, 2, 2, 1}, 2, out2.data());
    ASSERT_EQ(RunForward(wide, g2, RefOptions{0, 1, false}, o2), ACLNN_SUCCESS) << aclGetRecentErrMsg();
    EXPECT_NEAR(out2[0], 5.0, 1e-9);
    EXPECT_NEAR(out2[1], 5.0, 1e-9);
    // Its grid gradient (inputGrad left out by the mask, so it needs no storage): a constant
    // input has none, in or out of bounds.
    std::vector<double> grad{1.0, 1.0}, grid_grad(6, -1.0);
    aclTensor* go = Create({1, 1, 1, 1, 2}, ACL_DOUBLE, {2, 2, 2, 2, 1}, 2, grad.data());
    aclTensor* gg = Create({1, 1, 1, 2, 3}, ACL_DOUBLE, {6, 6, 6, 3, 1}, 6, grid_grad.data());
    aclTensor* ig = Create({1, 1, 1, 1, (int64_t{1} << 32) + 2}, ACL_DOUBLE, {0, 0, 0, 0, 0}, 1, nullptr);
    ASSERT_EQ(RunBackward(go, wide, g2, RefOptions{0, 1, false}, std::vector<bool>{false, true}, ig, gg),
              ACLNN_SUCCESS)
        << aclGetRecentErrMsg();
    for (double v : grid_grad) EXPECT_EQ(v, 0.0);
    for (aclTensor* t : {input, g, o, wide, g2, o2, go, gg, ig}) aclDestroyTensor(t);
}

TEST(Limits, AnAllocationThatCannotBeSatisfiedReturnsTheRuntimeError) {
    void* p = nullptr;
    EXPECT_EQ(aclrtMalloc(&p, std::numeric_limits<size_t>::max() - 64, ACL_MEM_MALLOC_HUGE_FIRST), ACL_ERROR_BAD_ALLOC);
    EXPECT_EQ(p, nullptr);
    EXPECT_NE(std::string(aclGetRecentErrMsg()).find("aclrtMalloc"), std::string::npos);
    // 2^50 bytes: the size is representable, the memory is not there.
    EXPECT_EQ(aclrtMalloc(&p, size_t{1} << 50, ACL_MEM_MALLOC_HUGE_FIRST), ACL_ERROR_BAD_ALLOC);
    EXPECT_EQ(p, nullptr);
    void* host = nullptr;
    EXPECT_EQ(aclrtMallocHost(&host, size_t{1} << 50), ACL_ERROR_BAD_ALLOC);
    // The runtime still works afterwards.
    ASSERT_EQ(aclrtMalloc(&p, 64, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS);
    EXPECT_EQ(aclrtFree(p), ACL_SUCCESS);
}

}  // namespace
}  // namespace gs3d_test
