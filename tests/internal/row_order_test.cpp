// ForEachRowInBands visits every grid row of a batch item exactly once, band after band,
// each band's rows plane after plane (row_order.h), checked against the order computed row
// by row from its index (the arithmetic the kernels used before, an independent method).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <vector>

#include "kernels/row_order.h"

namespace gs3d::kernels {
namespace {

// The row (d * height + h) visited index-th: the index's band, then its plane and row there.
int64_t RowFromIndex(int64_t index, int64_t depth, int64_t height, int64_t band) {
    const int64_t band_begin = index / (depth * band) * band;
    const int64_t band_rows = std::min(band, height - band_begin);
    const int64_t within = index - band_begin * depth;
    return within / band_rows * height + band_begin + within % band_rows;
}

TEST(RowOrder, ForEachRowInBandsIsTheBandsThenPlanesThenRowsOrder) {
    for (int64_t depth : {1, 2, 5, 16})
        for (int64_t height : {1, 3, 4, 7, 13, 64})
            for (int64_t band : {1, 2, 4, 5, 16, 100}) {
                std::vector<int64_t> visited;
                ForEachRowInBands(depth, height, band, [&](int64_t d, int64_t h) {
                    ASSERT_TRUE(d >= 0 && d < depth && h >= 0 && h < height) << d << ", " << h;
                    visited.push_back(d * height + h);
                });
                ASSERT_EQ(visited.size(), static_cast<size_t>(depth * height));
                for (int64_t index = 0; index < depth * height; ++index)
                    ASSERT_EQ(visited[index], RowFromIndex(index, depth, height, band))
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
