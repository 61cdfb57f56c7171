#pragma once
/// \file
/// A thread that stops the job when the main thread has waited in one communication phase
/// (CollectiveWait.hpp) longer than 'Training/collective timeout': a rank that was stopped
/// (SIGSTOP), hangs in I/O or died without MPI noticing would otherwise leave every other rank
/// spinning forever. It prints one line naming this rank, the operation, the step and the wait,
/// and aborts the job (MPI_Abort: the main thread is inside MPI and cannot be unwound). The step
/// agreement, where the ranks meet once per step, names the ranks that did not arrive
/// (Preemption.hpp); this covers the waits inside a step, where only the waiting side is known.

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <thread>

namespace hybrid3d {

class CollectiveWatchdog {
public:
  /// timeoutSeconds <= 0: no thread. `step` is read (relaxed) for the message.
  CollectiveWatchdog(double timeoutSeconds, int rank, const std::atomic<long long>& step);
  ~CollectiveWatchdog();
  CollectiveWatchdog(const CollectiveWatchdog&) = delete;
  CollectiveWatchdog& operator=(const CollectiveWatchdog&) = delete;

private:
  void watch();

  double timeout_;
  int rank_;
  const std::atomic<long long>& step_;
  std::mutex mutex_;
  std::condition_variable stop_;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace hybrid3d
