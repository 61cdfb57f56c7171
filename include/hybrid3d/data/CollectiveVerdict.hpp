#pragma once
/// \file
/// Turning an error seen by some ranks into the same error on every rank.
///
/// A bad sample file may look bad from only some ranks (a file missing on one node's view of a
/// shared file system, a dataset whose shape only matters to the ranks that read its edge). If
/// those ranks threw while the others entered a collective read or the gradient allreduce, the
/// job would hang. So every check that can fail locally is followed by a verdict over the
/// communicator: the ranks agree on the lowest failing rank, that rank's one-line message is
/// broadcast, and every rank throws it.

#include <functional>
#include <string>

#include <mpi.h>

namespace hybrid3d::data {

/// Collective over `comm`. Throws hybrid3d::Error on every rank of `comm`, with the message of
/// the lowest-ranked caller whose `localError` is non-empty, when any is (a WorldError when
/// `comm` spans the world); returns otherwise.
void agreeOnError(MPI_Comm comm, const std::string& localError);

/// Runs `step` on this rank, catching hybrid3d::Error (other exceptions are not data errors and
/// propagate), then agreeOnError over `comm`.
void collectively(MPI_Comm comm, const std::function<void()>& step);

}  // namespace hybrid3d::data
