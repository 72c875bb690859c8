// Prints the SIMD targets, other than the best, that the suites can be run on
// (GS3D_TEST_SIMD_TARGET), separated by ';' for run_on_other_targets.cmake.
#include <cstdio>

#include "support/simd_target.h"

int main() {
    const char* separator = "";
    for (const std::string& name : gs3d_test::OtherSimdTargets()) {
        std::printf("%s%s", separator, name.c_str());
        separator = ";";
    }
    std::printf("\n");
    return 0;
}
