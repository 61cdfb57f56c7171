#pragma once
/// \file
/// Which boxes of voxels one rank sends to and receives from its (up to 26) neighbours.
///
/// Along each dimension a rank's local range splits into five segments: low ghosts outside the
/// domain, low ghosts owned by the neighbour below, the owned range, high ghosts owned by the
/// neighbour above, high ghosts outside the domain. Every ghost cell falls in exactly one
/// product of segments, so it is received from exactly one rank or set to zero: this is what
/// makes scatterAdd the exact adjoint of gather. Ghost widths may differ from rank to rank: what
/// a rank sends a neighbour is the neighbour's ghost segment towards it, cut with the
/// neighbour's widths from the map. The plan is pure index arithmetic on data every rank has
/// (decomposition and map), so every rank reaches the same verdict on an impossible ghost width.

#include <string>
#include <vector>

#include <hybrid3d/core/Types.hpp>
#include <hybrid3d/grid/BlockDecomposition.hpp>
#include <hybrid3d/grid/DistTensor.hpp>
#include <hybrid3d/grid/LayerGrid.hpp>

namespace hybrid3d {

struct HaloBox {
  int rank;  // the neighbour's rank in the spatial communicator
  Box3 box;  // global voxel indices exchanged with it
};

struct HaloPlan {
  std::vector<HaloBox> sends;  // owned cells that each neighbour holds as ghosts
  std::vector<HaloBox> recvs;  // ghost cells that each neighbour owns
  std::vector<Box3> zeros;     // ghost slabs outside the global domain (zero padding)
};

/// Throws hybrid3d::Error naming `what`, the rank, the extent, the width and the grid when a
/// ghost region of some rank's box (an empty one too) needs voxels that its immediate
/// neighbour does not own. With GhostWidths: the same widths on every rank that owns voxels.
void checkGhostWidths(const BlockDecomposition& decomposition, const GhostMap& ghosts,
                      const std::string& what);
void checkGhostWidths(const BlockDecomposition& decomposition, const GhostWidths& ghosts,
                      const std::string& what);

/// The plan of the rank at `coords` of the decomposition's grid, neighbours numbered row-major
/// over that grid (MPI_Cart's order): pure index arithmetic, for a performance model as much as
/// for the halo. Calls checkGhostWidths first.
HaloPlan planHalo(const BlockDecomposition& decomposition, const Int3& coords,
                  const GhostMap& ghosts, const std::string& what);

/// The plan of the rank at grid.coords(), neighbours numbered as grid's spatial communicator.
HaloPlan planHalo(const LayerGrid& grid, const BlockDecomposition& decomposition,
                  const GhostMap& ghosts, const std::string& what);

}  // namespace hybrid3d
