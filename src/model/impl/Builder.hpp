#pragma once
// Private helper of buildModel: the GraphBuilder that adds one named layer at a time to a graph,
// reading the input shape from the graph, so each architecture reads like its definition in
// docs/design.md. Each layer runs on the grid the model's layer-grid rule gives it
// (model/LayerGridRule.hpp); where an input lives on another grid, a RedistributeNode named
// "<producer>-><consumer>" moves it first (one per producer and grid, shared by its readers).
// PlanBuilder.hpp implements the same interface and only records shapes (a dry run allocates
// nothing).

#include <hybrid3d/layers/Activation.hpp>
#include <hybrid3d/layers/AvgPool3d.hpp>
#include <hybrid3d/layers/BatchNorm3d.hpp>
#include <hybrid3d/layers/Conv3d.hpp>
#include <hybrid3d/layers/ConvTranspose3d.hpp>
#include <hybrid3d/layers/Dense.hpp>
#include <hybrid3d/layers/Dropout.hpp>
#include <hybrid3d/layers/FlattenDense.hpp>
#include <hybrid3d/layers/MaxPool3d.hpp>
#include <hybrid3d/model/GraphBuilder.hpp>
#include <hybrid3d/model/Models.hpp>
#include <hybrid3d/model/Nodes.hpp>
#include <hybrid3d/model/RedistributeNode.hpp>

#include "ModelWindows.hpp"

namespace hybrid3d::Impl {

template <class T, class M>
class Builder final : public GraphBuilder {
public:
  using G = Graph<T, M>;
  static constexpr EdgeKind V = EdgeKind::Volume, F = EdgeKind::Features;
  static_assert(G::Input == GraphBuilder::Input);

  Builder(LayerGridSet& grids, G& graph, const ModelOptions& o)
      : grids_(grids), g_(graph), o_(o), assigner_(o.layerGrids, grids.spatial().dims()) {}

  // After the architecture's last layer: every entry of the rule was met.
  void finish() const { assigner_.finish(); }

  int conv(const std::string& name, int in, int out, int k, int s, int p, bool bias) override {
    typename Conv3d<T, M>::Options c;
    c.outChannels = out;
    c.kernel = k;
    c.stride = s;
    c.padding = p;
    c.bias = bias;
    c.workspaceBytes = o_.convWorkspaceBytes;
    c.engine = o_.convEngine;
    c.overlap = o_.convOverlap;
    return add<Conv3d<T, M>, V, V>(in, name, c);
  }
  int up(const std::string& name, int in, int out) override {
    typename ConvTranspose3d<T, M>::Options c;
    c.outChannels = out;
    c.kernel = upWindow.kernel;
    c.stride = upWindow.stride;
    c.padding = upWindow.padding;
    c.bias = false;
    return add<ConvTranspose3d<T, M>, V, V>(in, name, c);
  }
  int leaky(const std::string& name, int in, double slope) override {
    LeakyReLUOp op;
    op.slope = slope;
    return isFeatures(in) ? add<LeakyReLU<T, M>, F, F>(in, name, op)
                          : add<LeakyReLU<T, M>, V, V>(in, name, op);
  }
  int avgPool(const std::string& name, int in) override {
    typename AvgPool3d<T, M>::Options p;
    p.kernel = avgPoolWindow.kernel;
    p.stride = avgPoolWindow.stride;
    p.padding = avgPoolWindow.padding;
    p.countIncludePad = true;
    return add<AvgPool3d<T, M>, V, V>(in, name, p);
  }
  int maxPool(const std::string& name, int in) override {
    typename MaxPool3d<T, M>::Options p;
    p.kernel = maxPoolWindow.kernel;
    p.stride = maxPoolWindow.stride;
    p.padding = maxPoolWindow.padding;
    return add<MaxPool3d<T, M>, V, V>(in, name, p);
  }
  int batchNorm(const std::string& name, int in) override {
    typename BatchNorm3d<T, M>::Options b;
    b.statistics = o_.batchNormPerGroup ? BatchNorm3d<T, M>::Statistics::PerSpatialGroup
                                        : BatchNorm3d<T, M>::Statistics::Global;
    return add<BatchNorm3d<T, M>, V, V>(in, name, b);
  }
  int dropout(const std::string& name, int in, double keep) override {
    typename Dropout<T, M>::Options d;
    d.keep = o_.dropoutKeep >= 0 ? o_.dropoutKeep : keep;
    d.seed = o_.seed;
    return isFeatures(in) ? add<Dropout<T, M>, F, F>(in, name, d)
                          : add<Dropout<T, M>, V, V>(in, name, d);
  }
  int flattenDense(const std::string& name, int in, int out) override {
    typename FlattenDense<T, M>::Options d;
    d.outFeatures = out;
    d.bias = true;
    return add<FlattenDense<T, M>, V, F>(in, name, d);
  }
  int dense(const std::string& name, int in, int out) override {
    typename Dense<T, M>::Options d;
    d.outFeatures = out;
    d.bias = true;
    return add<Dense<T, M>, F, F>(in, name, d);
  }
  int scaledTanh(const std::string& name, int in, double scale) override {
    ScaledTanhOp op;
    op.scale = scale;
    return add<ScaledTanh<T, M>, F, F>(in, name, op);
  }
  int log1p(const std::string& name, int in) override {
    return add<Log1p<T, M>, V, V>(in, name, Log1pOp{});
  }
  int concat(const std::string& name, int a, int b) override {
    const LayerGrid& grid = gridFor(name, a);
    const int x = onGrid(a, grid, name), y = onGrid(b, grid, name);
    return g_.add(std::make_unique<ConcatNode<T, M>>(grid, name, g_.shape(x), g_.shape(y)), {x, y},
                  grid);
  }

