#pragma once
/// \file
/// Whole files shared out over the ranks, one rank per file, for the commands that read or write
/// a dataset file by file (downsample, split, stats, import nifti): rank r takes files r, r + P,
/// r + 2P, ...
/// Round by round (P files a round), each round's errors agreed over the communicator, so a bad
/// file stops every rank with its one line before any rank starts the next round, and no rank
/// waits in a collective for one that has thrown.

#include <cstddef>
#include <functional>

#include <mpi.h>

namespace hybrid3d::data {

/// Collective over `comm`: calls work(i) on this rank for its files i in [0, files). Throws
/// hybrid3d::Error on every rank, with the lowest failing rank's message, when work throws one.
void forEachFileOfThisRank(MPI_Comm comm, std::size_t files,
                           const std::function<void(std::size_t)>& work);

}  // namespace hybrid3d::data
