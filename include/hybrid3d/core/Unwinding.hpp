#pragma once
/// \file
/// Destructors of objects with an MPI operation in flight (a halo exchange, gradient reductions)
/// normally wait for it. While an exception unwinds the stack they must not: the error may be
/// this rank's alone, its peers wait elsewhere and never join, and the rank would hang before
/// main() could end the job (src/apps/ErrorExit.hpp). Such a destructor abandons the operation
/// instead: the request is never completed, and the memory MPI may still read or write (buffers,
/// count arrays) is kept, never freed, for the few moments until the process ends. The
/// communicator the operation runs on is not freed either: MPI_Comm_free is collective, and an
/// MPI may synchronise in it (Intel MPI does), so a rank freeing it alone could block until peers
/// that never come free theirs; the pending request also still refers to it. What is kept costs
/// one communicator and a few buffers per abandoned operation, once per error.

#include <exception>
#include <tuple>
#include <type_traits>
#include <utility>

namespace hybrid3d {

/// True while an exception propagates through the caller (a destructor run by unwinding).
inline bool unwinding() { return std::uncaught_exceptions() > 0; }

/// Keeps what an abandoned MPI operation may still touch alive until the process ends. Pass
/// owners by std::move (a moved std::vector keeps its heap block, a copy would not); Kokkos
/// views share their allocation either way.
template <class... Buffers>
void keepForAbandonedOperation(Buffers&&... buffers) {
  static_cast<void>(new std::tuple<std::decay_t<Buffers>...>(std::forward<Buffers>(buffers)...));
}

}  // namespace hybrid3d
