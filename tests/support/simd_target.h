// Choosing the SIMD target the library dispatches to, so that the suites run on every target
// compiled into it (AVX-512, AVX2, SSE4, scalar), not only this CPU's best.
#pragma once

namespace gs3d_test {

// If the environment names a target (GS3D_TEST_SIMD_TARGET=AVX2, as Highway's TargetName
// spells it), disables every better one, so that the library's dynamic dispatch (Highway's
// chosen target, shared through libhwy) picks it. Returns false, with the reason on stderr,
// when that target is not compiled or this CPU lacks it; true otherwise.
bool ForceSimdTargetFromEnvironment();

}  // namespace gs3d_test
