// aclInit/aclFinalize, the device (the CPU is device 0), streams and context options.
#include <atomic>
#include <mutex>
#include <string>

#include "acl/acl.h"
#include "runtime/raw_enum.h"
#include "runtime/recent_error.h"
#include "runtime/runtime_state.h"
#include "runtime/stream.h"

namespace gs3d {
namespace {
std::mutex init_mutex;
std::atomic<bool> initialized{false};
std::atomic<int> device_set_count{0};
std::atomic<int64_t> option_values[2] = {{0}, {0}};  // indexed by aclSysParamOpt
}  // namespace

bool RuntimeInitialized() { return initialized.load(); }
int64_t DeterministicOption() { return option_values[ACL_OPT_DETERMINISTIC].load(); }

}  // namespace gs3d

using gs3d::RecordError;

#define GS3D_REQUIRE_INIT(api)                                                                 \
    do {                                                                                       \
        if (!gs3d::RuntimeInitialized())                                                       \
            return RecordError(ACL_ERROR_UNINITIALIZE, "%s: call aclInit first", api);         \
    } while (0)

extern "C" {

aclError aclInit(const char* /*configPath: no settings are read on the CPU*/) {
    std::lock_guard<std::mutex> lock(gs3d::init_mutex);
    if (gs3d::initialized) return RecordError(ACL_ERROR_REPEAT_INITIALIZE, "aclInit: already initialised");
    gs3d::initialized = true;
    return ACL_SUCCESS;
}

aclError aclFinalize(void) {
    std::lock_guard<std::mutex> lock(gs3d::init_mutex);
    if (!gs3d::initialized) return RecordError(ACL_ERROR_UNINITIALIZE, "aclFinalize: aclInit was not called");
    gs3d::SynchronizeAllStreams();
    gs3d::DestroyDefaultStream();
    gs3d::device_set_count = 0;
    gs3d::initialized = false;
    return ACL_SUCCESS;
}

aclError aclrtSetDevice(int32_t deviceId) {
    GS3D_REQUIRE_INIT("aclrtSetDevice");
    if (deviceId != 0)
        return RecordError(ACL_ERROR_INVALID_DEVICE, "aclrtSetDevice: device %d does not exist (the CPU is device 0)",
                           deviceId);
    ++gs3d::device_set_count;
    return ACL_SUCCESS;
}

aclError aclrtResetDevice(int32_t deviceId) {
    GS3D_REQUIRE_INIT("aclrtResetDevice");
    if (deviceId != 0)
        return RecordError(ACL_ERROR_INVALID_DEVICE, "aclrtResetDevice: device %d does not exist (the CPU is device 0)",
                           deviceId);
    int count = gs3d::device_set_count.load();
    while (count > 0 && !gs3d::device_set_count.compare_exchange_weak(count, count - 1)) {
    }
    return ACL_SUCCESS;
}

aclError aclrtGetDevice(int32_t* deviceId) {
    GS3D_REQUIRE_INIT("aclrtGetDevice");
    if (!deviceId) return RecordError(ACL_ERROR_INVALID_PARAM, "aclrtGetDevice: deviceId is null");
    if (gs3d::device_set_count == 0)
        return RecordError(ACL_ERROR_INVALID_DEVICE, "aclrtGetDevice: no device is set (call aclrtSetDevice(0))");
    *deviceId = 0;
    return ACL_SUCCESS;
}

aclError aclrtCreateStream(aclrtStream* stream) {
    GS3D_REQUIRE_INIT("aclrtCreateStream");
    if (!stream) return RecordError(ACL_ERROR_INVALID_PARAM, "aclrtCreateStream: stream is null");
    *stream = gs3d::CreateRegisteredStream();
    return ACL_SUCCESS;
}

aclError aclrtDestroyStream(aclrtStream stream) {
    // Allowed after aclFinalize too, so that clean-up code never leaks a worker thread.
    if (!stream) return RecordError(ACL_ERROR_INVALID_PARAM, "aclrtDestroyStream: stream is null");
    if (!gs3d::DestroyRegisteredStream(stream))
        return RecordError(ACL_ERROR_INVALID_PARAM, "aclrtDestroyStream: %p is not a live stream", stream);
    return ACL_SUCCESS;
}

aclError aclrtSynchronizeStream(aclrtStream stream) {
    GS3D_REQUIRE_INIT("aclrtSynchronizeStream");
    gs3d::Stream* target = gs3d::LookupStream(stream);
    if (!target) return RecordError(ACL_ERROR_INVALID_PARAM, "aclrtSynchronizeStream: %p is not a live stream", stream);
    std::string failure;
    if (!target->Synchronize(&failure))
        return RecordError(ACL_ERROR_RT_FAILURE, "aclrtSynchronizeStream: %s", failure.c_str());
    return ACL_SUCCESS;
}

aclError aclrtCtxSetSysParamOpt(aclSysParamOpt opt_value, int64_t value) {
    const int opt = gs3d::RawEnum(opt_value);
    GS3D_REQUIRE_INIT("aclrtCtxSetSysParamOpt");
    if (opt != ACL_OPT_DETERMINISTIC && opt != ACL_OPT_ENABLE_DEBUG_KERNEL)
        return RecordError(ACL_ERROR_INVALID_PARAM, "aclrtCtxSetSysParamOpt: unknown option %d", opt);
    if (value != 0 && value != 1)
        return RecordError(ACL_ERROR_INVALID_PARAM, "aclrtCtxSetSysParamOpt: value must be 0 or 1, got %lld",
                           (long long)value);
    gs3d::option_values[opt] = value;
    return ACL_SUCCESS;
}

aclError aclrtCtxGetSysParamOpt(aclSysParamOpt opt_value, int64_t* value) {
    const int opt = gs3d::RawEnum(opt_value);
    GS3D_REQUIRE_INIT("aclrtCtxGetSysParamOpt");
    if (opt != ACL_OPT_DETERMINISTIC && opt != ACL_OPT_ENABLE_DEBUG_KERNEL)
        return RecordError(ACL_ERROR_INVALID_PARAM, "aclrtCtxGetSysParamOpt: unknown option %d", opt);
    if (!value) return RecordError(ACL_ERROR_INVALID_PARAM, "aclrtCtxGetSysParamOpt: value is null");
    *value = gs3d::option_values[opt];
    return ACL_SUCCESS;
}

}  // extern "C"
