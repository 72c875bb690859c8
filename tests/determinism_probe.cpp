// Prints a hash of the outputs of a fixed forward and backward workload (fp32 and fp16, 11
// channels, 1 and 33, and channels last (NDHWC) with 8 and 33, both modes, random and
// near-identity grids, every padding; and rows wide enough for several bands), and of both
// fused warps (fp32 and fp64, 1 and 3 channels, both modes, every padding, outputs of
// several chunks), so that runs under different OMP_NUM_THREADS can be compared bit for bit.
// Usage: determinism_probe [deterministic 0|1]
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <vector>

#include "acl/acl.h"
#include "aclnnop/aclnn_grid_sampler3d.h"
#include "aclnnop/aclnn_grid_sampler3d_backward.h"
#include "gridsampler3d/warp3d.h"
#include "support/op_runner.h"
#include "support/test_tensor.h"

using namespace gs3d_test;

namespace {
uint64_t Fnv1a(uint64_t hash, const TestTensor& t) {
    for (int64_t i = 0; i < t.count(); ++i) {
        double v = t.Get(i);
        const auto* bytes = reinterpret_cast<const unsigned char*>(&v);
        for (int b = 0; b < 8; ++b) hash = (hash ^ bytes[b]) * 1099511628211ull;
    }
    return hash;
}
// Both warps' outputs and gradients, hashed: outputs of (12, 40, 150) points, two chunks of
// the warps' workspace per batch item, so that inputGrad sums across chunks and thetaGrad
// sums its rows in parallel. Returns 0, or the failing call's number.
int HashWarps(aclrtStream stream, std::mt19937& rng, uint64_t* hash) {
    const int64_t n = 2, d = 10, h = 12, w = 14, od = 12, oh = 40, ow = 150;
    // fp64 too: a sum in another order shows in its last bits, which rounding to fp32 hides.
    for (aclDataType type : {ACL_FLOAT, ACL_DOUBLE})
    for (int64_t c : {1, 3})
    for (int64_t mode : {0, 1})
        for (int64_t padding = 0; padding < 3; ++padding) {
            const bool align = padding == 1;
            TestTensor input(VolumeDims(n, c, d, h, w, false), type, ACL_FORMAT_NCDHW);
            TestTensor grad(VolumeDims(n, c, od, oh, ow, false), type, ACL_FORMAT_NCDHW);
            TestTensor out(VolumeDims(n, c, od, oh, ow, false), type, ACL_FORMAT_NCDHW);
            TestTensor input_grad(VolumeDims(n, c, d, h, w, false), type, ACL_FORMAT_NCDHW);
            TestTensor theta({n, 3, 4}, type), theta_grad({n, 3, 4}, type);
            TestTensor flow(VolumeDims(n, 3, od, oh, ow, false), type, ACL_FORMAT_NCDHW);
            TestTensor flow_grad(VolumeDims(n, 3, od, oh, ow, false), type, ACL_FORMAT_NCDHW);
            StoreVolume(RandomArray(rng, n, c, d, h, w), false, &input);
            StoreVolume(RandomArray(rng, n, c, od, oh, ow), false, &grad);
            // Near the identity (steps of 1/1024 up to 1/4) and flows of up to 4 voxels.
            for (int64_t i = 0; i < theta.count(); ++i)
                theta.Set(i, (i % 12 == i % 12 / 4 * 5 ? 1.0 : 0.0) + RandomValue(rng) / 16);
            for (int64_t i = 0; i < flow.count(); ++i) flow.Set(i, RandomValue(rng));
            if (RunTwoPhases(gs3dAffineWarp3DGetWorkspaceSize, gs3dAffineWarp3D, stream, input.get(), theta.get(), mode,
                             padding, align, out.get()) != ACLNN_SUCCESS)
                return 6;
            if (RunTwoPhases(gs3dAffineWarp3DBackwardGetWorkspaceSize, gs3dAffineWarp3DBackward, stream, grad.get(),
                             input.get(), theta.get(), mode, padding, align, static_cast<const aclBoolArray*>(nullptr),
                             input_grad.get(), theta_grad.get()) != ACLNN_SUCCESS)
                return 7;
            for (const TestTensor* t : {&out, &input_grad, &theta_grad}) *hash = Fnv1a(*hash, *t);
            if (RunTwoPhases(gs3dDisplacementWarp3DGetWorkspaceSize, gs3dDisplacementWarp3D, stream, input.get(),
                             flow.get(), mode, padding, out.get()) != ACLNN_SUCCESS)
                return 8;
            if (RunTwoPhases(gs3dDisplacementWarp3DBackwardGetWorkspaceSize, gs3dDisplacementWarp3DBackward, stream,
                             grad.get(), input.get(), flow.get(), mode, padding,
                             static_cast<const aclBoolArray*>(nullptr), input_grad.get(), flow_grad.get()) != ACLNN_SUCCESS)
                return 9;
            for (const TestTensor* t : {&out, &input_grad, &flow_grad}) *hash = Fnv1a(*hash, *t);
        }
    return 0;
}
}  // namespace

