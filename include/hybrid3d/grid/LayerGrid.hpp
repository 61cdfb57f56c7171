#pragma once
/// \file
/// What a layer sees of the ranks: its layout (grid/LayerLayout.hpp) and this rank's place in
/// it, with the communicators its collectives run over. It answers what ProcessGrid answers
/// (dims, coords, spatialComm, dataComm, ...) for the layer's own grid, so a layer written for
/// one grid runs on any: `spatialComm` is this rank's sub-grid (halos, the first dense layer's
/// partial sums), `dataComm` the ranks holding the same position's replicas (every sub-grid of
/// every group: a column shard's gradient, the loss of replicated predictions), `groupComm` the
/// whole spatial group (batch-norm statistics per group), `worldComm` everyone.
///
/// A value with borrowed communicators: LayerGridSet owns them (and ProcessGrid those of the
/// spatial grid), and must outlive every copy. Implicit from a ProcessGrid, whose layout it is
/// with every rank in one sub-grid, so code written for ProcessGrid keeps working.

#include <memory>
#include <vector>

#include <mpi.h>

#include <hybrid3d/core/OwnedComm.hpp>
#include <hybrid3d/grid/LayerLayout.hpp>
#include <hybrid3d/grid/ProcessGrid.hpp>

namespace hybrid3d {

class LayerGrid {
public:
  /// The spatial grid of `grid`: one sub-grid of the whole group.
  LayerGrid(const ProcessGrid& grid);  // NOLINT(google-explicit-constructor): by design
  LayerGrid() = default;               // no ranks: to be assigned

  const LayerLayout& layout() const { return layout_; }
  const Int3& dims() const { return layout_.dims(); }
  /// This rank's coordinates in its sub-grid (an inactive rank: those of the position it
  /// shadows).
  const Int3& coords() const { return place_.coords; }
  bool active() const { return place_.active; }
  int subGrid() const { return place_.subGrid; }
  int subGrids() const { return layout_.subGrids(); }
  /// This rank's position in its sub-grid (ProcessGrid's spatial rank on the spatial grid).
  int spatialRank() const { return place_.position; }
  int spatialSize() const { return layout_.ranks(); }
  int groupRank() const { return groupRank_; }
  int group() const { return group_; }
  int numGroups() const { return numGroups_; }
  int worldRank() const { return worldRank_; }

  /// Cartesian over the sub-grid, row-major; MPI_COMM_NULL where inactive.
  MPI_Comm spatialComm() const { return spatial_; }
  MPI_Comm dataComm() const { return data_; }
  MPI_Comm groupComm() const { return group_comm_; }
  MPI_Comm worldComm() const { return world_; }

  /// The rank of spatialComm at `coords`, or MPI_PROC_NULL outside the (non-periodic) grid.
  int rankAt(const Int3& coords) const;
  Int3 coordsOf(int spatialRank) const { return layout_.coordsOf(spatialRank); }

  /// Samples this rank holds of a group batch (0 where inactive or its sub-grid has none), and
  /// the group's index of its local sample n.
  int localBatch(int groupBatch) const {
    return place_.active ? layout_.samples(groupBatch, place_.subGrid) : 0;
  }
  int groupSample(int n) const { return layout_.groupSample(place_.subGrid, n); }

private:
  friend class LayerGridSet;

  LayerLayout layout_;
  LayerPlace place_;
  int groupRank_ = 0, group_ = 0, numGroups_ = 1, worldRank_ = 0;
  MPI_Comm spatial_ = MPI_COMM_NULL, data_ = MPI_COMM_NULL, group_comm_ = MPI_COMM_NULL,
           world_ = MPI_COMM_NULL;
};

/// The layer grids of one process grid, made on demand and owned: the communicators of each
/// sub-grid shape are made once (at set-up), never per step.
class LayerGridSet {
public:
  /// `grid` must outlive the set.
  explicit LayerGridSet(const ProcessGrid& grid);
  LayerGridSet(const LayerGridSet&) = delete;
  LayerGridSet& operator=(const LayerGridSet&) = delete;

  /// The spatial grid.
  const LayerGrid& spatial() const { return spatial_; }
  /// The layer grid of sub-grids `dims` (throws naming it when it has more ranks than a group).
  /// Collective over the world the first time a shape is asked for: every rank asks for the
  /// same shapes in the same order (a model's layers, built in order).
  const LayerGrid& at(const Int3& dims);

private:
  struct Made {
    OwnedComm spatial, data;
    LayerGrid grid;
  };
  const ProcessGrid& processGrid_;
  LayerGrid spatial_;
  std::vector<std::unique_ptr<Made>> made_;
};

}  // namespace hybrid3d
