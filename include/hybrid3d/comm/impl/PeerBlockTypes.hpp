#pragma once
// MPI derived datatypes for a redistribution on host memory (comm/Redistribute.hpp): per peer,
// one type covering every block of the plan exchanged with it -- each block a subarray
// [1, C, box] of one sample of a LayoutRight 5-D array -- so MPI moves the cells straight
// between the two tensors, with no buffer and no pack or unpack kernel of ours. Built for one
// array shape and rebuilt only when a call brings another (a model's tensors keep theirs: once).

#include <array>
#include <vector>

#include <mpi.h>

#include <hybrid3d/comm/RedistributePlan.hpp>
#include <hybrid3d/core/Error.hpp>

namespace hybrid3d::Impl {

class PeerBlockTypes {
public:
  using Shape = std::array<Index, 5>;  // the local array's extents

  PeerBlockTypes() = default;
  ~PeerBlockTypes() { release(); }
  PeerBlockTypes(const PeerBlockTypes&) = delete;
  PeerBlockTypes& operator=(const PeerBlockTypes&) = delete;

  // The types of `blocks` (ordered by peer: one type per peer, in that order) in an array of
  // `shape` whose local (0, 0, 0) is global voxel `origin`; kept when shape and origin are the
  // last ones.
  const std::vector<MPI_Datatype>& of(const std::vector<RedistributeBlock>& blocks,
                                      const Shape& shape, const Index3& origin,
                                      MPI_Datatype scalar) {
    if (built_ && shape == shape_ && origin == origin_) return types_;
    release();
    for (int i = 0; i < 5; ++i)
      if (shape[i] > INT_MAX) fail("redistribution: an array extent of ", shape[i], " exceeds int");
    const int sizes[5] = {int(shape[0]), int(shape[1]), int(shape[2]), int(shape[3]),
                          int(shape[4])};
    std::vector<MPI_Datatype> peer;  // the blocks of one peer
    for (std::size_t i = 0; i < blocks.size(); ++i) {
      const RedistributeBlock& b = blocks[i];
      const int sub[5] = {1, sizes[1], int(b.box.extent(0)), int(b.box.extent(1)),
                          int(b.box.extent(2))};
      const int start[5] = {b.sample, 0, int(b.box.lo[0] - origin[0]), int(b.box.lo[1] - origin[1]),
                            int(b.box.lo[2] - origin[2])};
      MPI_Datatype t;
      MPI_Type_create_subarray(5, sizes, sub, start, MPI_ORDER_C, scalar, &t);
      peer.push_back(t);
      if (i + 1 == blocks.size() || blocks[i + 1].peer != b.peer) {
        // One type for the peer: its blocks in plan order (each subarray places itself).
        MPI_Datatype all = peer.front();
        if (peer.size() > 1) {
          const std::vector<int> ones(peer.size(), 1);
          const std::vector<MPI_Aint> zeros(peer.size(), 0);
          MPI_Type_create_struct(int(peer.size()), ones.data(), zeros.data(), peer.data(), &all);
          for (MPI_Datatype& p : peer) MPI_Type_free(&p);
        }
        MPI_Type_commit(&all);
        types_.push_back(all);
        peer.clear();
      }
    }
    shape_ = shape;
    origin_ = origin;
    built_ = true;
    return types_;
  }

private:
  void release() {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (!finalized)
      for (MPI_Datatype& t : types_) MPI_Type_free(&t);
    types_.clear();
    built_ = false;
  }

  std::vector<MPI_Datatype> types_;
  Shape shape_{};
  Index3 origin_{};
  bool built_ = false;
};

}  // namespace hybrid3d::Impl
