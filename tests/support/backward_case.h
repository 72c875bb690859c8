// A backward problem of random values for the suites that call the backward directly
// (semantics, kernel paths): its tensors, their values for the reference, and a runner.
#pragma once

#include <gtest/gtest.h>

#include <cstring>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "support/op_runner.h"
#include "support/test_tensor.h"

namespace gs3d_test {

inline const RefOptions kBilinearZeros{0, 0, false};

struct BackwardCase {
    TestTensor grad, input, grid, input_grad, grid_grad;
    Array5 grad_values, input_values, grid_values;
    BackwardCase(aclDataType type, int64_t n, int64_t c, int64_t d, int64_t h, int64_t w, int64_t od, int64_t oh,
                 int64_t ow, unsigned seed)
        : grad({n, c, od, oh, ow}, type),
          input({n, c, d, h, w}, type),
          grid({n, od, oh, ow, 3}, type),
          input_grad({n, c, d, h, w}, type),
          grid_grad({n, od, oh, ow, 3}, type) {
        std::mt19937 rng(seed);
        grad_values = RandomArray(rng, n, c, od, oh, ow);
        input_values = RandomArray(rng, n, c, d, h, w);
        grid_values = RandomArray(rng, n, od, oh, ow, 3, true);
        StoreVolume(grad_values, false, &grad);
        StoreVolume(input_values, false, &input);
        StoreGrid(grid_values, &grid);
    }
    aclnnStatus Run(std::optional<std::vector<bool>> mask, const RefOptions& options = kBilinearZeros) {
        return RunBackward(grad.get(), input.get(), grid.get(), options, mask, input_grad.get(), grid_grad.get());
    }
    // After Run: inputGrad and gridGrad against the reference with the dtype's tolerance;
    // `what` names the case in a failure.
    void ExpectMatchesReference(const RefOptions& options, aclDataType type, const std::string& what) const {
        Array5 expected_input_grad, expected_grid_grad;
        ReferenceBackward(grad_values, input_values, grid_values, options, &expected_input_grad, &expected_grid_grad);
        EXPECT_EQ(CompareArrays(LoadVolume(input_grad, false), expected_input_grad, type), "") << what << ": inputGrad";
        EXPECT_EQ(CompareArrays(LoadGrid(grid_grad), expected_grid_grad, type), "") << what << ": gridGrad";
    }
};

// Decoding is exact, so equal doubles mean equal element bits (signed zeros included).
inline bool BitwiseEqual(double a, double b) { return std::memcmp(&a, &b, sizeof a) == 0; }

inline bool AllEqual(const TestTensor& t, double value) {
    for (int64_t i = 0; i < t.count(); ++i)
        if (t.Get(i) != value) return false;
    return true;
}

}  // namespace gs3d_test
