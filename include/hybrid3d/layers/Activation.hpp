#pragma once
/// \file
/// Point-wise activations: LeakyReLU (ReLU is slope 0), ScaledTanh (a * tanh, MLPerf CosmoFlow's
/// output), Log1p (MLPerf CosmoFlow's input transform).
///
/// One design for all: an op is a small functor with value(x) and derivative(x), and the layer
/// Pointwise<Op, T, M> applies it to the owned cells of a DistTensor (x and y may carry different
/// ghost widths; no halo is needed) or to a replicated [N, F] FeatureView of the dense part.
/// For the 16-bit activation types (core/Scalar16.hpp) the op runs in float on the value read and
/// the result is rounded once. Forward may run in place (y the same tensor or view as x). Backward
/// needs the layer INPUT x, so after an in-place forward only inference is possible (the input is
/// gone).

#include <string>
#include <vector>

#include <Kokkos_Core.hpp>

#include <hybrid3d/core/Devices.hpp>
#include <hybrid3d/core/Error.hpp>
#include <hybrid3d/core/Math.hpp>
#include <hybrid3d/grid/DistTensor.hpp>
#include <hybrid3d/grid/LayerGrid.hpp>
#include <hybrid3d/grid/TensorShape.hpp>
#include <hybrid3d/layers/LayerConvention.hpp>
#include <hybrid3d/layers/Parameter.hpp>
#include <hybrid3d/layers/SpatialGeometry.hpp>
#include <hybrid3d/kernels/Elementwise.hpp>
#include <hybrid3d/kernels/HostRows.hpp>

namespace hybrid3d {

/// max(x, 0) + slope * min(x, 0). The derivative at 0 is `slope`, as PyTorch's.
struct LeakyReLUOp {
  double slope = 0.01;  // PyTorch's default; 0 gives ReLU
  // A compare, a multiply and a select: the same bits on every host instruction set (HostIsa.hpp),
  // written for a float or eight lanes (kernels/FloatLanes.hpp) alike.
  static constexpr bool kSameBitsOnEveryIsa = true;
  static const char* kind() { return "LeakyReLU"; }
  // By reference and inlined: T may be eight lanes, which must not pass by value (FloatLanes.hpp).
  template <class T>
  KOKKOS_FORCEINLINE_FUNCTION T value(const T& x) const {
    return Impl::select(x > T(0), x, T(slope) * x);
  }
  template <class T>
  KOKKOS_FORCEINLINE_FUNCTION T derivative(const T& x) const {
    return Impl::select(x > T(0), T(1), T(slope));
  }
};

/// scale * tanh(x).
struct ScaledTanhOp {
  double scale = 1.2;                                 // MLPerf CosmoFlow's output layer
  static constexpr bool kSameBitsOnEveryIsa = false;  // tanh: a library call, kept on the baseline
  static const char* kind() { return "ScaledTanh"; }
  template <class T>
  KOKKOS_INLINE_FUNCTION T value(T x) const {
    return T(scale) * math::tanh(x);
  }
  template <class T>
  KOKKOS_INLINE_FUNCTION T derivative(T x) const {
    const T t = math::tanh(x);
    return T(scale) * (T(1) - t * t);
  }
};

/// log(1 + x), accurate for small x. Defined for x > -1 (CosmoFlow counts are >= 0).
struct Log1pOp {
  static constexpr bool kSameBitsOnEveryIsa = false;  // log1p: a library call
  static const char* kind() { return "Log1p"; }
  template <class T>
  KOKKOS_INLINE_FUNCTION T value(T x) const {
    return math::log1p(x);
  }
  template <class T>
  KOKKOS_INLINE_FUNCTION T derivative(T x) const {
    return T(1) / (T(1) + x);
  }
};

template <class Op, class T, class MemorySpace = DefaultMemorySpace>
class Pointwise : public SpatialLayer {
public:
  HYBRID3D_LAYER_TYPES(T, MemorySpace);
  using Options = Op;

  /// `input` is the per-group shape; for the dense part pass {N, F, {1, 1, 1}}. Throws naming
  /// the layer for a negative batch or channel count.
  Pointwise(const LayerGrid& grid, const std::string& name, const TensorShape& input,
            const Options& options = {})
      : SpatialLayer(makeGeometry(grid, name, input)), op_(options) {}

  // name(), shapes (the output's is the input's), decompositions and inputGhosts() (none, any
  // accepted): SpatialLayer (layers/SpatialGeometry.hpp).
  const Options& options() const { return op_; }
  std::vector<Parameter<ParamOf<T>, MemorySpace>> parameters() const { return {}; }

