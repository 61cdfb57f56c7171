#include <hybrid3d/train/Preemption.hpp>

#include <hybrid3d/core/Error.hpp>

namespace hybrid3d {

namespace {

volatile std::sig_atomic_t receivedSignal = 0;

extern "C" void recordSignal(int signal) { receivedSignal = signal; }

}  // namespace

PreemptionSignals::PreemptionSignals() {
  receivedSignal = 0;
  struct sigaction action {};
  action.sa_handler = recordSignal;
  sigemptyset(&action.sa_mask);
  // Restart interrupted system calls: a signal must not fail a write or an MPI call in flight.
  action.sa_flags = SA_RESTART;
  if (sigaction(SIGTERM, &action, &previousTerm_) != 0 ||
      sigaction(SIGUSR1, &action, &previousUsr1_) != 0)
    fail("training: cannot install the SIGTERM/SIGUSR1 handlers");
}

PreemptionSignals::~PreemptionSignals() {
  sigaction(SIGTERM, &previousTerm_, nullptr);
  sigaction(SIGUSR1, &previousUsr1_, nullptr);
}

int PreemptionSignals::received() const { return receivedSignal; }

const char* signalName(int signal) {
  switch (signal) {
    case SIGTERM:
      return "SIGTERM";
    case SIGUSR1:
      return "SIGUSR1";
    default:
      return "a signal";
  }
}

StepAgreement agreeAfterStep(MPI_Comm world, int localSignal, bool rootCheckpointDue) {
  int rank;
  MPI_Comm_rank(world, &rank);
  int flags[2] = {localSignal, rank == 0 && rootCheckpointDue ? 1 : 0};
  MPI_Allreduce(MPI_IN_PLACE, flags, 2, MPI_INT, MPI_MAX, world);
  return {flags[0], flags[1] != 0};
}

}  // namespace hybrid3d
