// Compares two builds of the library call by call in one process: both are loaded (dlopen,
// each file its own copy), and each pair of calls runs A then B, or B then A every other
// pair, on the same data; the ratio B / A is taken within each pair and the median printed
// with its quartiles.
//
// Why: this 2-vCPU host's speed moves by up to 2x within seconds to minutes. bench/lab/ab_compare.sh
// alternates whole processes (rounds of several calls each, a second or more apart), and in
// a noisy phase its ratios ranged 0.7-1.4 for two builds of identical speed; calls a few
// milliseconds apart see the same phase.
//
// Usage: ab_interleave LIB_A LIB_B forward|backward S [C] [pairs] [noise] [mask 11|10|01]
//                      [mode 0 bilinear|1 nearest|2 tricubic] [padding 0|1|2] [layout ncdhw|ndhwc] [N]
//                      [state hot|cold]
//   LIB_A, LIB_B: two different files (e.g. /tmp/a/libgridsampler3d.so.0, /tmp/b/...).
//   fp32 data; the workload is profile_driver's (registration_workload.h), in
//   plain 64-byte-aligned memory as PyTorch's tensors are; cold: 64 MiB written before each
//   call, which evicts the data from every cache level.
#include <dlfcn.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "acl/acl.h"
#include "aclnnop/aclnn_grid_sampler3d.h"
#include "aclnnop/aclnn_grid_sampler3d_backward.h"
#include "registration_workload.h"

namespace {

// The entry points of one loaded copy of the library.
struct Library {
    void* handle = nullptr;
    decltype(&aclInit) init;
    decltype(&aclrtSetDevice) set_device;
    decltype(&aclrtCreateStream) create_stream;
    decltype(&aclrtSynchronizeStream) synchronize;
    decltype(&aclCreateTensor) create_tensor;
    decltype(&aclCreateBoolArray) create_bool_array;
    decltype(&aclGetRecentErrMsg) recent_error;
    decltype(&aclnnGridSampler3DGetWorkspaceSize) forward_size;
    decltype(&aclnnGridSampler3D) forward;
    decltype(&aclnnGridSampler3DBackwardGetWorkspaceSize) backward_size;
    decltype(&aclnnGridSampler3DBackward) backward;
    aclrtStream stream = nullptr;

    template <typename F>
    void Resolve(F* f, const char* name, const char* path) {
        *f = reinterpret_cast<F>(dlsym(handle, name));
        if (*f == nullptr) {
            std::fprintf(stderr, "ab_interleave: %s has no %s\n", path, name);
            std::exit(2);
        }
    }

    // extension: the gs3d calls (tricubic, mode 2), which have the aclnn calls' signatures.
    Library(const char* path, bool extension) {
        handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
        if (handle == nullptr) {
            std::fprintf(stderr, "ab_interleave: %s\n", dlerror());
            std::exit(2);
        }
        Resolve(&init, "aclInit", path);
        Resolve(&set_device, "aclrtSetDevice", path);
        Resolve(&create_stream, "aclrtCreateStream", path);
        Resolve(&synchronize, "aclrtSynchronizeStream", path);
        Resolve(&create_tensor, "aclCreateTensor", path);
        Resolve(&create_bool_array, "aclCreateBoolArray", path);
        Resolve(&recent_error, "aclGetRecentErrMsg", path);
        const std::string prefix = extension ? "gs3d" : "aclnn";
        Resolve(&forward_size, (prefix + "GridSampler3DGetWorkspaceSize").c_str(), path);
        Resolve(&forward, (prefix + "GridSampler3D").c_str(), path);
        Resolve(&backward_size, (prefix + "GridSampler3DBackwardGetWorkspaceSize").c_str(), path);
        Resolve(&backward, (prefix + "GridSampler3DBackward").c_str(), path);
        init(nullptr);
        set_device(0);
        create_stream(&stream);
    }
};

void* Buffer(size_t bytes) {  // zeroed, so that its pages are there before the first call
    void* p = std::aligned_alloc(64, (std::max<size_t>(bytes, 1) + 63) / 64 * 64);
    std::memset(p, 0, bytes);
    return p;
}

}  // namespace

