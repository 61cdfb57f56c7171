#pragma once
// The graph of each architecture (one file each), written once against a builder B: Builder
// (impl/Builder.hpp) constructs the layers into a Graph, PlanBuilder (impl/PlanBuilder.hpp)
// records their shapes, ghost widths and parameter counts for a ModelPlan. B provides
// B::Input, shape(id) and one method per layer kind (conv, leaky, avgPool, ...), each
// returning the new node's id. buildModel in Models.cpp validates the options, builds,
// finalizes and initialises.
#include <hybrid3d/model/Models.hpp>

namespace hybrid3d::Impl {
template <class B>
void defineCosmoFlow(B& b, const ModelOptions& o);
template <class B>
void defineCosmoFlowMlperf(B& b, const ModelOptions& o);
template <class B>
void defineUNet3d(B& b, const ModelOptions& o);

// Calls the definition of o.architecture (already checked by modelTraits).
template <class B>
void defineModel(B& b, const ModelOptions& o) {
  if (o.architecture == "cosmoflow") defineCosmoFlow(b, o);
  if (o.architecture == "cosmoflow_mlperf") defineCosmoFlowMlperf(b, o);
  if (o.architecture == "unet3d") defineUNet3d(b, o);
}
}  // namespace hybrid3d::Impl
