#pragma once
/// \file
/// What the main thread is waiting for in communication right now, and since when: written by
/// the communication phases (ScopedPhase in PhaseTimers.hpp), read by a watchdog thread
/// (train/CollectiveWatchdog.hpp) that stops the job when a wait outlasts its timeout, so a rank
/// that stopped or died mid-step never leaves the others spinning forever.

#include <atomic>
#include <chrono>

namespace hybrid3d {

struct CollectiveWait {
  std::atomic<long long> sinceNs{0};       // steady clock; 0: not waiting
  std::atomic<const char*> what{nullptr};  // a static string: "a halo exchange", ...

  static CollectiveWait& global() {
    static CollectiveWait w;
    return w;
  }
  static long long nowNs() {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(
               std::chrono::steady_clock::now().time_since_epoch())
        .count();
  }
};

/// Marks the main thread as waiting in `what` while it lives (nested ones keep the outer start).
class ScopedWait {
public:
  explicit ScopedWait(const char* what) {
    CollectiveWait& w = CollectiveWait::global();
    previousSince_ = w.sinceNs.load(std::memory_order_relaxed);
    previousWhat_ = w.what.load(std::memory_order_relaxed);
    if (previousSince_ != 0) return;
    w.what.store(what, std::memory_order_relaxed);
    w.sinceNs.store(CollectiveWait::nowNs(), std::memory_order_release);
  }
  ~ScopedWait() {
    CollectiveWait& w = CollectiveWait::global();
    w.sinceNs.store(previousSince_, std::memory_order_release);
    w.what.store(previousWhat_, std::memory_order_relaxed);
  }
  ScopedWait(const ScopedWait&) = delete;
  ScopedWait& operator=(const ScopedWait&) = delete;

private:
  long long previousSince_ = 0;
  const char* previousWhat_ = nullptr;
};

}  // namespace hybrid3d
