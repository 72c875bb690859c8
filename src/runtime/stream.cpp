#include "runtime/stream.h"

#include <exception>
#include <memory>
#include <set>
#include <utility>

#include "runtime/kernel_threads.h"

namespace gs3d {

Stream::Stream() : worker_([this] { WorkerLoop(); }) {}

Stream::~Stream() {
    {
        std::lock_guard<std::mutex> lock(mutex_);
        stopping_ = true;
    }
    work_ready_.notify_one();
    worker_.join();
}

void Stream::Enqueue(std::function<void()> task) {
    {
        std::lock_guard<std::mutex> lock(mutex_);
        queue_.push_back(std::move(task));
    }
    work_ready_.notify_one();
}

bool Stream::Synchronize(std::string* failure) {
    std::unique_lock<std::mutex> lock(mutex_);
    drained_.wait(lock, [this] { return queue_.empty() && !running_task_; });
    if (failure_.empty()) return true;
    if (failure) *failure = failure_;
    failure_.clear();
    return false;
}

void Stream::WorkerLoop() {
    std::unique_lock<std::mutex> lock(mutex_);
    for (;;) {
        work_ready_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
        if (queue_.empty()) {  // stopping, and everything queued has run
            lock.unlock();
            ReleaseKernelThreads();
            return;
        }
        std::function<void()> task = std::move(queue_.front());
        queue_.pop_front();
        running_task_ = true;
        lock.unlock();
        std::string error;
        try {
            ApplyKernelThreadCount();
            task();
        } catch (const std::exception& e) {
            error = e.what();
        } catch (...) {
            error = "unknown exception";
        }
        task = nullptr;  // release what the task holds before reporting it done
        lock.lock();
        running_task_ = false;
        if (!error.empty() && failure_.empty()) failure_ = "a task on the stream failed: " + error;
        if (queue_.empty()) drained_.notify_all();
    }
}

namespace {
std::mutex registry_mutex;
std::set<Stream*>& LiveStreams() {
    static std::set<Stream*> streams;
    return streams;
}
std::unique_ptr<Stream>& DefaultStream() {
    static std::unique_ptr<Stream> stream;
    return stream;
}
}  // namespace

Stream* CreateRegisteredStream() {
    auto* stream = new Stream();
    std::lock_guard<std::mutex> lock(registry_mutex);
    LiveStreams().insert(stream);
    return stream;
}

bool DestroyRegisteredStream(void* handle) {
    auto* stream = static_cast<Stream*>(handle);
    {
        std::lock_guard<std::mutex> lock(registry_mutex);
        if (LiveStreams().erase(stream) == 0) return false;
    }
    delete stream;  // outside the lock: it waits for the queued work
    return true;
}

Stream* LookupStream(void* handle) {
    std::lock_guard<std::mutex> lock(registry_mutex);
    if (handle == nullptr) {
        if (!DefaultStream()) DefaultStream() = std::make_unique<Stream>();
        return DefaultStream().get();
    }
    auto* stream = static_cast<Stream*>(handle);
    return LiveStreams().count(stream) ? stream : nullptr;
}

void SynchronizeAllStreams() {
    std::lock_guard<std::mutex> lock(registry_mutex);
    for (Stream* stream : LiveStreams()) stream->Synchronize(nullptr);
    if (DefaultStream()) DefaultStream()->Synchronize(nullptr);
}

void DestroyDefaultStream() {
    std::unique_ptr<Stream> stream;
    {
        std::lock_guard<std::mutex> lock(registry_mutex);
        stream = std::move(DefaultStream());
    }
}

}  // namespace gs3d
