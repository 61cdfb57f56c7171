#pragma once
// What MaxPool3d and AvgPool3d share: validation of the window against PyTorch's rules and
// their SpatialGeometry (poolGeometry), the halo that fills the input ghosts, backward's
// inverse window tables, and the window index arithmetic their kernels use.
//
// Both layers work in global voxel indices. Max pooling clips a window to the domain [0, n), so
// it sees padding as -infinity (as PyTorch). Average pooling sums whole windows, padding
// included: the halo has zero-filled it, and adding +0 to a sum that starts at +0 changes no bit,
// so the sum is the clipped window's in the same (d, h, w) order; only the divisor depends on
// whether padded cells count.
//
// Kernels run over rows of cells (Impl::forEachRowCell): one team thread per (n, c, d, h) row of
// outputs or inputs, the row's cells along W over the vector lanes.

#include <memory>
#include <string>
#include <type_traits>
#include <utility>

#include <Kokkos_Core.hpp>

#include <hybrid3d/comm/Halo.hpp>
#include <hybrid3d/comm/HaloPlan.hpp>
#include <hybrid3d/core/Error.hpp>
#include <hybrid3d/core/Prefetch.hpp>
#include <hybrid3d/grid/BlockDecomposition.hpp>
#include <hybrid3d/grid/DistTensor.hpp>
#include <hybrid3d/grid/LayerGrid.hpp>
#include <hybrid3d/kernels/Elementwise.hpp>
#include <hybrid3d/kernels/PoolWindow.hpp>
#include <hybrid3d/layers/LayerConvention.hpp>
#include <hybrid3d/layers/Parameter.hpp>
#include <hybrid3d/layers/SpatialGeometry.hpp>
#include <hybrid3d/layers/Window.hpp>

namespace hybrid3d::Impl {

// The geometry of a pool of kind `kind` ("MaxPool3d"; messages name "kind 'name'"), once the
// window passes PyTorch's rules. Throws on every rank alike (all checks use global data), so
// before the collective halo set-up.
inline SpatialGeometry poolGeometry(const char* kind, const std::string& name,
                                    const LayerGrid& grid, const TensorShape& input,
                                    const Window& window) {
  LayerNaming naming = LayerNaming::quoted(kind, name);
  const std::string label = naming.label;
  if (input.batch < 0 || input.channels < 1)
    fail(label, ": needs batch >= 0 and channels >= 1, got batch ", input.batch, " and ",
         input.channels, " channels");
  for (int d = 0; d < 3; ++d) {
    const int k = window.kernel[d], s = window.stride[d], p = window.padding[d];
    if (k < 1 || s < 1 || p < 0)
      fail(label, ": kernel ", k, ", stride ", s, " and padding ", p,
           " must be >= 1, >= 1 and >= 0");
    if (k > PoolGeometry::kMaxKernel)
      fail(label, ": kernel ", k, " larger than ", PoolGeometry::kMaxKernel);
    // PyTorch refuses this too: a window could then lie entirely in the padding.
    if (2 * p > k)
      fail(label, ": padding ", p, " exceeds half the kernel ", k, " (PyTorch's limit)");
    if (input.extents[d] < 1)
      fail(label, ": input extents ", toString(input.extents), " must all be >= 1");
    if (input.extents[d] + 2 * p < k)
      fail(label, ": kernel ", k, " larger than the padded input extent ", input.extents[d],
           " + 2*", p, " along ", "DHW"[d], " (input ", toString(input.extents), ")");
  }
  return SpatialGeometry::withGhostRule(
      std::move(naming), grid.dims(), grid.coords(), input,
      {input.batch, input.channels, windowOutputExtents(input.extents, window)},
      [&](const BlockDecomposition& in, const BlockDecomposition& out) {
        return windowGhosts(in, out, window, label);
      });
}

template <class T, class MemorySpace>
class Pool3dPlan {
public:
  using tensor_type = DistTensor<T, MemorySpace>;

