#include <algorithm>
#include <map>
#include <mutex>
#include <tuple>

#include <hybrid3d/core/Devices.hpp>
#include <hybrid3d/core/Error.hpp>
#include <hybrid3d/layers/impl/OneDnnWorkspace.hpp>
#include <hybrid3d/model/ModelPlan.hpp>

#include "impl/PlanBuilder.hpp"

namespace hybrid3d {

namespace {

// Bytes of one activation or gradient as Graph::allocate makes it on the rank at `coords`:
// the ghosted local box of a volume (on a rank owning nothing: the ghosts its consumer needs),
// or [batch, features].
std::size_t edgeBytes(std::size_t scalar, const TensorShape& s, bool volume, const Int3& grid,
                      const Int3& coords, const GhostMap& ghosts) {
  if (!volume) return scalar * std::size_t(s.batch) * std::size_t(s.channels);
  const TensorLayout layout(s.batch, s.channels, BlockDecomposition(s.extents, grid), coords,
                            ghosts);
  return scalar * std::size_t(s.batch) * std::size_t(s.channels) *
         std::size_t(layout.localBox().size());
}

// The host workspace the rank's convolution `l` (reading `x`) reserves: the onednn engine's
// buffer when the layer runs that engine there (the engine choice as Conv3d makes it), else 0.
template <class T, class M>
std::size_t convWorkspace(const ModelPlan& p, const LayerPlan& l, const TensorShape& x,
                          const Int3& coords) {
  const Box3 outOwned = BlockDecomposition(l.output.extents, p.grid).ownedBox(coords);
  const ConvEngine engine = resolveConvEngine<T, M>(l.conv.engine, l.name, outOwned.size());
  if (engine != ConvEngine::OneDnn) return 0;
#if HYBRID3D_ENABLE_ONEDNN
  // The sizes oneDNN is asked about depend on the box and the channels, not on where the
  // window starts in the ghosted array.
  Impl::LocalConvProblem q;
  q.layer = l.name;
  q.batch = x.batch;
  q.cin = x.channels;
  q.cout = l.output.channels;
  q.kernel = l.conv.kernel;
  q.stride = l.conv.stride;
  q.outExtents = outOwned.extents();
  q.bias = l.conv.bias;
  // Asking oneDNN builds its primitive descriptors (about a millisecond); the ranks of a grid
  // share a few box shapes, and a planner's search asks for thousands of ranks.
  using Key = std::tuple<Index, Index, Index, Index, Index, Index3, bool>;
  static std::map<Key, std::size_t> asked;
  static std::mutex mutex;
  const Key key{q.batch, q.cin, q.cout, q.kernel, q.stride, q.outExtents, q.bias};
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

Index ModelPlan::parameterCount() const {
  Index n = 0;
  for (const LayerPlan& l : layers) n += l.parameters;
  return n;
}

Index ModelPlan::localParameters(int id, const Int3& coords) const {
  const LayerPlan& l = layers.at(id);
  if (l.columnShardRows == 0) return l.parameters;
  const TensorShape& x = shape(l.inputs.at(0));
  const Index features = Index(x.channels) * x.extents[0] * x.extents[1] * x.extents[2];
  const Index own = Index(x.channels) * BlockDecomposition(x.extents, grid).ownedBox(coords).size();
  return l.parameters - l.columnShardRows * (features - own);
}

std::vector<PlannedGradient> ModelPlan::gradients(int id, const Int3& coords) const {
  const LayerPlan& l = layers.at(id);
  std::vector<PlannedGradient> g;
  for (std::size_t t = 0; t < l.tensors.size(); ++t) {
    // A column shard's weight is its first tensor; its bias is replicated.
    const bool shard = l.columnShardRows > 0 && t == 0;
    g.push_back({shard ? localParameters(id, coords) - (l.parameters - l.tensors[0]) : l.tensors[t],
                 shard});
  }
  return g;
}

template <class T>
std::size_t predictAllreduceBytes(const ModelPlan& p, const Int3& coords, int groups) {
  const int ranks = groups * p.grid[0] * p.grid[1] * p.grid[2];
  std::size_t values = 0;
  for (int id = 0; id < int(p.layers.size()); ++id)
    for (const PlannedGradient& g : p.gradients(id, coords))
      if ((g.columnShard ? groups : ranks) > 1) values += std::size_t(g.values);
  return values * sizeof(T);
}

ModelPlan planModel(const ModelOptions& options, const Int3& grid) {
  ModelPlan p;
  p.options = options;
  p.traits = modelTraits(options);
  p.grid = grid;
  const int S = options.inputWidth;
  p.input = {options.batch, p.traits.inputChannels, {S, S, S}};
  Impl::PlanBuilder builder(p, options);
  findArchitecture(options.architecture).define(builder, options);
  return p;
}

template <class T, class M>
std::vector<GraphMemory> predictLayerMemory(const ModelPlan& p, const Int3& coords) {
  const std::size_t scalar = sizeof(T);
  std::vector<GraphMemory> layers(p.layers.size());
  for (std::size_t id = 0; id < p.layers.size(); ++id) {
    const LayerPlan& l = p.layers[id];
    GraphMemory& m = layers[id];
    m.activations = edgeBytes(scalar, l.output, l.volume, p.grid, coords, p.outputGhosts(int(id)));
    // One gradient per consumer edge, with that consumer's input ghosts.
    for (const LayerPlan& c : p.layers)
      for (std::size_t slot = 0; slot < c.inputs.size(); ++slot)
        if (c.inputs[slot] == int(id))
          m.activationGradients +=
              edgeBytes(scalar, l.output, l.volume, p.grid, coords, c.inputGhosts[slot]);
    m.parameters = 2 * scalar * std::size_t(p.localParameters(int(id), coords));  // and gradients
    if (l.conv.kernel > 0) m.workspace = convWorkspace<T, M>(p, l, p.shape(l.inputs[0]), coords);
  }
  if (!layers.empty()) {  // dL/d(output), without ghosts
    const LayerPlan& last = p.layers.back();
    layers.back().activationGradients +=
        edgeBytes(scalar, last.output, last.volume, p.grid, coords, GhostMap{});
  }
  return layers;
}

template <class T, class M>
GraphMemory predictMemory(const ModelPlan& p, const Int3& coords) {
  GraphMemory m;
  m.activations =
      edgeBytes(sizeof(T), p.input, true, p.grid, coords, p.outputGhosts(ModelPlan::Input));
  std::size_t workspace = 0;  // one buffer, shared: the largest need
  for (const GraphMemory& l : predictLayerMemory<T, M>(p, coords)) {
    m.activations += l.activations;
    m.activationGradients += l.activationGradients;
    m.parameters += l.parameters;
    workspace = std::max(workspace, l.workspace);
  }
  m.workspace = (workspace + 4095) / 4096 * 4096;  // HostWorkspace reserves whole pages
  return m;
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

#define HYBRID3D_INSTANTIATE(T, D)                                         \
  template GraphMemory predictMemory<T, D>(const ModelPlan&, const Int3&); \
  template std::vector<GraphMemory> predictLayerMemory<T, D>(const ModelPlan&, const Int3&);
HYBRID3D_FOR_EACH_SCALAR_AND_DEVICE(HYBRID3D_INSTANTIATE)
#undef HYBRID3D_INSTANTIATE

}  // namespace hybrid3d
