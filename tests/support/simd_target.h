// Choosing the SIMD target the library dispatches to, so that the suites run on every target
// compiled into it (on x86: AVX-512, AVX2, SSE4 and the portable fallback), not only this CPU's
// best.
#pragma once

#include <functional>
#include <string>
#include <vector>

namespace gs3d_test {

// The targets compiled into the kernels that this CPU supports, as Highway names them, except
// the best one (what the suites run on by default): the ones GS3D_TEST_SIMD_TARGET can name.
// Taken from Highway, so the list fits any compiler and architecture (EMU128 or SCALAR for
// the portable fallback, NEON and SVE on Arm).
std::vector<std::string> OtherSimdTargets();

// If the environment names a target (GS3D_TEST_SIMD_TARGET=AVX2, as Highway's TargetName
// spells it), disables every better one, so that the library's dynamic dispatch (Highway's
// chosen target, shared through libhwy) picks it. Returns false, with the reason on stderr,
// when that target is not compiled or this CPU lacks it; true otherwise.
bool ForceSimdTargetFromEnvironment();

// Calls run(name) once on each target the library can dispatch to here (this CPU's best
// first), the dispatch pointed at that target alone; then points it back at the targets it
// had (GS3D_TEST_SIMD_TARGET's choice included).
void ForEachSimdTarget(const std::function<void(const std::string&)>& run);

}  // namespace gs3d_test
