// fp16 and bf16 conversions, exhaustively: every bit pattern decodes to the value an
// independent ldexp decoder gives, and round-trips; every midpoint between neighbours rounds
// to the even one, and one float ulp either side of it rounds to the near one.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "kernels/common/element_types.h"
#include "support/test_tensor.h"

namespace gs3d::kernels {
namespace {

double DecodeIndependently(uint16_t bits, aclDataType type) { return gs3d_test::DecodeElement(&bits, type); }

TEST(Half, EveryPatternDecodesAndRoundTrips) {
    for (uint32_t bits = 0; bits <= 0xffff; ++bits) {
        const float f = HalfToFloat(Half{static_cast<uint16_t>(bits)});
        const double expected = DecodeIndependently(static_cast<uint16_t>(bits), ACL_FLOAT16);
        if (std::isnan(expected)) {
            EXPECT_TRUE(std::isnan(f)) << bits;
            EXPECT_TRUE(std::isnan(HalfToFloat(FloatToHalf(f))));
            continue;
        }
        ASSERT_EQ(static_cast<double>(f), expected) << bits;
        ASSERT_EQ(FloatToHalf(f).bits, bits) << bits;
    }
}

TEST(Half, MidpointsRoundToEven) {
    for (uint16_t sign : {uint16_t{0}, uint16_t{0x8000}}) {
        for (uint16_t low = 0; low < 0x7bff; ++low) {  // every pair of finite neighbours
            const uint16_t a = sign | low, b = sign | static_cast<uint16_t>(low + 1);
            const float fa = HalfToFloat(Half{a}), fb = HalfToFloat(Half{b});
            const float mid = (fa + fb) / 2;  // exact: 12 significant bits
            const uint16_t even = (low & 1) ? b : a;
            ASSERT_EQ(FloatToHalf(mid).bits, even) << low;
            ASSERT_EQ(FloatToHalf(std::nextafter(mid, fb)).bits, b) << low;
            ASSERT_EQ(FloatToHalf(std::nextafter(mid, fa)).bits, a) << low;
        }
    }
    // Above the largest half, 65504, the rounding boundary is 65520 (where 65536 would be the next).
    EXPECT_EQ(FloatToHalf(65520.0f).bits, 0x7c00);
    EXPECT_EQ(FloatToHalf(std::nextafter(65520.0f, 0.0f)).bits, 0x7bff);
    EXPECT_EQ(FloatToHalf(-65520.0f).bits, 0xfc00);
    EXPECT_EQ(FloatToHalf(1e9f).bits, 0x7c00);
    EXPECT_EQ(FloatToHalf(-INFINITY).bits, 0xfc00);
    EXPECT_EQ(FloatToHalf(1e-30f).bits, 0x0000);
    EXPECT_EQ(FloatToHalf(-1e-30f).bits, 0x8000);
}

TEST(BFloat16, EveryPatternDecodesAndRoundTrips) {
    for (uint32_t bits = 0; bits <= 0xffff; ++bits) {
        const float f = BFloat16ToFloat(BFloat16{static_cast<uint16_t>(bits)});
        const double expected = DecodeIndependently(static_cast<uint16_t>(bits), ACL_BF16);
        if (std::isnan(expected)) {
            EXPECT_TRUE(std::isnan(f));
            EXPECT_TRUE(std::isnan(BFloat16ToFloat(FloatToBFloat16(f))));
            continue;
        }
        ASSERT_EQ(static_cast<double>(f), expected) << bits;
        ASSERT_EQ(FloatToBFloat16(f).bits, bits) << bits;
    }
}

TEST(BFloat16, MidpointsRoundToEven) {
    for (uint16_t sign : {uint16_t{0}, uint16_t{0x8000}}) {
        for (uint16_t low = 0; low < 0x7f80; ++low) {
            const uint16_t a = sign | low, b = sign | static_cast<uint16_t>(low + 1);
            const float fa = BFloat16ToFloat(BFloat16{a}), fb = BFloat16ToFloat(BFloat16{b});
            uint32_t ua, ub;
            std::memcpy(&ua, &fa, 4);
            std::memcpy(&ub, &fb, 4);
            const uint32_t umid = ua + 0x8000;  // halfway in bits is halfway in value within a binade
            float mid;
            std::memcpy(&mid, &umid, 4);
            const uint16_t even = (low & 1) ? b : a;
            ASSERT_EQ(FloatToBFloat16(mid).bits, even) << low;
            ASSERT_EQ(FloatToBFloat16(std::nextafter(mid, fb)).bits, b) << low;
            ASSERT_EQ(FloatToBFloat16(std::nextafter(mid, fa)).bits, a) << low;
        }
    }
}

}  // namespace
}  // namespace gs3d::kernels
