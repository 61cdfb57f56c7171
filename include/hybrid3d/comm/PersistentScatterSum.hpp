#pragma once
/// \file
/// The sum of one fixed buffer over a communicator, each rank keeping only its part of the sum
/// (a reduce-scatter), set up once and started every step: MPI-4's persistent
/// MPI_Reduce_scatter_init (Open MPI 4.1: MPIX_Reduce_scatter_init), else a plain
/// MPI_Ireduce_scatter per start. Persistent for the reason comm/PersistentSum.hpp gives: a
/// start allocates nothing.

#include <vector>

#include <mpi.h>

#include <hybrid3d/comm/PersistentSum.hpp>

namespace hybrid3d {

class PersistentScatterSum {
public:
  /// Sums the counts[0] + ... + counts[P-1] elements of `type` at `send` over the P ranks of
  /// `comm` at each start(); rank r receives its counts[r] elements of the sum, those after
  /// counts[0] + ... + counts[r-1], in `receive` (with MPI_IN_PLACE as `send` the input is read
  /// from `receive`, and the part lands at its start). `send`,
  /// `receive` and `comm` must outlive this object. Collective over `comm` where persistent.
  PersistentScatterSum(const void* send, void* receive, std::vector<int> counts, MPI_Datatype type,
                       MPI_Comm comm)
      : counts_(std::move(counts)) {
#if MPI_VERSION >= 4
    MPI_Reduce_scatter_init(send, receive, counts_.data(), type, MPI_SUM, comm, MPI_INFO_NULL,
                            &request_);
#elif HYBRID3D_PERSISTENT_ALLREDUCE
    MPIX_Reduce_scatter_init(send, receive, counts_.data(), type, MPI_SUM, comm, MPI_INFO_NULL,
                             &request_);
#else
    send_ = send, receive_ = receive, type_ = type, comm_ = comm;
#endif
  }
  /// As ~PersistentSum: waits for a started sum, then frees a persistent request.
  ~PersistentScatterSum() {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (finalized || request_ == MPI_REQUEST_NULL) return;
    MPI_Wait(&request_, MPI_STATUS_IGNORE);
    if (request_ != MPI_REQUEST_NULL) MPI_Request_free(&request_);
  }
  PersistentScatterSum(const PersistentScatterSum&) = delete;
  PersistentScatterSum& operator=(const PersistentScatterSum&) = delete;

  /// Starts the sum (collective, in the same order on every rank).
  void start() {
#if HYBRID3D_PERSISTENT_ALLREDUCE
    MPI_Start(&request_);
#else
    MPI_Ireduce_scatter(send_, receive_, counts_.data(), type_, MPI_SUM, comm_, &request_);
#endif
  }
  MPI_Request& request() { return request_; }

private:
  std::vector<int> counts_;  // MPI reads them while the request lives
  MPI_Request request_ = MPI_REQUEST_NULL;
#if !HYBRID3D_PERSISTENT_ALLREDUCE
  const void* send_ = nullptr;
  void* receive_ = nullptr;
  MPI_Datatype type_ = MPI_DATATYPE_NULL;
  MPI_Comm comm_ = MPI_COMM_NULL;
#endif
};

}  // namespace hybrid3d
