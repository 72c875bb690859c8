// A different design for the one-channel NCDHW backward (fp32, zeros padding, align_corners
// false, one thread), to measure against the library on the grids users make: the floor
// of a design, not a kernel. Per grid row:
//   1. every point's source indices, first corner, weights and in-bounds flag in plain loops
//      over the row that the compiler vectorizes (-O3 -march=native);
//   2. a scalar pass that reads each point's four corner pairs (x0, x0 + 1) of the input as
//      one 64-bit load each, adds its four pairs into inputGrad as 64-bit read-modify-writes,
//      and computes gridGrad from the same values; the even points of the row first, then
//      the odd ones, so that back-to-back read-modify-writes do not land on the pair just
//      stored (a partial overlap that store-to-load forwarding cannot serve).
// Points with a corner outside take a per-corner path. Loaded by row_design.py (ctypes).
#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

namespace {

struct Pair {
    float lo, hi;
};

inline Pair LoadPair(const float* p) {
    Pair v;
    std::memcpy(&v, p, sizeof v);
    return v;
}

inline void StorePair(float* p, Pair v) { std::memcpy(p, &v, sizeof v); }

// Phase 1 of a row, in loops the compiler vectorizes (no branches: it if-converts the
// selects): PyTorch's unnormalize ((x + 1) * size - 1) / 2, the floor, the weights of the
// upper corners, whether all eight corners are inside, and the first corner's offset
// (clamped into the volume, so that NaN and far points convert safely).
struct RowCells {
    std::vector<float> wx, wy, wz;
    std::vector<int32_t> base, inside;
    explicit RowCells(int64_t ow) : wx(ow), wy(ow), wz(ow), base(ow), inside(ow) {}

    void Compute(const float* __restrict g, int64_t d, int64_t h, int64_t w, int64_t ow) {
        const float top_x = float(w - 2), top_y = float(h - 2), top_z = float(d - 2);
        const int32_t plane = int32_t(h * w);
        float* __restrict px = wx.data();
        float* __restrict py = wy.data();
        float* __restrict pz = wz.data();
        int32_t* __restrict pbase = base.data();
        int32_t* __restrict pin = inside.data();
        for (int i = 0; i < int(ow); ++i) {
            const float ix = ((g[3 * i] + 1) * float(w) - 1) / 2;
            const float iy = ((g[3 * i + 1] + 1) * float(h) - 1) / 2;
            const float iz = ((g[3 * i + 2] + 1) * float(d) - 1) / 2;
            const float fx = std::floor(ix), fy = std::floor(iy), fz = std::floor(iz);
            px[i] = ix - fx, py[i] = iy - fy, pz[i] = iz - fz;
            pin[i] = (fx >= 0) & (fx <= top_x) & (fy >= 0) & (fy <= top_y) & (fz >= 0) & (fz <= top_z);
            float cx = fx >= 0 ? fx : 0, cy = fy >= 0 ? fy : 0, cz = fz >= 0 ? fz : 0;
            cx = cx <= top_x ? cx : top_x, cy = cy <= top_y ? cy : top_y, cz = cz <= top_z ? cz : top_z;
            pbase[i] = int32_t(cz) * plane + int32_t(cy) * int32_t(w) + int32_t(cx);
        }
    }
};

}  // namespace

