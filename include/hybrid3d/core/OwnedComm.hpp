#pragma once
/// \file
/// The one owning communicator type: an MPI_Comm_dup'ed (or split, or created) communicator
/// freed by its owner when it goes, unless MPI is already finalized (a static or a leaked
/// object outliving MPI_Finalize must not call MPI). Layers, halos and grids keep their own
/// communicators this way and no reference to whoever gave them theirs.

#include <utility>

#include <mpi.h>

namespace hybrid3d {

class OwnedComm {
public:
  OwnedComm() = default;
  /// A duplicate of `comm` (which stays its owner's).
  explicit OwnedComm(MPI_Comm comm) { MPI_Comm_dup(comm, &comm_); }
  /// Takes ownership of a communicator this code created (split, Cartesian, graph).
  static OwnedComm adopt(MPI_Comm comm) {
    OwnedComm o;
    o.comm_ = comm;
    return o;
  }
  ~OwnedComm() {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (comm_ != MPI_COMM_NULL && !finalized) MPI_Comm_free(&comm_);
  }
  OwnedComm(const OwnedComm&) = delete;
  OwnedComm& operator=(const OwnedComm&) = delete;
  OwnedComm(OwnedComm&& o) noexcept : comm_(o.comm_) { o.comm_ = MPI_COMM_NULL; }
  OwnedComm& operator=(OwnedComm&& o) noexcept {
    std::swap(comm_, o.comm_);
    return *this;
  }
  MPI_Comm get() const { return comm_; }

private:
  MPI_Comm comm_ = MPI_COMM_NULL;
};

}  // namespace hybrid3d
