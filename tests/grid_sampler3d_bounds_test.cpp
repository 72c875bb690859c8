// Every read of the input stays inside its tensor. The kernels read the input's corners by
// hardware gathers (fp32 corner pairs, fp16/bf16 element pairs), which AddressSanitizer does
// not check; here the input's storage lies between two inaccessible pages instead, so that a
// read of one element before its first or after its last faults and the test dies. Grids
// reach every face, edge and corner of the volume (and beyond), every mode, padding,
// alignment, dtype, a few channel counts, NCDHW and NDHWC; the outputs are also checked
// against the double reference. Then grids with NaN and inf too (the reference does not
// model them: only the reads are checked there).
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "acl/acl.h"
#include "aclnn/aclnn_base.h"
#include "support/op_runner.h"
#include "support/test_tensor.h"

namespace gs3d_test {
namespace {

// `bytes` (a multiple of the page size) of read-write memory between two PROT_NONE pages.
class GuardedBuffer {
  public:
    explicit GuardedBuffer(size_t bytes) : bytes_(bytes), page_(static_cast<size_t>(sysconf(_SC_PAGESIZE))) {
        mapping_ = mmap(nullptr, bytes_ + 2 * page_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (mapping_ == MAP_FAILED) throw std::runtime_error("mmap failed");
        auto* base = static_cast<unsigned char*>(mapping_);
        if (mprotect(base, page_, PROT_NONE) != 0 || mprotect(base + page_ + bytes_, page_, PROT_NONE) != 0)
            throw std::runtime_error("mprotect failed");
    }
    ~GuardedBuffer() { munmap(mapping_, bytes_ + 2 * page_); }
    GuardedBuffer(const GuardedBuffer&) = delete;
    GuardedBuffer& operator=(const GuardedBuffer&) = delete;
    unsigned char* data() const { return static_cast<unsigned char*>(mapping_) + page_; }
    size_t page() const { return page_; }

  private:
    size_t bytes_, page_;
    void* mapping_;
};

// Grid values that put corners on every face, edge and vertex of the volume and just
// outside it, whatever the alignment: near the normalized positions of index -1, -0.5, 0,
// 0.25, size - 1.5, size - 1, size - 0.75, size - 0.5, size; random values in [-1.2, 1.2];
// with hostile ones, also NaN, inf and a value far outside. Multiples of 1/64, which every
// dtype holds exactly.
double EdgeGridValue(std::mt19937& rng, int64_t size, bool align, bool hostile) {
    const double s = static_cast<double>(size);
    const double indices[] = {-1.0, -0.5, 0.0, 0.25, s - 1.5, s - 1.0, s - 0.75, s - 0.5, s};
    std::uniform_int_distribution<int> pick(0, 15);
    const int choice = pick(rng);
    double g;
    if (choice < 9) {  // index -> grid value (the inverse of the unnormalize)
        g = align ? 2 * indices[choice] / (s - 1) - 1 : (2 * indices[choice] + 1) / s - 1;
    } else if (!hostile) {
        g = std::uniform_real_distribution<double>(-1.2, 1.2)(rng);
    } else if (choice == 9) {
        return std::numeric_limits<double>::quiet_NaN();
    } else if (choice == 10) {
        return std::numeric_limits<double>::infinity();
    } else if (choice == 11) {
        return -1000;
    } else {
        g = std::uniform_real_distribution<double>(-1.2, 1.2)(rng);
    }
    return std::round(g * 64) / 64;
}

using BoundsParam = std::tuple<int, int, bool, aclDataType, bool>;  // mode, padding, align, type, channels last

class InputReadsInBounds : public ::testing::TestWithParam<BoundsParam> {};

TEST_P(InputReadsInBounds, ForwardAndBackward) {
    const auto [interpolation, padding, align, type, channel_last] = GetParam();
    const RefOptions options{interpolation, padding, align};
    std::mt19937 rng(7u + static_cast<unsigned>(interpolation * 100 + padding * 10 + align + type * 1000));
    const int64_t n = 1, d = 8, h = 16, w = 16, od = 6, oh = 7, ow = 40;
    const int64_t es = ElementBytes(type);
    for (int64_t c : {1, 2, 5}) {
        SCOPED_TRACE("C " + std::to_string(c));
        const int64_t elements = n * c * d * h * w;
        GuardedBuffer storage(static_cast<size_t>(elements * es));  // 8 x 16 x 16 x es: whole pages
        ASSERT_EQ(static_cast<size_t>(elements * es) % storage.page(), 0u);
        // The input exactly fills the pages between the guards, NCDHW or NDHWC.
        const Array5 input_values = RandomArray(rng, n, c, d, h, w);
        std::vector<int64_t> dims = {n, c, d, h, w}, strides = {c * d * h * w, d * h * w, h * w, w, 1};
        if (channel_last) strides = {c * d * h * w, 1, h * w * c, w * c, c};  // a channels-last view
        for (int64_t ci = 0; ci < c; ++ci)
            for (int64_t z = 0; z < d; ++z)
                for (int64_t y = 0; y < h; ++y)
                    for (int64_t x = 0; x < w; ++x) {
                        const int64_t at = ci * strides[1] + z * strides[2] + y * strides[3] + x * strides[4];
                        EncodeExactElement(input_values.at(0, ci, z, y, x), type, storage.data() + at * es);
                    }
        const int64_t storage_dims[1] = {elements};
        aclTensor* input = aclCreateTensor(dims.data(), 5, type, strides.data(), 0,
                                           ACL_FORMAT_NCDHW, storage_dims, 1,
                                           storage.data());
        ASSERT_NE(input, nullptr);

        for (bool hostile : {false, true}) {
            SCOPED_TRACE(hostile ? "with NaN and inf" : "finite");
            Array5 grid_values(n, od, oh, ow, 3);
            const int64_t sizes[3] = {w, h, d};
            for (int64_t i = 0; i < grid_values.Count(); ++i)
                grid_values.values[i] = EdgeGridValue(rng, sizes[i % 3], align, hostile);
            const Array5 grad_values = RandomArray(rng, n, c, od, oh, ow);
            TestTensor grid({n, od, oh, ow, 3}, type), grad({n, c, od, oh, ow}, type, ACL_FORMAT_NCDHW),
                out({n, c, od, oh, ow}, type, ACL_FORMAT_NCDHW),
                input_grad(VolumeDims(n, c, d, h, w, false), type, ACL_FORMAT_NCDHW), grid_grad({n, od, oh, ow, 3}, type);
            StoreGrid(grid_values, &grid);
            StoreVolume(grad_values, false, &grad);

            ASSERT_EQ(RunForward(input, grid.get(), options, out.get()), ACLNN_SUCCESS);
            // gridGrad alone first (other paths: GridGradOnly), then both over it.
            ASSERT_EQ(RunBackward(grad.get(), input, grid.get(), options, std::vector<bool>{false, true},
                                  input_grad.get(), grid_grad.get()),
                      ACLNN_SUCCESS);
            ASSERT_EQ(RunBackward(grad.get(), input, grid.get(), options, std::nullopt, input_grad.get(),
                                  grid_grad.get()),
                      ACLNN_SUCCESS);
            if (hostile) continue;
            Array5 expected_input_grad, expected_grid_grad;
            ReferenceBackward(grad_values, input_values, grid_values, options, &expected_input_grad,
                              &expected_grid_grad);
            EXPECT_EQ(CompareArrays(LoadVolume(out, false), ReferenceForward(input_values, grid_values, options), type),
                      "")
                << "forward";
            EXPECT_EQ(CompareArrays(LoadVolume(input_grad, false), expected_input_grad, type), "") << "inputGrad";
            EXPECT_EQ(CompareArrays(LoadGrid(grid_grad), expected_grid_grad, type), "") << "gridGrad";
        }
        aclDestroyTensor(input);
    }
}

std::string ParamName(const ::testing::TestParamInfo<BoundsParam>& info) {
    const auto [interpolation, padding, align, type, channel_last] = info.param;
    static const char* kPadding[] = {"zeros", "border", "reflection"};
    return std::string(interpolation ? "nearest" : "bilinear") + "_" + kPadding[padding] + (align ? "_align" : "_noalign") +
           "_" + DtypeName(type) + (channel_last ? "_ndhwc" : "_ncdhw");
}

INSTANTIATE_TEST_SUITE_P(AllModes, InputReadsInBounds,
                         ::testing::Combine(::testing::Values(0, 1), ::testing::Values(0, 1, 2), ::testing::Bool(),
                                            ::testing::Values(ACL_FLOAT, ACL_FLOAT16, ACL_BF16, ACL_DOUBLE),
                                            ::testing::Bool()),
                         ParamName);

}  // namespace
}  // namespace gs3d_test
