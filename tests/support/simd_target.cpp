#include "support/simd_target.h"

#include <cstdio>
#include <cstdlib>
#include <string>

#include <hwy/targets.h>

namespace gs3d_test {

// This file is compiled with the library's HWY_DISABLED_TARGETS (tests/CMakeLists.txt), so
// HWY_TARGETS here is the set of targets compiled into the library's kernels.
std::vector<std::string> OtherSimdTargets() {
    std::vector<std::string> names;
    for (const int64_t target : hwy::SupportedAndGeneratedTargets()) names.push_back(hwy::TargetName(target));
    // Highway lists the best target first (the lowest bit).
    if (!names.empty()) names.erase(names.begin());
    return names;
}

bool ForceSimdTargetFromEnvironment() {
    const char* wanted = std::getenv("GS3D_TEST_SIMD_TARGET");
    if (wanted == nullptr || *wanted == '\0') return true;
    std::string available;
    for (const int64_t target : hwy::SupportedAndGeneratedTargets()) {
        if (wanted != std::string(hwy::TargetName(target))) {
            available += std::string(" ") + hwy::TargetName(target);
            continue;
        }
        // Highway numbers better targets with lower bits.
        hwy::DisableTargets(target - 1);
        const int64_t left = hwy::SupportedTargets() & HWY_TARGETS;
        // SupportedTargets (Highway 1.0) detects the CPU again and points the chosen target
        // at all it has; the dispatch must see the disabled ones gone.
        hwy::GetChosenTarget().Update(left);
        if ((left & -left) != target) {
            std::fprintf(stderr, "GS3D_TEST_SIMD_TARGET=%s: the best target left is %s\n", wanted,
                         hwy::TargetName(left & -left));
            return false;
        }
        std::fprintf(stderr, "SIMD target: %s (GS3D_TEST_SIMD_TARGET)\n", wanted);
        return true;
    }
    std::fprintf(stderr, "GS3D_TEST_SIMD_TARGET=%s: not compiled into the kernels or not supported by this CPU; "
                 "these are:%s\n", wanted, available.c_str());
    return false;
}

void ForEachSimdTarget(const std::function<void(const std::string&)>& run) {
    const int64_t before = hwy::SupportedTargets() & HWY_TARGETS;
    for (const int64_t target : hwy::SupportedAndGeneratedTargets()) {
        if ((before & target) == 0) continue;  // disabled by GS3D_TEST_SIMD_TARGET
        hwy::GetChosenTarget().Update(target);
        run(hwy::TargetName(target));
    }
    hwy::GetChosenTarget().Update(before);
}

}  // namespace gs3d_test
