// Device and host memory. The "device" is the CPU, so both are host memory; each allocation
// is remembered with its size so that frees of foreign pointers and copies that overrun an
// allocation are refused with a clear error instead of corrupting memory.
//
// aclrtMalloc's policy is honoured as CANN documents it, with the kernel's transparent huge
// pages (THP) for the device's 2 MiB pages: HUGE_FIRST above 1 MiB and HUGE_ONLY map their
// own 2 MiB-aligned region, its size rounded up to 2 MiB, and ask for huge pages there
// (madvise MADV_HUGEPAGE), which the kernel gives where it can. Why: the kernels' noisy
// gathers and scatters touch lines all over a volume, and with 4 KiB pages many of them also
// miss the TLB (measured in docs/performance.md). HUGE_ONLY fails where the kernel has huge
// pages switched off; NORMAL_ONLY (and HUGE_FIRST up to 1 MiB) is aligned_alloc as before.
#include <sys/mman.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <map>
#include <mutex>
#include <string>

#include "acl/acl.h"
#include "runtime/raw_enum.h"
#include "runtime/recent_error.h"
#include "runtime/runtime_state.h"

// AddressSanitizer (GCC defines the first, Clang answers the second): a huge-page region's
// bytes past the size asked for are poisoned, so that overruns are still caught there.
#if defined(__SANITIZE_ADDRESS__)
#define GS3D_ADDRESS_SANITIZER 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define GS3D_ADDRESS_SANITIZER 1
#endif
#endif
#ifdef GS3D_ADDRESS_SANITIZER
#include <sanitizer/asan_interface.h>
#define GS3D_POISON(address, bytes) ASAN_POISON_MEMORY_REGION(address, bytes)
#define GS3D_UNPOISON(address, bytes) ASAN_UNPOISON_MEMORY_REGION(address, bytes)
#else
#define GS3D_POISON(address, bytes) ((void)(address), (void)(bytes))
#define GS3D_UNPOISON(address, bytes) ((void)(address), (void)(bytes))
#endif

namespace gs3d {
namespace {

enum class MemoryKind { kDevice, kHost };
struct Allocation {
    size_t size;
    MemoryKind kind;
    size_t mapped_bytes;  // a huge-page region of its own (munmap), or 0 (aligned_alloc)
};

// Cache-line alignment, also what SIMD loads like best.
constexpr size_t kAlignment = 64;
// The device's huge page, and CANN's size above which HUGE_FIRST asks for huge pages.
constexpr size_t kHugePageBytes = size_t{2} << 20;
constexpr size_t kHugeFirstAbove = size_t{1} << 20;

// Whether the kernel gives transparent huge pages to a region that asks (the mode in
// /sys/kernel/mm/transparent_hugepage/enabled is "always" or "madvise", not "never").
bool HugePagesAvailable() {
    std::ifstream file("/sys/kernel/mm/transparent_hugepage/enabled");
    std::string modes;
    std::getline(file, modes);
    return modes.find("[always]") != std::string::npos || modes.find("[madvise]") != std::string::npos;
}

// A region of `bytes` (a multiple of kHugePageBytes) aligned to kHugePageBytes, with huge
// pages asked for; null when the mapping fails, or (HUGE_ONLY) when no huge pages can be had.
void* MapHugePages(size_t bytes, bool huge_only) {
    if (huge_only && !HugePagesAvailable()) return nullptr;
    // Map one huge page more, then unmap the ends to leave an aligned region.
    const size_t span = bytes + kHugePageBytes;
    void* mapped = mmap(nullptr, span, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (mapped == MAP_FAILED) return nullptr;
    const auto start = reinterpret_cast<uintptr_t>(mapped);
    const uintptr_t aligned = (start + kHugePageBytes - 1) / kHugePageBytes * kHugePageBytes;
    if (aligned > start) munmap(mapped, aligned - start);
    if (const size_t tail = start + span - (aligned + bytes)) munmap(reinterpret_cast<void*>(aligned + bytes), tail);
    void* region = reinterpret_cast<void*>(aligned);
    if (madvise(region, bytes, MADV_HUGEPAGE) != 0 && huge_only) {
        munmap(region, bytes);
        return nullptr;
    }
    return region;
}

std::mutex allocations_mutex;
std::map<const char*, Allocation>& Allocations() {
    static std::map<const char*, Allocation> allocations;
    return allocations;
}

// Pages: kNormal (aclrtMallocHost, NORMAL_ONLY), kHugeFirst or kHugeOnly (aclrtMalloc's policy).
enum class Pages { kNormal, kHugeFirst, kHugeOnly };

aclError Allocate(const char* api, void** ptr, size_t size, MemoryKind kind, Pages pages) {
    if (!RuntimeInitialized()) return RecordError(ACL_ERROR_UNINITIALIZE, "%s: call aclInit first", api);
    if (!ptr) return RecordError(ACL_ERROR_INVALID_PARAM, "%s: the pointer to the result is null", api);
    if (size == 0) return RecordError(ACL_ERROR_INVALID_PARAM, "%s: size is 0", api);
    const bool huge = pages == Pages::kHugeOnly || (pages == Pages::kHugeFirst && size > kHugeFirstAbove);
    const size_t granule = huge ? kHugePageBytes : kAlignment;
    // The largest size whose rounding (and, huge, the mapping's extra page) does not overflow.
    if (size > SIZE_MAX - 2 * granule)
        return RecordError(ACL_ERROR_BAD_ALLOC, "%s: %zu bytes cannot be allocated", api, size);
    const size_t rounded = (size + granule - 1) / granule * granule;
    void* memory = huge ? MapHugePages(rounded, pages == Pages::kHugeOnly) : std::aligned_alloc(kAlignment, rounded);
    if (!memory && pages == Pages::kHugeOnly)
        return RecordError(ACL_ERROR_BAD_ALLOC,
                           "%s: ACL_MEM_MALLOC_HUGE_ONLY: no huge pages for %zu bytes (the kernel's transparent huge "
                           "pages may be switched off: /sys/kernel/mm/transparent_hugepage/enabled); "
                           "ACL_MEM_MALLOC_HUGE_FIRST falls back to normal pages",
                           api, size);
    if (!memory) return RecordError(ACL_ERROR_BAD_ALLOC, "%s: out of memory allocating %zu bytes", api, size);
    if (huge) GS3D_POISON(static_cast<char*>(memory) + size, rounded - size);
    std::lock_guard<std::mutex> lock(allocations_mutex);
    Allocations()[static_cast<const char*>(memory)] = Allocation{size, kind, huge ? rounded : 0};
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
    const size_t mapped_bytes = it->second.mapped_bytes;
    Allocations().erase(it);
    if (mapped_bytes) {
        GS3D_UNPOISON(ptr, mapped_bytes);
        munmap(ptr, mapped_bytes);
    } else {
        std::free(ptr);
    }
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
    const auto pages = policy == ACL_MEM_MALLOC_HUGE_FIRST  ? gs3d::Pages::kHugeFirst
                       : policy == ACL_MEM_MALLOC_HUGE_ONLY ? gs3d::Pages::kHugeOnly
                                                            : gs3d::Pages::kNormal;
    return gs3d::Allocate("aclrtMalloc", devPtr, size, MemoryKind::kDevice, pages);
}

aclError aclrtFree(void* devPtr) { return gs3d::Release("aclrtFree", devPtr, MemoryKind::kDevice); }

aclError aclrtMallocHost(void** hostPtr, size_t size) {
    return gs3d::Allocate("aclrtMallocHost", hostPtr, size, MemoryKind::kHost, gs3d::Pages::kNormal);
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
