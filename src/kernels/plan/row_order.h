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
// The sorted slabs visit rows in this order, so each inputGrad element sums its
// contributions in band order instead of grid order: a fixed order still, the same for
// every thread count. The forward and the scan keep grid order (bands as wide as a plane):
// the forward reads the input only, and bands measured no gain there; the scan's row-phase
// blocks, with a smooth field, were faster with the grid and gradOutput read as streams.
#pragma once

#include <algorithm>
#include <cstdint>

namespace gs3d::kernels {

// Rows of a band: about `band_bytes` of one volume's rows (a grid row's points read a
// volume row of `row_bytes`), and at least 4 rows.
inline int64_t BandRows(int64_t row_bytes, int64_t band_bytes) {
    return std::max<int64_t>(4, band_bytes / std::max<int64_t>(1, row_bytes));
}

// The sorted plan's bands' bytes (measured where they are used; its slabs are thin).
constexpr int64_t kSortedBandBytes = 16 << 10;

// The rows whose ranges choose between the scan and the sorted slabs (ScanBackward): about
// this many, evenly spaced.
constexpr int64_t kSampledRows = 1024;

// The grid rows of a batch item in band order: the bands of `band` rows along H one after
// another, each band plane after plane (d), its rows in order (h). A cursor, advanced by
// increments, for a plain loop:
//   for (BandedRows row(depth, height, band); !row.Done(); row.Next()) { row.d, row.h ... }
// Why not a row computed from a running index: a slab task of the sorted plan walks every
// row of its item to find its own, and the index's three integer divisions per row took
// about a tenth of that plan's own time (perf, (2, 8, 64), one thread). Why not a visitor
// lambda: the nearest scan's chunk counter, captured by reference, then went through memory
// on every point (its stores to the voxel list may alias it), a third slower.
struct BandedRows {
    int64_t depth, height, band;
    int64_t d = 0, h = 0;  // the current row
    int64_t band_begin = 0, band_end;

    // A band of 0 rows would never advance: it counts as 1.
    BandedRows(int64_t depth_, int64_t height_, int64_t band_)
        : depth(depth_), height(height_), band(std::max<int64_t>(1, band_)), band_end(std::min(height, band)) {}
    bool Done() const { return depth <= 0 || band_begin >= height; }
    void Next() {
        if (++h < band_end) return;  // the band's next row
        h = band_begin;
        if (++d < depth) return;  // the band's rows in the next plane
        d = 0;                    // the next band
        band_begin = band_end;
        band_end = std::min(height, band_begin + band);
        h = band_begin;
    }
};

}  // namespace gs3d::kernels
