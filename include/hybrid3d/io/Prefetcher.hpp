#pragma once
// One background thread that runs one job at a time: the read of the next mini-batch while the
// current step computes. The job must make no MPI call (MPI may be initialised without thread
// support) and touch only memory allocated beforehand on the main thread (Kokkos allocation is
// not something to do from a second thread); SampleReader in Independent mode into a HostBatch
// is such a job.

#include <condition_variable>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>

namespace hybrid3d::io {

class Prefetcher {
public:
  Prefetcher();
  ~Prefetcher();  // waits for a running job, then joins the thread
  Prefetcher(const Prefetcher&) = delete;
  Prefetcher& operator=(const Prefetcher&) = delete;

  // Starts `job` on the background thread. Throws if the previous job was not waited for.
  void submit(std::function<void()> job);
  // Blocks until the submitted job has finished and rethrows what it threw; returns at once
  // when no job is pending.
  void wait();
  bool pending() const { return pending_; }

private:
  void loop();

  std::mutex mutex_;
  std::condition_variable cv_;
  std::function<void()> job_;
  std::exception_ptr error_;
  bool hasJob_ = false, finished_ = false, stop_ = false;
  bool pending_ = false;  // main thread only: submitted and not yet waited for
  std::thread thread_;
};

}  // namespace hybrid3d::io
