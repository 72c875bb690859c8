#include "ops/executor.h"

#include <cstring>
#include <memory>
#include <mutex>
#include <new>
#include <set>
#include <utility>

#include "runtime/recent_error.h"
#include "runtime/runtime_state.h"
#include "runtime/stream.h"

namespace gs3d {
namespace {
// Executors not yet launched: a second launch of the same pointer is refused, not run.
std::mutex executors_mutex;
std::set<aclOpExecutor*>& LiveExecutors() {
    static std::set<aclOpExecutor*> executors;
    return executors;
}

bool TakeExecutor(aclOpExecutor* executor) {
    std::lock_guard<std::mutex> lock(executors_mutex);
    return LiveExecutors().erase(executor) == 1;
}
}  // namespace

aclOpExecutor* NewExecutor(const char* op_name, uint64_t workspace_bytes, std::function<void(void*)> run) {
    auto* executor = new (std::nothrow) aclOpExecutor{op_name, workspace_bytes, std::move(run)};
    if (!executor) return nullptr;
    std::lock_guard<std::mutex> lock(executors_mutex);
    LiveExecutors().insert(executor);
    return executor;
}

aclnnStatus LaunchExecutor(const char* op_name, void* workspace, uint64_t workspace_size, aclOpExecutor* executor,
                           aclrtStream stream) {
    if (!executor) return RecordError(ACLNN_ERR_PARAM_NULLPTR, "%s: executor is null", op_name);
    if (!TakeExecutor(executor))
        return RecordError(ACLNN_ERR_PARAM_INVALID,
                           "%s: executor %p is not live (already launched, or not from GetWorkspaceSize)", op_name,
                           static_cast<void*>(executor));
    std::shared_ptr<aclOpExecutor> owned(executor);
    if (std::strcmp(owned->op_name, op_name) != 0)
        return RecordError(ACLNN_ERR_PARAM_INVALID, "%s: executor was built for %s", op_name, owned->op_name);
    if (workspace_size < owned->workspace_bytes)
        return RecordError(ACLNN_ERR_PARAM_INVALID, "%s: workspaceSize %llu is smaller than the %llu bytes required",
                           op_name, (unsigned long long)workspace_size, (unsigned long long)owned->workspace_bytes);
    if (owned->workspace_bytes > 0 && !workspace)
        return RecordError(ACLNN_ERR_PARAM_NULLPTR, "%s: workspace is null but %llu bytes are required", op_name,
                           (unsigned long long)owned->workspace_bytes);
    if (!RuntimeInitialized()) return RecordError(ACLNN_ERR_RUNTIME_ERROR, "%s: call aclInit first", op_name);
    Stream* target = LookupStream(stream);
    if (!target) return RecordError(ACLNN_ERR_PARAM_INVALID, "%s: stream %p is not a live stream", op_name, stream);
    target->Enqueue([owned, workspace] { owned->run(workspace); });
    return ACLNN_SUCCESS;
}

}  // namespace gs3d
