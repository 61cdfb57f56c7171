#pragma once
/// \file
/// Preemption: a batch system warns a job before killing it (Slurm sends SIGTERM, then SIGKILL
/// after its grace period; a job script may prefer SIGUSR1); a user stops a run with Ctrl-C
/// (SIGINT) or by closing its terminal (SIGHUP). For any of them the trainer stops at the end of
/// the step in progress, writes its checkpoint and exits with PreemptedExitStatus, so the job
/// script can requeue and resume.
///
/// The handler only records the signal number in a sig_atomic_t (nothing else is
/// async-signal-safe). A signal may reach one rank or all of them at different moments, so the
/// ranks agree once per step: agreeAfterStep() is one MPI_Allreduce (MAX) of two ints over the
/// world, which also carries rank 0's wall-clock decision to checkpoint (rank 0 alone reads
/// the clock, so the ranks can never disagree on it). With a timeout the agreement goes through
/// rank 0 by non-blocking messages, polled: a rank that does not arrive within it is named
/// (rank 0 names the missing ranks; another rank names rank 0 when rank 0 is the one missing)
/// and the waiting ranks stop with that line instead of hanging.

#include <csignal>

#include <mpi.h>

namespace hybrid3d {

/// Exit status of a run stopped by SIGTERM or SIGUSR1 after writing its checkpoint:
/// EX_TEMPFAIL of <sysexits.h>, "a temporary failure; the user is invited to retry".
constexpr int PreemptedExitStatus = 75;

/// Installs the handlers for SIGTERM, SIGUSR1, SIGINT and SIGHUP while it lives and restores the
/// previous ones after; a signal recorded before construction is forgotten.
class PreemptionSignals {
public:
  PreemptionSignals();
  ~PreemptionSignals();
  PreemptionSignals(const PreemptionSignals&) = delete;
  PreemptionSignals& operator=(const PreemptionSignals&) = delete;

  /// The last signal received on this process since construction, 0 if none.
  int received() const;

private:
  static constexpr int handled[4] = {SIGTERM, SIGUSR1, SIGINT, SIGHUP};
  struct sigaction previous_[4] = {};
};

/// "SIGTERM", "SIGUSR1", "SIGINT", "SIGHUP" or "a signal".
const char* signalName(int signal);

struct StepAgreement {
  int signal = 0;              // non-zero: some rank received this signal; stop after this step
  bool checkpointDue = false;  // rank 0's clock says a periodic checkpoint is due
};

/// Collective over `world`, once per step: every rank gets the same answer. timeoutSeconds > 0:
/// a rank that waits longer for the others throws hybrid3d::Error naming the ranks that did not
/// arrive and `step` (then `world` must be a communicator of the agreement's own: its messages
/// use one tag).
StepAgreement agreeAfterStep(MPI_Comm world, int localSignal, bool rootCheckpointDue,
                             double timeoutSeconds = 0, long long step = 0);

}  // namespace hybrid3d
