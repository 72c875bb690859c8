// FastDivider32 equals integer division for every divisor class and the extreme dividends.
#include <gtest/gtest.h>

#include <random>

#include "kernels/common/fast_divide.h"

namespace gs3d::kernels {
namespace {

TEST(FastDivider32, EqualsDivision) {
    std::mt19937 rng(5);
    std::vector<uint32_t> divisors = {1, 2, 3, 5, 7, 10, 63, 64, 65, 127, 128, 129, 1000, 65535, 65536, 1u << 31,
                                      UINT32_MAX - 1, UINT32_MAX};
    for (int i = 0; i < 200; ++i) divisors.push_back(rng() | 1u);
    for (uint32_t divisor : divisors) {
        const FastDivider32 divider(divisor);
        std::vector<uint32_t> dividends = {0, 1, divisor - 1, divisor, divisor + 1, UINT32_MAX, UINT32_MAX - 1};
        for (int i = 0; i < 2000; ++i) dividends.push_back(static_cast<uint32_t>(rng()));
        for (uint32_t n : dividends) ASSERT_EQ(divider.Divide(n), n / divisor) << n << " / " << divisor;
    }
}

}  // namespace
}  // namespace gs3d::kernels
