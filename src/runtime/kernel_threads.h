// The number of OpenMP threads the kernels use (gs3dSetNumThreads), process-wide.
#pragma once

#include <sched.h>

namespace gs3d {

// Sets the calling thread's OpenMP thread count to the one asked for. Each stream's worker
// calls it before each task: OpenMP's setting is per thread, so setting it on the caller's
// thread would not reach the workers. Where the count changes, the worker's team is placed
// (PlaceTeam) on the CPUs the worker could run on before, unless GRIDSAMPLER3D_BIND_THREADS
// is 0 or OMP_PROC_BIND asks for OpenMP's own binding.
void ApplyKernelThreadCount();

// Places the calling thread's OpenMP team of `threads` (its master and the workers OpenMP
// keeps for it): where `wanted` and the team takes every CPU of `allowed` (two or more),
// member i on the i-th of them alone; else every member on all of `allowed`. Returns whether
// it bound the members one per CPU.
// Why: on a 2-vCPU virtual machine, after the caller's thread had run alone for a while (a
// single-threaded PyTorch kernel, or Python code) the guest's scheduler kept a worker's two
// threads on one vCPU for much of the next call: (1, 32, 48) backward, two threads, 26-32 ms
// against 15-18 ms back to back. One thread per CPU: 15-16 ms either way.
// Only where the team takes every allowed CPU, so that it never crowds a few CPUs of a larger
// machine (another process doing the same would pick the same ones).
bool PlaceTeam(int threads, const cpu_set_t& allowed, bool wanted);

}  // namespace gs3d
