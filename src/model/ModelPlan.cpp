#include <algorithm>
#include <map>
#include <mutex>
#include <tuple>

#include <hybrid3d/core/Devices.hpp>
#include <hybrid3d/comm/Redistribute.hpp>
#include <hybrid3d/core/StagingSpace.hpp>
#include <hybrid3d/core/Error.hpp>
#include <hybrid3d/engines/impl/OneDnnWorkspace.hpp>
#include <hybrid3d/model/GradientPlacement.hpp>
#include <hybrid3d/model/ModelPlan.hpp>
#include <hybrid3d/model/Recompute.hpp>

#include "impl/PlanBuilder.hpp"

namespace hybrid3d {

namespace {

// Bytes of the output of layer `id` (Input: the model input) or of one of its gradients as
// Graph::allocate makes it on the rank at `coords` of the spatial grid: the ghosted local box
// of a volume on the layer's grid (on a rank owning nothing: the ghosts its consumer needs),
// or [batch, features], for the samples the rank holds there.
std::size_t edgeBytes(std::size_t scalar, const ModelPlan& p, int id, const Int3& coords,
                      const GhostMap& ghosts) {
  const TensorShape& s = p.shape(id);
  const bool volume = id == ModelPlan::Input || p.layers.at(id).volume;
  const std::size_t values = std::size_t(p.localBatch(id, coords)) * std::size_t(s.channels);
  if (!volume) return scalar * values;
  const TensorLayout layout(0, s.channels, BlockDecomposition(s.extents, p.layout(id).dims()),
                            p.place(id, coords).coords, ghosts);
  return scalar * values * std::size_t(layout.localBox().size());
}

// The buffers of a Redistribute layer on the rank at `coords`: none on host memory (MPI's
// datatypes move the cells), else one send and one receive buffer both directions share
// (comm/Redistribute.hpp), staged on the host where MPI needs it.
template <class T, class M>
std::size_t redistributionBuffers(const ModelPlan& p, int id, const Int3& coords) {
  if (Redistribute<T, M>::byDatatypes) return 0;
  const RedistributePlan f = p.redistribution(id, coords), b = p.redistribution(id, coords, true);
  const std::size_t cells = std::size_t(std::max(cellsOf(f.sends), cellsOf(b.sends)) +
                                        std::max(cellsOf(f.recvs), cellsOf(b.recvs)));
  return sizeof(T) * cells * std::size_t(p.layers.at(id).output.channels) *
         (mpiStagesThroughHost<M> ? 2 : 1);
}

// The host workspace the rank's convolution `l` (reading `x`) reserves: the onednn engine's
// buffer when the layer may hold that engine there (named, or auto timing it), else 0.
template <class T, class M>
std::size_t convWorkspace(const ModelPlan& p, int id, const TensorShape& x, const Int3& coords) {
  const LayerPlan& l = p.layers.at(id);
  if (p.localBatch(id, coords) == 0) return 0;  // no samples: Conv3d makes no engine
  const Box3 outOwned =
      BlockDecomposition(l.output.extents, l.grid).ownedBox(p.place(id, coords).coords);
  // (Refuses a named engine that cannot run the layer.)
  const Index largest = p.convLargestOperand(id, coords);
  resolveConvEngine<T, M>(l.conv.engine, l.name, outOwned.size(), largest);
  if (!convMayHoldOneDnn<T, M>(l.conv.engine, largest)) return 0;
#if HYBRID3D_ENABLE_ONEDNN
  // The sizes oneDNN is asked about depend on the box and the channels, not on where the
  // window starts in the ghosted array.
  Impl::LocalConvProblem q;
  q.layer = l.name;
  q.batch = p.localBatch(id, coords);  // the samples this rank holds on the layer's grid
  q.cin = x.channels;
  q.cout = l.output.channels;
  q.kernel = l.conv.kernel;
  q.stride = l.conv.stride;
  q.outExtents = outOwned.extents();
  q.bias = l.conv.bias;
  q.activations = precisionOf<T>();  // 16-bit activations add staging buffers
  // Asking oneDNN builds its primitive descriptors (about a millisecond); the ranks of a grid
  // share a few box shapes, and a planner's search asks for thousands of ranks.
  using Key = std::tuple<Index, Index, Index, Index, Index, Index3, bool, Precision>;
  static std::map<Key, std::size_t> asked;
  static std::mutex mutex;
  const Key key{q.batch, q.cin, q.cout, q.kernel, q.stride, q.outExtents, q.bias, q.activations};
  const std::lock_guard<std::mutex> lock(mutex);
  const auto found = asked.find(key);
  if (found != asked.end()) return found->second;
  return asked[key] = Impl::oneDnnWorkspaceBytes(q);
#else
  (void)x;
  return 0;
#endif
}

}  // namespace

LayerLayout ModelPlan::layout(int id) const {
  return LayerLayout(id == Input ? grid : layers.at(id).grid, grid[0] * grid[1] * grid[2]);
}

LayerPlace ModelPlan::place(int id, const Int3& coords) const {
  return layout(id).place(LayerLayout(grid, grid[0] * grid[1] * grid[2]).positionOf(coords));
}

int ModelPlan::localBatch(int id, const Int3& coords) const {
  const LayerPlace at = place(id, coords);
  return at.active ? layout(id).samples(shape(id).batch, at.subGrid) : 0;
}

bool ModelPlan::staged() const {
  for (const LayerPlan& l : layers)
    if (l.grid != grid) return true;
  return false;
}

RedistributePlan ModelPlan::redistribution(int id, const Int3& coords, bool adjoint) const {
  const LayerPlan& l = layers.at(id);
  if (l.kind != "Redistribute") fail("model plan: layer '", l.name, "' is no redistribution");
  const LayerLayout to = layout(id), from = layout(l.inputs.at(0));
  const int rank = LayerLayout(grid, to.groupSize()).positionOf(coords);
  const Index3 extents = l.volume ? l.output.extents : Index3{1, 1, 1};
  return adjoint ? planRedistribute(to, from, extents, l.output.batch, rank, !l.volume)
                 : planRedistribute(from, to, extents, l.output.batch, rank, !l.volume);
}

GhostMap ModelPlan::outputGhosts(int id) const {
  GhostMap g;
  for (const LayerPlan& l : layers)
    for (std::size_t slot = 0; slot < l.inputs.size(); ++slot) {
      if (l.inputs[slot] != id) continue;
      const GhostMap& need = l.inputGhosts[slot];
      if (need.none()) continue;
      if (!g.none() && g != need)
        fail("model: the output of '", id == Input ? std::string("input") : layers.at(id).name,
             "' feeds layers that need different ghost widths");
      g = need;
    }
  return g;
}

Index ModelPlan::convLargestOperand(int id, const Int3& coords) const {
  const LayerPlan& l = layers.at(id);
  const int x = l.inputs.at(0);
  const TensorShape& in = shape(x);
  const TensorLayout ghosted(0, in.channels, BlockDecomposition(in.extents, layout(x).dims()),
                             place(x, coords).coords, l.inputGhosts.at(0));
  const Box3 outOwned =
      BlockDecomposition(l.output.extents, l.grid).ownedBox(place(id, coords).coords);
  return largestConvOperand(localBatch(id, coords), in.channels, l.output.channels,
                            ghosted.localBox().size(), outOwned.size());
}

Index ModelPlan::parameterCount() const {
  Index n = 0;
  for (const LayerPlan& l : layers) n += l.parameters;
  return n;
}

StepGraph ModelPlan::stepGraph() const {
  StepGraph g;
  for (const LayerPlan& l : layers) {
    g.names.push_back(l.name);
    g.inputs.push_back(l.inputs);
    g.startsSegment.push_back(l.kind == "Conv3d" || l.kind == "ConvTranspose3d" ||
                              l.kind == "Dense" || l.kind == "FlattenDense");
  }
  return g;
}

std::vector<RecomputeSegment> ModelPlan::recomputeSegments() const {
  return resolveSegments(options.recompute, stepGraph());
}

Index ModelPlan::localParameters(int id, const Int3& coords) const {
  const LayerPlan& l = layers.at(id);
  if (l.columnShardRows == 0) return l.parameters;
  const TensorShape& x = shape(l.inputs.at(0));
  const Index features = Index(x.channels) * x.extents[0] * x.extents[1] * x.extents[2];
  // The columns of the position the rank holds (or shadows) on the layer's grid.
  const Box3 own = BlockDecomposition(x.extents, l.grid).ownedBox(place(id, coords).coords);
  return l.parameters - l.columnShardRows * (features - Index(x.channels) * own.size());
}

std::vector<PlannedGradient> ModelPlan::gradients(int id, const Int3& coords, int groups) const {
  const LayerPlan& l = layers.at(id);
  const LayerLayout at = layout(id);
  // A column shard's replicas: its position in every sub-grid of every group, and a shadow.
  const LayerPlace where = place(id, coords);
  const int shadows = where.position < at.groupSize() - at.subGrids() * at.ranks() ? 1 : 0;
  std::vector<PlannedGradient> g;
  for (std::size_t t = 0; t < l.tensors.size(); ++t) {
    // A column shard's weight is its first tensor; its bias is replicated.
    const bool shard = l.columnShardRows > 0 && t == 0;
    g.push_back({shard ? localParameters(id, coords) - (l.parameters - l.tensors[0]) : l.tensors[t],
                 shard, shard ? groups * (at.subGrids() + shadows) : groups * at.groupSize()});
  }
  return g;
}

template <class T>
std::size_t predictAllreduceBytes(const ModelPlan& p, const Int3& coords, int groups) {
  std::size_t values = 0;
  for (int id = 0; id < int(p.layers.size()); ++id)
    for (const PlannedGradient& g : p.gradients(id, coords, groups))
      if (g.ranks > 1) values += std::size_t(g.values);
  return values * sizeof(T);
}

ModelPlan planModel(const ModelOptions& options, const Int3& grid) {
  ModelPlan p;
  p.options = options;
  p.traits = modelTraits(options);
  p.grid = grid;
  p.input = {options.batch, p.traits.inputChannels, options.extents()};
  Impl::PlanBuilder builder(p, options);
  findArchitecture(options.architecture).define(builder, options);
  builder.finish();
  return p;
}

namespace {

// The activation gradients as Graph::finalize lays them out: layer p's consumers in edge order
// (by consumer, then input slot: the order the graph records them in), each edge's gradient
// with that consumer's input ghosts, and dL/d(output) without ghosts.
GradientEdges gradientEdges(std::size_t scalar, const ModelPlan& p, const Int3& coords) {
  GradientEdges edges;
  edges.consumers.resize(p.layers.size());
  edges.bytes.resize(p.layers.size());
  for (std::size_t c = 0; c < p.layers.size(); ++c) {
    const LayerPlan& l = p.layers[c];
    for (std::size_t slot = 0; slot < l.inputs.size(); ++slot) {
      const int producer = l.inputs[slot];
      if (producer == ModelPlan::Input) continue;  // no gradient for the data
      edges.consumers[producer].push_back(int(c));
      edges.bytes[producer].push_back(edgeBytes(scalar, p, producer, coords, l.inputGhosts[slot]));
    }
  }
  if (!p.layers.empty())
    edges.outputGradientBytes = edgeBytes(scalar, p, int(p.layers.size()) - 1, coords, GhostMap{});
  return edges;
}

template <class T, class M>
std::vector<GraphMemory> layerMemory(const ModelPlan& p, const Int3& coords, bool askEngines) {
  const std::size_t scalar = sizeof(T);
  std::vector<GraphMemory> layers(p.layers.size());
  const GradientEdges edges = gradientEdges(scalar, p, coords);
  for (std::size_t id = 0; id < p.layers.size(); ++id) {
    const LayerPlan& l = p.layers[id];
    GraphMemory& m = layers[id];
    m.activations = edgeBytes(scalar, p, int(id), coords, p.outputGhosts(int(id)));
    // One gradient per consumer edge, each on its own (the arena is the model's, not a layer's).
    for (std::size_t bytes : edges.bytes[id]) m.activationGradients += bytes;
    m.parameters =
        2 * sizeof(ParamOf<T>) * std::size_t(p.localParameters(int(id), coords));  // and grads
    if (askEngines && l.conv.kernel > 0)
      m.workspace = convWorkspace<T, M>(p, int(id), p.shape(l.inputs[0]), coords);
    if (l.kind == "Redistribute") m.buffers = redistributionBuffers<T, M>(p, int(id), coords);
  }
  if (!layers.empty()) layers.back().activationGradients += edges.outputGradientBytes;
  for (GraphMemory& m : layers) m.activationGradientBuffers = m.activationGradients;
  return layers;
}

// The activations of every layer and the model input, each with the ghosts its consumers need.
std::vector<std::size_t> activationBytes(std::size_t scalar, const ModelPlan& p,
                                         const Int3& coords) {
  std::vector<std::size_t> bytes{
      edgeBytes(scalar, p, ModelPlan::Input, coords, p.outputGhosts(ModelPlan::Input))};
  for (std::size_t id = 0; id < p.layers.size(); ++id)
    bytes.push_back(edgeBytes(scalar, p, int(id), coords, p.outputGhosts(int(id))));
  return bytes;
}

// An inference graph's activations placed as Graph::finalize(true) places them: the model input
// and every layer's output with the ghosts its consumers need, each with the layers reading it.
ActivationPlacement inferenceActivations(std::size_t scalar, const ModelPlan& p,
                                         const Int3& coords) {
  const std::vector<std::size_t> bytes = activationBytes(scalar, p, coords);
  std::vector<std::vector<int>> readers(bytes.size());
  for (std::size_t c = 0; c < p.layers.size(); ++c)
    for (int producer : p.layers[c].inputs) readers[std::size_t(producer + 1)].push_back(int(c));
  return placeInferenceActivations(bytes, readers);
}

template <class T, class M>
GraphMemory modelMemory(const ModelPlan& p, const Int3& coords, bool askEngines) {
  GraphMemory m;
  m.activations =
      edgeBytes(sizeof(T), p, ModelPlan::Input, coords, p.outputGhosts(ModelPlan::Input));
  std::size_t workspace = 0;  // one buffer, shared: the largest need
  for (const GraphMemory& l : layerMemory<T, M>(p, coords, askEngines)) {
    m.activations += l.activations;
    m.parameters += l.parameters;
    m.buffers += l.buffers;
    workspace = std::max(workspace, l.workspace);
  }
  m.workspace = (workspace + 4095) / 4096 * 4096;  // HostWorkspace reserves whole pages
  // The activation gradients in one arena, placed by their lives as Graph::finalize places them.
  if (!p.layers.empty()) {
    const GradientPlacement placed = placeGradients(gradientEdges(sizeof(T), p, coords));
    m.activationGradients = placed.arenaBytes;
    m.activationGradientBuffers = placed.separateBytes;
  }
  m.activationBuffers = m.activations;
  // Recomputation: the activations in one arena, placed by their lives over the step's order of
  // work, as Graph::finalize places them when some output is recomputed.
  const std::vector<RecomputeSegment> segments =
      p.options.inference ? std::vector<RecomputeSegment>{} : p.recomputeSegments();
  if (!segments.empty()) {
    const StepGraph g = p.stepGraph();
    const ActivationPlacement placed = placeTrainingActivations(
        activationBytes(sizeof(T), p, coords), g, stepSchedule(g, segments));
    m.activations = placed.arenaBytes;
    m.activationBuffers = placed.separateBytes;
  }
  // Inference (ModelOptions::inference): no gradient of any kind, and the activations in one
  // arena placed by their lives over the forward pass.
  if (p.options.inference && !p.layers.empty()) {
    const ActivationPlacement placed = inferenceActivations(sizeof(T), p, coords);
    m.activations = placed.arenaBytes;
    m.activationBuffers = placed.separateBytes;
    m.activationGradients = m.activationGradientBuffers = 0;
    m.parameters /= 2;  // values only
  }
  return m;
}

}  // namespace

template <class T, class M>
std::vector<GraphMemory> predictLayerMemory(const ModelPlan& p, const Int3& coords) {
  return layerMemory<T, M>(p, coords, true);
}

template <class T, class M>
GraphMemory predictMemory(const ModelPlan& p, const Int3& coords) {
  return modelMemory<T, M>(p, coords, true);
}

template <class T, class M>
GraphMemory predictMemoryBeforeEngines(const ModelPlan& p, const Int3& coords) {
  return modelMemory<T, M>(p, coords, false);
}

BoxRange ownedBoxRange(const Index3& extents, const Int3& grid) {
  const BlockDecomposition dec(extents, grid);
  BoxRange r;
  for (int d = 0; d < 3; ++d) {
    r.smallest[d] = dec.extent(d, grid[d] - 1);  // the remainder goes to the first ranks
    r.largest[d] = dec.extent(d, 0);
  }
  return r;
}

template std::size_t predictAllreduceBytes<float>(const ModelPlan&, const Int3&, int);
template std::size_t predictAllreduceBytes<double>(const ModelPlan&, const Int3&, int);

#define HYBRID3D_INSTANTIATE(T, D)                                                      \
  template GraphMemory predictMemory<T, D>(const ModelPlan&, const Int3&);              \
  template GraphMemory predictMemoryBeforeEngines<T, D>(const ModelPlan&, const Int3&); \
  template std::vector<GraphMemory> predictLayerMemory<T, D>(const ModelPlan&, const Int3&);
HYBRID3D_FOR_EACH_SCALAR_AND_DEVICE(HYBRID3D_INSTANTIATE)
HYBRID3D_FOR_EACH_SCALAR16_AND_DEVICE(HYBRID3D_INSTANTIATE)
#undef HYBRID3D_INSTANTIATE

}  // namespace hybrid3d
