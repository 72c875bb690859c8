// The runtime API: initialisation, the device, memory and copies, streams, context options
// and the recent error message. Each test starts and ends uninitialised.
#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <cstring>
#include <string>
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
