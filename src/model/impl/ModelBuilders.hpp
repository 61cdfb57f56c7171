#pragma once
// The graph of each architecture (one file each); buildModel in Models.cpp validates the
// options, builds, finalizes and initialises.
#include <hybrid3d/model/Models.hpp>

namespace hybrid3d::Impl {
template <class T, class M>
void buildCosmoFlow(const ProcessGrid& grid, Graph<T, M>& g, const ModelOptions& o);
template <class T, class M>
void buildCosmoFlowMlperf(const ProcessGrid& grid, Graph<T, M>& g, const ModelOptions& o);
template <class T, class M>
void buildUNet3d(const ProcessGrid& grid, Graph<T, M>& g, const ModelOptions& o);
}  // namespace hybrid3d::Impl
