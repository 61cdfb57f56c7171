// A Prefetcher whose job is no longer wanted (destroyed while an exception unwinds, or
// cancelled) stops the job between two reads: it waits for the read in progress, not for the
// rest of the job, and no job runs on after it is gone.

#include <atomic>
#include <chrono>
#include <stdexcept>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include <hybrid3d/data/Prefetcher.hpp>

namespace hybrid3d::test {
namespace {

using Clock = std::chrono::steady_clock;

long long millisecondsSince(Clock::time_point t0) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - t0).count();
}

// A job of many slow "reads" into a buffer that outlives the Prefetcher (as a loader's staging
// batch does), counting the reads begun and ended. Run to the end it takes kReads x kRead = 30 s.
constexpr int kReads = 1500;
constexpr auto kRead = std::chrono::milliseconds(20);

struct SlowReads {
  std::vector<int> buffer = std::vector<int>(kReads, -1);
  std::atomic<int> begun{0}, ended{0};
  std::atomic<bool> returned{false};

  data::Prefetcher::Job job() {
    return [this](const data::Prefetcher::StopFlag& stop) {
      for (int i = 0; i < kReads && !stop.load(); ++i) {
        begun.fetch_add(1);
        std::this_thread::sleep_for(kRead);
        buffer[std::size_t(i)] = i;
        ended.fetch_add(1);
      }
      returned.store(true);
    };
  }
  void waitForFirstRead() const {
    while (begun.load() == 0) std::this_thread::yield();
  }
};

// The time a stopped job may still take: the read in progress, with a wide margin for a loaded
// machine (8 ranks on 2 cores), and still a sixth of the whole job.
constexpr long long kPromptMs = 5000;

TEST(Prefetcher, DestroyedWhileAnErrorUnwindsStopsAfterTheReadInProgress) {
  SlowReads reads;
  Clock::time_point thrown;
  try {
    data::Prefetcher prefetcher;
    prefetcher.submit(reads.job());
    reads.waitForFirstRead();
    thrown = Clock::now();
    throw std::runtime_error("a step failed while the next mini-batch was being read");
  } catch (const std::runtime_error&) {
  }
  EXPECT_LT(millisecondsSince(thrown), kPromptMs);
  EXPECT_LT(reads.begun.load(), kReads);  // stopped, not run to the end
  // Joined, not abandoned: the read in progress ended and the job returned before the
  // destructor did, so nothing writes into the buffer after it (its owner may free it now).
  EXPECT_TRUE(reads.returned.load());
  const int ended = reads.ended.load();
  EXPECT_EQ(ended, reads.begun.load());
  std::this_thread::sleep_for(3 * kRead);
  EXPECT_EQ(reads.ended.load(), ended);
  for (int i = 0; i < kReads; ++i) EXPECT_EQ(reads.buffer[std::size_t(i)], i < ended ? i : -1);
}

TEST(Prefetcher, CancelStopsTheJobDropsItsErrorAndTakesTheNext) {
  data::Prefetcher prefetcher;
  SlowReads reads;
  prefetcher.submit(reads.job());
  reads.waitForFirstRead();
  const auto t0 = Clock::now();
  prefetcher.cancel();
  EXPECT_LT(millisecondsSince(t0), kPromptMs);
  EXPECT_TRUE(reads.returned.load());
  EXPECT_LT(reads.ended.load(), kReads);
  EXPECT_FALSE(prefetcher.pending());

  // A cancelled job's failure is not reported; the next job's is, by wait().
  prefetcher.submit([](const data::Prefetcher::StopFlag& stop) {
    while (!stop.load()) std::this_thread::yield();
    throw std::runtime_error("read failed");
  });
  prefetcher.cancel();
  prefetcher.wait();  // nothing pending: returns, throws nothing
  int ran = 0;
  prefetcher.submit([&](const data::Prefetcher::StopFlag& stop) {
    EXPECT_FALSE(stop.load());  // a new job starts with the flag down
    ++ran;
    throw std::runtime_error("read failed");
  });
  EXPECT_THROW(prefetcher.wait(), std::runtime_error);
  EXPECT_EQ(ran, 1);
}

}  // namespace
}  // namespace hybrid3d::test
