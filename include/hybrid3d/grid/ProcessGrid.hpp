#pragma once
/// \file
/// The hybrid process grid: world = G data-parallel groups x P = pd*ph*pw spatial ranks.
///
/// World rank r belongs to group g = r / P at spatial rank s = r % P, so the P ranks that share
/// one sample are consecutive (on the same node when ranks are packed by node). Each group gets
/// a non-periodic Cartesian communicator (the halo neighbours); each spatial position gets a
/// data-parallel communicator over the G ranks holding the same box of different samples
/// (weight-gradient reduction). All communicators are owned (OwnedComm) and freed with the grid.

#include <string>

#include <mpi.h>

#include <hybrid3d/core/OwnedComm.hpp>
#include <hybrid3d/core/Types.hpp>

namespace hybrid3d {

class ProcessGrid {
public:
  /// Collective over `world`. Throws hybrid3d::Error on every rank (before any communicator is
  /// made) when a dimension is < 1 or the world size is not a multiple of pd*ph*pw.
  ProcessGrid(MPI_Comm world, const Int3& spatialDims);
  ProcessGrid(const ProcessGrid&) = delete;
  ProcessGrid& operator=(const ProcessGrid&) = delete;

  MPI_Comm worldComm() const { return world_.get(); }
  MPI_Comm spatialComm() const { return spatial_.get(); }  // Cartesian, P ranks, one sample
  MPI_Comm dataComm() const { return data_.get(); }        // G ranks, same spatial position

  int worldRank() const { return worldRank_; }
  int worldSize() const { return worldSize_; }
  int spatialRank() const { return spatialRank_; }
  int spatialSize() const { return dims_[0] * dims_[1] * dims_[2]; }
  int group() const { return group_; }
  int numGroups() const { return worldSize_ / spatialSize(); }

  const Int3& dims() const { return dims_; }
  const Int3& coords() const { return coords_; }
  Int3 coordsOf(int spatialRank) const;
  /// Spatial rank at `coords`, or MPI_PROC_NULL outside the (non-periodic) grid.
  int rankAt(const Int3& coords) const;

private:
  Int3 dims_{1, 1, 1};
  Int3 coords_{0, 0, 0};
  int worldRank_ = 0, worldSize_ = 1, spatialRank_ = 0, group_ = 0;
  OwnedComm world_, spatial_, data_;
};

/// Parses "DxHxW" (three integers >= 1, e.g. "2x1x1"). Throws naming the text otherwise.
Int3 parseGridSpec(const std::string& text);

/// Chooses pd*ph*pw = P so that the subdomains of `extents` are closest to cubes (least halo
/// surface per rank); ties prefer cutting D first, which keeps HDF5 hyperslab reads contiguous.
Int3 autoSpatialGrid(int P, const Index3& extents);

}  // namespace hybrid3d
