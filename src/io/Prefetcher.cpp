#include <hybrid3d/core/Error.hpp>
#include <hybrid3d/io/Prefetcher.hpp>

namespace hybrid3d::io {

Prefetcher::Prefetcher() : thread_([this] { loop(); }) {}

Prefetcher::~Prefetcher() {
  {
    std::unique_lock<std::mutex> lock(mutex_);
    cv_.wait(lock, [this] { return !hasJob_; });  // let a running read finish
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

void Prefetcher::submit(std::function<void()> job) {
  if (pending_) fail("prefetcher: a job was submitted before the previous one was waited for");
  {
    std::lock_guard<std::mutex> lock(mutex_);
    job_ = std::move(job);
    error_ = nullptr;
    finished_ = false;
    hasJob_ = true;
  }
  pending_ = true;
  cv_.notify_all();
}

void Prefetcher::wait() {
  if (!pending_) return;
  std::exception_ptr error;
  {
    std::unique_lock<std::mutex> lock(mutex_);
    cv_.wait(lock, [this] { return finished_; });
    error = error_;
    error_ = nullptr;
  }
  pending_ = false;
  if (error) std::rethrow_exception(error);
}

void Prefetcher::loop() {
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    cv_.wait(lock, [this] { return hasJob_ || stop_; });
    if (stop_ && !hasJob_) return;
    std::function<void()> job = std::move(job_);
    lock.unlock();
    std::exception_ptr error;
    try {
      job();
    } catch (...) {
      error = std::current_exception();
    }
    lock.lock();
    error_ = error;
    hasJob_ = false;
    finished_ = true;
    cv_.notify_all();
  }
}

}  // namespace hybrid3d::io
