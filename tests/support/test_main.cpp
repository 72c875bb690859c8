// The main of the test programs that use the ACL session.
#include <gtest/gtest.h>

#include "support/op_runner.h"

int main(int argc, char** argv) {
    ::testing::InitGoogleTest(&argc, argv);
    gs3d_test::RegisterAclSession();
    return RUN_ALL_TESTS();
}