int main(int argc, char** argv) {
    if (aclInit(nullptr) != ACL_SUCCESS) return 1;
    aclrtSetDevice(0);
    if (argc > 1) aclrtCtxSetSysParamOpt(ACL_OPT_DETERMINISTIC, std::atoi(argv[1]));
    aclrtStream stream = nullptr;
    aclrtCreateStream(&stream);
    uint64_t hash = 1469598103934665603ull;
    std::mt19937 rng(2024);
    const int64_t n = 2;
    struct Channels {
        int64_t count;
        bool last;
    };
    // Narrow rows, every channel case; and rows of 150 elements, which the backward visits
    // in several bands along H (plan/row_order.h), with one channel (the scan) and 5 (the sorted
    // slabs, channels last), near the identity only.
    struct Shape {
        int64_t d, h, w, od, oh, ow;
        std::vector<Channels> channels;
        std::vector<bool> smooth;
    };
    const Shape shapes[] = {
        {13, 12, 11, 10, 9, 12, {{11, false}, {1, false}, {33, false}, {8, true}, {33, true}}, {false, true}},
        {16, 14, 150, 14, 13, 150, {{1, false}, {5, false}}, {true}},
    };
    for (const Shape& shape : shapes) {
    const int64_t d = shape.d, h = shape.h, w = shape.w, od = shape.od, oh = shape.oh, ow = shape.ow;
    // A grid close to the identity: the backward's scan (one slab per thread) applies; random
    // grids: its sorted slabs. One channel and several: bilinear scans with one only.
    const Array5 near_identity = NearIdentityGrid(rng, n, od, oh, ow, 0.03);
    for (aclDataType type : {ACL_FLOAT, ACL_FLOAT16})
    for (Channels channels : shape.channels)
    for (int64_t mode : {0, 1})  // bilinear, nearest
    for (bool smooth : shape.smooth)
        for (int padding = 0; padding < 3; ++padding) {
            const int64_t c = channels.count;
            const bool last = channels.last;
            const aclFormat format = last ? ACL_FORMAT_NDHWC : ACL_FORMAT_NCDHW;
            TestTensor input(VolumeDims(n, c, d, h, w, last), type, format), grid({n, od, oh, ow, 3}, type),
                grad(VolumeDims(n, c, od, oh, ow, last), type, format),
                out(VolumeDims(n, c, od, oh, ow, last), type, format),
                input_grad(VolumeDims(n, c, d, h, w, last), type, format), grid_grad({n, od, oh, ow, 3}, type);
            StoreVolume(RandomArray(rng, n, c, d, h, w), last, &input);
            StoreGrid(smooth ? near_identity : RandomArray(rng, n, od, oh, ow, 3, true), &grid);
            StoreVolume(RandomArray(rng, n, c, od, oh, ow), last, &grad);
            uint64_t size = 0;
            aclOpExecutor* executor = nullptr;
            if (aclnnGridSampler3DGetWorkspaceSize(input.get(), grid.get(), mode, padding, padding == 1, out.get(),
                                                   &size, &executor) != ACLNN_SUCCESS)
                return 2;
            std::vector<char> forward_workspace(size);
            if (aclnnGridSampler3D(forward_workspace.data(), size, executor, stream) != ACLNN_SUCCESS) return 2;
            if (aclnnGridSampler3DBackwardGetWorkspaceSize(grad.get(), input.get(), grid.get(), mode, padding,
                                                           padding == 1, nullptr, input_grad.get(), grid_grad.get(),
                                                           &size, &executor) != ACLNN_SUCCESS)
                return 3;
            std::vector<char> workspace(size);
            if (aclnnGridSampler3DBackward(workspace.data(), size, executor, stream) != ACLNN_SUCCESS) return 4;
            if (aclrtSynchronizeStream(stream) != ACL_SUCCESS) return 5;
            for (const TestTensor* t : {&out, &input_grad, &grid_grad}) hash = Fnv1a(hash, *t);
        }
    }
    if (const int failed = HashWarps(stream, rng, &hash)) return failed;
    std::printf("%016llx\n", static_cast<unsigned long long>(hash));
    aclrtDestroyStream(stream);
    aclFinalize();
    return 0;
}
