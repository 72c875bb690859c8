// The runtime API: initialisation, the device, memory and copies, streams, context options
// and the recent error message. Each test starts and ends uninitialised.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "acl/acl.h"

namespace {

std::string RecentMessage() {
    const char* message = aclGetRecentErrMsg();
    return message ? message : "";
}

class Initialised : public ::testing::Test {
 protected:
    void SetUp() override { ASSERT_EQ(aclInit(nullptr), ACL_SUCCESS); }
    void TearDown() override { ASSERT_EQ(aclFinalize(), ACL_SUCCESS); }
};

TEST(Init, RepeatInitAndFinalizeWithoutInit) {
    EXPECT_EQ(aclFinalize(), ACL_ERROR_UNINITIALIZE);
    ASSERT_EQ(aclInit(nullptr), ACL_SUCCESS);
    EXPECT_EQ(aclInit(nullptr), ACL_ERROR_REPEAT_INITIALIZE);
    EXPECT_NE(RecentMessage().find("already"), std::string::npos);
    ASSERT_EQ(aclFinalize(), ACL_SUCCESS);
    ASSERT_EQ(aclInit(nullptr), ACL_SUCCESS);  // init again after finalize
    ASSERT_EQ(aclFinalize(), ACL_SUCCESS);
}

TEST(Init, CallsBeforeInitAreRefused) {
    void* ptr = nullptr;
    aclrtStream stream = nullptr;
    int64_t value = 0;
    EXPECT_EQ(aclrtSetDevice(0), ACL_ERROR_UNINITIALIZE);
    EXPECT_EQ(aclrtMalloc(&ptr, 16, ACL_MEM_MALLOC_HUGE_FIRST), ACL_ERROR_UNINITIALIZE);
    EXPECT_EQ(aclrtCreateStream(&stream), ACL_ERROR_UNINITIALIZE);
    EXPECT_EQ(aclrtSynchronizeStream(nullptr), ACL_ERROR_UNINITIALIZE);
    EXPECT_EQ(aclrtCtxGetSysParamOpt(ACL_OPT_DETERMINISTIC, &value), ACL_ERROR_UNINITIALIZE);
    EXPECT_NE(RecentMessage().find("aclInit"), std::string::npos);
}

TEST_F(Initialised, DeviceZeroIsTheCpu) {
    int32_t device = -1;
    EXPECT_EQ(aclrtGetDevice(&device), ACL_ERROR_INVALID_DEVICE);  // none set yet
    EXPECT_EQ(aclrtSetDevice(1), ACL_ERROR_INVALID_DEVICE);
    EXPECT_NE(RecentMessage().find("device 1"), std::string::npos);
    EXPECT_EQ(aclrtSetDevice(0), ACL_SUCCESS);
    EXPECT_EQ(aclrtGetDevice(&device), ACL_SUCCESS);
    EXPECT_EQ(device, 0);
    EXPECT_EQ(aclrtGetDevice(nullptr), ACL_ERROR_INVALID_PARAM);
    EXPECT_EQ(aclrtResetDevice(7), ACL_ERROR_INVALID_DEVICE);
    EXPECT_EQ(aclrtResetDevice(0), ACL_SUCCESS);
    EXPECT_EQ(aclrtGetDevice(&device), ACL_ERROR_INVALID_DEVICE);
}

TEST_F(Initialised, MallocFreeAndMemset) {
    void* ptr = nullptr;
    ASSERT_EQ(aclrtMalloc(&ptr, 100, ACL_MEM_MALLOC_NORMAL_ONLY), ACL_SUCCESS);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(ptr) % 64, 0u);
    EXPECT_EQ(aclrtMemset(ptr, 100, 0x5a, 100), ACL_SUCCESS);
    EXPECT_EQ(static_cast<unsigned char*>(ptr)[99], 0x5a);
    EXPECT_EQ(aclrtMemset(ptr, 50, 0, 60), ACL_ERROR_INVALID_PARAM);    // count > maxCount
    EXPECT_EQ(aclrtMemset(ptr, 200, 0, 101), ACL_ERROR_INVALID_PARAM);  // past the allocation
    EXPECT_EQ(aclrtFree(ptr), ACL_SUCCESS);
    EXPECT_EQ(aclrtFree(ptr), ACL_ERROR_INVALID_PARAM);  // double free is refused, not a crash
    int local = 0;
    EXPECT_EQ(aclrtFree(&local), ACL_ERROR_INVALID_PARAM);
    EXPECT_EQ(aclrtMalloc(&ptr, 0, ACL_MEM_MALLOC_HUGE_FIRST), ACL_ERROR_INVALID_PARAM);
    EXPECT_EQ(aclrtMalloc(nullptr, 8, ACL_MEM_MALLOC_HUGE_FIRST), ACL_ERROR_INVALID_PARAM);
    EXPECT_EQ(aclrtMalloc(&ptr, 8, static_cast<aclrtMemMallocPolicy>(9)), ACL_ERROR_INVALID_PARAM);
    EXPECT_EQ(aclrtMalloc(&ptr, SIZE_MAX - 8, ACL_MEM_MALLOC_HUGE_FIRST), ACL_ERROR_BAD_ALLOC);
}

