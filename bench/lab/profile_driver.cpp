// A tiny driver that runs one op many times on the registration-like workload, for perf and
// callgrind (the Python benchmark is the measurement; this is for looking inside).
// Usage: profile_driver forward|backward S [C] [dtype fp32|fp16|bf16] [repeats] [noise] [mask 11|10|01]
//                       [mode 0 bilinear|1 nearest|2 tricubic] [padding 0 zeros|1 border|2 reflection]
//                       [layout ncdhw|ndhwc (channels-last strided NCDHW views of input, gradOutput, output)]
//                       [N] [state hot|cold|busy before every call: hot, nothing (back to back);
//                        cold, 64 MiB written, which evicts the data from every cache level;
//                        busy, this thread spins 100 ms with the other cores idle, as while
//                        PyTorch's kernel ran on one thread before the call in the Python
//                        benchmark (on the 2-vCPU host, calls at two threads then ran up to 2x
//                        slower, which neither the cold caches nor a sleep reproduced)]
// Tensors and workspace live in aclrtMalloc memory, ACL_MEM_MALLOC_HUGE_FIRST as in the
// sample program, or NORMAL_ONLY with GS3D_PROFILE_PAGES=normal (4 KiB pages, as PyTorch's
// tensors in the Python benchmark).
// Prints the best and the median time of the calls.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "acl/acl.h"
#include "aclnnop/aclnn_grid_sampler3d.h"
#include "aclnnop/aclnn_grid_sampler3d_backward.h"
#include "gridsampler3d/tricubic3d.h"
#include "kernels/common/element_types.h"
#include "registration_workload.h"