  // For a pool of geometry `spatial` (poolGeometry) and `window`. Collective: builds the halo.
  Pool3dPlan(const LayerGrid& grid, const SpatialGeometry& spatial, const Window& window)
      : spatial_(spatial), window_(window) {
    const TensorLayout layout = spatial_.inputLayout();
    halo_ = createHalo<T, MemorySpace>(grid, layout, label());
    const PoolGeometry g = geometry();
    const Box3 local = layout.localBox();
    for (int d = 0; d < 3; ++d) {
      outputsOf_[d] = OutputRange<MemorySpace>(
          spatial_.viewLabel(std::string("outputs of input ") + "DHW"[d]), local.extent(d));
      auto h = Kokkos::create_mirror_view(outputsOf_[d]);
      for (Index i = 0; i < local.extent(d); ++i) {
        const Index gi = local.lo[d] + i;
        const bool inside = gi >= 0 && gi < g.n[d];
        h(i, 0) = g.firstOutput(d, gi);
        h(i, 1) = inside ? imax(g.lastOutput(d, gi), h(i, 0)) : h(i, 0);
      }
      Kokkos::deep_copy(outputsOf_[d], h);
    }
    // The interior of W (PhaseRun): an interval, as each condition is monotone in w.
    const Index lo = local.lo[2];
    Index first = -1, end = -1;
    for (Index i = 0; i < local.extent(2); ++i) {
      const Index w = lo + i;
      const bool interior = w >= 0 && w < g.n[2] &&
                            ceilDiv(w + g.p[2] - g.k[2] + 1, g.s[2]) >= g.outLo[2] &&
                            floorDiv(w + g.p[2], g.s[2]) < g.outHi[2];
      if (interior && first < 0) first = i;
      if (interior) end = i + 1;
    }
    if (first >= 0) {
      while ((lo + first + g.p[2]) % g.s[2] != 0) ++first;  // lo + first >= 0: in the domain
      if (end > first) wRun_ = {first, (end - first) / g.s[2], (lo + first + g.p[2]) / g.s[2]};
    }
  }

  // The same, making the geometry (for tests of the kernels without a layer).
  Pool3dPlan(const LayerGrid& grid, const char* kind, const std::string& name,
             const TensorShape& input, const Window& window)
      : Pool3dPlan(grid, poolGeometry(kind, name, grid, input, window), window) {}

  const SpatialGeometry& spatial() const { return spatial_; }
  // What messages start with ("MaxPool3d 'p1'"), and the view labels, from the geometry.
  const std::string& label() const { return spatial_.label(); }
  std::string viewLabel(std::string_view what) const { return spatial_.viewLabel(what); }
  const Box3& outputOwned() const { return spatial_.outputOwned(); }
  Halo<T, MemorySpace>& halo() const { return *halo_; }
  // The next forward's kind (ForwardPass); a replay from a kept input exchanges no halo.
  void setForwardPass(ForwardPass pass) { forwardPass_ = pass; }
  // x's ghosts := its neighbours' cells (and zero padding), unless they still hold them.
  void gatherInput(const typename MemorySpace::execution_space& exec, const tensor_type& x) const {
    if (forwardPass_ != ForwardPass::RecomputeKeptInput) halo_->gather(exec, x);
  }
  // Backward's inverse window map along D, H and W, indexed by x's local array index.
  const OutputRange<MemorySpace>& outputsOf(int dim) const { return outputsOf_[dim]; }
  // Backward's interior along W, for kernels with a compile-time window.
  const PhaseRun& wInterior() const { return wRun_; }

  PoolGeometry geometry() const {
    PoolGeometry g;
    const Box3& outOwned = spatial_.outputOwned();
    for (int d = 0; d < 3; ++d) {
      g.n[d] = spatial_.inputShape().extents[d];
      g.outLo[d] = outOwned.lo[d];
      g.outHi[d] = outOwned.lo[d] + outOwned.extent(d);
      g.k[d] = window_.kernel[d];
      g.s[d] = window_.stride[d];
      g.p[d] = window_.padding[d];
    }
    return g;
  }

private:
  SpatialGeometry spatial_;  // the layer's (a copy: the layer's own is its base's)
  Window window_;
  std::unique_ptr<Halo<T, MemorySpace>> halo_;
  ForwardPass forwardPass_ = ForwardPass::First;
  OutputRange<MemorySpace> outputsOf_[3];
  PhaseRun wRun_;
};

}  // namespace hybrid3d::Impl
