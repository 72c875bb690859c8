// BandedRow visits every grid row of a batch item exactly once, band after band, each band's
// rows plane after plane (row_order.h), checked against the order built by nested loops.
#include <gtest/gtest.h>

#include <vector>

#include "kernels/row_order.h"

namespace gs3d::kernels {
namespace {

TEST(RowOrder, BandedRowIsTheBandsThenPlanesThenRowsOrder) {
    for (int64_t depth : {1, 2, 5, 16})
        for (int64_t height : {1, 3, 4, 7, 13, 64})
            for (int64_t band : {1, 2, 4, 5, 16, 100}) {
                std::vector<int64_t> expected;  // the order by nested loops
                for (int64_t band_begin = 0; band_begin < height; band_begin += band)
                    for (int64_t d = 0; d < depth; ++d)
                        for (int64_t h = band_begin; h < std::min(height, band_begin + band); ++h)
                            expected.push_back(d * height + h);
                ASSERT_EQ(expected.size(), static_cast<size_t>(depth * height));
                for (int64_t index = 0; index < depth * height; ++index)
                    ASSERT_EQ(BandedRow(index, depth, height, band), expected[index])
                        << "index " << index << ", D " << depth << ", H " << height << ", band " << band;
            }
}

TEST(RowOrder, BandRowsIsAboutTheBytesAndAtLeastFour) {
    EXPECT_EQ(BandRows(512, 2 << 10), 4);
    EXPECT_EQ(BandRows(128, 2 << 10), 16);
    EXPECT_EQ(BandRows(1 << 20, 2 << 10), 4);  // rows wider than the band's bytes
    EXPECT_EQ(BandRows(0, 2 << 10), 2 << 10);  // rows of no bytes (W = 0) do not divide by 0
}

}  // namespace
}  // namespace gs3d::kernels