  /// y := op(x) on the owned cells. y may be x.
  void forward(const execution_space& exec, const tensor_type& x, const tensor_type& y) const;
  /// dx := dy * op'(x) on the owned cells. dx may be dy.
  void backwardData(const execution_space& exec, const tensor_type& x, const tensor_type& dy,
                    const tensor_type& dx) const;

  void backwardWeights(const execution_space&, const tensor_type&, const tensor_type&) const {}

  /// dx may be empty (no data gradient wanted).
  void backward(const execution_space& exec, const tensor_type& x, const tensor_type& dy,
                const tensor_type& dx) const {
    if (Impl::wanted(dx)) backwardData(exec, x, dy, dx);
  }

  /// The same on replicated [N, F] views (every rank of the group computes it).
  void forward(const execution_space& exec, const feature_type& x, const feature_type& y) const;
  void backwardData(const execution_space& exec, const feature_type& x, const feature_type& dy,
                    const feature_type& dx) const;

  void backward(const execution_space& exec, const feature_type& x, const feature_type& dy,
                const feature_type& dx) const {
    if (Impl::wanted(dx)) backwardData(exec, x, dy, dx);
  }

private:
  static SpatialGeometry makeGeometry(const LayerGrid& grid, const std::string& name,
                                      const TensorShape& input) {
    LayerNaming naming = LayerNaming::quoted(Op::kind(), name);
    if (input.batch < 0 || input.channels < 0)
      fail(naming.label, ": input has negative batch ", input.batch, " or channels ",
           input.channels);
    // Element-wise: the output has the input's shape, and no ghosts are read.
    return SpatialGeometry(std::move(naming), grid.dims(), grid.coords(), input, input,
                           InputGhosts::Any);
  }
  // Host memory runs the rows of Impl::forEachOwnedRowOnHost, with AVX2 where the op's bits
  // cannot depend on it.
  static constexpr bool onHost =
      Kokkos::SpaceAccessibility<Kokkos::HostSpace, typename MemorySpace::memory_space>::accessible;
  static Impl::HostIsa hostIsa() {
    return Op::kSameBitsOnEveryIsa ? Impl::bestHostIsa() : Impl::HostIsa::Baseline;
  }
  // The dense part: `other` must have x's extents (a replicated [N, F] view has no geometry).
  void check(const feature_type& x, const feature_type& other, const char* what) const {
    if (x.extent(0) != other.extent(0) || x.extent(1) != other.extent(1))
      fail(geometry_.label(), ": view ", what, " is ", other.extent(0), "x", other.extent(1),
           ", input is ", x.extent(0), "x", x.extent(1));
  }