  TensorShape shape(int id) const override { return g_.shape(id); }
  bool isFeatures(int id) const { return id != G::Input && !g_.node(id).producesVolume(); }

private:
  template <class Layer, EdgeKind In, EdgeKind Out, class Opt>
  int add(int in, const std::string& name, const Opt& options) {
    const LayerGrid& grid = gridFor(name, in);
    const int x = onGrid(in, grid, name);
    return g_.add(makeNode<Layer, In, Out, T, M>(grid, name, g_.shape(x), options), {x}, grid);
  }

  // The grid of layer `name` reading `in` (collective the first time a shape is asked for).
  const LayerGrid& gridFor(const std::string& name, int in) {
    const Int3 dims =
        assigner_.next(name, !isFeatures(in), g_.shape(in).extents, g_.grid(in).dims());
    try {
      return grids_.at(dims);
    } catch (const Error& e) {
      fail(name, ": ", e.what());
    }
  }

  // `id`'s output on `grid`: itself, or a redistribution of it.
  int onGrid(int id, const LayerGrid& grid, const std::string& consumer) {
    if (g_.grid(id).layout() == grid.layout()) return id;
    for (const Moved& m : moved_)
      if (m.from == id && m.to == grid.layout()) return m.node;
    const TensorShape s = g_.shape(id);
    const std::string producer = id == G::Input ? "input" : g_.node(id).name();
    const int node = g_.add(std::make_unique<RedistributeNode<T, M>>(
                                g_.grid(id), grid, producer + "->" + consumer,
                                TensorShape{o_.batch, s.channels, s.extents}, !isFeatures(id)),
                            {id}, grid);
    moved_.push_back({id, grid.layout(), node});
    return node;
  }

  struct Moved {
    int from;
    LayerLayout to;
    int node;
  };
  LayerGridSet& grids_;
  G& g_;
  const ModelOptions& o_;
  LayerGridAssigner assigner_;
  std::vector<Moved> moved_;
};

}  // namespace hybrid3d::Impl
