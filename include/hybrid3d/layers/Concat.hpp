#pragma once
// Concatenation on channels, y = [a, b] (the U-Net skip connections). a, b and y share one
// decomposition (same global extents on the same grid), so every rank copies its own owned
// cells: no communication. Each tensor may carry any ghost widths.

#include <string>
#include <vector>

#include <Kokkos_Core.hpp>

#include <hybrid3d/core/Devices.hpp>
#include <hybrid3d/core/Error.hpp>
#include <hybrid3d/grid/DistTensor.hpp>
#include <hybrid3d/grid/ProcessGrid.hpp>
#include <hybrid3d/grid/TensorShape.hpp>
#include <hybrid3d/layers/Parameter.hpp>
#include <hybrid3d/layers/impl/Elementwise.hpp>

namespace hybrid3d {

template <class T, class MemorySpace = DefaultMemorySpace>
class Concat {
  HYBRID3D_ASSERT_SPACE(MemorySpace);

public:
  using tensor_type = DistTensor<T, MemorySpace>;
  using execution_space = typename MemorySpace::execution_space;

  // Throws naming the layer when the batches or spatial extents of a and b differ.
  Concat(const ProcessGrid& grid, const std::string& name, const TensorShape& a,
         const TensorShape& b);

  const std::string& name() const { return name_; }
  const TensorShape& inputShapeA() const { return a_; }
  const TensorShape& inputShapeB() const { return b_; }
  const TensorShape& outputShape() const { return y_; }
  const BlockDecomposition& inputDecomposition() const { return decomposition_; }
  const BlockDecomposition& outputDecomposition() const { return decomposition_; }
  GhostMap inputGhosts() const { return {}; }
  std::vector<Parameter<T, MemorySpace>> parameters() const { return {}; }

  // y owned cells := a on channels [0, Ca), b on [Ca, Ca + Cb).
  void forward(const execution_space& exec, const tensor_type& a, const tensor_type& b,
               const tensor_type& y) const;
  // da, db owned cells := the matching channels of dy. Either may be empty (skipped).
  void backwardData(const execution_space& exec, const tensor_type& dy, const tensor_type& da,
                    const tensor_type& db) const;
  void backward(const execution_space& exec, const tensor_type& dy, const tensor_type& da,
                const tensor_type& db) const {
    backwardData(exec, dy, da, db);
  }

  // Copies channels [0, src.channels()) of src to channels [offset, ...) of dst (dir > 0), or
  // channels [offset, offset + dst.channels()) of src to dst (dir < 0). Public only because CUDA
  // forbids device lambdas in private member functions.
  static void copyChannels(const char* label, const execution_space& exec, const tensor_type& src,
                           const tensor_type& dst, int offset, bool intoWider);

private:
  void check(const tensor_type& t, int channels, const char* what) const;

  std::string name_;
  TensorShape a_, b_, y_;
  BlockDecomposition decomposition_;
};

template <class T, class M>
Concat<T, M>::Concat(const ProcessGrid& grid, const std::string& name, const TensorShape& a,
                     const TensorShape& b)
    : name_(name), a_(a), b_(b), decomposition_(a.extents, grid.dims()) {
  if (a.batch != b.batch || a.extents != b.extents)
    fail(name, ": Concat inputs differ: a is ", a.batch, "x", a.channels, "x",
         toString(a.extents), ", b is ", b.batch, "x", b.channels, "x", toString(b.extents),
         " (batch and extents must match)");
  if (a.channels < 0 || b.channels < 0 || a.batch < 0)
    fail(name, ": Concat inputs have negative batch or channels");
  y_ = {a.batch, a.channels + b.channels, a.extents};
}

template <class T, class M>
void Concat<T, M>::check(const tensor_type& t, int channels, const char* what) const {
  if (t.batch() != y_.batch || t.channels() != channels ||
      !(t.decomposition() == decomposition_))
    fail(name_, ": Concat tensor ", what, " is ", t.batch(), "x", t.channels(), "x",
         toString(t.globalExtents()), " on grid ", toString(t.decomposition().dims()),
         ", expected ", y_.batch, "x", channels, "x", toString(y_.extents), " on grid ",
         toString(decomposition_.dims()));
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
        dv(n, c + dstShift, od.d + z, od.h + y, od.w + x) =
            sv(n, c + srcShift, os.d + z, os.h + y, os.w + x);
      });
}

template <class T, class M>
void Concat<T, M>::forward(const execution_space& exec, const tensor_type& a,
                           const tensor_type& b, const tensor_type& y) const {
  check(a, a_.channels, "a");
  check(b, b_.channels, "b");
  check(y, y_.channels, "y");
  copyChannels("hybrid3d::Concat::forward", exec, a, y, 0, true);
  copyChannels("hybrid3d::Concat::forward", exec, b, y, a_.channels, true);
}

template <class T, class M>
void Concat<T, M>::backwardData(const execution_space& exec, const tensor_type& dy,
                                const tensor_type& da, const tensor_type& db) const {
  check(dy, y_.channels, "dy");
  if (da.view().data() != nullptr) {
    check(da, a_.channels, "da");
    copyChannels("hybrid3d::Concat::backwardData", exec, dy, da, 0, false);
  }
  if (db.view().data() != nullptr) {
    check(db, b_.channels, "db");
    copyChannels("hybrid3d::Concat::backwardData", exec, dy, db, a_.channels, false);
  }
}

#define HYBRID3D_EXTERN(T, D) extern template class Concat<T, D>;
HYBRID3D_FOR_EACH_SCALAR_AND_DEVICE(HYBRID3D_EXTERN)
#undef HYBRID3D_EXTERN

}  // namespace hybrid3d
