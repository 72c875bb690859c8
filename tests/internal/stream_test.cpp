// The stream: tasks run asynchronously on the worker, in order, and a failing task is
// reported by the next Synchronize without stopping the stream.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <stdexcept>
#include <string>
#include <cstdlib>
#include <thread>
#include <vector>

#include <omp.h>
#include <pthread.h>
#include <sched.h>

#include "gridsampler3d/cpu_device.h"
#include "runtime/kernel_threads.h"
#include "runtime/stream.h"

namespace gs3d {
namespace {

TEST(Stream, EnqueueReturnsBeforeTheTaskRuns) {
    Stream stream;
    std::atomic<bool> release{false}, ran{false};
    stream.Enqueue([&] {
        while (!release) std::this_thread::yield();  // blocks until the test releases it
        ran = true;
    });
    // Enqueue returned although the task cannot finish yet: it runs on another thread.
    EXPECT_FALSE(ran);
    release = true;
    EXPECT_TRUE(stream.Synchronize(nullptr));
    EXPECT_TRUE(ran);
}

TEST(Stream, TasksRunInOrderOnOneThread) {
    Stream stream;
    std::vector<int> order;
    std::thread::id first_id;
    for (int i = 0; i < 200; ++i)
        stream.Enqueue([&, i] {
            if (i == 0) first_id = std::this_thread::get_id();
            EXPECT_EQ(std::this_thread::get_id(), first_id);
            order.push_back(i);
        });
    ASSERT_TRUE(stream.Synchronize(nullptr));
    ASSERT_EQ(order.size(), 200u);
    for (int i = 0; i < 200; ++i) EXPECT_EQ(order[i], i);
    EXPECT_NE(first_id, std::this_thread::get_id());
}

TEST(Stream, FailureIsReportedOnceAndTheStreamGoesOn) {
    Stream stream;
    std::atomic<int> after{0};
    stream.Enqueue([] { throw std::runtime_error("boom"); });
    stream.Enqueue([&] { ++after; });
    std::string failure;
    EXPECT_FALSE(stream.Synchronize(&failure));
    EXPECT_NE(failure.find("boom"), std::string::npos);
    EXPECT_EQ(after, 1);
    EXPECT_TRUE(stream.Synchronize(&failure));
}

TEST(Stream, DestructionRunsWhatIsQueued) {
    std::atomic<int> count{0};
    {
        Stream stream;
        for (int i = 0; i < 50; ++i) stream.Enqueue([&] { ++count; });
    }
    EXPECT_EQ(count, 50);
}

// gs3dSetNumThreads reaches the workers of streams that already exist, and 0 restores the
// default that a thread which never changed its OpenMP setting has; the worker is bound to
// one CPU exactly while its team takes every CPU.
TEST(Stream, KernelThreadCountReachesTheWorker) {
    int default_count = 0;
    std::thread([&] { default_count = omp_get_max_threads(); }).join();
    // The worker starts on this thread's CPUs; a team that takes them all is bound one thread
    // per CPU (unless the environment turns binding off), any other count leaves it on all.
    cpu_set_t allowed;
    ASSERT_EQ(pthread_getaffinity_np(pthread_self(), sizeof allowed, &allowed), 0);
    const char* setting = std::getenv("GRIDSAMPLER3D_BIND_THREADS");
    const bool binding = !(setting && std::string(setting) == "0") && omp_get_proc_bind() == omp_proc_bind_false;
    Stream stream;
    auto worker_count = [&](int expected) {
        int seen = 0, cpus = 0;
        stream.Enqueue([&] {
            seen = omp_get_max_threads();
            cpu_set_t own;
            if (pthread_getaffinity_np(pthread_self(), sizeof own, &own) == 0) cpus = CPU_COUNT(&own);
        });
        EXPECT_TRUE(stream.Synchronize(nullptr));
        EXPECT_EQ(seen, expected);
        EXPECT_EQ(cpus, binding && TakesEveryCpu(expected, allowed) ? 1 : CPU_COUNT(&allowed)) << expected << " threads";
    };
    worker_count(default_count);
    for (int32_t wanted : {3, 1, 5, CPU_COUNT(&allowed), 1}) {
        ASSERT_EQ(gs3dSetNumThreads(wanted), ACL_SUCCESS);
        int32_t reported = 0;
        ASSERT_EQ(gs3dGetNumThreads(&reported), ACL_SUCCESS);
        EXPECT_EQ(reported, wanted);
        worker_count(wanted);
    }
    ASSERT_EQ(gs3dSetNumThreads(0), ACL_SUCCESS);
    worker_count(default_count);
    int32_t reported = 0;
    ASSERT_EQ(gs3dGetNumThreads(&reported), ACL_SUCCESS);
    EXPECT_EQ(reported, default_count);
}

// Each member's CPUs after a team of `threads` was placed, seen from a later region of the
// same thread (OpenMP keeps the team's threads for it).
std::vector<cpu_set_t> MemberCpus(int threads) {
    std::vector<cpu_set_t> cpus(threads);
#pragma omp parallel num_threads(threads)
    pthread_getaffinity_np(pthread_self(), sizeof(cpu_set_t), &cpus[omp_get_thread_num()]);
    return cpus;
}

// PlaceTeam binds member i to the i-th allowed CPU, and puts the members back on all of them;
// TakesEveryCpu says which teams are bound. On a fresh thread: its OpenMP team is its own.
TEST(Stream, PlaceTeamBindsOneMemberPerAllowedCpu) {
    std::thread([] {
        cpu_set_t allowed;
        ASSERT_EQ(pthread_getaffinity_np(pthread_self(), sizeof allowed, &allowed), 0);
        const int count = CPU_COUNT(&allowed);
        EXPECT_EQ(TakesEveryCpu(count, allowed), count >= 2);
        EXPECT_FALSE(TakesEveryCpu(count + 1, allowed));
        EXPECT_FALSE(TakesEveryCpu(1, allowed));
        if (count >= 2) EXPECT_FALSE(TakesEveryCpu(count - 1, allowed));
        EXPECT_FALSE(PlaceTeam(count + 1, allowed, true));  // more members than CPUs: nothing done
        for (const cpu_set_t& member : MemberCpus(count)) EXPECT_TRUE(CPU_EQUAL(&member, &allowed));
        ASSERT_TRUE(PlaceTeam(count, allowed, true));
        cpu_set_t seen;
        CPU_ZERO(&seen);
        for (const cpu_set_t& member : MemberCpus(count)) {
            cpu_set_t own = member;
            EXPECT_EQ(CPU_COUNT(&own), 1);
            CPU_AND(&own, &own, &allowed);
            EXPECT_EQ(CPU_COUNT(&own), 1) << "bound outside the allowed CPUs";
            cpu_set_t both;
            CPU_AND(&both, &own, &seen);
            EXPECT_EQ(CPU_COUNT(&both), 0) << "two members on one CPU";
            CPU_OR(&seen, &seen, &own);
        }
        EXPECT_TRUE(CPU_EQUAL(&seen, &allowed));
        ASSERT_TRUE(PlaceTeam(count, allowed, false));  // undone
        for (const cpu_set_t& member : MemberCpus(count)) EXPECT_TRUE(CPU_EQUAL(&member, &allowed));
    }).join();
}

TEST(Stream, KernelThreadCountRefusesBadArguments) {
    EXPECT_EQ(gs3dSetNumThreads(-1), ACL_ERROR_INVALID_PARAM);
    EXPECT_EQ(gs3dGetNumThreads(nullptr), ACL_ERROR_INVALID_PARAM);
    int32_t reported = 0;
    ASSERT_EQ(gs3dGetNumThreads(&reported), ACL_SUCCESS);
    EXPECT_GT(reported, 0);  // the refused call changed nothing
}

}  // namespace
}  // namespace gs3d