  Op op_;
};

// The kernels, outside the class so that code including this header does not instantiate them
// (extern template below): they are compiled once, in src/layers/Activation.cpp, with the
// library's flags (-fno-trapping-math under GCC, which the selects need to vectorise).

template <class Op, class T, class M>
void Pointwise<Op, T, M>::forward(const execution_space& exec, const tensor_type& x,
                                  const tensor_type& y) const {
  geometry_.checkInput(x, "input");
  geometry_.checkOutput(y, "output");
  const Op op = op_;
  using C = ComputeOf<T>;  // the arithmetic: float for the 16-bit types, one rounding per value
  if constexpr (onHost) {
    const auto xr = Impl::hostRowStart(x), yr = Impl::hostRowStart(y);
    const Index width = x.owned().extents()[2];
    const Impl::HostIsa isa = hostIsa();
    Impl::forEachOwnedRowOnHost(
        "hybrid3d::Pointwise::forward", exec, Impl::OwnedRows(x), isa,
        [=](const Index n, const Index c, const Index z, const Index yy)
            HYBRID3D_HOST_INLINE_LAMBDA {
              const Op o = op;  // locals: see HostRows.hpp
              // An op with kSameBitsOnEveryIsa runs on lanes too (kernels/HostFusedRows.hpp).
              Impl::mapRow<Op::kSameBitsOnEveryIsa>(
                  isa, width, xr.at(n, c, z, yy), yr.at(n, c, z, yy),  // y may be x
                  [o](const auto& v) HYBRID3D_HOST_INLINE_LAMBDA { return o.value(v); });
            });
    return;
  }
  const auto ox = Impl::ghostOffset(x), oy = Impl::ghostOffset(y);
  const auto xv = x.view(), yv = y.view();
  Impl::forEachRowCell(
      "hybrid3d::Pointwise::forward", exec, Impl::OwnedRows(x),
      KOKKOS_LAMBDA(const Index n, const Index c, const Index z, const Index yy, const Index xx) {
        yv(n, c, oy.d + z, oy.h + yy, oy.w + xx) =
            T(op.value(C(xv(n, c, ox.d + z, ox.h + yy, ox.w + xx))));
      });
}

template <class Op, class T, class M>
void Pointwise<Op, T, M>::backwardData(const execution_space& exec, const tensor_type& x,
                                       const tensor_type& dy, const tensor_type& dx) const {
  geometry_.checkInput(x, "input");
  geometry_.checkOutput(dy, "output gradient");
  geometry_.checkInput(dx, "input gradient");
  const Op op = op_;
  using C = ComputeOf<T>;  // the arithmetic: float for the 16-bit types, one rounding per value
  if constexpr (onHost) {
    const auto xr = Impl::hostRowStart(x), dyr = Impl::hostRowStart(dy),
               dxr = Impl::hostRowStart(dx);
    const Index width = x.owned().extents()[2];
    const Impl::HostIsa isa = hostIsa();
    Impl::forEachOwnedRowOnHost(
        "hybrid3d::Pointwise::backwardData", exec, Impl::OwnedRows(x), isa,
        [=](const Index n, const Index c, const Index z, const Index yy)
            HYBRID3D_HOST_INLINE_LAMBDA {
              const Op o = op;
              Impl::mapRows<Op::kSameBitsOnEveryIsa>(
                  isa, width, dyr.at(n, c, z, yy), xr.at(n, c, z, yy),
                  dxr.at(n, c, z, yy),  // dx may be dy
                  [o](const auto& g, const auto& v)
                      HYBRID3D_HOST_INLINE_LAMBDA { return g * o.derivative(v); });
            });
    return;
  }
  const auto ox = Impl::ghostOffset(x), ody = Impl::ghostOffset(dy), odx = Impl::ghostOffset(dx);
  const auto xv = x.view(), dyv = dy.view(), dxv = dx.view();
  Impl::forEachRowCell(
      "hybrid3d::Pointwise::backwardData", exec, Impl::OwnedRows(x),
      KOKKOS_LAMBDA(const Index n, const Index c, const Index z, const Index yy, const Index xx) {
        dxv(n, c, odx.d + z, odx.h + yy, odx.w + xx) =
            T(C(dyv(n, c, ody.d + z, ody.h + yy, ody.w + xx)) *
              op.derivative(C(xv(n, c, ox.d + z, ox.h + yy, ox.w + xx))));
      });
}

template <class Op, class T, class M>
void Pointwise<Op, T, M>::forward(const execution_space& exec, const feature_type& x,
                                  const feature_type& y) const {
  check(x, y, "y");
  const auto xv = x, yv = y;
  const Op op = op_;
  using C = ComputeOf<T>;  // the arithmetic: float for the 16-bit types, one rounding per value
  Impl::forEachRowCell(
      "hybrid3d::Pointwise::forward", exec, Impl::OwnedRows(x),
      KOKKOS_LAMBDA(const Index n, Index, Index, Index, const Index f) {
        yv(n, f) = T(op.value(C(xv(n, f))));
      });
}

template <class Op, class T, class M>
void Pointwise<Op, T, M>::backwardData(const execution_space& exec, const feature_type& x,
                                       const feature_type& dy, const feature_type& dx) const {
  check(x, dy, "dy");
  check(x, dx, "dx");
  const auto xv = x, dyv = dy, dxv = dx;
  const Op op = op_;
  using C = ComputeOf<T>;  // the arithmetic: float for the 16-bit types, one rounding per value
  Impl::forEachRowCell(
      "hybrid3d::Pointwise::backwardData", exec, Impl::OwnedRows(x),
      KOKKOS_LAMBDA(const Index n, Index, Index, Index, const Index f) {
        dxv(n, f) = T(C(dyv(n, f)) * op.derivative(C(xv(n, f))));
      });
}

template <class T, class M = DefaultMemorySpace>
using LeakyReLU = Pointwise<LeakyReLUOp, T, M>;
template <class T, class M = DefaultMemorySpace>
using ScaledTanh = Pointwise<ScaledTanhOp, T, M>;
template <class T, class M = DefaultMemorySpace>
using Log1p = Pointwise<Log1pOp, T, M>;

/// ReLU is LeakyReLU with slope 0: LeakyReLU<T>(grid, name, shape, reluOp()).
inline LeakyReLUOp reluOp() { return LeakyReLUOp{0.0}; }

#define HYBRID3D_EXTERN(T, D)                          \
  extern template class Pointwise<LeakyReLUOp, T, D>;  \
  extern template class Pointwise<ScaledTanhOp, T, D>; \
  extern template class Pointwise<Log1pOp, T, D>;
HYBRID3D_FOR_EACH_SCALAR_AND_DEVICE(HYBRID3D_EXTERN)
HYBRID3D_FOR_EACH_SCALAR16_AND_DEVICE(HYBRID3D_EXTERN)
#undef HYBRID3D_EXTERN

}  // namespace hybrid3d
