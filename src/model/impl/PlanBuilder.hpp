#pragma once
// Private helper of planModel: the GraphBuilder the architecture definitions (Architecture.hpp)
// run through to record a ModelPlan instead of constructing layers. Each method applies what
// the layer's constructor computes of its shape -- output extents and input ghost widths from
// layers/Window.hpp on the layer's own grid, the halo's reach check from comm/HaloPlan.hpp with
// the name the layer gives its halo, parameter counts from the PyTorch shapes -- and allocates
// nothing. Grids come from the model's layer-grid rule as Builder.hpp takes them, and a
// "Redistribute" layer is recorded where Builder.hpp inserts a RedistributeNode.

#include <string>
#include <vector>

#include <hybrid3d/comm/HaloPlan.hpp>
#include <hybrid3d/layers/Window.hpp>
#include <hybrid3d/model/GraphBuilder.hpp>
#include <hybrid3d/model/LayerGridRule.hpp>
#include <hybrid3d/model/ModelPlan.hpp>

#include "ModelWindows.hpp"

namespace hybrid3d::Impl {

class PlanBuilder final : public GraphBuilder {
public:
  static_assert(ModelPlan::Input == GraphBuilder::Input);

  PlanBuilder(ModelPlan& plan, const ModelOptions& o)
      : p_(plan), o_(o), assigner_(o.layerGrids, plan.grid) {}

  // After the architecture's last layer: every entry of the rule was met.
  void finish() const { assigner_.finish(); }

  TensorShape shape(int id) const override { return p_.shape(id); }

  int conv(const std::string& name, int in, int out, int k, int s, int p, bool bias) override {
    const Int3 g = gridFor(name, in);
    const TensorShape x = shape(in = onGrid(in, g, name));
    const Window w = Window::cubic(k, s, p);
    LayerPlan l = layer(name, "Conv3d", in, g, {x.batch, out, windowOutputExtents(x.extents, w)});
    l.inputGhosts = {haloGhosts(windowGhosts(dec(x, g), dec(l.output, g), w, name), x, g, name)};
    l.tensors = {Index(out) * x.channels * k * k * k};
    if (bias) l.tensors.push_back(out);
    l.conv = {k, s, p, bias, o_.convEngine};
    return add(l);
  }
  int up(const std::string& name, int in, int out) override {
    const int k = upWindow.kernel, s = upWindow.stride, p = upWindow.padding;  // no bias
    const Int3 g = gridFor(name, in);
    const TensorShape x = shape(in = onGrid(in, g, name));
    Index3 e;
    for (int d = 0; d < 3; ++d) e[d] = transposedOutputExtent(x.extents[d], k, s, p);
    LayerPlan l = layer(name, "ConvTranspose3d", in, g, {x.batch, out, e});
    const GhostMap ghosts = requiredGhosts(
        dec(x, g), dec(l.output, g),
        [=](int, Index a, Index b) { return transposedInputRange(a, b, k, s, p); }, name);
    l.inputGhosts = {haloGhosts(ghosts, x, g, name)};
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
    const Int3 g = gridFor(name, in);
    in = onGrid(in, g, name);
    LayerPlan l = layer(name, "BatchNorm3d", in, g, shape(in));
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
    const Int3 g = gridFor(name, a);
    a = onGrid(a, g, name);
    b = onGrid(b, g, name);
    const TensorShape x = shape(a), y = shape(b);
    if (x.batch != y.batch || x.extents != y.extents)
      fail(name, ": Concat inputs differ: a is ", x.batch, "x", x.channels, "x",
           toString(x.extents), ", b is ", y.batch, "x", y.channels, "x", toString(y.extents));
    LayerPlan l = layer(name, "Concat", a, g, {x.batch, x.channels + y.channels, x.extents});
    l.inputs = {a, b};
    l.inputGhosts = {GhostMap{}, GhostMap{}};
    return add(l);
  }

private:
  static BlockDecomposition dec(const TensorShape& s, const Int3& grid) {
    return BlockDecomposition(s.extents, grid);
  }
  bool isVolume(int id) const { return id == Input || p_.layers.at(id).volume; }
  const Int3& gridOf(int id) const { return id == Input ? p_.grid : p_.layers.at(id).grid; }
  int groupSize() const { return p_.grid[0] * p_.grid[1] * p_.grid[2]; }

  // The grid of layer `name` reading `in`, refused as LayerGridSet refuses it.
  Int3 gridFor(const std::string& name, int in) {
    const Int3 g = assigner_.next(name, isVolume(in), shape(in).extents, gridOf(in));
    try {
      LayerLayout(g, groupSize());
    } catch (const Error& e) {
      fail(name, ": ", e.what());
    }
    return g;
  }
  // `id`'s output on `grid`: itself, or a Redistribute layer (one per producer and grid).
  int onGrid(int id, const Int3& grid, const std::string& consumer) {
    if (gridOf(id) == grid) return id;
    for (const Moved& m : moved_)
      if (m.from == id && m.to == grid) return m.layer;
    const std::string producer = id == Input ? "input" : p_.layers.at(id).name;
    LayerPlan l = layer(producer + "->" + consumer, "Redistribute", id, grid, shape(id));
    const int layer = add(l);
    moved_.push_back({id, grid, layer});
    return layer;
  }

  LayerPlan layer(const std::string& name, const char* kind, int in, const Int3& grid,
                  const TensorShape& out) const {
    LayerPlan l;
    l.name = name;
    l.kind = kind;
    l.inputs = {in};
    l.output = out;
    l.grid = grid;
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
  static GhostMap haloGhosts(const GhostMap& g, const TensorShape& x, const Int3& grid,
                             const std::string& what) {
    if (!g.none()) checkGhostWidths(dec(x, grid), g, what);
    return g;
  }
  int same(const std::string& name, const char* kind, int in) {
    const Int3 g = gridFor(name, in);
    in = onGrid(in, g, name);
    return add(layer(name, kind, in, g, shape(in)));
  }
  int pool(const char* kind, const std::string& name, int in, const CubicWindow& c) {
    const Window w = Window::cubic(c.kernel, c.stride, c.padding);
    const Int3 g = gridFor(name, in);
    const TensorShape x = shape(in = onGrid(in, g, name));
    const std::string label = std::string(kind) + " '" + name + "'";  // as Pool3dPlan names it
    LayerPlan l =
        layer(name, kind, in, g, {x.batch, x.channels, windowOutputExtents(x.extents, w)});
    const GhostMap ghosts = windowGhosts(dec(x, g), dec(l.output, g), w, label);
    checkGhostWidths(dec(x, g), ghosts, label);
    l.inputGhosts = {ghosts};
    return add(l);
  }
  int dense(const std::string& name, int in, int out, const char* kind) {
    const Int3 g = gridFor(name, in);
    const TensorShape x = shape(in = onGrid(in, g, name));
    const Index features = Index(x.channels) * x.extents[0] * x.extents[1] * x.extents[2];
    LayerPlan l = layer(name, kind, in, g, {x.batch, out, {1, 1, 1}});
    l.volume = false;
    l.tensors = {Index(out) * features, out};  // weight [out, in] and bias
    return add(l);
  }

  struct Moved {
    int from;
    Int3 to;
    int layer;
  };
  ModelPlan& p_;
  const ModelOptions& o_;
  LayerGridAssigner assigner_;
  std::vector<Moved> moved_;
};

}  // namespace hybrid3d::Impl
