#pragma once
/// \file
/// An exclusive lock on an output directory, so that two runs never write one checkpoint and one
/// metrics file at once. DIR/.hybrid3d.lock holds the holder's host, PID and start time and is
/// held with flock(2), which the kernel releases when the holder dies however it dies: a lock
/// file left by a dead run is taken over (and said so), a live holder is named in the refusal.
/// Rank 0 alone takes it.

#include <string>

namespace hybrid3d {

class RunLock {
public:
  /// Takes the lock on `dir` (which must exist) or throws hybrid3d::Error naming the holder.
  /// `note` receives a line when a lock file left by a run that is gone was taken over.
  RunLock(const std::string& dir, std::string& note);
  ~RunLock();  // releases the lock and removes the file
  RunLock(const RunLock&) = delete;
  RunLock& operator=(const RunLock&) = delete;

  static std::string fileOf(const std::string& dir) { return dir + "/.hybrid3d.lock"; }

private:
  void lockOnce(const std::string& dir);  // opens and locks the file, or throws

  std::string path_;
  int fd_ = -1;
};

}  // namespace hybrid3d