int main(int argc, char** argv) {
    const std::string op = argc > 1 ? argv[1] : "backward";
    const int64_t s = argc > 2 ? std::atoll(argv[2]) : 128;
    const int64_t c = argc > 3 ? std::atoll(argv[3]) : 1;
    const std::string type_name = argc > 4 ? argv[4] : "fp32";
    const int repeats = argc > 5 ? std::atoi(argv[5]) : 5;
    const float noise_sigma = argc > 6 ? std::atof(argv[6]) : 0.05f;
    const std::string mask_text = argc > 7 ? argv[7] : "11";
    const int64_t mode = argc > 8 ? std::atoll(argv[8]) : 0, padding = argc > 9 ? std::atoll(argv[9]) : 0;
    const bool channels_last = argc > 10 && std::string(argv[10]) == "ndhwc";
    const int64_t batch = argc > 11 ? std::atoll(argv[11]) : 1;
    const std::string state = argc > 12 ? argv[12] : "hot";
    const bool cold = state == "cold", busy = state == "busy";
    bool mask_values[2] = {mask_text[0] == '1', mask_text[1] == '1'};
    aclBoolArray* mask = aclCreateBoolArray(mask_values, 2);
    const aclDataType type = type_name == "fp16" ? ACL_FLOAT16 : type_name == "bf16" ? ACL_BF16 : ACL_FLOAT;
    const size_t es = type == ACL_FLOAT ? 4 : 2;
    aclInit(nullptr);
    aclrtSetDevice(0);
    aclrtStream stream;
    aclrtCreateStream(&stream);
    const char* pages = std::getenv("GS3D_PROFILE_PAGES");
    const aclrtMemMallocPolicy policy =
        pages && std::string(pages) == "normal" ? ACL_MEM_MALLOC_NORMAL_ONLY : ACL_MEM_MALLOC_HUGE_FIRST;
    std::vector<void*> device_buffers;
    auto device = [&](size_t bytes) {  // freed at the end
        void* p = nullptr;
        if (aclrtMalloc(&p, std::max<size_t>(bytes, 1), policy) != ACL_SUCCESS) {
            std::printf("aclrtMalloc of %zu bytes failed: %s\n", bytes, aclGetRecentErrMsg());
            std::exit(1);
        }
        device_buffers.push_back(p);
        return p;
    };
    const int64_t vol = batch * c * s * s * s, pts = batch * s * s * s;
    std::vector<float> input(vol), grad(vol), grid(pts * 3);
    FillRegistrationWorkload(input.data(), grad.data(), grid.data(), batch, c, s, noise_sigma);
    // fp16/bf16 data: the same values converted into the front of the fp32 storage (below).
    const int64_t vdims[5] = {batch, c, s, s, s}, gdims[5] = {batch, s, s, s, 3}, vstore[1] = {vol}, gstore[1] = {pts * 3};
    void *out = device(vol * es), *input_grad = device(vol * es), *grid_grad = device(pts * 3 * es);
    void *input_data = device(vol * 4), *grad_data = device(vol * 4), *grid_data = device(pts * 3 * 4);
    // Volumes: contiguous NCDHW, or channels-last strides over the same storage (the values
    // differ, which does not matter for timing).
    const int64_t ncdhw_strides[5] = {c * s * s * s, s * s * s, s * s, s, 1};
    const int64_t ndhwc_strides[5] = {c * s * s * s, 1, s * s * c, s * c, c};
    const int64_t* vstrides = channels_last ? ndhwc_strides : ncdhw_strides;
    auto make = [&](const int64_t* dims, const int64_t* strides, const int64_t* store, void* data) {
        return aclCreateTensor(dims, 5, type, strides, 0, ACL_FORMAT_NCDHW, store, 1, data);
    };
    aclTensor *ti = make(vdims, vstrides, vstore, input_data), *tg = make(gdims, nullptr, gstore, grid_data),
              *tgo = make(vdims, vstrides, vstore, grad_data), *to = make(vdims, vstrides, vstore, out),
              *tig = make(vdims, vstrides, vstore, input_grad), *tgg = make(gdims, nullptr, gstore, grid_grad);
    if (type != ACL_FLOAT) {  // the same numbers as fp16 (rounded) or bf16 (truncated), in place
        for (auto* v : {&input, &grad, &grid})
            for (size_t i = 0; i < v->size(); ++i) {
                uint16_t bits;
                if (type == ACL_FLOAT16) {
                    const gs3d::kernels::Half h = gs3d::kernels::FloatToHalf((*v)[i]);  // the library's rounding
                    std::memcpy(&bits, &h, 2);
                } else {
                    uint32_t b;
                    std::memcpy(&b, &(*v)[i], 4);
                    bits = static_cast<uint16_t>(b >> 16);
                }
                reinterpret_cast<uint16_t*>(v->data())[i] = bits;
            }
    }
    for (auto [host, data] : {std::pair{&input, input_data}, {&grad, grad_data}, {&grid, grid_data}})
        aclrtMemcpy(data, host->size() * 4, host->data(), host->size() * 4, ACL_MEMCPY_HOST_TO_DEVICE);
    std::vector<double> times;
    std::vector<char> evict(cold ? 64 << 20 : 0);
    void* ws = nullptr;  // kept across calls, as a caller (and bench.py) keeps its workspace
    uint64_t ws_size = 0;
    for (int r = 0; r < repeats; ++r) {
        uint64_t size = 0;
        aclOpExecutor* ex = nullptr;
        std::fill(evict.begin(), evict.end(), static_cast<char>(r));
        if (busy) {
            const auto t = std::chrono::steady_clock::now();
            while (std::chrono::steady_clock::now() - t < std::chrono::milliseconds(100)) {
            }
        }
        const auto start = std::chrono::steady_clock::now();
        aclnnStatus st;
        if (op == "forward") {
            st = gs3dGridSampler3DGetWorkspaceSize(ti, tg, mode, padding, false, to, &size, &ex);  // aclnn's, with tricubic
            if (size > ws_size) ws = device(ws_size = size);
            if (st == 0) st = gs3dGridSampler3D(ws, size, ex, stream);
        } else {
            st = gs3dGridSampler3DBackwardGetWorkspaceSize(tgo, ti, tg, mode, padding, false, mask, tig, tgg, &size, &ex);
            if (size > ws_size) ws = device(ws_size = size);
            if (st == 0) st = gs3dGridSampler3DBackward(ws, size, ex, stream);
        }
        aclrtSynchronizeStream(stream);
        const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
        if (st != 0) {
            std::printf("failed %d: %s\n", st, aclGetRecentErrMsg());
            return 1;
        }
        times.push_back(ms);
    }
    std::sort(times.begin(), times.end());
    std::printf("%s N=%lld S=%lld C=%lld %s%s%s: best %.2f ms, median %.2f ms\n", op.c_str(), (long long)batch,
                (long long)s, (long long)c, type_name.c_str(), channels_last ? " ndhwc" : "", state == "hot" ? "" : (" " + state).c_str(),
                times.front(), times[times.size() / 2]);
    for (void* p : device_buffers) aclrtFree(p);
    aclFinalize();
    return 0;
}
