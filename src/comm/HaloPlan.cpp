#include <hybrid3d/comm/HaloPlan.hpp>
#include <hybrid3d/core/Error.hpp>

#include <algorithm>

namespace hybrid3d {

namespace {

const char* dimName(int i) { return i == 0 ? "D" : i == 1 ? "H" : "W"; }

// Ghost segment of a rank owning [lo, hi) of [0, n) towards `side` (-1 low, 0 owned, +1 high),
// clipped to the domain.
std::pair<Index, Index> segment(Index lo, Index hi, Index n, int gl, int gh, int side) {
  if (side < 0) return {std::max<Index>(0, lo - gl), lo};
  if (side > 0) return {hi, std::min<Index>(n, hi + gh)};
  return {lo, hi};
}

Box3 segmentBox(const Box3& owned, const Index3& n, const GhostWidths& g, const Int3& side) {
  Box3 b;
  for (int i = 0; i < 3; ++i) {
    auto s = segment(owned.lo[i], owned.hi[i], n[i], g.lo[i], g.hi[i], side[i]);
    b.lo[i] = s.first;
    b.hi[i] = std::max(s.first, s.second);
  }
  return b;
}

}  // namespace

void checkGhostWidths(const BlockDecomposition& dec, const GhostMap& g, const std::string& what) {
  g.checkGrid(dec.dims(), what.c_str());
  const Index3& n = dec.globalExtents();
  const Int3& p = dec.dims();
  for (int i = 0; i < 3; ++i) {
    for (int k = 0; k < p[i]; ++k) {
      // An empty box [lo, lo) is checked as any other: its ghosts must lie on the rank below
      // (it sits at the end of that rank's block), and the rank below must own them.
      const Index lo = dec.begin(i, k), hi = dec.end(i, k);
      const Index need_lo = std::max<Index>(0, lo - g.lo(i, k));
      const Index need_hi = std::min<Index>(n[i], hi + g.hi(i, k));
      const bool lowOk = need_lo >= lo || dec.begin(i, k - 1) <= need_lo;
      const bool highOk = need_hi <= hi || dec.end(i, k + 1) >= need_hi;
      if (!lowOk || !highOk)
        fail(what, ": ghost width ", lowOk ? g.hi(i, k) : g.lo(i, k), " on the ",
             lowOk ? "high" : "low", " side of ", dimName(i), " of rank ", k,
             " reaches past the neighbouring rank: extent ", n[i], " over ", p[i],
             " ranks leaves rank ", lowOk ? k + 1 : k - 1, " of that dimension only ",
             dec.extent(i, lowOk ? k + 1 : k - 1), " voxel(s) (extents ", toString(n), ", grid ",
             toString(p), "); use a coarser grid");
    }
  }
}

void checkGhostWidths(const BlockDecomposition& dec, const GhostWidths& g,
                      const std::string& what) {
  checkGhostWidths(dec, uniformGhosts(dec, g), what);
}

HaloPlan planHalo(const BlockDecomposition& dec, const Int3& me, const GhostMap& map,
                  const std::string& what) {
  checkGhostWidths(dec, map, what);

  HaloPlan plan;
  const Int3& dims = dec.dims();
  // A rank owning nothing may still have ghosts (DistTensor.hpp); it sends nothing.
  const Box3 owned = dec.ownedBox(me);
  const Index3& n = dec.globalExtents();
  const GhostWidths g = map.at(me);

  for (int od = -1; od <= 1; ++od)
    for (int oh = -1; oh <= 1; ++oh)
      for (int ow = -1; ow <= 1; ++ow) {
        const Int3 o{od, oh, ow};
        if (o == Int3{0, 0, 0}) continue;
        const Int3 nc{me[0] + od, me[1] + oh, me[2] + ow};
        if (nc[0] < 0 || nc[1] < 0 || nc[2] < 0 || nc[0] >= dims[0] || nc[1] >= dims[1] ||
            nc[2] >= dims[2])
          continue;
        const int rank = (nc[0] * dims[1] + nc[1]) * dims[2] + nc[2];  // row-major, as MPI_Cart
        // What I receive: my ghost segment towards o, owned by that neighbour.
        const Box3 recv = segmentBox(owned, n, g, o);
        if (!recv.empty()) plan.recvs.push_back({rank, recv});
        // What I send: the neighbour's ghost segment towards me, cut with its own widths, which
        // lies in my box.
        const Box3 theirs = dec.ownedBox(nc);
        const Box3 send = segmentBox(theirs, n, map.at(nc), {-od, -oh, -ow});
        if (send.empty()) continue;
        if (!owned.contains(send))
          fail(what, ": internal error, halo box ", send, " not inside owned box ", owned);
        plan.sends.push_back({rank, send});
      }

  // Zero padding: slabs of the local box outside [0, n) along each dimension. Slabs of two
  // dimensions overlap at edges and corners; writing zero twice is harmless.
  // A local box of no volume (an empty box without ghosts along some dimension) has none.
  const Box3 local = localBox(dec, me, g);
  if (local.empty()) return plan;
  for (int i = 0; i < 3; ++i) {
    if (local.lo[i] < 0) {
      Box3 z = local;
      z.hi[i] = 0;
      plan.zeros.push_back(z);
    }
    if (local.hi[i] > n[i]) {
      Box3 z = local;
      z.lo[i] = n[i];
      plan.zeros.push_back(z);
    }
  }
  return plan;
}

HaloPlan planHalo(const LayerGrid& grid, const BlockDecomposition& dec, const GhostMap& map,
                  const std::string& what) {
  if (grid.dims() != dec.dims())
    fail(what, ": decomposition grid ", toString(dec.dims()), " differs from the process grid ",
         toString(grid.dims()));
  HaloPlan plan = planHalo(dec, grid.coords(), map, what);
  // The pure plan numbers neighbours row-major; the communicator's own numbering is asked for.
  const Int3& dims = dec.dims();
  auto rankOf = [&](int linear) {
    return grid.rankAt(
        {linear / (dims[1] * dims[2]), linear / dims[2] % dims[1], linear % dims[2]});
  };
  for (HaloBox& b : plan.sends) b.rank = rankOf(b.rank);
  for (HaloBox& b : plan.recvs) b.rank = rankOf(b.rank);
  return plan;
}

}  // namespace hybrid3d
