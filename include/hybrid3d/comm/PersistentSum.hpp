#pragma once
/// \file
/// An in-place sum of one fixed buffer over a communicator, set up once and started every step:
/// MPI-4's persistent MPI_Allreduce_init (Open MPI 4.1: MPIX_Allreduce_init, its pcollreq
/// extension), else a plain MPI_Iallreduce per start.
///
/// Why persistent: a non-blocking allreduce sets itself up at every call, and Open MPI's
/// (coll/libnbc) mallocs a scratch buffer the size of the message each time and frees it when
/// the sum completes. For the gradients of a step that is megabytes of fresh memory per step:
/// glibc maps such blocks afresh and the reduction touches them for the first time: minor page
/// faults at every step. Set up once, the schedule and its scratch buffer live as long as the
/// request; a start allocates nothing. The price: that scratch is held, one more copy of the
/// bytes summed (on the heap; the peak RSS hardly moves, as the per-call copies were in the peak
/// already). Figures: docs/performance-notes.md, "Persistent gradient sums".

#include <mpi.h>
#if defined(OPEN_MPI) && OPEN_MPI
#include <mpi-ext.h>
#endif

// MPI-4, or Open MPI 4.1's extension of it.
#if MPI_VERSION >= 4 || (defined(OMPI_HAVE_MPI_EXT_PCOLLREQ) && OMPI_HAVE_MPI_EXT_PCOLLREQ)
#define HYBRID3D_PERSISTENT_ALLREDUCE 1
#else
#define HYBRID3D_PERSISTENT_ALLREDUCE 0
#endif

namespace hybrid3d {

class PersistentSum {
public:
  /// Sums `count` elements of `type` at `data` in place over `comm` at each start(). `data` and
  /// `comm` must outlive this object. Collective over `comm` where persistent: every rank sets up
  /// its sums in the same order.
  PersistentSum(void* data, int count, MPI_Datatype type, MPI_Comm comm) {
#if MPI_VERSION >= 4
    MPI_Allreduce_init(MPI_IN_PLACE, data, count, type, MPI_SUM, comm, MPI_INFO_NULL, &request_);
#elif HYBRID3D_PERSISTENT_ALLREDUCE
    MPIX_Allreduce_init(MPI_IN_PLACE, data, count, type, MPI_SUM, comm, MPI_INFO_NULL, &request_);
#else
    data_ = data, count_ = count, type_ = type, comm_ = comm;
#endif
  }
  /// Waits for a started sum, then frees a persistent request; nothing once MPI is finalised. (A
  /// rank unwinding after an error must not wait: the owner keeps the object alive instead,
  /// core/Unwinding.hpp.)
  ~PersistentSum() {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (finalized || request_ == MPI_REQUEST_NULL) return;
    MPI_Wait(&request_, MPI_STATUS_IGNORE);
    if (request_ != MPI_REQUEST_NULL) MPI_Request_free(&request_);
  }
  PersistentSum(const PersistentSum&) = delete;
  PersistentSum& operator=(const PersistentSum&) = delete;

  /// Starts the sum (collective: every rank of the communicator starts its sums in the same
  /// order). The buffer must not be touched until the request completes.
  void start() {
#if HYBRID3D_PERSISTENT_ALLREDUCE
    MPI_Start(&request_);
#else
    MPI_Iallreduce(MPI_IN_PLACE, data_, count_, type_, MPI_SUM, comm_, &request_);
#endif
  }
  /// The request to wait on (MPI_Wait/Waitall leave a persistent request inactive, ready for the
  /// next start; an inactive one completes at once).
  MPI_Request& request() { return request_; }

private:
  MPI_Request request_ = MPI_REQUEST_NULL;
#if !HYBRID3D_PERSISTENT_ALLREDUCE
  // The fallback starts a new MPI_Iallreduce from these each time.
  void* data_ = nullptr;
  int count_ = 0;
  MPI_Datatype type_ = MPI_DATATYPE_NULL;
  MPI_Comm comm_ = MPI_COMM_NULL;
#endif
};

}  // namespace hybrid3d
