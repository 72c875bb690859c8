// gs3dSetNumThreads / gs3dGetNumThreads and their effect on the stream workers.
#include "runtime/kernel_threads.h"

#include <omp.h>

#include <atomic>
#include <cstdint>
#include <thread>

#include "gridsampler3d/cpu_device.h"
#include "runtime/recent_error.h"

namespace gs3d {
namespace {

std::atomic<int32_t> requested_threads{0};  // 0: the default

// What a thread that never changed its setting gets (OMP_NUM_THREADS or one per core),
// read on a fresh thread, since the caller's own setting may have been changed.
int DefaultThreadCount() {
    static const int count = [] {
        int n = 1;
        std::thread([&n] { n = omp_get_max_threads(); }).join();
        return n > 0 ? n : 1;
    }();
    return count;
}

int WantedThreadCount() {
    const int32_t requested = requested_threads.load();
    return requested > 0 ? requested : DefaultThreadCount();
}

}  // namespace

void ApplyKernelThreadCount() {
    thread_local int applied = 0;
    const int wanted = WantedThreadCount();
    if (wanted != applied) {
        omp_set_num_threads(wanted);
        applied = wanted;
    }
}

}  // namespace gs3d

extern "C" {

aclError gs3dSetNumThreads(int32_t numThreads) {
    if (numThreads < 0)
        return gs3d::RecordError(ACL_ERROR_INVALID_PARAM, "gs3dSetNumThreads: numThreads is %d; expected 0 or more",
                                 numThreads);
    gs3d::requested_threads.store(numThreads);
    return ACL_SUCCESS;
}

aclError gs3dGetNumThreads(int32_t* numThreads) {
    if (!numThreads) return gs3d::RecordError(ACL_ERROR_INVALID_PARAM, "gs3dGetNumThreads: numThreads is null");
    *numThreads = gs3d::WantedThreadCount();
    return ACL_SUCCESS;
}

}  // extern "C"
