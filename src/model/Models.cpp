#include <hybrid3d/core/Devices.hpp>
#include <hybrid3d/core/Error.hpp>
#include <hybrid3d/model/Initializers.hpp>
#include <hybrid3d/model/Models.hpp>

#include "impl/Builder.hpp"

namespace hybrid3d {

namespace {

// Each parameter as its architecture's rule says; batch-norm layers keep their own (1, 0).
template <class T, class M>
void initializeModel(const Graph<T, M>& g, const Architecture& a, std::uint64_t seed) {
  for (const auto& np : g.parameters()) {
    const auto& p = np.param;
    if (const auto init = a.initialization(np.layer, p.name, p.shape.size()))
      initialize(p, init->kind, seed, np.layer, init->value);
  }
}

}  // namespace

template <class T, class M>
Model<T, M> buildModel(const ProcessGrid& grid, const ModelOptions& o) {
  const ModelTraits traits = modelTraits(o);
  const Architecture& architecture = findArchitecture(o.architecture);
  Model<T, M> m;
  m.architecture = o.architecture;
  m.inputChannels = traits.inputChannels;
  m.outputs = traits.outputs;
  m.log1pOfInput = traits.log1pOfInput;
  const TensorShape input{o.batch, m.inputChannels, o.extents()};
  m.grids = std::make_unique<LayerGridSet>(grid);
  m.graph = std::make_unique<Graph<T, M>>(m.grids->spatial(), input);
  m.graph->setRecompute(o.recompute);
  Impl::Builder<T, M> builder(*m.grids, *m.graph, o);
  architecture.define(builder, o);
  builder.finish();
  m.graph->finalize(o.inference);
  initializeModel(*m.graph, architecture, o.seed);
  if (o.inference) {
    m.graph->setTraining(false);  // batch-norm running statistics, no dropout
    return m;                     // no loss and no truth buffers: nothing to train for
  }
  const int last = int(m.graph->size()) - 1;
  m.task = traits.task->make<T, M>(
      TaskLayout{m.graph->grid(last), m.grids->spatial(), m.graph->shape(last), o.batch});
  return m;
}

#define HYBRID3D_INSTANTIATE(T, D) \
  template Model<T, D> buildModel<T, D>(const ProcessGrid&, const ModelOptions&);
HYBRID3D_FOR_EACH_SCALAR_AND_DEVICE(HYBRID3D_INSTANTIATE)
HYBRID3D_FOR_EACH_SCALAR16_AND_DEVICE(HYBRID3D_INSTANTIATE)
#undef HYBRID3D_INSTANTIATE

}  // namespace hybrid3d
