#pragma once
// Definitions of FlattenDense (included by FlattenDense.hpp; instantiated in
// src/layers/FlattenDense.cpp).

#include <hybrid3d/core/KernelLabel.hpp>
#include <hybrid3d/core/ProfilingRegion.hpp>

namespace hybrid3d {

template <class T, class M>
FlattenDense<T, M>::FlattenDense(const LayerGrid& grid, const std::string& name,
                                 const TensorShape& input, const Options& options) {
  hostBlasThreadsFollowKokkos();
  LayerNaming naming = LayerNaming::quoted("FlattenDense", name);
  const std::string& label = naming.label;
  const Index3& e = input.extents;
  in_ = Index(input.channels) * e[0] * e[1] * e[2];
  out_ = options.outFeatures;
  if (input.batch < 0 || in_ <= 0 || out_ <= 0)
    fail(label, ": needs batch >= 0 and positive in/out features (input ", input.batch, "x",
         input.channels, "x", toString(e), ", out ", out_, ")");
  if (options.expectedInFeatures > 0 && options.expectedInFeatures != in_)
    fail(label, ": input ", input.channels, "x", toString(e), " flattens to ", in_,
         " features, expected ", options.expectedInFeatures);
  // The volume side reads its owned cells only (any ghosts); the output is [N, out].
  geometry_ = SpatialGeometry(std::move(naming), grid.dims(), grid.coords(), input,
                              {input.batch, options.outFeatures, {1, 1, 1}}, InputGhosts::Any);
  const Box3& owned = geometry_.inputOwned();
  addsBiasGradient_ = grid.spatialRank() == 0;
  // A rank in no sub-grid of a layer grid sums nothing (it holds no sample).
  if (grid.spatialComm() != MPI_COMM_NULL) spatial_ = OwnedComm(grid.spatialComm());
  if (options.bias) bias_ = createParameter<P, M>(name, "bias", {out_});

  const Index V = owned.size(), N = input.batch;
  localColumns_ = Index(input.channels) * V;
  // This rank's columns of W in packed order: owned cell (c, z, y, x) in (c, z, y, x) order,
  // as packInput lays out the input.
  std::vector<Index> columns;
  columns.reserve(std::size_t(localColumns_));
  const Index3 oe = owned.extents();
  for (Index c = 0; c < input.channels; ++c)
    for (Index z = 0; z < oe[0]; ++z)
      for (Index y = 0; y < oe[1]; ++y)
        for (Index x = 0; x < oe[2]; ++x)
          columns.push_back(((c * e[0] + owned.lo[0] + z) * e[1] + owned.lo[1] + y) * e[2] +
                            owned.lo[2] + x);
  weight_ = createColumnShard<P, M>(name, "weight", out_, in_, std::move(columns));
  weight_.layout.replicaComm = grid.dataComm();
  w_ = param_matrix_type(weight_.value.data(), out_, localColumns_);
  dw_ = param_matrix_type(weight_.grad.data(), out_, localColumns_);
  if (isScalar16<T>) yPartial_ = param_matrix_type(geometry_.viewLabel("y partial"), N, out_);
  xPacked_ = matrix_type(geometry_.viewLabel("x packed"), N, localColumns_);
  dxPacked_ = matrix_type(geometry_.viewLabel("dx packed"), N, localColumns_);
  yAllreduce_ =
      StagedAllreduce<P, M>(geometry_.viewLabel("output"), std::size_t(N) * std::size_t(out_));
}

template <class T, class M>
std::vector<Parameter<ParamOf<T>, M>> FlattenDense<T, M>::parameters() const {
  std::vector<Parameter<ParamOf<T>, M>> p{weight_};
  if (bias_.value.data() != nullptr) p.push_back(bias_);
  return p;
}

template <class T, class M>
void FlattenDense<T, M>::check(const feature_type& v, const char* what) const {
  const int N = geometry_.inputShape().batch;
  if (Index(v.extent(0)) != N || Index(v.extent(1)) != out_)
    fail(geometry_.label(), ": ", what, " view is ", v.extent(0), "x", v.extent(1), ", expected ",
         N, "x", out_);
}

template <class T, class M>
void FlattenDense<T, M>::packInput(const execution_space& exec, const tensor_type& x) {
  const Impl::OwnedRows rows(x);
  const auto o = Impl::ghostOffset(x);
  const auto xv = x.view();
  const auto packed = xPacked_;
  // Column of owned cell (c, z, y, w): its index in (c, z, y, w) order.
  const Index e0 = rows.e0, e1 = rows.e1, e2 = rows.width;
  Impl::forEachRowCell(
      "hybrid3d::FlattenDense::packInput", exec, rows,
      KOKKOS_LAMBDA(const Index n, const Index c, const Index z, const Index y, const Index w) {
        packed(n, ((c * e0 + z) * e1 + y) * e2 + w) = xv(n, c, o.d + z, o.h + y, o.w + w);
      });
}

template <class T, class M>
void FlattenDense<T, M>::unpackInputGradient(const execution_space& exec, const tensor_type& dx) {
  const Impl::OwnedRows rows(dx);
  const auto o = Impl::ghostOffset(dx);
  const auto dxv = dx.view();
  const auto packed = dxPacked_;
  const Index e0 = rows.e0, e1 = rows.e1, e2 = rows.width;
  Impl::forEachRowCell(
      "hybrid3d::FlattenDense::backwardData", exec, rows,
      KOKKOS_LAMBDA(const Index n, const Index c, const Index z, const Index y, const Index w) {
        dxv(n, c, o.d + z, o.h + y, o.w + w) = packed(n, ((c * e0 + z) * e1 + y) * e2 + w);
      });
}

template <class T, class M>
void FlattenDense<T, M>::forward(const execution_space& exec, const tensor_type& x,
                                 const feature_type& y) {
  geometry_.checkInput(x, "input");
  check(y, "output");
  packInput(exec, x);
  if constexpr (isScalar16<T>) {
    // Float partial products, their float sum, then bias and one rounding into y.
    const Kokkos::View<P*, M> noBias;
    Impl::mixedDenseForward("hybrid3d::FlattenDense::forward", exec, xPacked_, w_, noBias,
                            yPartial_);
    {
      const ProfilingRegion region(Impl::kernelLabel("hybrid3d::FlattenDense::forward::allreduce"));
      if (y.extent(0) > 0) yAllreduce_(exec, yPartial_, spatial_.get());
    }
    Impl::roundFeatures("hybrid3d::FlattenDense::forward", exec, yPartial_, bias_.value, y);
  } else {
    Impl::denseGemm(exec, "N", "T", 1.0, xPacked_, w_, 0.0, y);
    // The partial products of all ranks' voxels; then the bias once, on the replicated sum.
    {
      const ProfilingRegion region(Impl::kernelLabel("hybrid3d::FlattenDense::forward::allreduce"));
      // Every rank of a sub-grid holds as many samples: one without any sums nothing, alike.
      if (y.extent(0) > 0) yAllreduce_(exec, y, spatial_.get());
    }
    if (bias_.value.data() != nullptr)
      Impl::addBias("hybrid3d::FlattenDense::forward", exec, y, bias_.value);
  }
}

template <class T, class M>
void FlattenDense<T, M>::backwardData(const execution_space& exec, const feature_type& dy,
                                      const tensor_type& dx) {
  check(dy, "output gradient");
  geometry_.checkInput(dx, "input gradient");
  if constexpr (isScalar16<T>)
    Impl::mixedDenseBackwardData("hybrid3d::FlattenDense::backwardData", exec, dy, w_, dxPacked_);
  else
    Impl::denseGemm(exec, "N", "N", 1.0, dy, w_, 0.0, dxPacked_);
  unpackInputGradient(exec, dx);
}

template <class T, class M>
void FlattenDense<T, M>::backwardWeights(const execution_space& exec, const tensor_type& x,
                                         const feature_type& dy) {
  geometry_.checkInput(x, "input");
  check(dy, "output gradient");
  packInput(exec, x);
  if constexpr (isScalar16<T>)
    Impl::mixedDenseAddWeightGradient("hybrid3d::FlattenDense::backwardWeights", exec, dy, xPacked_,
                                      dw_);
  else
    Impl::denseGemm(exec, "T", "N", 1.0, dy, xPacked_, 1.0, dw_);  // adds (the contract)
  if (addsBiasGradient_ && bias_.grad.data() != nullptr)
    Impl::addBiasGradient("hybrid3d::FlattenDense::backwardWeights", exec, dy, bias_.grad);
}

}  // namespace hybrid3d
