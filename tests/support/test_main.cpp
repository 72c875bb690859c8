// The main of the test programs that use the ACL session.
#include <gtest/gtest.h>

#include "support/op_runner.h"
#include "support/simd_target.h"

int main(int argc, char** argv) {
    ::testing::InitGoogleTest(&argc, argv);
    if (!gs3d_test::ForceSimdTargetFromEnvironment()) return 2;
    gs3d_test::RegisterAclSession();
    return RUN_ALL_TESTS();
}
