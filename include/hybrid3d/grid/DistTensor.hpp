#pragma once
/// \file
/// A distributed NCDHW tensor: this rank's owned box of every sample's volume plus ghost cells.
///
/// The local array is a 5-D LayoutRight View (N, C, D+gl+gh, H+gl+gh, W+gl+gh). Ghost widths may
/// differ per side (a stride-2 layer needs only the high side). Global voxel (d,h,w) of the
/// owned box sits at local (d - lo_d + gl_d, ...). Ghost widths may differ from rank to rank
/// (grid/GhostWidths.hpp): the tensor knows every rank's, so a halo built from it knows what
/// each neighbour expects.
///
/// The local array covers the local box: the owned box grown by the ghosts (grid/BoxRule.hpp,
/// which also says how a rank with an empty owned box gets the ghosts its consumer needs). With
/// no ghosts such a rank's local array has zero spatial extent.

#include <string>
#include <type_traits>

#include <Kokkos_Core.hpp>

#include <hybrid3d/core/Error.hpp>
#include <hybrid3d/core/Types.hpp>
#include <hybrid3d/grid/BlockDecomposition.hpp>
#include <hybrid3d/grid/BoxRule.hpp>
#include <hybrid3d/grid/GhostWidths.hpp>

namespace hybrid3d {

/// The layout of a DistTensor without its storage: batch, channels, decomposition, this rank's
/// coordinates and ghost widths. Halos and readers are planned from it, so a layer can build
/// its halo at set-up without allocating an input-sized tensor.
struct TensorLayout {
  int batch = 0, channels = 0;
  BlockDecomposition decomposition;
  Int3 coords{0, 0, 0};
  GhostWidths ghosts;  // this rank's (an empty owned box too: what its consumer needs)
  GhostMap ghostMap;   // every rank's

  TensorLayout() = default;
  TensorLayout(int n, int c, const BlockDecomposition& d, const Int3& at, const GhostMap& g)
      : batch(n), channels(c), decomposition(d), coords(at), ghostMap(g) {
    g.checkGrid(d.dims(), "tensor layout");
    ghosts = g.at(at);
  }
  /// The same widths on every rank that owns voxels (uniformGhosts).
  TensorLayout(int n, int c, const BlockDecomposition& d, const Int3& at, const GhostWidths& g);
  Box3 owned() const { return decomposition.ownedBox(coords); }
  /// The owned box grown by the ghosts (grid/BoxRule.hpp).
  Box3 localBox() const { return hybrid3d::localBox(decomposition, coords, ghosts); }
};

inline TensorLayout::TensorLayout(int n, int c, const BlockDecomposition& d, const Int3& at,
                                  const GhostWidths& g)
    : TensorLayout(n, c, d, at, uniformGhosts(d, g)) {}

template <class T, class MemorySpace = DefaultMemorySpace>
class DistTensor {
  HYBRID3D_ASSERT_SPACE(MemorySpace);

public:
  using value_type = T;
  using memory_space = MemorySpace;
  using execution_space = typename MemorySpace::execution_space;
  using view_type = Kokkos::View<T*****, Kokkos::LayoutRight, MemorySpace>;

  DistTensor() = default;
  /// `ghosts` holds every rank's widths (a layer's inputGhosts()).
  DistTensor(const std::string& label, int n, int c, const BlockDecomposition& decomposition,
             const Int3& coords, const GhostMap& ghosts)
      : DistTensor(Shape{}, label, n, c, decomposition, coords, ghosts) {
    const Index3 e = localExtents();
    view_ = view_type(label, n, c, e[0], e[1], e[2]);
  }
  /// Over memory the caller owns and keeps alive (a model graph's arena of gradients,
  /// model/GradientPlacement.hpp), as it is: `data` holds n * c * localBox().size() values of T,
  /// suitably aligned. No allocation; `label` names the tensor in errors only.
  DistTensor(T* data, const std::string& label, int n, int c,
             const BlockDecomposition& decomposition, const Int3& coords, const GhostMap& ghosts)
      : DistTensor(Shape{}, label, n, c, decomposition, coords, ghosts) {
    if (!data) fail("tensor '", label, "': no memory to lay it over");
    const Index3 e = localExtents();
    view_ = view_type(data, n, c, e[0], e[1], e[2]);
  }
  /// The same widths on every rank that owns voxels (uniformGhosts).
  DistTensor(const std::string& label, int n, int c, const BlockDecomposition& decomposition,
             const Int3& coords, const GhostWidths& ghosts)
      : DistTensor(label, n, c, decomposition, coords, uniformMap(label, decomposition, ghosts)) {}