// The kernel's flags of the mapping that holds `address` (/proc/self/smaps "VmFlags:", two
// letters each; "hg": huge pages asked for by madvise), or "" where it has none.
std::string MappingFlags(const void* address) {
    const auto at = reinterpret_cast<uintptr_t>(address);
    std::ifstream smaps("/proc/self/smaps");
    std::string line;
    bool inside = false;
    while (std::getline(smaps, line)) {
        unsigned long long start = 0, end = 0;
        if (std::sscanf(line.c_str(), "%llx-%llx ", &start, &end) == 2 && line.find(' ') > line.find('-'))
            inside = start <= at && at < end;
        else if (inside && line.rfind("VmFlags:", 0) == 0)
            return line.substr(8) + " ";
    }
    return "";
}
bool AskedForHugePages(const void* address) { return MappingFlags(address).find(" hg ") != std::string::npos; }

// Whether this kernel gives transparent huge pages to a mapping that asks (mode "always" or
// "madvise"), read independently of the library.
bool KernelHasHugePages() {
    std::ifstream file("/sys/kernel/mm/transparent_hugepage/enabled");
    std::string modes;
    std::getline(file, modes);
    return modes.find("[always]") != std::string::npos || modes.find("[madvise]") != std::string::npos;
}

// aclrtMalloc's policy as CANN documents it: HUGE_FIRST above 1 MiB and HUGE_ONLY in huge
// pages, 2 MiB-aligned; HUGE_FIRST up to 1 MiB and NORMAL_ONLY in normal pages.
TEST_F(Initialised, MallocHonoursThePagePolicy) {
    constexpr uintptr_t kHugePage = uintptr_t{2} << 20;
    const bool huge_pages = KernelHasHugePages();
    const size_t big = (size_t{5} << 20) + 3;  // not a multiple of the huge page

    void* huge_first = nullptr;
    ASSERT_EQ(aclrtMalloc(&huge_first, big, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(huge_first) % kHugePage, 0u);
    EXPECT_EQ(AskedForHugePages(huge_first), huge_pages) << MappingFlags(huge_first);
    // Every byte asked for is usable, and the allocation still ends at its size for the
    // runtime's checks.
    EXPECT_EQ(aclrtMemset(huge_first, big, 0x3c, big), ACL_SUCCESS);
    EXPECT_EQ(static_cast<unsigned char*>(huge_first)[big - 1], 0x3c);
    EXPECT_EQ(aclrtMemset(huge_first, big + 1, 0, big + 1), ACL_ERROR_INVALID_PARAM);

    void* small = nullptr;  // up to 1 MiB: normal pages, as CANN's HUGE_FIRST
    ASSERT_EQ(aclrtMalloc(&small, size_t{1} << 20, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS);
    EXPECT_FALSE(AskedForHugePages(small)) << MappingFlags(small);
    void* normal = nullptr;
    ASSERT_EQ(aclrtMalloc(&normal, big, ACL_MEM_MALLOC_NORMAL_ONLY), ACL_SUCCESS);
    EXPECT_FALSE(AskedForHugePages(normal)) << MappingFlags(normal);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(normal) % 64, 0u);

    void* huge_only = nullptr;  // any size; refused where the kernel has no huge pages
    if (huge_pages) {
        ASSERT_EQ(aclrtMalloc(&huge_only, 100, ACL_MEM_MALLOC_HUGE_ONLY), ACL_SUCCESS);
        EXPECT_EQ(reinterpret_cast<uintptr_t>(huge_only) % kHugePage, 0u);
        EXPECT_TRUE(AskedForHugePages(huge_only)) << MappingFlags(huge_only);
        EXPECT_EQ(aclrtMemset(huge_only, 101, 0, 101), ACL_ERROR_INVALID_PARAM);  // 100 bytes, not 2 MiB
        EXPECT_EQ(aclrtFree(huge_only), ACL_SUCCESS);
    } else {
        EXPECT_EQ(aclrtMalloc(&huge_only, 100, ACL_MEM_MALLOC_HUGE_ONLY), ACL_ERROR_BAD_ALLOC);
        EXPECT_NE(RecentMessage().find("HUGE_ONLY"), std::string::npos);
    }
    EXPECT_EQ(aclrtFree(huge_first), ACL_SUCCESS);
    EXPECT_EQ(aclrtFree(huge_first), ACL_ERROR_INVALID_PARAM);  // freed once only
    EXPECT_EQ(aclrtFree(small), ACL_SUCCESS);
    EXPECT_EQ(aclrtFree(normal), ACL_SUCCESS);
    EXPECT_EQ(aclrtMalloc(&huge_first, SIZE_MAX - (size_t{3} << 20), ACL_MEM_MALLOC_HUGE_FIRST), ACL_ERROR_BAD_ALLOC);
}

TEST_F(Initialised, HostMemoryIsSeparate) {
    void* host = nullptr;
    ASSERT_EQ(aclrtMallocHost(&host, 32), ACL_SUCCESS);
    EXPECT_EQ(aclrtFree(host), ACL_ERROR_INVALID_PARAM);  // not device memory
    EXPECT_EQ(aclrtFreeHost(host), ACL_SUCCESS);
}

TEST_F(Initialised, MemcpyEveryKind) {
    void *a = nullptr, *b = nullptr;
    ASSERT_EQ(aclrtMalloc(&a, 64, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS);
    ASSERT_EQ(aclrtMalloc(&b, 64, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS);
    std::vector<unsigned char> host(64), back(64);
    for (int i = 0; i < 64; ++i) host[i] = static_cast<unsigned char>(i * 3);
    EXPECT_EQ(aclrtMemcpy(a, 64, host.data(), 64, ACL_MEMCPY_HOST_TO_DEVICE), ACL_SUCCESS);
    EXPECT_EQ(aclrtMemcpy(b, 64, a, 64, ACL_MEMCPY_DEVICE_TO_DEVICE), ACL_SUCCESS);
    EXPECT_EQ(aclrtMemcpy(back.data(), 64, b, 64, ACL_MEMCPY_DEVICE_TO_HOST), ACL_SUCCESS);
    EXPECT_EQ(back, host);
    std::vector<unsigned char> other(64);
    EXPECT_EQ(aclrtMemcpy(other.data(), 64, host.data(), 64, ACL_MEMCPY_HOST_TO_HOST), ACL_SUCCESS);
    EXPECT_EQ(other, host);
    EXPECT_EQ(aclrtMemcpy(other.data(), 64, a, 32, ACL_MEMCPY_DEFAULT), ACL_SUCCESS);
    EXPECT_EQ(aclrtFree(a), ACL_SUCCESS);
    EXPECT_EQ(aclrtFree(b), ACL_SUCCESS);
}

TEST_F(Initialised, MemcpyRefusesOverruns) {
    void* a = nullptr;
    ASSERT_EQ(aclrtMalloc(&a, 64, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS);
    std::vector<unsigned char> host(128);
    EXPECT_EQ(aclrtMemcpy(a, 64, host.data(), 65, ACL_MEMCPY_HOST_TO_DEVICE), ACL_ERROR_INVALID_PARAM);
    EXPECT_NE(RecentMessage().find("exceeds the destination size"), std::string::npos);
    // destMax lies: the device allocation is only 64 bytes.
    EXPECT_EQ(aclrtMemcpy(a, 128, host.data(), 128, ACL_MEMCPY_HOST_TO_DEVICE), ACL_ERROR_INVALID_PARAM);
    EXPECT_EQ(aclrtMemcpy(host.data(), 128, static_cast<char*>(a) + 32, 64, ACL_MEMCPY_DEVICE_TO_HOST),
              ACL_ERROR_INVALID_PARAM);
    EXPECT_EQ(aclrtMemcpy(a, 64, host.data(), 8, static_cast<aclrtMemcpyKind>(5)), ACL_ERROR_INVALID_PARAM);
    EXPECT_EQ(aclrtMemcpy(nullptr, 64, host.data(), 8, ACL_MEMCPY_HOST_TO_HOST), ACL_ERROR_INVALID_PARAM);
    EXPECT_EQ(aclrtMemcpy(host.data(), 64, host.data() + 64, 0, ACL_MEMCPY_HOST_TO_HOST), ACL_SUCCESS);
    EXPECT_EQ(aclrtFree(a), ACL_SUCCESS);
}

TEST_F(Initialised, StreamsCreateSyncDestroy) {
    aclrtStream stream = nullptr;
    ASSERT_EQ(aclrtCreateStream(&stream), ACL_SUCCESS);
    EXPECT_NE(stream, nullptr);
    EXPECT_EQ(aclrtSynchronizeStream(stream), ACL_SUCCESS);
    EXPECT_EQ(aclrtSynchronizeStream(nullptr), ACL_SUCCESS);  // the default stream
    EXPECT_EQ(aclrtDestroyStream(stream), ACL_SUCCESS);
    EXPECT_EQ(aclrtDestroyStream(stream), ACL_ERROR_INVALID_PARAM);
    EXPECT_EQ(aclrtSynchronizeStream(stream), ACL_ERROR_INVALID_PARAM);
    EXPECT_EQ(aclrtDestroyStream(nullptr), ACL_ERROR_INVALID_PARAM);
    EXPECT_EQ(aclrtCreateStream(nullptr), ACL_ERROR_INVALID_PARAM);
}

TEST_F(Initialised, DeterministicOption) {
    int64_t value = -1;
    EXPECT_EQ(aclrtCtxGetSysParamOpt(ACL_OPT_DETERMINISTIC, &value), ACL_SUCCESS);
    EXPECT_EQ(value, 0);
    EXPECT_EQ(aclrtCtxSetSysParamOpt(ACL_OPT_DETERMINISTIC, 1), ACL_SUCCESS);
    EXPECT_EQ(aclrtCtxGetSysParamOpt(ACL_OPT_DETERMINISTIC, &value), ACL_SUCCESS);
    EXPECT_EQ(value, 1);
    EXPECT_EQ(aclrtCtxSetSysParamOpt(ACL_OPT_DETERMINISTIC, 2), ACL_ERROR_INVALID_PARAM);
    EXPECT_EQ(aclrtCtxSetSysParamOpt(static_cast<aclSysParamOpt>(9), 1), ACL_ERROR_INVALID_PARAM);
    EXPECT_EQ(aclrtCtxGetSysParamOpt(ACL_OPT_DETERMINISTIC, nullptr), ACL_ERROR_INVALID_PARAM);
    EXPECT_EQ(aclrtCtxSetSysParamOpt(ACL_OPT_DETERMINISTIC, 0), ACL_SUCCESS);
}

TEST(RecentError, ReadClearsAndIsPerThread) {
    EXPECT_EQ(aclrtSetDevice(0), ACL_ERROR_UNINITIALIZE);
    const std::string first = RecentMessage();
    EXPECT_NE(first.find("aclrtSetDevice"), std::string::npos);
    EXPECT_NE(first.find("100001"), std::string::npos);
    EXPECT_EQ(aclGetRecentErrMsg(), nullptr);  // read once, then cleared
    EXPECT_EQ(aclrtSetDevice(0), ACL_ERROR_UNINITIALIZE);
    std::string other_thread = "unset";
    std::thread([&] {
        const char* m = aclGetRecentErrMsg();
        other_thread = m ? m : "";
    }).join();
    EXPECT_EQ(other_thread, "");  // another thread's error is not ours
    EXPECT_FALSE(RecentMessage().empty());
}

}  // namespace
