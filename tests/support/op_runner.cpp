#include "support/op_runner.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <iomanip>
#include <sstream>

#include "aclnnop/aclnn_grid_sampler3d.h"
#include "aclnnop/aclnn_grid_sampler3d_backward.h"
#include "gridsampler3d/tricubic3d.h"

namespace gs3d_test {
namespace {

aclrtStream session_stream = nullptr;

class AclSession : public ::testing::Environment {
 public:
    void SetUp() override {
        ASSERT_EQ(aclInit(nullptr), ACL_SUCCESS);
        ASSERT_EQ(aclrtSetDevice(0), ACL_SUCCESS);
        ASSERT_EQ(aclrtCreateStream(&session_stream), ACL_SUCCESS);
    }
    void TearDown() override {
        EXPECT_EQ(aclrtDestroyStream(session_stream), ACL_SUCCESS);
        EXPECT_EQ(aclrtResetDevice(0), ACL_SUCCESS);
        EXPECT_EQ(aclFinalize(), ACL_SUCCESS);
    }
};

}  // namespace

void RegisterAclSession() { ::testing::AddGlobalTestEnvironment(new AclSession); }
aclrtStream TestStream() { return session_stream; }

aclnnStatus RunForward(const aclTensor* input, const aclTensor* grid, const RefOptions& options, aclTensor* out,
                       aclrtStream stream) {
    if (options.interpolation == 2)  // tricubic: the extension (aclnn refuses it, as CANN)
        return RunTwoPhases(gs3dGridSampler3DGetWorkspaceSize, gs3dGridSampler3D, stream, input, grid,
                            options.interpolation, options.padding, options.align_corners, out);
    return RunTwoPhases(aclnnGridSampler3DGetWorkspaceSize, aclnnGridSampler3D, stream, input, grid,
                        options.interpolation, options.padding, options.align_corners, out);
}

aclnnStatus RunBackward(const aclTensor* grad_output, const aclTensor* input, const aclTensor* grid,
                        const RefOptions& options, std::optional<std::vector<bool>> output_mask,
                        aclTensor* input_grad, aclTensor* grid_grad, aclrtStream stream) {
    aclBoolArray* mask = nullptr;
    if (output_mask) {
        bool values[8] = {};
        std::copy(output_mask->begin(), output_mask->end(), values);
        mask = aclCreateBoolArray(values, output_mask->size());
    }
    const bool tricubic = options.interpolation == 2;
    const aclnnStatus status = RunTwoPhases(
        tricubic ? gs3dGridSampler3DBackwardGetWorkspaceSize : aclnnGridSampler3DBackwardGetWorkspaceSize,
        tricubic ? gs3dGridSampler3DBackward : aclnnGridSampler3DBackward, stream, grad_output, input, grid,
        options.interpolation, options.padding, options.align_corners, static_cast<const aclBoolArray*>(mask),
        input_grad, grid_grad);
    aclDestroyBoolArray(mask);
    return status;
}

double RandomValue(std::mt19937& rng) {
    return static_cast<double>(std::uniform_int_distribution<int>(-255, 255)(rng)) / 64.0;
}

double RandomGridValue(std::mt19937& rng) {
    return static_cast<double>(std::uniform_int_distribution<int>(-255, 255)(rng)) / 128.0;
}

Array5 RandomArray(std::mt19937& rng, int64_t a, int64_t b, int64_t c, int64_t d, int64_t e, bool grid) {
    Array5 array(a, b, c, d, e);
    for (double& v : array.values) v = grid ? RandomGridValue(rng) : RandomValue(rng);
    return array;
}

Array5 NearIdentityGrid(std::mt19937& rng, int64_t n, int64_t d, int64_t h, int64_t w, double sigma) {
    Array5 grid(n, d, h, w, 3);
    std::normal_distribution<double> noise(0, sigma);
    const int64_t extent[3] = {w, h, d};
    for (int64_t b = 0; b < n; ++b)
        for (int64_t z = 0; z < d; ++z)
            for (int64_t y = 0; y < h; ++y)
                for (int64_t x = 0; x < w; ++x) {
                    const int64_t at[3] = {x, y, z};
                    for (int axis = 0; axis < 3; ++axis) {
                        const double value = (2.0 * at[axis] + 1) / extent[axis] - 1 + noise(rng);
                        grid.at(b, z, y, x, axis) = std::round(value * 128) / 128;
                    }
                }
    return grid;
}

double Tolerance(aclDataType type, double expected, double scale) {
    const double fp32_error = 64 * std::ldexp(1.0, -23) * std::max(1.0, scale);
    switch (type) {
        case ACL_DOUBLE: return 64 * std::ldexp(1.0, -52) * std::max(1.0, scale);
        case ACL_FLOAT16: return std::ldexp(1.0, -11) * std::fabs(expected) + std::ldexp(1.0, -24) + fp32_error;
        case ACL_BF16: return std::ldexp(1.0, -8) * std::fabs(expected) + fp32_error;
        default: return fp32_error;
    }
}

std::string CompareArrays(const Array5& actual, const Array5& expected, aclDataType type, const Array5* magnitude) {
    std::ostringstream out;
    if (actual.values.size() != expected.values.size()) return "size differs";
    double scale = 0;
    for (double v : expected.values) scale = std::max(scale, std::fabs(v));
    int reported = 0;
    for (size_t i = 0; i < actual.values.size(); ++i) {
        const double a = actual.values[i], e = expected.values[i];
        if (std::fabs(a - e) <= Tolerance(type, e, scale)) continue;
        const double epsilon = type == ACL_DOUBLE ? std::ldexp(1.0, -52) : std::ldexp(1.0, -23);
        if (magnitude && std::fabs(a - e) <= 64 * epsilon * magnitude->values[i]) continue;
        if (reported++ < 5) out << std::setprecision(17) << "[" << i << "] got " << a << " expected " << e << "; ";
    }
    if (reported) out << reported << " of " << actual.values.size() << " elements differ";
    return out.str();
}

const char* DtypeName(aclDataType type) {
    switch (type) {
        case ACL_FLOAT: return "fp32";
        case ACL_FLOAT16: return "fp16";
        case ACL_BF16: return "bf16";
        case ACL_DOUBLE: return "fp64";
        default: return "other";
    }
}

}  // namespace gs3d_test
