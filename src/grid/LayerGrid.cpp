#include <hybrid3d/grid/LayerGrid.hpp>

namespace hybrid3d {

LayerGrid::LayerGrid(const ProcessGrid& grid)
    : layout_(grid.dims(), grid.spatialSize()),
      place_(layout_.place(grid.spatialRank())),
      groupRank_(grid.spatialRank()),
      group_(grid.group()),
      numGroups_(grid.numGroups()),
      worldRank_(grid.worldRank()),
      spatial_(grid.spatialComm()),
      data_(grid.dataComm()),
      group_comm_(grid.spatialComm()),
      world_(grid.worldComm()) {}

int LayerGrid::rankAt(const Int3& coords) const {
  for (int i = 0; i < 3; ++i)
    if (coords[i] < 0 || coords[i] >= dims()[i]) return MPI_PROC_NULL;
  // MPI_Cart_create with reorder = 0 numbers the sub-grid row-major.
  return layout_.positionOf(coords);
}

LayerGridSet::LayerGridSet(const ProcessGrid& grid) : processGrid_(grid), spatial_(grid) {}

const LayerGrid& LayerGridSet::at(const Int3& dims) {
  if (dims == spatial_.dims()) return spatial_;
  for (const auto& m : made_)
    if (m->grid.dims() == dims) return m->grid;
  const ProcessGrid& g = processGrid_;
  auto m = std::make_unique<Made>();
  LayerGrid& l = m->grid;
  l = spatial_;
  l.layout_ = LayerLayout(dims, g.spatialSize());  // throws alike on every rank
  l.place_ = l.layout_.place(g.spatialRank());
  // The sub-grid: the ranks of one sub-grid of one group, Cartesian, positions kept.
  const int S = l.layout_.subGrids();
  MPI_Comm split;
  MPI_Comm_split(g.worldComm(), l.place_.active ? g.group() * S + l.place_.subGrid : MPI_UNDEFINED,
                 l.place_.position, &split);
  if (split != MPI_COMM_NULL) {
    const OwnedComm sub = OwnedComm::adopt(split);
    const int periodic[3] = {0, 0, 0};
    MPI_Comm cart;
    MPI_Cart_create(sub.get(), 3, dims.data(), periodic, 0, &cart);
    m->spatial = OwnedComm::adopt(cart);
  }
  // The replicas of a position: every sub-grid of every group, and the shadows.
  MPI_Comm_split(g.worldComm(), l.place_.position, g.worldRank(), &split);
  m->data = OwnedComm::adopt(split);
  l.spatial_ = m->spatial.get();
  l.data_ = m->data.get();
  made_.push_back(std::move(m));
  return made_.back()->grid;
}

}  // namespace hybrid3d
