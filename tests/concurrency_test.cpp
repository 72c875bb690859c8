// Concurrency: 8 host threads, each with its own stream, run both ops and an affine warp's
// forward and backward at once for a bounded number of rounds, on shapes of their own; every
// result equals the serial one bit for bit
// (deterministic mode). Under ThreadSanitizer (scripts/sanitize.sh) it also shows that the
// runtime (stream and executor registries, allocation tracking, recent-error slots) and the
// kernels' OpenMP regions have no data race.
#include <gtest/gtest.h>

#include <atomic>
#include <cstring>
#include <memory>
#include <random>
#include <thread>
#include <vector>

#include "acl/acl.h"
#include "aclnnop/aclnn_grid_sampler3d.h"
#include "gridsampler3d/warp3d.h"
#include "support/op_runner.h"
#include "support/test_tensor.h"

namespace gs3d_test {
namespace {

constexpr int kThreads = 8;
constexpr int kRounds = 10;

// One thread's problem: inputs and the bytes of its three outputs.
struct Problem {
    RefOptions options;
    aclDataType type;
    bool channel_last;
    std::unique_ptr<TestTensor> input, grid, grad, out, input_grad, grid_grad;
    std::unique_ptr<TestTensor> theta, warped, warp_input_grad, theta_grad;  // the affine warp's

    Problem(int index) {
        std::mt19937 rng(1234 + index);
        options = {index % 2, (index / 2) % 3, index % 3 == 0};
        const aclDataType types[] = {ACL_FLOAT, ACL_DOUBLE, ACL_FLOAT16, ACL_BF16};
        type = types[index % 4];
        channel_last = index % 5 == 1;
        const aclFormat format = channel_last ? ACL_FORMAT_NDHWC : ACL_FORMAT_NCDHW;
        const int64_t n = 1 + index % 2, c = 1 + index % 3, d = 6 + index, h = 7, w = 5 + index % 4;
        const int64_t od = 5, oh = 4 + index % 3, ow = 6;
        input = std::make_unique<TestTensor>(VolumeDims(n, c, d, h, w, channel_last), type, format);
        grid = std::make_unique<TestTensor>(std::vector<int64_t>{n, od, oh, ow, 3}, type);
        grad = std::make_unique<TestTensor>(VolumeDims(n, c, od, oh, ow, channel_last), type, format);
        out = std::make_unique<TestTensor>(VolumeDims(n, c, od, oh, ow, channel_last), type, format);
        input_grad = std::make_unique<TestTensor>(VolumeDims(n, c, d, h, w, channel_last), type, format);
        grid_grad = std::make_unique<TestTensor>(std::vector<int64_t>{n, od, oh, ow, 3}, type);
        StoreVolume(RandomArray(rng, n, c, d, h, w), channel_last, input.get());
        StoreGrid(RandomArray(rng, n, od, oh, ow, 3, true), grid.get());
        StoreVolume(RandomArray(rng, n, c, od, oh, ow), channel_last, grad.get());
        theta = std::make_unique<TestTensor>(std::vector<int64_t>{n, 3, 4}, type);
        warped = std::make_unique<TestTensor>(VolumeDims(n, c, od, oh, ow, channel_last), type, format);
        warp_input_grad = std::make_unique<TestTensor>(VolumeDims(n, c, d, h, w, channel_last), type, format);
        theta_grad = std::make_unique<TestTensor>(std::vector<int64_t>{n, 3, 4}, type);
        for (int64_t i = 0; i < theta->count(); ++i)  // the identity plus 8-bit values (exact in bf16)
            theta->Set(i, i % 12 % 5 == 0 ? 1.0 : RandomGridValue(rng) / 8);
    }

