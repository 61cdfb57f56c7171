#pragma once
/// \file
/// A box-decomposed array assembled on one rank, for writing a result file (`hybrid3d predict`'s
/// label and probability volumes): each rank sends only its own box, and only the root holds the
/// whole array (GlobalArray.hpp's gather gives every rank a copy, which tests want and output
/// writing does not).

#include <climits>
#include <cstdint>
#include <vector>

#include <mpi.h>

#include <hybrid3d/core/Error.hpp>
#include <hybrid3d/core/Types.hpp>

namespace hybrid3d {

/// Collective over `comm`. Each rank passes its box of the global (D,H,W) `extents` (global
/// indices; empty boxes allowed, boxes disjoint) and its values there, [components][box]
/// row-major. Returns on `root` the array [components][D][H][W] row-major (voxels no box
/// covers are V{}), elsewhere an empty vector.
template <class V>
std::vector<V> gatherBoxes(MPI_Comm comm, int root, const Box3& box, const std::vector<V>& values,
                           Index components, const Index3& extents) {
  int rank = 0, size = 1;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  const long long bytes = static_cast<long long>(values.size() * sizeof(V));
  std::int64_t mine[6] = {box.lo[0], box.lo[1], box.lo[2], box.hi[0], box.hi[1], box.hi[2]};
  std::vector<std::int64_t> boxes(rank == root ? 6 * size : 0);
  MPI_Gather(mine, 6, MPI_INT64_T, boxes.data(), 6, MPI_INT64_T, root, comm);
  long long total = 0;
  MPI_Reduce(&bytes, &total, 1, MPI_LONG_LONG, MPI_SUM, root, comm);
  int tooLarge = total > INT_MAX ? 1 : 0;
  MPI_Bcast(&tooLarge, 1, MPI_INT, root, comm);
  if (tooLarge) fail("gatherBoxes: ", total, " bytes to gather exceed one MPI message's 2^31 - 1");
  std::vector<int> counts(rank == root ? size : 0), displs(rank == root ? size : 0);
  const int myBytes = static_cast<int>(bytes);
  MPI_Gather(&myBytes, 1, MPI_INT, counts.data(), 1, MPI_INT, root, comm);
  for (int r = 1; r < int(counts.size()); ++r) displs[r] = displs[r - 1] + counts[r - 1];
  std::vector<V> packed(rank == root ? std::size_t(total) / sizeof(V) : 0);
  MPI_Gatherv(values.data(), myBytes, MPI_BYTE, packed.data(), counts.data(), displs.data(),
              MPI_BYTE, root, comm);
  if (rank != root) return {};
  const Index D = extents[0], H = extents[1], W = extents[2];
  std::vector<V> out(std::size_t(components * D * H * W), V{});
  for (int r = 0; r < size; ++r) {
    const std::int64_t* b = &boxes[6 * r];
    Box3 rb{{b[0], b[1], b[2]}, {b[3], b[4], b[5]}};
    if (rb.empty()) continue;
    const V* src = packed.data() + displs[r] / int(sizeof(V));
    for (Index c = 0; c < components; ++c)
      for (Index d = rb.lo[0]; d < rb.hi[0]; ++d)
        for (Index h = rb.lo[1]; h < rb.hi[1]; ++h)
          for (Index w = rb.lo[2]; w < rb.hi[2]; ++w)
            out[std::size_t(((c * D + d) * H + h) * W + w)] = *src++;
  }
  return out;
}

}  // namespace hybrid3d
