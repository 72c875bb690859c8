// The number of OpenMP threads the kernels use (gs3dSetNumThreads), process-wide.
#pragma once

#include <sched.h>

namespace gs3d {

// Sets the calling thread's OpenMP thread count to the one asked for. Each stream's worker
// calls it before each task: OpenMP's setting is per thread, so setting it on the caller's
// thread would not reach the workers. Where the count changes and the team takes every CPU
// the worker could run on (TakesEveryCpu), the team is bound one thread per CPU
// (PlaceTeam), unless GRIDSAMPLER3D_BIND_THREADS is 0 or OMP_PROC_BIND asks for OpenMP's
// own binding; a team bound before is unbound when the count changes to one that is not.
// Why: on a 2-vCPU virtual machine, after the caller's thread had run alone for a while (a
// single-threaded PyTorch kernel, or Python code), the guest's scheduler kept a worker's two
// threads on one vCPU for much of the next call, up to twice as slow (performance.md).
void ApplyKernelThreadCount();

// Unbinds the calling worker's team, if bound; each stream's worker calls it as it ends.
// libomp hands a finished thread's team threads to later teams of other threads, which
// would then inherit their one-CPU binding.
void ReleaseKernelThreads();

// Whether a team of `threads` takes every CPU of `allowed`, two or more. Only such a team is
// bound: on a larger machine, binding would crowd a few CPUs (another process doing the same
// would pick the same ones).
bool TakesEveryCpu(int threads, const cpu_set_t& allowed);

// Places the calling thread's OpenMP team of `threads` (its master and the workers OpenMP
// keeps for it): with one_per_cpu, member i on the i-th CPU of `allowed` alone (false, and
// nothing done, where `allowed` has fewer CPUs than the team); else every member on all of
// `allowed`. Returns whether every member was placed.
bool PlaceTeam(int threads, const cpu_set_t& allowed, bool one_per_cpu);

}  // namespace gs3d
