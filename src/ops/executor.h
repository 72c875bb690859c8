// aclOpExecutor: the plan built by a GetWorkspaceSize call, run once by its launch.
#pragma once

#include <cstdint>
#include <functional>

#include "aclnn/aclnn_base.h"

struct aclOpExecutor {
    const char* op_name;                    // the launch API that may run it
    uint64_t workspace_bytes;               // what GetWorkspaceSize reported
    std::function<void(void* workspace)> run;  // the kernel call, with its views captured
};

namespace gs3d {

// Creates and registers an executor; nullptr when out of memory.
aclOpExecutor* NewExecutor(const char* op_name, uint64_t workspace_bytes, std::function<void(void*)> run);

// The second phase of every op: checks the executor (live, of this op), the workspace and
// the stream, then enqueues the run on the stream. The executor is consumed whatever the
// outcome, so that a failed launch leaks nothing; the outputs are untouched on failure.
aclnnStatus LaunchExecutor(const char* op_name, void* workspace, uint64_t workspace_size, aclOpExecutor* executor,
                           aclrtStream stream);

}  // namespace gs3d