extern "C" void gs3d_row_design_backward(const float* grad_output, const float* input, const float* grid,
                                         float* input_grad, float* grid_grad, int64_t d, int64_t h, int64_t w,
                                         int64_t od, int64_t oh, int64_t ow) {
    const int64_t plane = h * w, volume = d * plane;
    std::memset(input_grad, 0, sizeof(float) * volume);
    RowCells cells(ow);
    const float mx = float(w) / 2, my = float(h) / 2, mz = float(d) / 2;
    for (int64_t row = 0; row < od * oh; ++row) {
        const float* g = grid + row * ow * 3;
        const float* gout = grad_output + row * ow;
        float* gg = grid_grad + row * ow * 3;
        cells.Compute(g, d, h, w, ow);
        const float *px = cells.wx.data(), *py = cells.wy.data(), *pz = cells.wz.data();
        const int32_t *pbase = cells.base.data(), *pin = cells.inside.data();
        // 2. Even points, then odd ones.
        for (int parity = 0; parity < 2; ++parity) {
            for (int64_t i = parity; i < ow; i += 2) {
                const float x1 = px[i], y1 = py[i], z1 = pz[i], x0 = 1 - x1, y0 = 1 - y1, z0 = 1 - z1;
                const float gv = gout[i];
                float gx = 0, gy = 0, gz = 0;
                if (pin[i]) {
                    const int64_t p = pbase[i];
                    const Pair a = LoadPair(input + p), b = LoadPair(input + p + w);
                    const Pair c = LoadPair(input + p + plane), e = LoadPair(input + p + plane + w);
                    const float w00 = y0 * z0, w10 = y1 * z0, w01 = y0 * z1, w11 = y1 * z1;
                    auto add = [&](int64_t q, float weight) {
                        Pair s = LoadPair(input_grad + q);
                        s.lo += x0 * weight * gv, s.hi += x1 * weight * gv;
                        StorePair(input_grad + q, s);
                    };
                    add(p, w00), add(p + w, w10), add(p + plane, w01), add(p + plane + w, w11);
                    gx = (a.hi - a.lo) * w00 + (b.hi - b.lo) * w10 + (c.hi - c.lo) * w01 + (e.hi - e.lo) * w11;
                    gy = ((b.lo - a.lo) * z0 + (e.lo - c.lo) * z1) * x0 + ((b.hi - a.hi) * z0 + (e.hi - c.hi) * z1) * x1;
                    gz = ((c.lo - a.lo) * y0 + (e.lo - b.lo) * y1) * x0 + ((c.hi - a.hi) * y0 + (e.hi - b.hi) * y1) * x1;
                } else {
                    const float ix = ((g[3 * i] + 1) * float(w) - 1) / 2;
                    const float iy = ((g[3 * i + 1] + 1) * float(h) - 1) / 2;
                    const float iz = ((g[3 * i + 2] + 1) * float(d) - 1) / 2;
                    if (std::isfinite(ix) && std::isfinite(iy) && std::isfinite(iz)) {
                        const int64_t fx = int64_t(std::floor(ix)), fy = int64_t(std::floor(iy)),
                                      fz = int64_t(std::floor(iz));
                        for (int k = 0; k < 8; ++k) {
                            const int dx = k & 1, dy = k >> 1 & 1, dz = k >> 2;
                            const int64_t x = fx + dx, y = fy + dy, z = fz + dz;
                            if (x < 0 || x >= w || y < 0 || y >= h || z < 0 || z >= d) continue;
                            const float ax = dx ? x1 : x0, ay = dy ? y1 : y0, az = dz ? z1 : z0;
                            const int64_t q = z * plane + y * w + x;
                            input_grad[q] += ax * ay * az * gv;
                            const float v = input[q];
                            gx += (dx ? v : -v) * ay * az, gy += (dy ? v : -v) * ax * az, gz += (dz ? v : -v) * ax * ay;
                        }
                    }
                }
                gg[3 * i] = gx * gv * mx, gg[3 * i + 1] = gy * gv * my, gg[3 * i + 2] = gz * gv * mz;
            }
        }
    }
}

// The forward of the same design: per row, the indices, weights and bounds in vectorized
// loops, then per point the four corner pairs as 64-bit loads and PyTorch's weighted sum.
extern "C" void gs3d_row_design_forward(const float* input, const float* grid, float* out, int64_t d, int64_t h,
                                        int64_t w, int64_t od, int64_t oh, int64_t ow) {
    const int64_t plane = h * w;
    RowCells cells(ow);
    for (int64_t row = 0; row < od * oh; ++row) {
        const float* gr = grid + row * ow * 3;
        float* o = out + row * ow;
        cells.Compute(gr, d, h, w, ow);
        const float *px = cells.wx.data(), *py = cells.wy.data(), *pz = cells.wz.data();
        const int32_t *pbase = cells.base.data(), *pin = cells.inside.data();
        for (int64_t i = 0; i < ow; ++i) {
            const float x1 = px[i], y1 = py[i], z1 = pz[i], x0 = 1 - x1, y0 = 1 - y1, z0 = 1 - z1;
            if (pin[i]) {
                const int64_t p = pbase[i];
                const Pair a = LoadPair(input + p), b = LoadPair(input + p + w);
                const Pair c = LoadPair(input + p + plane), e = LoadPair(input + p + plane + w);
                o[i] = a.lo * (x0 * y0 * z0) + a.hi * (x1 * y0 * z0) + b.lo * (x0 * y1 * z0) + b.hi * (x1 * y1 * z0) +
                       c.lo * (x0 * y0 * z1) + c.hi * (x1 * y0 * z1) + e.lo * (x0 * y1 * z1) + e.hi * (x1 * y1 * z1);
            } else {
                const float ix = ((gr[3 * i] + 1) * float(w) - 1) / 2;
                const float iy = ((gr[3 * i + 1] + 1) * float(h) - 1) / 2;
                const float iz = ((gr[3 * i + 2] + 1) * float(d) - 1) / 2;
                float sum = 0;
                if (std::isfinite(ix) && std::isfinite(iy) && std::isfinite(iz)) {
                    const int64_t fx = int64_t(std::floor(ix)), fy = int64_t(std::floor(iy)), fz = int64_t(std::floor(iz));
                    for (int k = 0; k < 8; ++k) {
                        const int dx = k & 1, dy = k >> 1 & 1, dz = k >> 2;
                        const int64_t x = fx + dx, y = fy + dy, z = fz + dz;
                        if (x < 0 || x >= w || y < 0 || y >= h || z < 0 || z >= d) continue;
                        sum += input[z * plane + y * w + x] * ((dx ? x1 : x0) * (dy ? y1 : y0) * (dz ? z1 : z0));
                    }
                }
                o[i] = sum;
            }
        }
    }
}