  const view_type& view() const { return view_; }
  int batch() const { return n_; }
  int channels() const { return c_; }
  const BlockDecomposition& decomposition() const { return decomposition_; }
  const Index3& globalExtents() const { return decomposition_.globalExtents(); }
  const Int3& coords() const { return coords_; }
  /// This rank's widths (what kernels index by), and every rank's.
  const GhostWidths& ghosts() const { return ghosts_; }
  const GhostMap& ghostMap() const { return ghostMap_; }
  const Box3& owned() const { return owned_; }

  TensorLayout layout() const { return {n_, c_, decomposition_, coords_, ghostMap_}; }
  /// The owned box grown by the ghosts, in global indices (may reach outside the domain).
  Box3 localBox() const { return growByGhosts(owned_, ghosts_); }
  Index3 localExtents() const { return localBox().extents(); }
  /// Local array index along `dim` of global index g.
  Index localIndex(int dim, Index g) const { return g - owned_.lo[dim] + ghosts_.lo[dim]; }

  /// The owned cells only, as a subview.
  auto ownedView() const {
    using P = Kokkos::pair<Index, Index>;
    auto range = [&](int i) { return P(ghosts_.lo[i], ghosts_.lo[i] + owned_.extent(i)); };
    return Kokkos::subview(view_, Kokkos::ALL, Kokkos::ALL, range(0), range(1), range(2));
  }

private:
  // The shape, decomposition and ghosts, checked, without storage: what both public
  // constructors start from.
  struct Shape {};
  DistTensor(Shape, const std::string& label, int n, int c, const BlockDecomposition& decomposition,
             const Int3& coords, const GhostMap& ghosts)
      : n_(n),
        c_(c),
        decomposition_(decomposition),
        coords_(coords),
        owned_(decomposition.ownedBox(coords)),
        ghostMap_(ghosts) {
    if (n < 0 || c < 0) fail("tensor '", label, "': negative batch ", n, " or channels ", c);
    for (int i = 0; i < 3; ++i)
      if (coords[i] < 0 || coords[i] >= decomposition.dims()[i])
        fail("tensor '", label, "': coordinates ", toString(coords), " outside grid ",
             toString(decomposition.dims()));
    ghosts.checkGrid(decomposition.dims(), "tensor");
    ghosts_ = ghosts.at(coords);
  }

  static GhostMap uniformMap(const std::string& label, const BlockDecomposition& d,
                             const GhostWidths& g) {
    for (int i = 0; i < 3; ++i)
      if (g.lo[i] < 0 || g.hi[i] < 0) fail("tensor '", label, "': negative ghost width");
    return uniformGhosts(d, g);
  }

  int n_ = 0, c_ = 0;
  BlockDecomposition decomposition_;
  Int3 coords_{0, 0, 0};
  Box3 owned_;
  GhostWidths ghosts_;
  GhostMap ghostMap_;
  view_type view_;
};

/// Factories in the Cabana style: a ready tensor, zero-initialised, with the same ghost widths
/// on every rank or with every rank's own (a layer's inputGhosts()).
template <class T, class MemorySpace = DefaultMemorySpace>
DistTensor<T, MemorySpace> createDistTensor(const std::string& label, int n, int c,
                                            const BlockDecomposition& decomposition,
                                            const Int3& coords, const GhostWidths& ghosts = {}) {
  return DistTensor<T, MemorySpace>(label, n, c, decomposition, coords, ghosts);
}
/// (A template on the map's type, so that a braced `{}` still means "no ghosts" unambiguously.)
template <class T, class MemorySpace = DefaultMemorySpace, class Map,
          std::enable_if_t<std::is_same_v<Map, GhostMap>, int> = 0>
DistTensor<T, MemorySpace> createDistTensor(const std::string& label, int n, int c,
                                            const BlockDecomposition& decomposition,
                                            const Int3& coords, const Map& ghosts) {
  return DistTensor<T, MemorySpace>(label, n, c, decomposition, coords, ghosts);
}

}  // namespace hybrid3d
