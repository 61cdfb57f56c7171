#pragma once
// Definitions of Dense (included by Dense.hpp; instantiated in src/layers/Dense.cpp).

namespace hybrid3d {

template <class T, class M>
Dense<T, M>::Dense(const LayerGrid& grid, const std::string& name, const TensorShape& input,
                   const Options& options)
    : name_(name), input_(input) {
  hostBlasThreadsFollowKokkos();
  in_ = Index(input.channels) * input.extents[0] * input.extents[1] * input.extents[2];
  out_ = options.outFeatures;
  if (input.batch < 0 || in_ <= 0 || out_ <= 0)
    fail(name, ": Dense needs batch >= 0 and positive in/out features (batch ", input.batch,
         ", in ", in_, ", out ", out_, ")");
  output_ = {input.batch, options.outFeatures, {1, 1, 1}};
  addsGradients_ = grid.spatialRank() == 0;
  weight_ = createParameter<ParamOf<T>, M>(name, "weight", {out_, in_});
  if (options.bias) bias_ = createParameter<ParamOf<T>, M>(name, "bias", {out_});
}

template <class T, class M>
std::vector<Parameter<ParamOf<T>, M>> Dense<T, M>::parameters() const {
  std::vector<Parameter<ParamOf<T>, M>> p{weight_};
  if (bias_.value.data() != nullptr) p.push_back(bias_);
  return p;
}

template <class T, class M>
void Dense<T, M>::check(const feature_type& v, Index cols, const char* what) const {
  if (Index(v.extent(0)) != input_.batch || Index(v.extent(1)) != cols)
    fail(name_, ": Dense ", what, " is ", v.extent(0), "x", v.extent(1), ", expected ",
         input_.batch, "x", cols);
}

template <class T, class M>
void Dense<T, M>::forward(const execution_space& exec, const feature_type& x,
                          const feature_type& y) const {
  check(x, in_, "input");
  check(y, out_, "output");
  if constexpr (isScalar16<T>) {
    Impl::mixedDenseForward("hybrid3d::Dense::forward", exec, x,
                            Impl::asMatrix(weight_.value, out_, in_), bias_.value, y);
  } else {
    Impl::denseGemm(exec, "N", "T", 1.0, x, Impl::asMatrix(weight_.value, out_, in_), 0.0, y);
    if (bias_.value.data() != nullptr)
      Impl::addBias("hybrid3d::Dense::forward", exec, y, bias_.value);
  }
}

template <class T, class M>
void Dense<T, M>::backwardData(const execution_space& exec, const feature_type& dy,
                               const feature_type& dx) const {
  check(dy, out_, "output gradient");
  check(dx, in_, "input gradient");
  if constexpr (isScalar16<T>) {
    Impl::mixedDenseBackwardData("hybrid3d::Dense::backwardData", exec, dy,
                                 Impl::asMatrix(weight_.value, out_, in_), dx);
  } else {
    Impl::denseGemm(exec, "N", "N", 1.0, dy, Impl::asMatrix(weight_.value, out_, in_), 0.0, dx);
  }
}

template <class T, class M>
void Dense<T, M>::backwardWeights(const execution_space& exec, const feature_type& x,
                                  const feature_type& dy) const {
  check(x, in_, "input");
  check(dy, out_, "output gradient");
  if (!addsGradients_) return;  // replicated work: counted once per group
  if constexpr (isScalar16<T>)
    Impl::mixedDenseAddWeightGradient("hybrid3d::Dense::backwardWeights", exec, dy, x,
                                      Impl::asMatrix(weight_.grad, out_, in_));
  else
    Impl::denseGemm(exec, "T", "N", 1.0, dy, x, 1.0, Impl::asMatrix(weight_.grad, out_, in_));
  if (bias_.grad.data() != nullptr)
    Impl::addBiasGradient("hybrid3d::Dense::backwardWeights", exec, dy, bias_.grad);
}

}  // namespace hybrid3d
