// The number of OpenMP threads the kernels use (gs3dSetNumThreads), process-wide.
#pragma once

namespace gs3d {

// Sets the calling thread's OpenMP thread count to the one asked for. Each stream's worker
// calls it before each task: OpenMP's setting is per thread, so setting it on the caller's
// thread would not reach the workers.
void ApplyKernelThreadCount();

}  // namespace gs3d
