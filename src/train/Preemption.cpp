#include <hybrid3d/train/Preemption.hpp>

#include <algorithm>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

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
  for (int i = 0; i < 4; ++i)
    if (sigaction(handled[i], &action, &previous_[i]) != 0)
      fail("training: cannot install the handler of ", signalName(handled[i]));
}

PreemptionSignals::~PreemptionSignals() {
  for (int i = 0; i < 4; ++i) sigaction(handled[i], &previous_[i], nullptr);
}

int PreemptionSignals::received() const { return receivedSignal; }

const char* signalName(int signal) {
  switch (signal) {
    case SIGTERM:
      return "SIGTERM";
    case SIGUSR1:
      return "SIGUSR1";
    case SIGINT:
      return "SIGINT";
    case SIGHUP:
      return "SIGHUP";
    default:
      return "a signal";
  }
}

namespace {

constexpr int agreementTag = 7501;

// Polls `requests` until all are complete or `seconds` passed; returns whether they completed.
bool waitAll(std::vector<MPI_Request>& requests, double seconds) {
  const double deadline = MPI_Wtime() + seconds;
  for (;;) {
    int done = 0;
    MPI_Testall(int(requests.size()), requests.data(), &done, MPI_STATUSES_IGNORE);
    if (done) return true;
    if (MPI_Wtime() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
}

// The agreement through rank 0: every rank sends its flags, rank 0 takes the maximum and sends
// it back. Each side knows whom it still waits for.
void agreeThroughRoot(MPI_Comm world, int* flags, double timeout, long long step) {
  int rank, size;
  MPI_Comm_rank(world, &rank);
  MPI_Comm_size(world, &size);
  auto stop = [&](const std::string& who) {
    fail("collective timeout: ", who, " did not reach the step agreement after step ", step,
         " within ", timeout, " s ('Training/collective timeout'; stopped, hung or dead)");
  };
  if (rank != 0) {
    std::vector<MPI_Request> r(2);
    MPI_Isend(flags, 2, MPI_INT, 0, agreementTag, world, &r[0]);
    int answer[2] = {0, 0};
    MPI_Irecv(answer, 2, MPI_INT, 0, agreementTag, world, &r[1]);
    // Longer than rank 0's wait: when another rank is missing, rank 0 names it first.
    if (!waitAll(r, 1.5 * timeout + 5)) stop("rank 0");
    flags[0] = answer[0];
    flags[1] = answer[1];
    return;
  }
  std::vector<int> all(2 * std::size_t(size), 0);
  std::vector<MPI_Request> in(std::size_t(size - 1));
  for (int r = 1; r < size; ++r)
    MPI_Irecv(&all[2 * std::size_t(r)], 2, MPI_INT, r, agreementTag, world, &in[r - 1]);
  if (!waitAll(in, timeout)) {
    std::string missing;
    for (int r = 1; r < size; ++r) {
      int done = 0;
      MPI_Test(&in[r - 1], &done, MPI_STATUS_IGNORE);
      if (!done) missing += (missing.empty() ? "" : ", ") + std::to_string(r);
    }
    stop("rank(s) " + missing);
  }
  for (int r = 1; r < size; ++r)
    for (int k = 0; k < 2; ++k) flags[k] = std::max(flags[k], all[2 * std::size_t(r) + k]);
  std::vector<MPI_Request> out(std::size_t(size - 1));
  for (int r = 1; r < size; ++r) MPI_Isend(flags, 2, MPI_INT, r, agreementTag, world, &out[r - 1]);
  MPI_Waitall(size - 1, out.data(), MPI_STATUSES_IGNORE);
}

}  // namespace

StepAgreement agreeAfterStep(MPI_Comm world, int localSignal, bool rootCheckpointDue,
                             double timeoutSeconds, long long step) {
  int rank;
  MPI_Comm_rank(world, &rank);
  int flags[2] = {localSignal, rank == 0 && rootCheckpointDue ? 1 : 0};
  if (timeoutSeconds > 0)
    agreeThroughRoot(world, flags, timeoutSeconds, step);
  else
    MPI_Allreduce(MPI_IN_PLACE, flags, 2, MPI_INT, MPI_MAX, world);
  return {flags[0], flags[1] != 0};
}

}  // namespace hybrid3d
