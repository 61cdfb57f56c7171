#pragma once
/// \file
/// Adapters that put each layer kind behind the Node interface. Every layer follows the same
/// convention (forward(exec, x, y), backward(exec, x, dy, dx), parameters(), inputGhosts(),
/// outputShape()), so one template covers single-input layers on volumes or feature matrices;
/// Concat, with two inputs, has its own.

#include <memory>
#include <type_traits>
#include <utility>

#include <hybrid3d/grid/TensorShape.hpp>
#include <hybrid3d/layers/Concat.hpp>
#include <hybrid3d/model/Node.hpp>

namespace hybrid3d {

enum class EdgeKind { Volume, Features };

// The weighted layers, for Impl::StartsSegment (their headers stay out of this one).
template <class T, class M>
class Conv3d;
template <class T, class M>
class ConvTranspose3d;
template <class T, class M>
class Dense;
template <class T, class M>
class FlattenDense;

namespace Impl {

template <EdgeKind K, class T, class M>
const auto& part(const EdgeTensor<T, M>& a) {
  if constexpr (K == EdgeKind::Volume)
    return a.volume;
  else
    return a.features;
}

/// Optional members of a layer, detected at compile time.
template <class L, class = void>
struct HasBuffers : std::false_type {};
template <class L>
struct HasBuffers<L, std::void_t<decltype(std::declval<const L&>().buffers())>> : std::true_type {};
template <class L, class = void>
struct HasTraining : std::false_type {};
template <class L>
struct HasTraining<L, std::void_t<decltype(std::declval<L&>().setTraining(true))>>
    : std::true_type {};
template <class L, class = void>
struct HasReleaseBackward : std::false_type {};
template <class L>
struct HasReleaseBackward<L, std::void_t<decltype(std::declval<L&>().releaseBackward())>>
    : std::true_type {};
template <class L, class = void>
struct HasStep : std::false_type {};
template <class L>
struct HasStep<L,
               std::void_t<decltype(std::declval<L&>().setStep(std::int64_t(0), std::int64_t(0)))>>
    : std::true_type {};

template <class L, class = void>
struct HasGatherInputGhosts : std::false_type {};
template <class L>
struct HasGatherInputGhosts<L, std::void_t<decltype(std::declval<L&>().gatherInputGhosts(
                                   std::declval<const typename L::execution_space&>(),
                                   std::declval<const typename L::tensor_type&>()))>>
    : std::true_type {};
template <class L, class = void>
struct HasForwardPass : std::false_type {};
template <class L>
struct HasForwardPass<L, std::void_t<decltype(std::declval<L&>().setForwardPass(ForwardPass{}))>>
    : std::true_type {};
/// The layers `Model/recompute = all` starts a segment at: those ModelPlan::stepGraph names by
/// kind (Conv3d, ConvTranspose3d, Dense, FlattenDense); ModelPlan's tests check the two agree.
template <class L>
struct StartsSegment : std::false_type {};
template <class T, class M>
struct StartsSegment<Conv3d<T, M>> : std::true_type {};
template <class T, class M>
struct StartsSegment<ConvTranspose3d<T, M>> : std::true_type {};
template <class T, class M>
struct StartsSegment<Dense<T, M>> : std::true_type {};
template <class T, class M>
struct StartsSegment<FlattenDense<T, M>> : std::true_type {};

template <class L, class = void>
struct HasFlops : std::false_type {};
template <class L>
struct HasFlops<L, std::void_t<decltype(std::declval<const L&>().flops())>> : std::true_type {};
template <class L, class = void>
struct HasInputGhostsFilled : std::false_type {};
template <class L>
struct HasInputGhostsFilled<L, std::void_t<decltype(std::declval<L&>().setInputGhostsFilled(true))>>
    : std::true_type {};
template <class L, class = void>
struct HasInputsShareMemory : std::false_type {};
template <class L>
struct HasInputsShareMemory<L, std::void_t<decltype(std::declval<L&>().setInputsShareMemory(true))>>
    : std::true_type {};
template <class L, class = void>
struct HasEngine : std::false_type {};
template <class L>
struct HasEngine<L, std::void_t<decltype(std::declval<const L&>().engineDescription())>>
    : std::true_type {};

}  // namespace Impl

/// A single-input layer; In and Out say whether it reads/writes volumes or feature matrices.
template <class Layer, EdgeKind In, EdgeKind Out, class T, class M = DefaultMemorySpace>
class LayerNode final : public Node<T, M> {
public:
  using typename Node<T, M>::execution_space;
  using typename Node<T, M>::value_type;
  using typename Node<T, M>::inputs_type;

  template <class... Args>
  explicit LayerNode(Args&&... args) : layer_(std::forward<Args>(args)...) {}

