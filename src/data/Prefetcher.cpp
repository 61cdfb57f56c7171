#include <hybrid3d/core/Error.hpp>
#include <hybrid3d/data/Prefetcher.hpp>

namespace hybrid3d::data {

Prefetcher::Prefetcher() : thread_([this] { loop(); }) {}

Prefetcher::~Prefetcher() {
  cancel();  // at most the read in progress, also while an exception unwinds
  {
    std::lock_guard<std::mutex> lock(mutex_);
    quit_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

void Prefetcher::submit(Job job) {
  if (pending_) fail("prefetcher: a job was submitted before the previous one was waited for");
  {
    std::lock_guard<std::mutex> lock(mutex_);
    job_ = std::move(job);
    error_ = nullptr;
    finished_ = false;
    stop_.store(false);
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

void Prefetcher::cancel() noexcept {
  if (!pending_) return;
  stop_.store(true);
  {
    std::unique_lock<std::mutex> lock(mutex_);
    cv_.wait(lock, [this] { return finished_; });
    error_ = nullptr;
  }
  pending_ = false;
}

void Prefetcher::loop() {
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    cv_.wait(lock, [this] { return hasJob_ || quit_; });
    if (quit_ && !hasJob_) return;
    Job job = std::move(job_);
    lock.unlock();
    std::exception_ptr error;
    try {
      job(stop_);
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

}  // namespace hybrid3d::data