    // Runs both ops on `stream`; returns the outputs' values in order.
    std::vector<double> Run(aclrtStream stream) {
        std::vector<double> values;
        if (RunForward(input->get(), grid->get(), options, out->get(), stream) != ACLNN_SUCCESS) return values;
        if (RunBackward(grad->get(), input->get(), grid->get(), options, std::nullopt, input_grad->get(),
                        grid_grad->get(), stream) != ACLNN_SUCCESS)
            return values;
        const int64_t mode = options.interpolation, padding = options.padding;
        if (RunTwoPhases(gs3dAffineWarp3DGetWorkspaceSize, gs3dAffineWarp3D, stream, input->get(), theta->get(), mode,
                         padding, options.align_corners, warped->get()) != ACLNN_SUCCESS ||
            RunTwoPhases(gs3dAffineWarp3DBackwardGetWorkspaceSize, gs3dAffineWarp3DBackward, stream, grad->get(),
                         input->get(), theta->get(), mode, padding, options.align_corners,
                         static_cast<const aclBoolArray*>(nullptr), warp_input_grad->get(),
                         theta_grad->get()) != ACLNN_SUCCESS)
            return values;
        for (const TestTensor* t :
             {out.get(), input_grad.get(), grid_grad.get(), warped.get(), warp_input_grad.get(), theta_grad.get()})
            for (int64_t i = 0; i < t->count(); ++i) values.push_back(t->Get(i));
        return values;
    }
};

bool BitwiseEqual(const std::vector<double>& a, const std::vector<double>& b) {
    return a.size() == b.size() && (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(double)) == 0);
}

TEST(Concurrency, EightStreamsAtOnceGiveTheSerialResults) {
    ASSERT_EQ(aclrtCtxSetSysParamOpt(ACL_OPT_DETERMINISTIC, 1), ACL_SUCCESS);
    std::vector<std::unique_ptr<Problem>> problems;
    std::vector<std::vector<double>> serial;
    for (int i = 0; i < kThreads; ++i) {
        problems.push_back(std::make_unique<Problem>(i));
        serial.push_back(problems.back()->Run(TestStream()));
        ASSERT_FALSE(serial.back().empty()) << "problem " << i << " failed serially";
    }
    // Each thread owns its problem's tensors (so outputs never race) and its stream.
    std::atomic<int> mismatches{0}, failures{0};
    std::atomic<bool> go{false};
    std::vector<std::thread> threads;
    for (int i = 0; i < kThreads; ++i)
        threads.emplace_back([&, i] {
            aclrtStream stream = nullptr;
            if (aclrtCreateStream(&stream) != ACL_SUCCESS) {
                ++failures;
                return;
            }
            while (!go) std::this_thread::yield();  // start together
            for (int round = 0; round < kRounds; ++round) {
                problems[i]->out->Fill(-7.0);  // a stale result would not pass for a new one
                problems[i]->input_grad->Fill(-7.0);
                problems[i]->grid_grad->Fill(-7.0);
                problems[i]->warped->Fill(-7.0);
                problems[i]->warp_input_grad->Fill(-7.0);
                problems[i]->theta_grad->Fill(-7.0);
                std::vector<double> values = problems[i]->Run(stream);
                if (values.empty()) ++failures;
                else if (!BitwiseEqual(values, serial[i])) ++mismatches;
            }
            if (aclrtDestroyStream(stream) != ACL_SUCCESS) ++failures;
        });
    go = true;
    for (auto& t : threads) t.join();
    EXPECT_EQ(failures.load(), 0);
    EXPECT_EQ(mismatches.load(), 0) << "of " << kThreads * kRounds << " concurrent runs";
    ASSERT_EQ(aclrtCtxSetSysParamOpt(ACL_OPT_DETERMINISTIC, 0), ACL_SUCCESS);
}

// Refused calls from many threads at once: each thread reads its own message (a shared slot
// would be read and cleared by another thread first now and then).
TEST(Concurrency, RecentErrorsStayWithTheirThread) {
    std::atomic<int> wrong{0};
    std::vector<std::thread> threads;
    for (int i = 0; i < kThreads; ++i)
        threads.emplace_back([&, i] {
            for (int round = 0; round < 50; ++round) {
                uint64_t size = 0;
                aclOpExecutor* executor = nullptr;
                const aclnnStatus status =
                    aclnnGridSampler3DGetWorkspaceSize(nullptr, nullptr, 10 + i, 0, false, nullptr, &size, &executor);
                const char* message = aclGetRecentErrMsg();
                if (status != ACLNN_ERR_PARAM_NULLPTR || !message || !*message) ++wrong;
            }
        });
    for (auto& t : threads) t.join();
    EXPECT_EQ(wrong.load(), 0);
}

}  // namespace
}  // namespace gs3d_test
