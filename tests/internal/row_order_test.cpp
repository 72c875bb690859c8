// BandedRows visits every grid row of a batch item exactly once, band after band,
// each band's rows plane after plane (plan/row_order.h), checked against the order computed row
// by row from its index (the arithmetic the kernels used before, an independent method).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <utility>
#include <vector>

#include "kernels/plan/row_order.h"

namespace gs3d::kernels {
namespace {

// The row (d * height + h) visited index-th: the index's band, then its plane and row there.
int64_t RowFromIndex(int64_t index, int64_t depth, int64_t height, int64_t band) {
    const int64_t band_begin = index / (depth * band) * band;
    const int64_t band_rows = std::min(band, height - band_begin);
    const int64_t within = index - band_begin * depth;
    return within / band_rows * height + band_begin + within % band_rows;
}

TEST(RowOrder, BandedRowsIsTheBandsThenPlanesThenRowsOrder) {
    for (int64_t depth : {1, 2, 5, 16})
        for (int64_t height : {1, 3, 4, 7, 13, 64})
            for (int64_t band : {1, 2, 4, 5, 16, 100}) {
                std::vector<int64_t> visited;
                for (BandedRows row(depth, height, band); !row.Done(); row.Next()) {
                    ASSERT_TRUE(row.d >= 0 && row.d < depth && row.h >= 0 && row.h < height) << row.d << ", " << row.h;
                    ASSERT_LE(visited.size(), static_cast<size_t>(depth * height));  // it ends
                    visited.push_back(row.d * height + row.h);
                }
                ASSERT_EQ(visited.size(), static_cast<size_t>(depth * height));
                for (int64_t index = 0; index < depth * height; ++index)
                    ASSERT_EQ(visited[index], RowFromIndex(index, depth, height, band))
                        << "index " << index << ", D " << depth << ", H " << height << ", band " << band;
            }
}

TEST(RowOrder, BandedRowsOfAnEmptyGridVisitNothing) {
    for (auto [depth, height] : {std::pair<int64_t, int64_t>{0, 5}, {5, 0}, {0, 0}})
        EXPECT_TRUE(BandedRows(depth, height, 4).Done()) << depth << " x " << height;
}

TEST(RowOrder, ABandOfNoRowsIsABandOfOne) {  // rather than a cursor that never ends
    std::vector<int64_t> visited;
    for (BandedRows row(3, 4, 0); !row.Done() && visited.size() <= 12; row.Next()) visited.push_back(row.d * 4 + row.h);
    ASSERT_EQ(visited.size(), 12u);
    for (int64_t index = 0; index < 12; ++index) EXPECT_EQ(visited[index], RowFromIndex(index, 3, 4, 1));
}

TEST(RowOrder, BandRowsIsAboutTheBytesAndAtLeastFour) {
    EXPECT_EQ(BandRows(512, 2 << 10), 4);
    EXPECT_EQ(BandRows(128, 2 << 10), 16);
    EXPECT_EQ(BandRows(1 << 20, 2 << 10), 4);  // rows wider than the band's bytes
    EXPECT_EQ(BandRows(0, 2 << 10), 2 << 10);  // rows of no bytes (W = 0) do not divide by 0
}

}  // namespace
}  // namespace gs3d::kernels
