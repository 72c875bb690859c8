// gs3dSetNumThreads / gs3dGetNumThreads and their effect on the stream workers.
#include "runtime/kernel_threads.h"

#include <omp.h>
#include <pthread.h>
#include <sched.h>

#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <cstring>
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

// GRIDSAMPLER3D_BIND_THREADS=0 turns the binding below off; OpenMP's own (OMP_PROC_BIND)
// replaces it.
bool BindingWanted() {
    static const bool wanted = [] {
        const char* setting = std::getenv("GRIDSAMPLER3D_BIND_THREADS");
        return !(setting && std::strcmp(setting, "0") == 0) && omp_get_proc_bind() == omp_proc_bind_false;
    }();
    return wanted;
}

// A stream worker's thread count and placement, as last applied.
struct WorkerPlacement {
    int applied = 0;
    int bound = 0;  // the team size bound one per CPU, or 0
    bool have_allowed = false;
    cpu_set_t allowed;  // the worker's CPUs before any binding
};
thread_local WorkerPlacement placement;

// Puts a bound team back on all the allowed CPUs, on the team that was bound: a region of
// another size would make OpenMP start threads for nothing (and libomp 14 leaks some of a
// team grown past the CPUs).
void Unbind() {
    if (!placement.bound) return;
    PlaceTeam(placement.bound, placement.allowed, false);
    placement.bound = 0;
}

}  // namespace

bool TakesEveryCpu(int threads, const cpu_set_t& allowed) {
    return threads >= 2 && CPU_COUNT(&allowed) == threads;
}

bool PlaceTeam(int threads, const cpu_set_t& allowed, bool one_per_cpu) {
    int cpus[CPU_SETSIZE];
    int count = 0;
    for (int cpu = 0; cpu < CPU_SETSIZE && one_per_cpu; ++cpu)
        if (CPU_ISSET(cpu, &allowed)) cpus[count++] = cpu;
    if (one_per_cpu && count < threads) return false;
    bool placed = true;
#pragma omp parallel num_threads(threads) reduction(&& : placed)
    {
        cpu_set_t place = allowed;
        if (one_per_cpu) {
            CPU_ZERO(&place);
            CPU_SET(cpus[omp_get_thread_num()], &place);
        }
        placed = pthread_setaffinity_np(pthread_self(), sizeof place, &place) == 0;
    }
    return placed;
}

void ApplyKernelThreadCount() {
    WorkerPlacement& p = placement;
    const int wanted = WantedThreadCount();
    if (wanted == p.applied) return;
    omp_set_num_threads(wanted);
    p.applied = wanted;
    if (!p.have_allowed) p.have_allowed = pthread_getaffinity_np(pthread_self(), sizeof p.allowed, &p.allowed) == 0;
    if (!p.have_allowed) return;
    if (BindingWanted() && TakesEveryCpu(wanted, p.allowed)) {
        PlaceTeam(wanted, p.allowed, true);
        p.bound = wanted;  // also where a member could not be bound: Unbind restores them all
    } else {
        Unbind();
    }
}

void ReleaseKernelThreads() { Unbind(); }

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
