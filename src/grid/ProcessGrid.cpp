#include <hybrid3d/core/Error.hpp>
#include <hybrid3d/grid/ProcessGrid.hpp>

#include <cctype>
#include <limits>

namespace hybrid3d {

ProcessGrid::ProcessGrid(MPI_Comm world, const Int3& spatialDims) : dims_(spatialDims) {
  // Validate before any collective call, from data every rank has, so that every rank throws
  // the same message and none is left waiting in MPI_Comm_split.
  MPI_Comm_size(world, &worldSize_);
  MPI_Comm_rank(world, &worldRank_);
  for (int i = 0; i < 3; ++i)
    if (spatialDims[i] < 1)
      fail("process grid: spatial grid ", toString(spatialDims), " has a dimension < 1");
  const long long P = 1LL * spatialDims[0] * spatialDims[1] * spatialDims[2];
  if (P > worldSize_ || worldSize_ % P != 0)
    fail("process grid: world size ", worldSize_, " is not a multiple of the spatial grid ",
         toString(spatialDims), " (", P, " ranks per sample)");

  const int p = static_cast<int>(P);
  group_ = worldRank_ / p;
  spatialRank_ = worldRank_ % p;

  world_ = OwnedComm(world);
  MPI_Comm made;
  MPI_Comm_split(world_.get(), group_, spatialRank_, &made);
  const OwnedComm groupComm = OwnedComm::adopt(made);  // only the Cartesian one is kept
  const int periodic[3] = {0, 0, 0};
  // reorder = 0: spatial rank s keeps Cartesian position s, so positions are known from ranks.
  MPI_Cart_create(groupComm.get(), 3, dims_.data(), periodic, 0, &made);
  spatial_ = OwnedComm::adopt(made);
  MPI_Comm_split(world_.get(), spatialRank_, group_, &made);
  data_ = OwnedComm::adopt(made);
  coords_ = coordsOf(spatialRank_);
}

Int3 ProcessGrid::coordsOf(int spatialRank) const {
  Int3 c;
  MPI_Cart_coords(spatial_.get(), spatialRank, 3, c.data());
  return c;
}

int ProcessGrid::rankAt(const Int3& coords) const {
  for (int i = 0; i < 3; ++i)
    if (coords[i] < 0 || coords[i] >= dims_[i]) return MPI_PROC_NULL;
  int r;
  MPI_Cart_rank(spatial_.get(), coords.data(), &r);
  return r;
}

Int3 parseGridSpec(const std::string& text) {
  Int3 dims{0, 0, 0};
  std::size_t pos = 0;
  for (int i = 0; i < 3; ++i) {
    if (i > 0) {
      if (pos >= text.size() || (text[pos] != 'x' && text[pos] != 'X'))
        fail("process grid: cannot read \"", text, "\" as DxHxW (for example 2x1x1)");
      ++pos;
    }
    const std::size_t start = pos;
    long long v = 0;
    while (pos < text.size() && std::isdigit(static_cast<unsigned char>(text[pos]))) {
      v = v * 10 + (text[pos] - '0');
      if (v > std::numeric_limits<int>::max())
        fail("process grid: \"", text, "\" has a dimension that is too large");
      ++pos;
    }
    if (pos == start) fail("process grid: cannot read \"", text, "\" as DxHxW (for example 2x1x1)");
    if (v < 1) fail("process grid: \"", text, "\" has a dimension < 1");
    dims[i] = static_cast<int>(v);
  }
  if (pos != text.size())
    fail("process grid: cannot read \"", text, "\" as DxHxW (for example 2x1x1)");
  return dims;
}

Int3 autoSpatialGrid(int P, const Index3& extents) {
  if (P < 1) fail("process grid: cannot split a sample over ", P, " ranks");
  Int3 best{P, 1, 1};
  double bestCost = std::numeric_limits<double>::infinity();
  for (int pd = P; pd >= 1; --pd) {
    if (P % pd) continue;
    for (int ph = P / pd; ph >= 1; --ph) {
      if ((P / pd) % ph) continue;
      const int pw = P / pd / ph;
      const Int3 g{pd, ph, pw};
      // Halo surface of the largest subdomain; a grid finer than an extent is penalised so
      // that empty boxes are only chosen when nothing else fits.
      double l[3];
      bool fits = true;
      for (int i = 0; i < 3; ++i) {
        l[i] = static_cast<double>((extents[i] + g[i] - 1) / g[i]);
        fits = fits && g[i] <= extents[i];
      }
      double cost = l[0] * l[1] + l[1] * l[2] + l[0] * l[2];
      if (!fits) cost += 1e30;
      // Strict '<' with pd, then ph, counted down keeps the D-major grid among equals.
      if (cost < bestCost) {
        bestCost = cost;
        best = g;
      }
    }
  }
  return best;
}

}  // namespace hybrid3d