  Layer& layer() { return layer_; }
  const std::string& name() const override { return layer_.name(); }
  bool producesVolume() const override { return Out == EdgeKind::Volume; }
  TensorShape outputShape() const override { return layer_.outputShape(); }
  GhostMap inputGhosts(std::size_t) const override {
    if constexpr (In == EdgeKind::Volume)
      return layer_.inputGhosts();
    else
      return {};
  }

  void forward(const execution_space& exec, const inputs_type& in, const value_type& out) override {
    layer_.forward(exec, Impl::part<In>(*in.at(0)), Impl::part<Out>(out));
  }
  void backward(const execution_space& exec, const inputs_type& in, const value_type& dOut,
                const inputs_type& dIn) override {
    static const value_type none;
    const value_type& dx = dIn.at(0) ? *dIn[0] : none;
    layer_.backward(exec, Impl::part<In>(*in.at(0)), Impl::part<Out>(dOut), Impl::part<In>(dx));
  }

  std::string implementation() const override {
    if constexpr (Impl::HasEngine<Layer>::value)
      return layer_.engineDescription();
    else
      return {};
  }
  LayerFlops flops() const override {
    if constexpr (Impl::HasFlops<Layer>::value)
      return layer_.flops();
    else
      return {};
  }
  std::vector<Parameter<ParamOf<T>, M>> parameters() const override { return layer_.parameters(); }
  std::vector<Parameter<ParamOf<T>, M>> buffers() const override {
    if constexpr (Impl::HasBuffers<Layer>::value)
      return layer_.buffers();
    else
      return {};
  }
  void setInputGhostsFilled(bool filled) override {
    if constexpr (Impl::HasInputGhostsFilled<Layer>::value) layer_.setInputGhostsFilled(filled);
  }
  void setInputsShareMemory(bool shared) override {
    if constexpr (Impl::HasInputsShareMemory<Layer>::value) layer_.setInputsShareMemory(shared);
  }
  void releaseBackward() override {
    if constexpr (Impl::HasReleaseBackward<Layer>::value) layer_.releaseBackward();
  }
  void setTraining(bool training) override {
    if constexpr (Impl::HasTraining<Layer>::value) layer_.setTraining(training);
  }
  void setForwardPass(ForwardPass pass) override {
    if constexpr (Impl::HasForwardPass<Layer>::value) layer_.setForwardPass(pass);
  }
  bool startsSegment() const override { return Impl::StartsSegment<Layer>::value; }
  void gatherInputGhosts(const execution_space& exec, const inputs_type& in) override {
    if constexpr (Impl::HasGatherInputGhosts<Layer>::value && In == EdgeKind::Volume)
      layer_.gatherInputGhosts(exec, in.at(0)->volume);
  }
  void setStep(std::int64_t step, std::int64_t firstGlobalSample) override {
    if constexpr (Impl::HasStep<Layer>::value) layer_.setStep(step, firstGlobalSample);
  }

private:
  Layer layer_;
};

/// Channel concatenation of two volumes (U-Net skip connections).
template <class T, class M = DefaultMemorySpace>
class ConcatNode final : public Node<T, M> {
public:
  using typename Node<T, M>::execution_space;
  using typename Node<T, M>::value_type;
  using typename Node<T, M>::inputs_type;

  ConcatNode(const LayerGrid& grid, const std::string& name, const TensorShape& a,
             const TensorShape& b)
      : layer_(grid, name, a, b), name_(name) {}
  const std::string& name() const override { return name_; }
  bool producesVolume() const override { return true; }
  TensorShape outputShape() const override { return layer_.outputShape(); }
  void forward(const execution_space& exec, const inputs_type& in, const value_type& out) override {
    layer_.forward(exec, in.at(0)->volume, in.at(1)->volume, out.volume);
  }
  void backward(const execution_space& exec, const inputs_type&, const value_type& dOut,
                const inputs_type& dIn) override {
    static const value_type none;
    layer_.backward(exec, dOut.volume, (dIn.at(0) ? *dIn[0] : none).volume,
                    (dIn.at(1) ? *dIn[1] : none).volume);
  }

private:
  Concat<T, M> layer_;
  std::string name_;
};

/// Wraps a layer constructed in place: makeNode<Conv3d<T, M>, EdgeKind::Volume,
/// EdgeKind::Volume>(grid, "conv1", shape, options).
template <class Layer, EdgeKind In, EdgeKind Out, class T, class M, class... Args>
std::unique_ptr<Node<T, M>> makeNode(Args&&... args) {
  return std::make_unique<LayerNode<Layer, In, Out, T, M>>(std::forward<Args>(args)...);
}

}  // namespace hybrid3d
