// A stream: an in-order queue of host tasks run asynchronously by one worker thread, the CPU
// counterpart of an Ascend stream.
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

namespace gs3d {

class Stream {
 public:
    Stream();
    ~Stream();  // runs what is queued, then joins the worker
    Stream(const Stream&) = delete;
    Stream& operator=(const Stream&) = delete;

    void Enqueue(std::function<void()> task);

    // Waits until every task enqueued before the call has run. Returns false, with the
    // failure's message, when a task failed since the last Synchronize.
    bool Synchronize(std::string* failure);

 private:
    void WorkerLoop();

    std::mutex mutex_;
    std::condition_variable work_ready_;
    std::condition_variable drained_;
    std::deque<std::function<void()>> queue_;
    bool running_task_ = false;
    bool stopping_ = false;
    std::string failure_;
    std::thread worker_;
};

// Streams handed out by aclrtCreateStream, so that a destroyed or foreign handle is refused
// instead of dereferenced. The null handle names the default stream.
Stream* CreateRegisteredStream();
bool DestroyRegisteredStream(void* handle);  // false when handle is not a live stream
Stream* LookupStream(void* handle);          // null handle: the default stream; nullptr if not live
void SynchronizeAllStreams();
void DestroyDefaultStream();

}  // namespace gs3d
