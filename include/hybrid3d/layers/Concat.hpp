#pragma once
/// \file
/// Concatenation on channels, y = [a, b] (the U-Net skip connections). a, b and y share one
/// decomposition (same global extents on the same grid), so every rank copies its own owned
/// cells: no communication. Each tensor may carry any ghost widths.

#include <string>
#include <vector>

#include <Kokkos_Core.hpp>

#include <hybrid3d/core/Devices.hpp>
#include <hybrid3d/core/Error.hpp>
#include <hybrid3d/core/Scalar16.hpp>
#include <hybrid3d/grid/DistTensor.hpp>
#include <hybrid3d/grid/LayerGrid.hpp>
#include <hybrid3d/grid/TensorShape.hpp>
#include <hybrid3d/layers/LayerConvention.hpp>
#include <hybrid3d/layers/Parameter.hpp>
#include <hybrid3d/layers/SpatialGeometry.hpp>
#include <hybrid3d/kernels/Elementwise.hpp>

namespace hybrid3d {

template <class T, class MemorySpace = DefaultMemorySpace>
class Concat : public SpatialLayer {
public:
  HYBRID3D_LAYER_TYPES(T, MemorySpace);

  /// Throws naming the layer when the batches or spatial extents of a and b differ.
  Concat(const LayerGrid& grid, const std::string& name, const TensorShape& a,
         const TensorShape& b);

  // name(), inputShape() (a's), outputShape(), the decompositions (a, b and y share one) and
  // inputGhosts() (none, any accepted): SpatialLayer (layers/SpatialGeometry.hpp), whose
  // geometry is a -> y; b -> y is geometryB().
  const TensorShape& inputShapeA() const { return geometry_.inputShape(); }
  const TensorShape& inputShapeB() const { return geometryB_.inputShape(); }
  const SpatialGeometry& geometryB() const { return geometryB_; }
  std::vector<Parameter<ParamOf<T>, MemorySpace>> parameters() const { return {}; }

  /// y owned cells := a on channels [0, Ca), b on [Ca, Ca + Cb).
  void forward(const execution_space& exec, const tensor_type& a, const tensor_type& b,
               const tensor_type& y) const;
  /// da, db owned cells := the matching channels of dy. Either may be empty (skipped).
  void backwardData(const execution_space& exec, const tensor_type& dy, const tensor_type& da,
                    const tensor_type& db) const;
  void backward(const execution_space& exec, const tensor_type& dy, const tensor_type& da,
                const tensor_type& db) const {
    backwardData(exec, dy, da, db);
  }

  /// Copies channels [0, src.channels()) of src to channels [offset, ...) of dst (dir > 0), or
  /// channels [offset, offset + dst.channels()) of src to dst (dir < 0). Public only because CUDA
  /// forbids device lambdas in private member functions.
  static void copyChannels(const char* label, const execution_space& exec, const tensor_type& src,
                           const tensor_type& dst, int offset, bool intoWider);

private:
  SpatialGeometry geometryB_;  // b -> y: the same naming, b's channels
};

template <class T, class M>
Concat<T, M>::Concat(const LayerGrid& grid, const std::string& name, const TensorShape& a,
                     const TensorShape& b) {
  LayerNaming naming = LayerNaming::quoted("Concat", name);
  if (a.batch != b.batch || a.extents != b.extents)
    fail(naming.label, ": inputs differ: a is ", a.batch, "x", a.channels, "x", toString(a.extents),
         ", b is ", b.batch, "x", b.channels, "x", toString(b.extents),
         " (batch and extents must match)");
  if (a.channels < 0 || b.channels < 0 || a.batch < 0)
    fail(naming.label, ": inputs have negative batch or channels");
  // Element-wise in space: every rank copies its own owned cells, and no ghosts are read.
  const TensorShape y{a.batch, a.channels + b.channels, a.extents};
  geometryB_ = SpatialGeometry(naming, grid.dims(), grid.coords(), b, y, InputGhosts::Any);
  geometry_ =
      SpatialGeometry(std::move(naming), grid.dims(), grid.coords(), a, y, InputGhosts::Any);
}

template <class T, class M>
void Concat<T, M>::copyChannels(const char* label, const execution_space& exec,
                                const tensor_type& src, const tensor_type& dst, int offset,
                                bool intoWider) {
  const tensor_type& narrow = intoWider ? src : dst;
  const auto os = Impl::ghostOffset(src), od = Impl::ghostOffset(dst);
  const auto sv = src.view(), dv = dst.view();
  const Index srcShift = intoWider ? 0 : offset, dstShift = intoWider ? offset : 0;
  Impl::forEachRowCell(
      label, exec, Impl::OwnedRows(narrow),
      KOKKOS_LAMBDA(const Index n, const Index c, const Index z, const Index y, const Index x) {
        copyValue(dv(n, c + dstShift, od.d + z, od.h + y, od.w + x),
                  sv(n, c + srcShift, os.d + z, os.h + y, os.w + x));  // 16-bit: see copyValue
      });
}

template <class T, class M>
void Concat<T, M>::forward(const execution_space& exec, const tensor_type& a, const tensor_type& b,
                           const tensor_type& y) const {
  geometry_.checkInput(a, "first input");
  geometryB_.checkInput(b, "second input");
  geometry_.checkOutput(y, "output");
  const int Ca = geometry_.inputShape().channels;
  copyChannels("hybrid3d::Concat::forward", exec, a, y, 0, true);
  copyChannels("hybrid3d::Concat::forward", exec, b, y, Ca, true);
}

template <class T, class M>
void Concat<T, M>::backwardData(const execution_space& exec, const tensor_type& dy,
                                const tensor_type& da, const tensor_type& db) const {
  geometry_.checkOutput(dy, "output gradient");
  if (Impl::wanted(da)) {
    geometry_.checkInput(da, "first input gradient");
    copyChannels("hybrid3d::Concat::backwardData", exec, dy, da, 0, false);
  }
  if (Impl::wanted(db)) {
    geometryB_.checkInput(db, "second input gradient");
    copyChannels("hybrid3d::Concat::backwardData", exec, dy, db, geometry_.inputShape().channels,
                 false);
  }
}

#define HYBRID3D_EXTERN(T, D) extern template class Concat<T, D>;
HYBRID3D_FOR_EACH_SCALAR_AND_DEVICE(HYBRID3D_EXTERN)
HYBRID3D_FOR_EACH_SCALAR16_AND_DEVICE(HYBRID3D_EXTERN)
#undef HYBRID3D_EXTERN

}  // namespace hybrid3d
