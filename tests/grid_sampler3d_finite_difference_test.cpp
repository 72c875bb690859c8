// The backward against central finite differences of the library's own forward (fp64),
// L(input, grid) = sum(gradOutput * forward(input, grid)). Grid points are drawn away from
// kinks (integer source indices, clip and reflection boundaries), where the derivative is
// one-sided and a finite difference means nothing.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <tuple>

#include "support/op_runner.h"
#include "support/test_tensor.h"

namespace gs3d_test {
namespace {

constexpr double kStep = 1e-6;

// A grid value whose source index along an axis of `size` is smooth within +-10 steps.
// Tricubic pads each tap, not the index, so its index is the unclipped one: only its cell
// must stay (the weights' second derivative jumps at integer indices).
double SmoothGridValue(std::mt19937& rng, int64_t size, RefOptions options) {
    if (options.interpolation == 2) options.padding = 0;
    std::uniform_real_distribution<double> value(-1.3, 1.3);
    for (;;) {
        const double g = value(rng);
        const AxisIndex lo = ReferenceSourceIndex(g - 10 * kStep, size, options);
        const AxisIndex mid = ReferenceSourceIndex(g, size, options);
        const AxisIndex hi = ReferenceSourceIndex(g + 10 * kStep, size, options);
        const bool same_cell = std::floor(lo.index) == std::floor(mid.index) &&
                               std::floor(hi.index) == std::floor(mid.index);
        const bool straight = lo.derivative == mid.derivative && hi.derivative == mid.derivative;
        // Away from integer indices by more than the step, so the nearest rounding and the
        // trilinear cell do not change either.
        const double frac = mid.index - std::floor(mid.index);
        if (same_cell && straight && frac > 1e-3 && frac < 1 - 1e-3 && std::fabs(frac - 0.5) > 1e-3) return g;
    }
}

class FiniteDifference : public ::testing::TestWithParam<std::tuple<int, int, bool, bool>> {
 protected:
    // L for the given input and grid values, through the library's fp64 forward.
    double Loss(const Array5& input_values, const Array5& grid_values, const Array5& grad_values) {
        const bool channel_last = std::get<3>(GetParam());
        const aclFormat format = channel_last ? ACL_FORMAT_NDHWC : ACL_FORMAT_NCDHW;
        const int64_t* d = input_values.dim;
        TestTensor input(VolumeDims(d[0], d[1], d[2], d[3], d[4], channel_last), ACL_DOUBLE, format);
        TestTensor grid({grid_values.dim[0], grid_values.dim[1], grid_values.dim[2], grid_values.dim[3], 3},
                        ACL_DOUBLE);
        TestTensor out(VolumeDims(d[0], d[1], grid_values.dim[1], grid_values.dim[2], grid_values.dim[3], channel_last),
                       ACL_DOUBLE, format);
        StoreVolume(input_values, channel_last, &input);
        StoreGrid(grid_values, &grid);
        EXPECT_EQ(RunForward(input.get(), grid.get(), options_, out.get()), ACLNN_SUCCESS);
        const Array5 result = LoadVolume(out, channel_last);
        double loss = 0;
        for (size_t i = 0; i < result.values.size(); ++i) loss += result.values[i] * grad_values.values[i];
        return loss;
    }

    RefOptions options_;
};

TEST_P(FiniteDifference, BackwardMatchesCentralDifferences) {
    const auto [interpolation, padding, align, channel_last] = GetParam();
    options_ = RefOptions{interpolation, padding, align};
    std::mt19937 rng(99u + static_cast<unsigned>(interpolation * 8 + padding * 2 + align));
    const int64_t n = 2, c = 3, d = 4, h = 5, w = 3, od = 2, oh = 3, ow = 2;
    const Array5 input_values = RandomArray(rng, n, c, d, h, w);
    const Array5 grad_values = RandomArray(rng, n, c, od, oh, ow);
    Array5 grid_values(n, od, oh, ow, 3);
    const int64_t axis_size[3] = {w, h, d};
    for (int64_t i = 0; i < grid_values.Count(); ++i)
        grid_values.values[static_cast<size_t>(i)] = SmoothGridValue(rng, axis_size[i % 3], options_);

    const aclFormat format = channel_last ? ACL_FORMAT_NDHWC : ACL_FORMAT_NCDHW;
    TestTensor input(VolumeDims(n, c, d, h, w, channel_last), ACL_DOUBLE, format);
    TestTensor grid({n, od, oh, ow, 3}, ACL_DOUBLE);
    TestTensor grad(VolumeDims(n, c, od, oh, ow, channel_last), ACL_DOUBLE, format);
    TestTensor input_grad(VolumeDims(n, c, d, h, w, channel_last), ACL_DOUBLE, format);
    TestTensor grid_grad({n, od, oh, ow, 3}, ACL_DOUBLE);
    StoreVolume(input_values, channel_last, &input);
    StoreGrid(grid_values, &grid);
    StoreVolume(grad_values, channel_last, &grad);
    ASSERT_EQ(RunBackward(grad.get(), input.get(), grid.get(), options_, std::vector<bool>{true, true},
                          input_grad.get(), grid_grad.get()),
              ACLNN_SUCCESS);
    const Array5 analytic_input_grad = LoadVolume(input_grad, channel_last);
    const Array5 analytic_grid_grad = LoadGrid(grid_grad);

    // dL/dgrid: O(h^2) truncation is ~0 for piecewise-polynomial L; rounding of L (|L| ~ 10)
    // over 2h gives ~1e-15 * 10 / 2e-6 = 5e-9.
    for (int64_t i = 0; i < grid_values.Count(); ++i) {
        Array5 plus = grid_values, minus = grid_values;
        plus.values[static_cast<size_t>(i)] += kStep;
        minus.values[static_cast<size_t>(i)] -= kStep;
        const double numeric = (Loss(input_values, plus, grad_values) - Loss(input_values, minus, grad_values)) / (2 * kStep);
        EXPECT_NEAR(analytic_grid_grad.values[static_cast<size_t>(i)], numeric, 1e-6) << "grid element " << i;
    }
    // dL/dinput: L is linear in the input, so a unit step is exact up to rounding.
    for (int64_t i = 0; i < input_values.Count(); ++i) {
        Array5 plus = input_values, minus = input_values;
        plus.values[static_cast<size_t>(i)] += 1;
        minus.values[static_cast<size_t>(i)] -= 1;
        const double numeric = (Loss(plus, grid_values, grad_values) - Loss(minus, grid_values, grad_values)) / 2;
        EXPECT_NEAR(analytic_input_grad.values[static_cast<size_t>(i)], numeric, 1e-9) << "input element " << i;
    }
}

INSTANTIATE_TEST_SUITE_P(AllModes, FiniteDifference,
                         ::testing::Combine(::testing::Values(0, 1, 2), ::testing::Values(0, 1, 2), ::testing::Bool(),
                                            ::testing::Bool()));

}  // namespace
}  // namespace gs3d_test
