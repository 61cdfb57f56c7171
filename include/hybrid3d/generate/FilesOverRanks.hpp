#pragma once
// Files shared out over the ranks of a communicator, one rank per file: rank r of P handles files
// r, r + P, r + 2P, ... (each reads whole files, as many as its share), as `downsample` and
// `import nifti` convert datasets. After every round of P files the ranks agree on errors
// (data::collectively), so a bad file stops every rank with its one line, and no rank goes on
// to a collective while another has thrown.

#include <cstddef>
#include <functional>

#include <mpi.h>

namespace hybrid3d::generate {

// Calls handle(i) on this rank for each of the `files` indices it owns; collective over `comm`.
// Throws on every rank, with the lowest failing rank's message, when a call threw
// hybrid3d::Error on any rank.
void forEachFileOfThisRank(MPI_Comm comm, std::size_t files,
                           const std::function<void(std::size_t)>& handle);

}  // namespace hybrid3d::generate
