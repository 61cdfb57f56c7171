#include <hybrid3d/train/CollectiveWatchdog.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>

#include <mpi.h>

#include <hybrid3d/core/CollectiveWait.hpp>

namespace hybrid3d {

CollectiveWatchdog::CollectiveWatchdog(double timeoutSeconds, int rank,
                                       const std::atomic<long long>& step)
    : timeout_(timeoutSeconds), rank_(rank), step_(step) {
  if (timeout_ > 0) thread_ = std::thread([this] { watch(); });
}

CollectiveWatchdog::~CollectiveWatchdog() {
  if (!thread_.joinable()) return;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  stop_.notify_all();
  thread_.join();
}

void CollectiveWatchdog::watch() {
  const CollectiveWait& wait = CollectiveWait::global();
  const long long limitNs = static_cast<long long>(timeout_ * 1e9);
  std::unique_lock<std::mutex> lock(mutex_);
  // Polled a few times per timeout (at least once a second): the bound is met within that.
  const auto poll = std::chrono::milliseconds(
      static_cast<long long>(std::min(1000.0, std::max(50.0, timeout_ * 1000 / 10))));
  while (!stop_.wait_for(lock, poll, [this] { return stopping_; })) {
    const long long since = wait.sinceNs.load(std::memory_order_acquire);
    if (since == 0 || CollectiveWait::nowNs() - since < limitNs) continue;
    const char* what = wait.what.load(std::memory_order_relaxed);
    std::fprintf(stderr,
                 "hybrid3d: collective timeout: rank %d has waited %.0f s in %s of step %lld for "
                 "rank(s) that did not arrive ('Training/collective timeout' = %g s); stopping "
                 "every rank\n",
                 rank_, double(CollectiveWait::nowNs() - since) / 1e9, what ? what : "a collective",
                 step_.load(std::memory_order_relaxed) + 1, timeout_);
    std::fflush(stderr);
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
}

}  // namespace hybrid3d
