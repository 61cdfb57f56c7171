#pragma once
// Preemption: a batch system warns a job before killing it (Slurm sends SIGTERM, then SIGKILL
// after its grace period; a job script may prefer SIGUSR1). The trainer stops at the end of the
// step in progress, writes its checkpoint and exits with PreemptedExitStatus, so the job script
// can requeue and resume.
//
// The handler only records the signal number in a sig_atomic_t (nothing else is
// async-signal-safe). A signal may reach one rank or all of them at different moments, so the
// ranks agree once per step: agreeAfterStep() is one MPI_Allreduce (MAX) of two ints over the
// world, which also carries rank 0's wall-clock decision to checkpoint (rank 0 alone reads
// the clock, so the ranks can never disagree on it).

#include <csignal>

#include <mpi.h>

namespace hybrid3d {

// Exit status of a run stopped by SIGTERM or SIGUSR1 after writing its checkpoint:
// EX_TEMPFAIL of <sysexits.h>, "a temporary failure; the user is invited to retry".
constexpr int PreemptedExitStatus = 75;

// Installs the handlers for SIGTERM and SIGUSR1 while it lives and restores the previous ones
// after; a signal recorded before construction is forgotten.
class PreemptionSignals {
public:
  PreemptionSignals();
  ~PreemptionSignals();
  PreemptionSignals(const PreemptionSignals&) = delete;
  PreemptionSignals& operator=(const PreemptionSignals&) = delete;

  // The last signal received on this process since construction, 0 if none.
  int received() const;

private:
  struct sigaction previousTerm_ {
  }, previousUsr1_{};
};

// "SIGTERM", "SIGUSR1" or "a signal".
const char* signalName(int signal);

struct StepAgreement {
  int signal = 0;              // non-zero: some rank received this signal; stop after this step
  bool checkpointDue = false;  // rank 0's clock says a periodic checkpoint is due
};

// Collective over `world`, once per step: every rank gets the same answer.
StepAgreement agreeAfterStep(MPI_Comm world, int localSignal, bool rootCheckpointDue);

}  // namespace hybrid3d
