// Device and host memory. The "device" is the CPU, so both are host memory; each allocation
// is remembered with its size so that frees of foreign pointers and copies that overrun an
// allocation are refused with a clear error instead of corrupting memory.
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <map>
#include <mutex>

#include "acl/acl.h"
#include "runtime/raw_enum.h"
#include "runtime/recent_error.h"
#include "runtime/runtime_state.h"

namespace gs3d {
namespace {

enum class MemoryKind { kDevice, kHost };
struct Allocation {
    size_t size;
    MemoryKind kind;
};

// Cache-line alignment, also what SIMD loads like best.
constexpr size_t kAlignment = 64;

std::mutex allocations_mutex;
std::map<const char*, Allocation>& Allocations() {
    static std::map<const char*, Allocation> allocations;
    return allocations;
}

aclError Allocate(const char* api, void** ptr, size_t size, MemoryKind kind) {
    if (!RuntimeInitialized()) return RecordError(ACL_ERROR_UNINITIALIZE, "%s: call aclInit first", api);
    if (!ptr) return RecordError(ACL_ERROR_INVALID_PARAM, "%s: the pointer to the result is null", api);
    if (size == 0) return RecordError(ACL_ERROR_INVALID_PARAM, "%s: size is 0", api);
    size_t rounded = (size + kAlignment - 1) / kAlignment * kAlignment;
    if (rounded < size) return RecordError(ACL_ERROR_BAD_ALLOC, "%s: %zu bytes cannot be allocated", api, size);
    void* memory = std::aligned_alloc(kAlignment, rounded);
    if (!memory) return RecordError(ACL_ERROR_BAD_ALLOC, "%s: out of memory allocating %zu bytes", api, size);
    std::lock_guard<std::mutex> lock(allocations_mutex);
    Allocations()[static_cast<const char*>(memory)] = Allocation{size, kind};
    *ptr = memory;
    return ACL_SUCCESS;
}

aclError Release(const char* api, void* ptr, MemoryKind kind) {
    // Allowed after aclFinalize, so that clean-up code never leaks.
    if (!ptr) return RecordError(ACL_ERROR_INVALID_PARAM, "%s: pointer is null", api);
    std::lock_guard<std::mutex> lock(allocations_mutex);
    auto it = Allocations().find(static_cast<const char*>(ptr));
    if (it == Allocations().end() || it->second.kind != kind)
        return RecordError(ACL_ERROR_INVALID_PARAM, "%s: %p was not allocated by %s", api, ptr,
                           kind == MemoryKind::kDevice ? "aclrtMalloc" : "aclrtMallocHost");
    Allocations().erase(it);
    std::free(ptr);
    return ACL_SUCCESS;
}

// Whether [ptr, ptr + count) lies inside one allocation of the given kind.
bool InsideAllocation(const void* ptr, size_t count, MemoryKind kind) {
    const char* p = static_cast<const char*>(ptr);
    std::lock_guard<std::mutex> lock(allocations_mutex);
    auto it = Allocations().upper_bound(p);
    if (it == Allocations().begin()) return false;
    --it;
    if (it->second.kind != kind) return false;
    size_t start = static_cast<size_t>(p - it->first);
    return start <= it->second.size && count <= it->second.size - start;
}

}  // namespace
}  // namespace gs3d

using gs3d::MemoryKind;
using gs3d::RecordError;

extern "C" {

aclError aclrtMalloc(void** devPtr, size_t size, aclrtMemMallocPolicy policy_value) {
    const int policy = gs3d::RawEnum(policy_value);
    if (policy != ACL_MEM_MALLOC_HUGE_FIRST && policy != ACL_MEM_MALLOC_HUGE_ONLY &&
        policy != ACL_MEM_MALLOC_NORMAL_ONLY)
        return RecordError(ACL_ERROR_INVALID_PARAM, "aclrtMalloc: unknown policy %d", policy);
    return gs3d::Allocate("aclrtMalloc", devPtr, size, MemoryKind::kDevice);
}

aclError aclrtFree(void* devPtr) { return gs3d::Release("aclrtFree", devPtr, MemoryKind::kDevice); }

aclError aclrtMallocHost(void** hostPtr, size_t size) {
    return gs3d::Allocate("aclrtMallocHost", hostPtr, size, MemoryKind::kHost);
}

aclError aclrtFreeHost(void* hostPtr) { return gs3d::Release("aclrtFreeHost", hostPtr, MemoryKind::kHost); }

aclError aclrtMemset(void* devPtr, size_t maxCount, int32_t value, size_t count) {
    if (!gs3d::RuntimeInitialized()) return RecordError(ACL_ERROR_UNINITIALIZE, "aclrtMemset: call aclInit first");
    if (!devPtr) return RecordError(ACL_ERROR_INVALID_PARAM, "aclrtMemset: devPtr is null");
    if (count > maxCount)
        return RecordError(ACL_ERROR_INVALID_PARAM, "aclrtMemset: count %zu exceeds maxCount %zu", count, maxCount);
    if (!gs3d::InsideAllocation(devPtr, count, MemoryKind::kDevice) &&
        !gs3d::InsideAllocation(devPtr, count, MemoryKind::kHost))
        return RecordError(ACL_ERROR_INVALID_PARAM,
                           "aclrtMemset: [%p, +%zu) is not inside memory from aclrtMalloc or aclrtMallocHost", devPtr,
                           count);
    std::memset(devPtr, value, count);
    return ACL_SUCCESS;
}

aclError aclrtMemcpy(void* dst, size_t destMax, const void* src, size_t count, aclrtMemcpyKind kind_value) {
    const int kind = gs3d::RawEnum(kind_value);
    if (!gs3d::RuntimeInitialized()) return RecordError(ACL_ERROR_UNINITIALIZE, "aclrtMemcpy: call aclInit first");
    if (kind < ACL_MEMCPY_HOST_TO_HOST || kind > ACL_MEMCPY_DEFAULT)
        return RecordError(ACL_ERROR_INVALID_PARAM, "aclrtMemcpy: unknown copy kind %d", kind);
    if (!dst || !src) return RecordError(ACL_ERROR_INVALID_PARAM, "aclrtMemcpy: %s is null", dst ? "src" : "dst");
    if (count > destMax)
        return RecordError(ACL_ERROR_INVALID_PARAM, "aclrtMemcpy: count %zu exceeds the destination size destMax %zu",
                           count, destMax);
    if (count == 0) return ACL_SUCCESS;
    // The device side of a copy must be device memory, and the whole range inside it.
    bool dst_on_device = kind == ACL_MEMCPY_HOST_TO_DEVICE || kind == ACL_MEMCPY_DEVICE_TO_DEVICE;
    bool src_on_device = kind == ACL_MEMCPY_DEVICE_TO_HOST || kind == ACL_MEMCPY_DEVICE_TO_DEVICE;
    if (dst_on_device && !gs3d::InsideAllocation(dst, count, MemoryKind::kDevice))
        return RecordError(ACL_ERROR_INVALID_PARAM, "aclrtMemcpy: dst [%p, +%zu) is not inside memory from aclrtMalloc",
                           dst, count);
    if (src_on_device && !gs3d::InsideAllocation(src, count, MemoryKind::kDevice))
        return RecordError(ACL_ERROR_INVALID_PARAM, "aclrtMemcpy: src [%p, +%zu) is not inside memory from aclrtMalloc",
                           src, count);
    std::memmove(dst, src, count);
    return ACL_SUCCESS;
}

}  // extern "C"
