// Running the ops the way an application does (two phases, workspace, stream, sync), and
// what the tests need around that: the ACL session, random inputs, tolerant comparison.
#pragma once

#include <cstdint>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "acl/acl.h"
#include "aclnn/aclnn_base.h"
#include "support/reference_grid_sampler.h"

namespace gs3d_test {

// aclInit, device 0 and one stream for the whole test program (a gtest Environment).
void RegisterAclSession();
aclrtStream TestStream();

// Both phases, workspace from aclrtMalloc, then aclrtSynchronizeStream, on `stream` (by
// default the session's): the aclnn calls, or the gs3d extension's for tricubic (2).
// Returns the first status that is not success.
aclnnStatus RunForward(const aclTensor* input, const aclTensor* grid, const RefOptions& options, aclTensor* out,
                       aclrtStream stream = TestStream());
aclnnStatus RunBackward(const aclTensor* grad_output, const aclTensor* input, const aclTensor* grid,
                        const RefOptions& options, std::optional<std::vector<bool>> output_mask,
                        aclTensor* input_grad, aclTensor* grid_grad, aclrtStream stream = TestStream());

// Both phases of any two-phase call (the grid sampler's, the warps'): size(args..., &bytes,
// &executor), then launch(workspace, bytes, executor, stream) with a workspace from
// aclrtMalloc, then aclrtSynchronizeStream; frees the workspace. Returns the first status that
// is not success (ACLNN_ERR_RUNTIME_ERROR for a failed allocation or synchronisation).
template <typename Size, typename Launch, typename... Args>
aclnnStatus RunTwoPhases(Size size, Launch launch, aclrtStream stream, Args... args) {
    uint64_t bytes = 0;
    aclOpExecutor* executor = nullptr;
    aclnnStatus status = size(args..., &bytes, &executor);
    if (status != ACLNN_SUCCESS) return status;
    void* workspace = nullptr;
    if (bytes > 0 && aclrtMalloc(&workspace, bytes, ACL_MEM_MALLOC_HUGE_FIRST) != ACL_SUCCESS)
        return ACLNN_ERR_RUNTIME_ERROR;
    status = launch(workspace, bytes, executor, stream);
    if (status == ACLNN_SUCCESS && aclrtSynchronizeStream(stream) != ACL_SUCCESS) status = ACLNN_ERR_RUNTIME_ERROR;
    if (workspace) aclrtFree(workspace);
    return status;
}

// Values with at most 8 significant bits (k / 64, |k| < 256, or k / 128 for grids), exact
// in bf16, fp16, fp32 and double alike, so every dtype sees the same inputs.
double RandomValue(std::mt19937& rng);
double RandomGridValue(std::mt19937& rng);  // in [-2, 2): inside, on and outside [-1, 1]
Array5 RandomArray(std::mt19937& rng, int64_t a, int64_t b, int64_t c, int64_t d, int64_t e, bool grid = false);
// A grid close to the identity: each point's normalized position along each axis plus
// Gaussian noise of `sigma`, in multiples of 1/128 (exact in every dtype), as a registration
// grid; points near the borders fall outside.
Array5 NearIdentityGrid(std::mt19937& rng, int64_t n, int64_t d, int64_t h, int64_t w, double sigma);

// Largest allowed |actual - expected| for an element, with the reason:
// - the op computes fp16/bf16 in fp32 and rounds the result once: half an ulp of the dtype,
//   taken as a relative 2^-11 (fp16) or 2^-8 (bf16), plus the fp32 error below;
// - fp32 and fp64 differ from the double reference by rounding in sums of up to C * 8
//   products whose index math is exact for the test inputs: 64 ulps of the tensor's largest
//   reference magnitude covers that with margin (observed errors are a few ulps).
double Tolerance(aclDataType type, double expected, double scale);

// Compares two arrays element by element; returns "" or a description of the first mismatches.
// With `magnitude` (ReferenceBackward's BackwardMagnitudes), an element may also be off by
// 64 ulps of the compute type (fp64, else fp32) of its terms' magnitude: a sum whose terms
// cancel is exact to that, not to its own size.
std::string CompareArrays(const Array5& actual, const Array5& expected, aclDataType type,
                          const Array5* magnitude = nullptr);

const char* DtypeName(aclDataType type);

}  // namespace gs3d_test
