#include <algorithm>
#include <string>

#include <hybrid3d/core/RangePolicy.hpp>
#include <hybrid3d/core/Devices.hpp>
#include <hybrid3d/core/Error.hpp>
#include <hybrid3d/core/KernelLabel.hpp>
#include <hybrid3d/core/ProfilingRegion.hpp>
#include <hybrid3d/engines/impl/HostWorkspace.hpp>
#include <hybrid3d/model/Graph.hpp>

namespace hybrid3d {

// Kernels live in a named namespace: CUDA refuses device lambdas in functions of internal
// linkage (an unnamed namespace).
namespace Impl {

// dst's owned cells += src's owned cells (same decomposition, any ghost widths); 16-bit values
// are added in float and rounded once.
template <class T, class M>
void addOwned(const typename M::execution_space& exec, const EdgeTensor<T, M>& src,
              const EdgeTensor<T, M>& dst) {
  using Exec = typename M::execution_space;
  using C = ComputeOf<T>;
  // Kokkos takes labels as std::string: one built from a literal per launch is a heap
  // allocation per launch, so the label is made once.
  static const std::string sumGradientsLabel = "hybrid3d::Graph::sumGradients";
  if (!src.isVolume()) {
    const auto s = src.features, d = dst.features;
    Kokkos::parallel_for(
        sumGradientsLabel,
        Kokkos::MDRangePolicy<Exec, Kokkos::Rank<2>>(exec, {0, 0},
                                                     {Index(s.extent(0)), Index(s.extent(1))}),
        KOKKOS_LAMBDA(const Index n, const Index f) { d(n, f) = C(d(n, f)) + C(s(n, f)); });
    return;
  }
  const auto& a = src.volume;
  const auto& b = dst.volume;
  const Index3 e = a.owned().extents();
  const auto s = a.view(), d = b.view();
  const Index sa = a.ghosts().lo[0], sb = a.ghosts().lo[1], sc = a.ghosts().lo[2];
  const Index da = b.ghosts().lo[0], db = b.ghosts().lo[1], dc = b.ghosts().lo[2];
  using Policy = Kokkos::MDRangePolicy<Exec, Kokkos::Rank<5>, Kokkos::IndexType<Index>>;
  if (a.owned().empty()) return;
  Kokkos::parallel_for(
      sumGradientsLabel,
      Policy(exec, {0, 0, 0, 0, 0}, {Index(a.batch()), Index(a.channels()), e[0], e[1], e[2]}),
      KOKKOS_LAMBDA(const Index n, const Index c, const Index z, const Index y, const Index x) {
        d(n, c, da + z, db + y, dc + x) =
            C(d(n, c, da + z, db + y, dc + x)) + C(s(n, c, sa + z, sb + y, sc + x));
      });
}

// grad := 0 (Kokkos::deep_copy builds its own kernel label, a heap allocation, per call).
template <class T, class M>
void zeroGradient(const typename M::execution_space& exec, const Kokkos::View<T*, M>& grad) {
  static const std::string label = "hybrid3d::Graph::zeroGradients";
  Kokkos::parallel_for(
      label, rangePolicy(exec, 0, Index(grad.size())),
      KOKKOS_LAMBDA(const Index i) { grad(i) = T(0); });
}

// Bytes of an edge tensor's allocation (ghosts included).
template <class T, class M>
std::size_t edgeBytes(const EdgeTensor<T, M>& v) {
  return sizeof(T) * (v.isVolume() ? v.volume.view().size() : v.features.size());
}

}  // namespace Impl

template <class T, class M>
Graph<T, M>::Graph(const LayerGrid& grid, const TensorShape& input)
    : grid_(grid), inputShape_(input) {}

template <class T, class M>
int Graph<T, M>::add(std::unique_ptr<node_type> node, const std::vector<int>& inputs) {
  return add(std::move(node), inputs, grid_);
}

template <class T, class M>
int Graph<T, M>::add(std::unique_ptr<node_type> node, const std::vector<int>& inputs,
                     const LayerGrid& grid) {
  if (finalized_) fail("model: cannot add '", node->name(), "' after finalize()");
  const int id = static_cast<int>(nodes_.size());
  for (std::size_t slot = 0; slot < inputs.size(); ++slot) {
    const int p = inputs[slot];
    if (p < Input || p >= id)
      fail("model: node '", node->name(), "' reads node ", p, ", which is not an earlier node");
    (p == Input ? inputConsumers_ : nodes_[p].consumers).push_back({id, slot});
  }
  for (int p : inputs)
    if (!node->movesBetweenGrids() && !(this->grid(p).layout() == grid.layout()))
      fail("model: node '", node->name(), "' runs on grid ", grid.layout().describe(),
           " but reads one on ", this->grid(p).layout().describe());
  nodes_.push_back({std::move(node), grid, inputs, {}, {}, {}, {}, {}, {}});
  return id;
}

template <class T, class M>
const LayerGrid& Graph<T, M>::grid(int id) const {
  return id == Input ? grid_ : nodes_.at(id).grid;
}

template <class T, class M>
TensorShape Graph<T, M>::shape(int id) const {
  return id == Input ? inputShape_ : nodes_.at(id).node->outputShape();
}

template <class T, class M>
typename Graph<T, M>::value_type Graph<T, M>::allocate(const std::string& label,
                                                       const TensorShape& s, bool volume,
                                                       const GhostMap& ghosts,
                                                       const LayerGrid& grid) const {
  // The library's allocations carry its prefix, so a Kokkos tool tells them from the caller's.
  const std::string kokkosLabel = Impl::viewLabel(label);
  value_type v;
  if (volume)
    v.volume =
        createDistTensor<T, M>(kokkosLabel, s.batch, s.channels,
                               BlockDecomposition(s.extents, grid.dims()), grid.coords(), ghosts);
  else
    v.features = FeatureView<T, M>(kokkosLabel, s.batch, s.channels);
  return v;
}

template <class T, class M>
std::size_t Graph<T, M>::bytesOf(const TensorShape& s, bool volume, const GhostMap& ghosts,
                                 const LayerGrid& grid) const {
  const std::size_t values = sizeof(T) * std::size_t(s.batch) * std::size_t(s.channels);
  if (!volume) return values;
  const TensorLayout layout(s.batch, s.channels, BlockDecomposition(s.extents, grid.dims()),
                            grid.coords(), ghosts);
  return values * std::size_t(layout.localBox().size());
}

template <class T, class M>
typename Graph<T, M>::value_type Graph<T, M>::layOver(char* at, const std::string& label,
                                                      const TensorShape& s, bool volume,
                                                      const GhostMap& ghosts,
                                                      const LayerGrid& grid) const {
  T* data = reinterpret_cast<T*>(at);
  value_type v;
  if (volume)
    v.volume = DistTensor<T, M>(data, label, s.batch, s.channels,
                                BlockDecomposition(s.extents, grid.dims()), grid.coords(), ghosts);
  else
    v.features = FeatureView<T, M>(data, s.batch, s.channels);
  return v;
}

template <class T, class M>
void Graph<T, M>::allocateGradients() {
  // The edges as the placement sees them: node p's consumers in edge order, and the bytes of
  // each edge's gradient, laid out as that consumer writes it (its input ghosts).
  GradientEdges edges;
  auto ghostsOf = [&](const Edge& c) { return nodes_[c.consumer].node->inputGhosts(c.slot); };
  for (const Entry& e : nodes_) {
    edges.consumers.emplace_back();
    edges.bytes.emplace_back();
    for (const Edge& c : e.consumers) {
      edges.consumers.back().push_back(c.consumer);
      edges.bytes.back().push_back(
          bytesOf(e.node->outputShape(), e.node->producesVolume(), ghostsOf(c), e.grid));
    }
  }
  const Entry& last = nodes_.back();
  const TensorShape lastShape = last.node->outputShape();
  edges.outputGradientBytes = bytesOf(lastShape, last.node->producesVolume(), {}, last.grid);
  const GradientPlacement placed = placeGradients(edges);
  // Zero-initialised once (its first touch); a step allocates and clears nothing.
  gradientArena_ =
      Kokkos::View<char*, M>(Impl::viewLabel("activation gradients"), placed.arenaBytes);
  char* base = gradientArena_.data();
  for (std::size_t p = 0; p < nodes_.size(); ++p) {
    Entry& e = nodes_[p];
    for (std::size_t k = 0; k < e.consumers.size(); ++k)
      e.edgeGradients.push_back(layOver(
          base + placed.offsets[p][k],
          e.node->name() + " gradient from " + nodes_[e.consumers[k].consumer].node->name(),
          e.node->outputShape(), e.node->producesVolume(), ghostsOf(e.consumers[k]), e.grid));
  }
  outputGradient_ = layOver(base + placed.outputGradientOffset, last.node->name() + " gradient",
                            lastShape, last.node->producesVolume(), {}, last.grid);
  memory_.activationGradients = placed.arenaBytes;
  memory_.activationGradientBuffers = placed.separateBytes;
}

template <class T, class M>
void Graph<T, M>::allocateActivations(bool inference) {
  // An activation carries the ghosts its consumers need, each rank its own widths. Consumers
  // that need none (pointwise layers, concat) accept any ghosts; two consumers needing
  // different ghosts would need two copies, which none of our models has. The maps are global
  // data, so every rank reaches the same verdict.
  auto ghostsFor = [&](const std::vector<Edge>& consumers, const std::string& what) {
    GhostMap g;
    for (const Edge& e : consumers) {
      const GhostMap need = nodes_[e.consumer].node->inputGhosts(e.slot);
      if (need.none()) continue;
      if (!g.none() && g != need)
        fail("model: the output of '", what, "' feeds layers that need different ghost widths");
      g = need;
    }
    return g;
  };
  // Activation a: the model input (a = 0) or node a - 1's output.
  struct Tensor {
    std::string label;
    TensorShape shape;
    bool volume;
    GhostMap ghosts;
    const LayerGrid* grid;
    value_type* into;
  };
  std::vector<Tensor> tensors{
      {"input", inputShape_, true, ghostsFor(inputConsumers_, "input"), &grid_, &input_}};
  std::vector<std::vector<int>> readers{{}};
  for (const Edge& c : inputConsumers_) readers[0].push_back(c.consumer);
  for (Entry& e : nodes_) {
    const std::string& name = e.node->name();
    tensors.push_back({name, e.node->outputShape(), e.node->producesVolume(),
                       ghostsFor(e.consumers, name), &e.grid, &e.output});
    readers.emplace_back();
    for (const Edge& c : e.consumers) readers.back().push_back(c.consumer);
  }
  if (!inference && segments_.empty()) {
    for (const Tensor& t : tensors) {
      *t.into = allocate(t.label, t.shape, t.volume, t.ghosts, *t.grid);
      memory_.activations += Impl::edgeBytes(*t.into);
    }
    memory_.activationBuffers = memory_.activations;
    return;
  }
  std::vector<std::size_t> bytes;
  for (const Tensor& t : tensors) bytes.push_back(bytesOf(t.shape, t.volume, t.ghosts, *t.grid));
  const ActivationPlacement placed =
      inference
          ? placeInferenceActivations(bytes, readers)
          : placeTrainingActivations(bytes, stepGraph(), stepSchedule(stepGraph(), segments_));
  // Zero-initialised once. An activation's memory holds earlier tensors' values when its life
  // starts: every node writes all the owned cells of its output, and whoever reads ghost cells
  // fills them first (a halo gather, which re-zeroes the padding: setInputsShareMemory below).
  activationArena_ = Kokkos::View<char*, M>(Impl::viewLabel("activations"), placed.arenaBytes);
  for (std::size_t a = 0; a < tensors.size(); ++a) {
    const Tensor& t = tensors[a];
    *t.into = layOver(activationArena_.data() + placed.offsets[a], t.label, t.shape, t.volume,
                      t.ghosts, *t.grid);
  }
  memory_.activations = placed.arenaBytes;
  memory_.activationBuffers = placed.separateBytes;
}

template <class T, class M>
void Graph<T, M>::finalize(bool inference) {
  if (nodes_.empty()) fail("model: no layers");
  inference_ = inference;
  if (!inference) resolveRecompute();
  allocateActivations(inference);
  for (Entry& e : nodes_) {
    const std::string& name = e.node->name();
    e.forwardRegion = "hybrid3d::node::forward " + name;
    e.recomputeRegion = "hybrid3d::node::recompute " + name;
    e.backwardRegion = "hybrid3d::node::backward " + name;
    if (inference) e.node->releaseBackward();
    // In the arena every input may share memory with other tensors.
    if (inference || !segments_.empty()) e.node->setInputsShareMemory(true);
    memory_.buffers += e.node->bufferBytes();
    in_.reserve(std::max(in_.capacity(), e.inputs.size()));
    dIn_.reserve(std::max(dIn_.capacity(), e.inputs.size()));
  }
  Entry& last = nodes_.back();
  if (!last.consumers.empty()) fail("model: the last layer '", last.node->name(), "' feeds others");
  // One gradient per consumer edge and dL/d(output), in the arena.
  if (!inference) allocateGradients();
  // The parameter gradients, listed once: zeroGradients runs every step and must not build
  // the nodes' parameter lists (allocations) each time.
  for (const Entry& e : nodes_)
    for (const auto& p : e.node->parameters()) {
      if (p.grad.size()) gradients_.push_back(p.grad);
      memory_.parameters += sizeof(ParamOf<T>) * (p.value.size() + p.grad.size());
    }
  finalized_ = true;
}

template <class T, class M>
const typename Graph<T, M>::value_type& Graph<T, M>::output() const {
  return nodes_.back().output;
}

template <class T, class M>
const typename Graph<T, M>::value_type& Graph<T, M>::gradientFor(int producer, int consumer,
                                                                 std::size_t slot) const {
  const Entry& p = nodes_[producer];
  for (std::size_t i = 0; i < p.consumers.size(); ++i)
    if (p.consumers[i].consumer == consumer && p.consumers[i].slot == slot)
      return p.edgeGradients[i];
  fail("model: internal error, no gradient edge");
}

template <class T, class M>
StepGraph Graph<T, M>::stepGraph() const {
  StepGraph g;
  for (const Entry& e : nodes_) {
    g.names.push_back(e.node->name());
    g.inputs.push_back(e.inputs);  // Input is -1 in both
    g.startsSegment.push_back(e.node->startsSegment());
  }
  return g;
}

template <class T, class M>
void Graph<T, M>::resolveRecompute() {
  const StepGraph g = stepGraph();
  segments_ = resolveSegments(recompute_, g);
  if (segments_.empty()) return;
  recomputed_ = recomputedOutputs(g, segments_);
  regathers_.assign(nodes_.size(), false);
  for (std::size_t i = 0; i < nodes_.size(); ++i)
    regathers_[i] =
        !recomputed_[i] && std::any_of(nodes_[i].inputs.begin(), nodes_[i].inputs.end(),
                                       [&](int p) { return p != Input && recomputed_[p]; });
  for (const StepEvent& e : stepSchedule(g, segments_))
    if (e.pass != StepPass::Forward) backwardPass_.push_back(e);
}

template <class T, class M>
void Graph<T, M>::forwardNode(const execution_space& exec, std::size_t id,
                              const std::string& region) {
  Entry& e = nodes_[id];
  in_.clear();
  for (int p : e.inputs) in_.push_back(p == Input ? &input_ : &nodes_[p].output);
  ProfilingRegion r(region);
  e.node->forward(exec, in_, e.output);
}

template <class T, class M>
void Graph<T, M>::forward(const execution_space& exec) {
  if (!finalized_) fail("model: forward() before finalize()");
  for (std::size_t id = 0; id < nodes_.size(); ++id)
    forwardNode(exec, id, nodes_[id].forwardRegion);
}

template <class T, class M>
void Graph<T, M>::replayForward(const execution_space& exec,
                                const std::function<void(std::size_t, const value_type&)>& visit) {
  if (!finalized_) fail("model: replayForward() before finalize()");
  for (std::size_t id = 0; id < nodes_.size(); ++id) {
    Entry& e = nodes_[id];
    e.node->setForwardPass(ForwardPass::Recompute);
    forwardNode(exec, id, e.recomputeRegion);
    e.node->setForwardPass(ForwardPass::First);
    visit(id, e.output);
  }
}

template <class T, class M>
void Graph<T, M>::recomputeNode(const execution_space& exec, std::size_t id) {
  Entry& e = nodes_[id];
  // Kept inputs hold the ghosts the first forward gathered; a recomputed one holds its owned
  // cells only (its memory was another tensor's in between).
  const bool kept = std::none_of(e.inputs.begin(), e.inputs.end(),
                                 [&](int p) { return p != Input && recomputed_[p]; });
  e.node->setForwardPass(kept ? ForwardPass::RecomputeKeptInput : ForwardPass::Recompute);
  forwardNode(exec, id, e.recomputeRegion);
  e.node->setForwardPass(ForwardPass::First);
}

template <class T, class M>
void Graph<T, M>::backwardNode(const execution_space& exec, std::size_t id,
                               GradientReducer<ParamOf<T>, M>* reducer) {
  Entry& e = nodes_[id];
  {
    ProfilingRegion region(e.backwardRegion);
    // Every consumer has run (they come later); sum their gradients into the first one's.
    const value_type* dOut = &outputGradient_;
    if (!e.consumers.empty()) {
      dOut = &e.edgeGradients[0];
      for (std::size_t i = 1; i < e.edgeGradients.size(); ++i)
        Impl::addOwned<T, M>(exec, e.edgeGradients[i], e.edgeGradients[0]);
    }
    in_.clear();
    dIn_.clear();
    for (std::size_t slot = 0; slot < e.inputs.size(); ++slot) {
      const int p = e.inputs[slot];
      in_.push_back(p == Input ? &input_ : &nodes_[p].output);
      dIn_.push_back(p == Input ? nullptr : &gradientFor(p, int(id), slot));  // none for data
    }
    if (!regathers_.empty() && regathers_[id]) e.node->gatherInputGhosts(exec, in_);
    e.node->backward(exec, in_, *dOut, dIn_);
  }
  if (reducer) reducer->start(exec, id);
}

template <class T, class M>
void Graph<T, M>::backward(const execution_space& exec, GradientReducer<ParamOf<T>, M>* reducer) {
  if (!finalized_) fail("model: backward() before finalize()");
  if (inference_) fail("model: backward() on an inference model (finalize(true))");
  if (backwardPass_.empty()) {
    for (std::size_t id = nodes_.size(); id-- > 0;) backwardNode(exec, id, reducer);
    return;
  }
  for (const StepEvent& e : backwardPass_) {
    if (e.pass == StepPass::Recompute)
      recomputeNode(exec, std::size_t(e.node));
    else
      backwardNode(exec, std::size_t(e.node), reducer);
  }
}

template <class T, class M>
void Graph<T, M>::setInputGhostsFilled(bool filled) {
  for (const Edge& c : inputConsumers_) nodes_[c.consumer].node->setInputGhostsFilled(filled);
}

template <class T, class M>
double Graph<T, M>::stepFlops() const {
  double sum = 0;
  for (const Entry& e : nodes_) {
    const bool dataOnly =
        std::all_of(e.inputs.begin(), e.inputs.end(), [](int p) { return p == Input; });
    sum += e.node->flops().step(!dataOnly);
  }
  return sum;
}

template <class T, class M>
void Graph<T, M>::zeroGradients(const execution_space& exec) {
  for (const auto& grad : gradients_) Impl::zeroGradient<ParamOf<T>, M>(exec, grad);
}

template <class T, class M>
GraphMemory Graph<T, M>::memory() const {
  GraphMemory m = memory_;
  m.workspace = Impl::HostWorkspace::instance().bytes();
  return m;
}

template <class T, class M>
std::vector<NamedParameter<ParamOf<T>, M>> Graph<T, M>::parameters() const {
  std::vector<NamedParameter<ParamOf<T>, M>> out;
  for (const Entry& e : nodes_)
    for (const auto& p : e.node->parameters()) out.push_back({e.node->name(), p});
  return out;
}

template <class T, class M>
std::vector<NamedParameter<ParamOf<T>, M>> Graph<T, M>::buffers() const {
  std::vector<NamedParameter<ParamOf<T>, M>> out;
  for (const Entry& e : nodes_)
    for (const auto& p : e.node->buffers()) out.push_back({e.node->name(), p});
  return out;
}

template <class T, class M>
std::vector<std::vector<ScopedGradient<ParamOf<T>, M>>> Graph<T, M>::gradientsByNode() const {
  std::vector<std::vector<ScopedGradient<ParamOf<T>, M>>> out;
  for (const Entry& e : nodes_) {
    out.emplace_back();
    for (const auto& p : e.node->parameters())
      if (p.grad.size())
        out.back().push_back({p.grad, p.layout.gradientScope,
                              p.layout.gradientScope == GradientScope::World
                                  ? MPI_COMM_NULL
                                  : p.layout.replicaComm});
  }
  return out;
}

template <class T, class M>
void Graph<T, M>::setTraining(bool training) {
  for (Entry& e : nodes_) e.node->setTraining(training);
}

template <class T, class M>
void Graph<T, M>::setStep(std::int64_t step, std::int64_t firstGlobalSample) {
  for (Entry& e : nodes_) e.node->setStep(step, firstGlobalSample);
}

#define HYBRID3D_INSTANTIATE(T, D) template class Graph<T, D>;
HYBRID3D_FOR_EACH_SCALAR_AND_DEVICE(HYBRID3D_INSTANTIATE)
HYBRID3D_FOR_EACH_SCALAR16_AND_DEVICE(HYBRID3D_INSTANTIATE)
#undef HYBRID3D_INSTANTIATE

}  // namespace hybrid3d
