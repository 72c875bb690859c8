// Runs the seed's sample program (examples/) and checks every value it prints against the
// independent reference on the same inputs.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <regex>
#include <string>
#include <vector>

#include "support/reference_grid_sampler.h"

namespace gs3d_test {
namespace {

TEST(SampleProgram, PrintsTheReferenceGradients) {
    FILE* pipe = popen(GS3D_SAMPLE_PROGRAM " 2>&1", "r");
    ASSERT_NE(pipe, nullptr);
    std::string output;
    char buffer[256];
    while (fgets(buffer, sizeof buffer, pipe)) output += buffer;
    ASSERT_EQ(pclose(pipe), 0) << output;

    // The sample's inputs (examples/grid_sampler3d_backward_sample.cpp).
    Array5 grad(1, 1, 1, 2, 2), input(1, 1, 1, 3, 3), grid(1, 1, 2, 2, 3);
    grad.values = {1, 1, 1, 1};
    input.values = {1, 2, 3, 4, 5, 6, 7, 8, 9};
    grid.values = {-1, -1, 0, -1, 1, -1, -1, 0, 0, 0, 1, 0};
    Array5 input_grad, grid_grad;
    ReferenceBackward(grad, input, grid, RefOptions{0, 0, false}, &input_grad, &grid_grad);

    std::vector<double> printed_input_grad, printed_grid_grad;
    const std::regex line(R"((inputGrad|gridGrad)ResultData\[(\d+)\] is: (-?[0-9.]+))");
    for (std::sregex_iterator it(output.begin(), output.end(), line), end; it != end; ++it) {
        auto& target = (*it)[1] == "inputGrad" ? printed_input_grad : printed_grid_grad;
        ASSERT_EQ(std::stoul((*it)[2]), target.size());
        target.push_back(std::stod((*it)[3]));
    }
    ASSERT_EQ(printed_input_grad.size(), input_grad.values.size()) << output;
    ASSERT_EQ(printed_grid_grad.size(), grid_grad.values.size()) << output;
    // %f prints 6 decimals: half a unit of the last one.
    for (size_t i = 0; i < printed_input_grad.size(); ++i)
        EXPECT_NEAR(printed_input_grad[i], input_grad.values[i], 5e-7) << "inputGrad " << i;
    for (size_t i = 0; i < printed_grid_grad.size(); ++i)
        EXPECT_NEAR(printed_grid_grad[i], grid_grad.values[i], 5e-7) << "gridGrad " << i;
}

}  // namespace
}  // namespace gs3d_test
