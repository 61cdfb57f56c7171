#pragma once
// Private helper of planModel: the GraphBuilder the architecture definitions (Architecture.hpp)
// run through to record a ModelPlan instead of constructing layers. Each method applies what
// the layer's constructor computes of its shape -- output extents and input ghost widths from
// layers/Window.hpp, the halo's reach check from comm/HaloPlan.hpp with the name the layer
// gives its halo, parameter counts from the PyTorch shapes -- and allocates nothing.

#include <string>

#include <hybrid3d/comm/HaloPlan.hpp>
#include <hybrid3d/layers/Window.hpp>
#include <hybrid3d/model/GraphBuilder.hpp>
#include <hybrid3d/model/ModelPlan.hpp>

#include "ModelWindows.hpp"

namespace hybrid3d::Impl {

class PlanBuilder final : public GraphBuilder {
public:
  static_assert(ModelPlan::Input == GraphBuilder::Input);

  PlanBuilder(ModelPlan& plan, const ModelOptions& o) : p_(plan), o_(o) {}

  TensorShape shape(int id) const override { return p_.shape(id); }

  int conv(const std::string& name, int in, int out, int k, int s, int p, bool bias) override {
    const TensorShape x = shape(in);
    const Window w = Window::cubic(k, s, p);
    LayerPlan l = layer(name, "Conv3d", in, {x.batch, out, windowOutputExtents(x.extents, w)});
    l.inputGhosts = {haloGhosts(windowGhosts(dec(x), dec(l.output), w, name), x, name)};
    l.tensors = {Index(out) * x.channels * k * k * k};
    if (bias) l.tensors.push_back(out);
    l.conv = {k, s, p, bias, o_.convEngine};
    return add(l);
  }
  int up(const std::string& name, int in, int out) override {
    const int k = upWindow.kernel, s = upWindow.stride, p = upWindow.padding;  // no bias
    const TensorShape x = shape(in);
    Index3 e;
    for (int d = 0; d < 3; ++d) e[d] = transposedOutputExtent(x.extents[d], k, s, p);
    LayerPlan l = layer(name, "ConvTranspose3d", in, {x.batch, out, e});
    const GhostMap g = requiredGhosts(
        dec(x), dec(l.output),
        [=](int, Index a, Index b) { return transposedInputRange(a, b, k, s, p); }, name);
    l.inputGhosts = {haloGhosts(g, x, name)};
    l.tensors = {Index(x.channels) * out * k * k * k};
    return add(l);
  }
  int avgPool(const std::string& name, int in) override {
    return pool("AvgPool3d", name, in, avgPoolWindow);
  }
  int maxPool(const std::string& name, int in) override {
    return pool("MaxPool3d", name, in, maxPoolWindow);
  }
  int leaky(const std::string& name, int in, double) override {
    return same(name, "LeakyReLU", in);
  }
  int log1p(const std::string& name, int in) override { return same(name, "Log1p", in); }
  int scaledTanh(const std::string& name, int in, double) override {
    return same(name, "ScaledTanh", in);
  }
  int dropout(const std::string& name, int in, double) override {
    return same(name, "Dropout", in);
  }
  int batchNorm(const std::string& name, int in) override {
    LayerPlan l = layer(name, "BatchNorm3d", in, shape(in));
    l.tensors = {shape(in).channels, shape(in).channels};  // weight and bias (affine)
    return add(l);
  }
  // The weight is a column shard: each rank holds `out` rows of its own voxels' columns.
  int flattenDense(const std::string& name, int in, int out) override {
    const int id = dense(name, in, out, "FlattenDense");
    p_.layers[id].columnShardRows = out;
    return id;
  }
  int dense(const std::string& name, int in, int out) override {
    return dense(name, in, out, "Dense");
  }
  int concat(const std::string& name, int a, int b) override {
    const TensorShape x = shape(a), y = shape(b);
    if (x.batch != y.batch || x.extents != y.extents)
      fail(name, ": Concat inputs differ: a is ", x.batch, "x", x.channels, "x",
           toString(x.extents), ", b is ", y.batch, "x", y.channels, "x", toString(y.extents));
    LayerPlan l = layer(name, "Concat", a, {x.batch, x.channels + y.channels, x.extents});
    l.inputs = {a, b};
    l.inputGhosts = {GhostMap{}, GhostMap{}};
    return add(l);
  }

private:
  BlockDecomposition dec(const TensorShape& s) const {
    return BlockDecomposition(s.extents, p_.grid);
  }
  bool isVolume(int id) const { return id == Input || p_.layers.at(id).volume; }

  LayerPlan layer(const std::string& name, const char* kind, int in, const TensorShape& out) const {
    LayerPlan l;
    l.name = name;
    l.kind = kind;
    l.inputs = {in};
    l.output = out;
    l.volume = isVolume(in);
    l.inputGhosts = {GhostMap{}};
    return l;
  }
  int add(LayerPlan l) {
    l.parameters = 0;
    for (Index t : l.tensors) l.parameters += t;
    p_.layers.push_back(l);
    return int(p_.layers.size()) - 1;
  }
  // The layer's halo, built where it needs ghosts, refuses widths past a neighbour.
  GhostMap haloGhosts(const GhostMap& g, const TensorShape& x, const std::string& what) const {
    if (!g.none()) checkGhostWidths(dec(x), g, what);
    return g;
  }
  int same(const std::string& name, const char* kind, int in) {
    return add(layer(name, kind, in, shape(in)));
  }
  int pool(const char* kind, const std::string& name, int in, const CubicWindow& c) {
    const Window w = Window::cubic(c.kernel, c.stride, c.padding);
    const TensorShape x = shape(in);
    const std::string label = std::string(kind) + " '" + name + "'";  // as Pool3dPlan names it
    LayerPlan l = layer(name, kind, in, {x.batch, x.channels, windowOutputExtents(x.extents, w)});
    const GhostMap g = windowGhosts(dec(x), dec(l.output), w, label);
    checkGhostWidths(dec(x), g, label);
    l.inputGhosts = {g};
    return add(l);
  }
  int dense(const std::string& name, int in, int out, const char* kind) {
    const TensorShape x = shape(in);
    const Index features = Index(x.channels) * x.extents[0] * x.extents[1] * x.extents[2];
    LayerPlan l = layer(name, kind, in, {x.batch, out, {1, 1, 1}});
    l.volume = false;
    l.tensors = {Index(out) * features, out};  // weight [out, in] and bias
    return add(l);
  }

  ModelPlan& p_;
  const ModelOptions& o_;
};

}  // namespace hybrid3d::Impl
