// Prints a hash of the outputs of a fixed forward and backward workload (fp32 and fp16, 11
// channels, 1 and 33, and channels last (NDHWC) with 8 and 33, both modes, random and
// near-identity grids, every padding; and rows wide enough for several bands), so that runs
// under different OMP_NUM_THREADS can be compared bit for bit.
// Usage: determinism_probe [deterministic 0|1]
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <vector>

#include "acl/acl.h"
#include "aclnnop/aclnn_grid_sampler3d.h"
#include "aclnnop/aclnn_grid_sampler3d_backward.h"
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
    // in several bands along H (row_order.h), with one channel (the scan) and 5 (the sorted
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
    std::printf("%016llx\n", static_cast<unsigned long long>(hash));
    aclrtDestroyStream(stream);
    aclFinalize();
    return 0;
}
