#pragma once
/// \file
/// One background thread that runs one job at a time: the read of the next mini-batch while the
/// current step computes. The job must make no MPI call (MPI is initialised for calls from the
/// main thread only: core/MpiThreads.hpp) and touch only memory allocated beforehand on the main
/// thread (Kokkos allocation is not something to do from a second thread); SampleReader in
/// Independent mode into a HostBatch is such a job.
///
/// Stopping. A job is handed a stop flag and checks it between its reads (between samples): a
/// job nobody will wait for (a seek, the end of the run, an error unwinding the stack) is asked
/// to stop there, so cancel() and the destructor block for at most the read in progress, never
/// for the rest of a mini-batch. The thread is always joined, never detached: a job touches
/// buffers its owner frees right after the Prefetcher is gone, so no job may outlive it.

#include <atomic>
#include <condition_variable>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>

namespace hybrid3d::data {

class Prefetcher {
public:
  /// Set when the job's result is no longer wanted: return at the next check.
  using StopFlag = std::atomic<bool>;
  using Job = std::function<void(const StopFlag& stop)>;

  Prefetcher();
  ~Prefetcher();  // cancel(), then joins the thread
  Prefetcher(const Prefetcher&) = delete;
  Prefetcher& operator=(const Prefetcher&) = delete;

  /// Starts `job` on the background thread. Throws if the previous job was not waited for.
  void submit(Job job);
  /// Blocks until the submitted job has finished and rethrows what it threw; returns at once
  /// when no job is pending.
  void wait();
  /// Asks the pending job to stop at its next check, waits for it (the read in progress) and
  /// drops what it threw: its result is not wanted. Returns at once when no job is pending.
  void cancel() noexcept;
  bool pending() const { return pending_; }

private:
  void loop();

  std::mutex mutex_;
  std::condition_variable cv_;
  Job job_;
  std::exception_ptr error_;
  StopFlag stop_{false};  // the running job's
  bool hasJob_ = false, finished_ = false, quit_ = false;
  bool pending_ = false;  // main thread only: submitted and not yet waited for
  std::thread thread_;
};

}  // namespace hybrid3d::data
