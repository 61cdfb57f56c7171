#pragma once
// The one test harness for every rank count: run a test body on each process-grid
// configuration (spatial grid x number of data-parallel groups) that fits in the world.
// A configuration of P*G ranks runs on the first P*G world ranks; the rest sit it out. So a
// test registered at 1, 2, 4 and 8 ranks covers every grid that fits at that count, and
// 3-rank and 6-rank grids run on 4 and 8 ranks.

#include <algorithm>
#include <exception>
#include <functional>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <mpi.h>

#include <hybrid3d/comm/HaloPlan.hpp>
#include <hybrid3d/grid/ProcessGrid.hpp>

#include "WorldRank.hpp"

namespace hybrid3d::test {

struct GridCase {
  Int3 spatial;
  int groups;
  std::string name() const { return toString(spatial) + " G=" + std::to_string(groups); }
};

// The grids of the foundation issue, each with one and two data-parallel groups.
inline std::vector<GridCase> standardGridCases() {
  std::vector<GridCase> cases;
  for (const Int3& g : std::vector<Int3>{
           {1, 1, 1}, {2, 1, 1}, {1, 2, 2}, {2, 2, 2}, {3, 1, 1}, {1, 3, 2}, {1, 1, 2}})
    for (int groups : {1, 2}) cases.push_back({g, groups});
  return cases;
}

// Grids on which a stride-2 window (kernel 3, padding 1: CosmoFlow's average pool, a strided
// convolution, a 3/2/1 max pool) over stridedWindowExtents(grid) was refused while every rank
// took the widest rank's ghosts, although each rank's own need lies on immediate neighbours
// (issue 9: D = 9 on 6x1x1). They need 3 to 8 ranks.
inline std::vector<GridCase> perRankGhostGridCases() {
  return {{{6, 1, 1}, 1}, {{3, 1, 1}, 1}, {{3, 1, 1}, 2}, {{1, 4, 1}, 1},
          {{1, 4, 1}, 2}, {{1, 1, 3}, 1}, {{2, 1, 3}, 1}, {{1, 3, 2}, 1}};
}
// Per grid dimension p: an extent the widest-rank rule refused for p >= 3 (legal for p <= 2).
inline Index3 stridedWindowExtents(const Int3& grid) {
  auto extent = [](int p) -> Index { return p == 3 ? 3 : p == 4 ? 5 : p == 6 ? 9 : 4 + 2 * p; };
  return {extent(grid[0]), extent(grid[1]), extent(grid[2])};
}

// True when giving every rank the widest rank's ghosts (the rule before issue 9) would be
// refused on `dec`: the proof that a test on a perRankGhostGridCases grid covers new ground.
inline bool refusedByWidestRank(const BlockDecomposition& dec, const GhostMap& map) {
  GhostWidths widest;
  for (int i = 0; i < 3; ++i)
    for (int k = 0; k < dec.dims()[i]; ++k) {
      widest.lo[i] = std::max(widest.lo[i], map.lo(i, k));
      widest.hi[i] = std::max(widest.hi[i], map.hi(i, k));
    }
  try {
    checkGhostWidths(dec, widest, "widest");
  } catch (const std::exception&) {
    return true;
  }
  return false;
}

// Grids on which a layer whose output is larger than its input (an upsampling transposed
// convolution k2 s2, a pool 2/1/1, a convolution padded past half its kernel) over
// upsamplingInputExtents(grid) leaves a rank owning output voxels but no input voxels, whose
// need lies on its immediate neighbour: refused while an empty box could carry no ghosts.
// They need 2 to 8 ranks.
inline std::vector<GridCase> emptyInputGridCases() {
  return {{{2, 1, 1}, 1}, {{2, 1, 1}, 2}, {{3, 1, 1}, 1}, {{1, 4, 1}, 1},
          {{1, 1, 3}, 2}, {{2, 2, 2}, 1}, {{1, 3, 2}, 1}, {{6, 1, 1}, 1}};
}
// Per grid dimension p: p - 1 voxels (the last rank owns none), 3 where the dimension is not cut.
inline Index3 upsamplingInputExtents(const Int3& grid) {
  auto extent = [](int p) -> Index { return p == 1 ? 3 : p - 1; };
  return {extent(grid[0]), extent(grid[1]), extent(grid[2])};
}

// True when some rank owns output but no input along a dimension: refused while an empty box
// had no ghosts (the rule before issue 9's last gap), so a test on such a grid covers new ground.
inline bool someRankOwnsOutputButNoInput(const BlockDecomposition& in,
                                         const BlockDecomposition& out) {
  for (int i = 0; i < 3; ++i)
    for (int k = 0; k < in.dims()[i]; ++k)
      if (in.extent(i, k) == 0 && out.extent(i, k) > 0) return true;
  return false;
}

// Runs body(grid) for every case that fits; returns how many cases ran (same on all ranks).
inline int forEachGrid(const std::vector<GridCase>& cases,
                       const std::function<void(const ProcessGrid&, const GridCase&)>& body) {
  int ran = 0;
  for (const GridCase& c : cases) {
    const int ranks = c.spatial[0] * c.spatial[1] * c.spatial[2] * c.groups;
    if (ranks > worldSize()) continue;
    ++ran;
    const bool inside = worldRank() < ranks;
    MPI_Comm sub;
    MPI_Comm_split(MPI_COMM_WORLD, inside ? 0 : MPI_UNDEFINED, worldRank(), &sub);
    if (inside) {
      SCOPED_TRACE("grid " + c.name());
      // An exception must not skip the barrier below, or the ranks outside this case would
      // wait there while these ones run ahead into the next test's collectives.
      try {
        ProcessGrid grid(sub, c.spatial);
        body(grid, c);
      } catch (const std::exception& e) {
        ADD_FAILURE() << "rank " << worldRank() << ", grid " << c.name() << ": " << e.what();
      }
      MPI_Comm_free(&sub);
    }
    MPI_Barrier(MPI_COMM_WORLD);
  }
  return ran;
}

// True on every rank iff `ok` is true on every rank of `comm`.
inline bool allTrue(bool ok, MPI_Comm comm = MPI_COMM_WORLD) {
  int local = ok ? 1 : 0, global = 0;
  MPI_Allreduce(&local, &global, 1, MPI_INT, MPI_MIN, comm);
  return global == 1;
}

}  // namespace hybrid3d::test