int main(int argc, char** argv) {
    if (argc < 5) {
        std::fprintf(stderr, "usage: ab_interleave LIB_A LIB_B forward|backward S [C] [pairs] [noise] [mask] [mode] "
                             "[padding] [ncdhw|ndhwc] [N] [hot|cold]\n");
        return 2;
    }
    if (std::strcmp(argv[1], argv[2]) == 0) {
        std::fprintf(stderr, "ab_interleave: LIB_A and LIB_B are the same file\n");
        return 2;
    }
    const int64_t mode = argc > 9 ? std::atoll(argv[9]) : 0, padding = argc > 10 ? std::atoll(argv[10]) : 0;
    Library libs[2] = {Library(argv[1], mode == 2), Library(argv[2], mode == 2)};
    if (libs[0].handle == libs[1].handle) {
        std::fprintf(stderr, "ab_interleave: the two paths loaded one copy of the library\n");
        return 2;
    }
    const std::string op = argv[3];
    const int64_t s = std::atoll(argv[4]);
    const int64_t c = argc > 5 ? std::atoll(argv[5]) : 1;
    const int pairs = argc > 6 ? std::atoi(argv[6]) : 30;
    const float noise_sigma = argc > 7 ? std::atof(argv[7]) : 0.05f;
    const std::string mask_text = argc > 8 ? argv[8] : "11";
    const bool channels_last = argc > 11 && std::string(argv[11]) == "ndhwc";
    const int64_t batch = argc > 12 ? std::atoll(argv[12]) : 1;
    const bool cold = argc > 13 && std::string(argv[13]) == "cold";

    const int64_t vol = batch * c * s * s * s, pts = batch * s * s * s;
    auto* input = static_cast<float*>(Buffer(vol * 4));
    auto* grad = static_cast<float*>(Buffer(vol * 4));
    auto* grid = static_cast<float*>(Buffer(pts * 3 * 4));
    void *out = Buffer(vol * 4), *input_grad = Buffer(vol * 4), *grid_grad = Buffer(pts * 3 * 4);
    FillRegistrationWorkload(input, grad, grid, batch, c, s, noise_sigma);
    const int64_t vdims[5] = {batch, c, s, s, s}, gdims[5] = {batch, s, s, s, 3}, vstore[1] = {vol},
                  gstore[1] = {pts * 3};
    const int64_t ncdhw_strides[5] = {c * s * s * s, s * s * s, s * s, s, 1};
    const int64_t ndhwc_strides[5] = {c * s * s * s, 1, s * s * c, s * c, c};
    const int64_t* vstrides = channels_last ? ndhwc_strides : ncdhw_strides;
    bool mask_values[2] = {mask_text[0] == '1', mask_text[1] == '1'};

    // One call of library `which`, timed; its workspace kept across calls, as a caller keeps it.
    std::vector<char> workspace[2], evict(cold ? 64 << 20 : 0);
    auto call = [&](int which) {
        Library& lib = libs[which];
        auto make = [&](const int64_t* dims, const int64_t* strides, const int64_t* store, void* data) {
            return lib.create_tensor(dims, 5, ACL_FLOAT, strides, 0, ACL_FORMAT_NCDHW, store, 1, data);
        };
        aclTensor *ti = make(vdims, vstrides, vstore, input), *tg = make(gdims, nullptr, gstore, grid),
                  *tgo = make(vdims, vstrides, vstore, grad), *to = make(vdims, vstrides, vstore, out),
                  *tig = make(vdims, vstrides, vstore, input_grad), *tgg = make(gdims, nullptr, gstore, grid_grad);
        aclBoolArray* mask = lib.create_bool_array(mask_values, 2);
        std::fill(evict.begin(), evict.end(), static_cast<char>(evict.empty() ? 0 : evict[0] + 1));
        const auto start = std::chrono::steady_clock::now();
        uint64_t size = 0;
        aclOpExecutor* executor = nullptr;
        aclnnStatus status = op == "forward"
                                 ? lib.forward_size(ti, tg, mode, padding, false, to, &size, &executor)
                                 : lib.backward_size(tgo, ti, tg, mode, padding, false, mask, tig, tgg, &size, &executor);
        if (status == 0) {
            if (workspace[which].size() < size) workspace[which].resize(size);
            status = op == "forward" ? lib.forward(workspace[which].data(), size, executor, lib.stream)
                                     : lib.backward(workspace[which].data(), size, executor, lib.stream);
        }
        lib.synchronize(lib.stream);
        const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
        if (status != 0) {
            std::fprintf(stderr, "ab_interleave: library %c failed (%d): %s\n", 'A' + which, status, lib.recent_error());
            std::exit(1);
        }
        // The tensors and the array are left to the process's end: a few hundred bytes a call.
        return ms;
    };

    call(0), call(1);  // warm-up: pages, threads, workspaces
    std::vector<double> ratios, times[2];
    for (int p = 0; p < pairs; ++p) {
        double ms[2];
        if (p % 2 == 0) {
            ms[0] = call(0), ms[1] = call(1);
        } else {
            ms[1] = call(1), ms[0] = call(0);
        }
        times[0].push_back(ms[0]), times[1].push_back(ms[1]);
        ratios.push_back(ms[1] / ms[0]);
    }
    auto quantile = [](std::vector<double> v, double q) {
        std::sort(v.begin(), v.end());
        return v[static_cast<size_t>(q * (v.size() - 1) + 0.5)];
    };
    std::printf("A median %.2f ms, B median %.2f ms; B/A per pair: median %.3f (quartiles %.3f-%.3f, %d pairs)\n",
                quantile(times[0], 0.5), quantile(times[1], 0.5), quantile(ratios, 0.5), quantile(ratios, 0.25),
                quantile(ratios, 0.75), pairs);
    return 0;
}
