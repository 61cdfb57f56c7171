#pragma once
// Private helper of buildModel: the GraphBuilder that adds one named layer at a time to a graph,
// reading the input shape from the graph, so each architecture reads like its definition in
// DESIGN.md. PlanBuilder.hpp implements the same interface and only records shapes (a dry run
// allocates nothing).

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

#include "ModelWindows.hpp"

namespace hybrid3d::Impl {

template <class T, class M>
class Builder final : public GraphBuilder {
public:
  using G = Graph<T, M>;
  static constexpr EdgeKind V = EdgeKind::Volume, F = EdgeKind::Features;
  static_assert(G::Input == GraphBuilder::Input);

  Builder(const ProcessGrid& grid, G& graph, const ModelOptions& o)
      : grid_(grid), g_(graph), o_(o) {}

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
    return g_.add(std::make_unique<ConcatNode<T, M>>(grid_, name, g_.shape(a), g_.shape(b)),
                  {a, b});
  }

  TensorShape shape(int id) const override { return g_.shape(id); }
  bool isFeatures(int id) const { return id != G::Input && !g_.node(id).producesVolume(); }

private:
  template <class Layer, EdgeKind In, EdgeKind Out, class Opt>
  int add(int in, const std::string& name, const Opt& options) {
    return g_.add(makeNode<Layer, In, Out, T, M>(grid_, name, g_.shape(in), options), {in});
  }

  const ProcessGrid& grid_;
  G& g_;
  const ModelOptions& o_;
};

}  // namespace hybrid3d::Impl
