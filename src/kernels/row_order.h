// The order in which the kernels visit a batch item's grid rows (d, h): in bands of a few
// rows along H, each band over every D, instead of plane after plane.
//
// Why: a grid close to the identity with noise reads (and the backward scatters into) the
// planes and rows around each row's own, a window of about (2r) planes x (2r + rows) rows
// for a noise of r voxels. Plane after plane, the rows are a whole plane wide, and at
// 128^3 with r ~ 3 that window (input and accumulator) is a few MiB, beyond L2: the
// (1, 1, 128) backward took twice as long with noise as without, where (1, 1, 64)'s
// window fits L2 and noise cost nothing. In bands, a row's lines are still in L2 when the
// next plane's rows of the band need them again.
//
// Both backward plans visit rows in this order (the scan in thin bands, the sorted slabs in
// wider ones), so each inputGrad element sums its contributions in band order instead of
// grid order: a fixed order still, the same for every thread count. The forward keeps grid
// order: it reads the input only, and bands measured no gain there.
#pragma once

#include <algorithm>
#include <cstdint>

namespace gs3d::kernels {

// Rows of a band: about `band_bytes` of one volume's rows (a grid row's points read a
// volume row of `row_bytes`), and at least 4 rows.
inline int64_t BandRows(int64_t row_bytes, int64_t band_bytes) {
    return std::max<int64_t>(4, band_bytes / std::max<int64_t>(1, row_bytes));
}

// The grid row (d * height + h) visited index-th (0 <= index < depth * height).
inline int64_t BandedRow(int64_t index, int64_t depth, int64_t height, int64_t band) {
    const int64_t band_begin = index / (depth * band) * band;
    const int64_t band_rows = std::min(band, height - band_begin);
    const int64_t within = index - band_begin * depth;
    return within / band_rows * height + band_begin + within % band_rows;
}

}  // namespace gs3d::kernels
