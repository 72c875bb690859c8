// The benchmark drivers' workload (profile_driver, ab_interleave): input and gradOutput
// uniform in [-1, 1), and a registration-like grid, the identity (align_corners false) plus
// Gaussian noise of sigma in normalised units; the batch items' grids one after another.
#pragma once

#include <cstdint>
#include <random>

// input and grad: batch * channels * s^3 values; grid: batch * s^3 * 3.
inline void FillRegistrationWorkload(float* input, float* grad, float* grid, int64_t batch, int64_t channels,
                                     int64_t s, float noise_sigma) {
    const int64_t vol = batch * channels * s * s * s;
    std::mt19937 rng(1);
    std::uniform_real_distribution<float> u(-1, 1);
    std::normal_distribution<float> noise(0, noise_sigma > 0 ? noise_sigma : 1e-30f);
    for (int64_t i = 0; i < vol; ++i) input[i] = u(rng);
    for (int64_t i = 0; i < vol; ++i) grad[i] = u(rng);
    for (int64_t z = 0; z < batch * s; ++z)  // the batch items' depths one after another
        for (int64_t y = 0; y < s; ++y)
            for (int64_t x = 0; x < s; ++x) {
                float* g = &grid[((z * s + y) * s + x) * 3];
                g[0] = (2 * x + 1) / float(s) - 1 + noise(rng);
                g[1] = (2 * y + 1) / float(s) - 1 + noise(rng);
                g[2] = (2 * (z % s) + 1) / float(s) - 1 + noise(rng);
            }
}
