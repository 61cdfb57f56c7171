#pragma once
// Building blocks of the element-wise layers (activations, dropout, concat, losses): walking the
// owned cells of DistTensors that may carry different ghost widths (the replicated 2-D feature
// views of the dense part are in layers/FeatureView.hpp). Kernels take their math functions from
// hybrid3d/core/Math.hpp.

#include <Kokkos_Core.hpp>

#include <hybrid3d/core/Types.hpp>
#include <hybrid3d/grid/DistTensor.hpp>
#include <hybrid3d/layers/FeatureView.hpp>

namespace hybrid3d {

namespace Impl {

// A flat index over N x C x (owned box) decoded into (n, c, z, y, x), with (z, y, x) offsets
// inside the owned box. Every tensor of the same layout then adds its own ghost offset, so one
// kernel can read x and write y although their ghost widths differ.
struct OwnedCells {
  Index channels = 0, e0 = 0, e1 = 0, e2 = 0, count = 0;

  OwnedCells() = default;
  OwnedCells(Index n, Index c, const Index3& e)
      : channels(c), e0(e[0]), e1(e[1]), e2(e[2]), count(n * c * e[0] * e[1] * e[2]) {}
  template <class T, class M>
  explicit OwnedCells(const DistTensor<T, M>& t)
      : OwnedCells(t.batch(), t.channels(), t.owned().extents()) {}

  KOKKOS_INLINE_FUNCTION void decode(Index i, Index& n, Index& c, Index& z, Index& y,
                                     Index& x) const {
    x = i % e2;
    i /= e2;
    y = i % e1;
    i /= e1;
    z = i % e0;
    i /= e0;
    c = i % channels;
    n = i / channels;
  }
};

// Where the owned box starts in a tensor's local array (its low ghost widths).
struct GhostOffset {
  Index d = 0, h = 0, w = 0;
};
template <class T, class M>
GhostOffset ghostOffset(const DistTensor<T, M>& t) {
  const Int3& g = t.ghosts().lo;
  return {g[0], g[1], g[2]};
}

template <class ExecSpace>
using CellPolicy = Kokkos::RangePolicy<ExecSpace, Kokkos::IndexType<Index>>;

// True when both tensors hold the same owned cells (same N, C, decomposition and coordinates).
template <class T, class U, class M>
bool sameOwnedLayout(const DistTensor<T, M>& a, const DistTensor<U, M>& b) {
  return a.batch() == b.batch() && a.channels() == b.channels() &&
         a.decomposition() == b.decomposition() && a.coords() == b.coords();
}

}  // namespace Impl
}  // namespace hybrid3d
