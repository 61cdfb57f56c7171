#pragma once
// How a command that threw ends the job.
//
// Every rank that caught an error calls end(). When every rank of the world has failed (a bad
// deck or option read by all, an error agreed by data::agreeOnError) they meet within a few
// seconds (any time, for a WorldError: every rank throws it): the lowest rank prints one line, and
// every rank returns a non-zero status for a clean MPI_Finalize (no MPI_ABORT banner). When some
// rank has not failed by then, it waits for this one in a collective and only MPI_Abort frees it:
// this rank prints its own line and aborts. Destructors do not block in MPI while the error unwinds
// (core/Unwinding.hpp), so a rank gets here promptly.

#include <string>

#include <mpi.h>

namespace hybrid3d::app {

class ErrorExit {
public:
  // Collective over MPI_COMM_WORLD (a communicator of its own): construct before the command.
  ErrorExit();
  ~ErrorExit();
  ErrorExit(const ErrorExit&) = delete;
  ErrorExit& operator=(const ErrorExit&) = delete;

  // Ends this rank's part after `message` was thrown by `command`: returns the exit status
  // when every rank failed, otherwise does not return (MPI_Abort). `everyRankThrew`: the error
  // is a WorldError, so the others are on their way (they may be slower to unwind).
  int end(const std::string& command, const std::string& message, bool everyRankThrew) const;

  // How long a failed rank waits for the others to fail too before it aborts the job: an
  // error of unknown reach, and a WorldError (a bound only against a rank stuck unwinding).
  static constexpr double waitSeconds = 5, waitSecondsForWorldError = 120;

private:
  MPI_Comm comm_ = MPI_COMM_NULL;
};

}  // namespace hybrid3d::app
