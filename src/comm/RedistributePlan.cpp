#include <algorithm>

#include <hybrid3d/comm/RedistributePlan.hpp>
#include <hybrid3d/core/Error.hpp>
#include <hybrid3d/grid/BlockDecomposition.hpp>

namespace hybrid3d {

namespace {

// The positions of `to`'s sub-grid whose owned boxes meet `box` (none for an empty box): the
// owners of its corners along each dimension and everything between.
template <class Visit>
void forEachOverlap(const BlockDecomposition& dec, const LayerLayout& layout, const Box3& box,
                    Visit&& visit) {
  if (box.empty()) return;
  Int3 first, last;
  for (int i = 0; i < 3; ++i) {
    first[i] = dec.ownerCoord(i, box.lo[i]);
    last[i] = dec.ownerCoord(i, box.hi[i] - 1);
  }
  for (int d = first[0]; d <= last[0]; ++d)
    for (int h = first[1]; h <= last[1]; ++h)
      for (int w = first[2]; w <= last[2]; ++w) {
        const Int3 c{d, h, w};
        const Box3 overlap = intersect(box, dec.ownedBox(c));
        if (!overlap.empty()) visit(layout.positionOf(c), overlap);
      }
}

void sortByPeer(std::vector<RedistributeBlock>& blocks) {
  // Within one peer the local samples run in the order of the group's samples on both sides.
  std::sort(blocks.begin(), blocks.end(),
            [](const RedistributeBlock& a, const RedistributeBlock& b) {
              return a.peer != b.peer ? a.peer < b.peer : a.sample < b.sample;
            });
}

}  // namespace

RedistributePlan planRedistribute(const LayerLayout& from, const LayerLayout& to,
                                  const Index3& extents, int groupBatch, int rank,
                                  bool replicated) {
  if (from.groupSize() != to.groupSize())
    fail("redistribution: layouts of groups of ", from.groupSize(), " and ", to.groupSize(),
         " ranks");
  if (replicated && extents != Index3{1, 1, 1})
    fail("redistribution: a replicated tensor has extents 1x1x1, not ", toString(extents));
  RedistributePlan plan;
  const BlockDecomposition a(extents, from.dims()), b(extents, to.dims());
  const LayerPlace src = from.place(rank), dst = to.place(rank);
  const Box3 unit{{0, 0, 0}, {1, 1, 1}};

  if (src.active) {
    const Box3 mine = replicated ? unit : a.ownedBox(src.coords);
    for (int n = 0; n < from.samples(groupBatch, src.subGrid); ++n) {
      const int j = from.groupSample(src.subGrid, n), k = to.subGridOf(j);
      auto send = [&](int position, const Box3& box) {
        const RedistributeBlock block{to.groupRank(k, position), n, to.localIndexOf(j), box};
        (block.peer == rank ? plan.copies : plan.sends).push_back(block);
      };
      if (replicated) {
        for (int q = src.position; q < to.ranks(); q += from.ranks()) send(q, unit);
      } else {
        forEachOverlap(b, to, mine, send);
      }
    }
  }
  if (dst.active) {
    const Box3 mine = replicated ? unit : b.ownedBox(dst.coords);
    for (int n = 0; n < to.samples(groupBatch, dst.subGrid); ++n) {
      const int j = to.groupSample(dst.subGrid, n), k = from.subGridOf(j);
      auto receive = [&](int position, const Box3& box) {
        const RedistributeBlock block{from.groupRank(k, position), n, from.localIndexOf(j), box};
        if (block.peer != rank) plan.recvs.push_back(block);  // copies are listed above
      };
      if (replicated)
        receive(dst.position % from.ranks(), unit);
      else
        forEachOverlap(a, from, mine, receive);
    }
  }
  sortByPeer(plan.sends);
  sortByPeer(plan.recvs);
  return plan;
}

Index cellsOf(const std::vector<RedistributeBlock>& blocks) {
  Index n = 0;
  for (const RedistributeBlock& b : blocks) n += b.box.size();
  return n;
}

int peersOf(const std::vector<RedistributeBlock>& blocks) {
  int peers = 0;
  for (std::size_t i = 0; i < blocks.size(); ++i)
    peers += i == 0 || blocks[i].peer != blocks[i - 1].peer;
  return peers;
}

}  // namespace hybrid3d
