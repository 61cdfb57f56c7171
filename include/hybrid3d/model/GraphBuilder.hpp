#pragma once
/// \file
/// What an architecture's graph is written against (Architecture.hpp): one method per layer kind,
/// each adding a named layer that reads earlier layers (or Input) and returning its id. Two
/// builders implement it, so one definition serves both: Builder (src/model/impl/Builder.hpp)
/// constructs the layers into a Graph with scalar T in memory space M, PlanBuilder
/// (src/model/impl/PlanBuilder.hpp) records their shapes for a ModelPlan and allocates nothing.
/// Virtual rather than a template parameter so that an architecture is an ordinary function
/// registered once, not one instantiation per scalar and device; a graph is built once per run.

#include <string>

#include <hybrid3d/grid/TensorShape.hpp>

namespace hybrid3d {

class GraphBuilder {
public:
  static constexpr int Input = -1;  // the model input, as a layer id

  virtual ~GraphBuilder() = default;

  /// The output shape of layer `id` (Input: the model input); per data-parallel group.
  virtual TensorShape shape(int id) const = 0;

  /// kernel^3 convolution, stride and zero padding in every dimension.
  virtual int conv(const std::string& name, int in, int outChannels, int kernel, int stride,
                   int padding, bool bias) = 0;
  /// 2^3 transposed convolution, stride 2, no bias (impl/ModelWindows.hpp).
  virtual int up(const std::string& name, int in, int outChannels) = 0;
  /// LeakyReLU (slope 0: ReLU), on a volume or on features.
  virtual int leaky(const std::string& name, int in, double slope) = 0;
  virtual int avgPool(const std::string& name, int in) = 0;  // 3^3, stride 2, padding 1 counted
  virtual int maxPool(const std::string& name, int in) = 0;  // 2^3, stride 2
  virtual int batchNorm(const std::string& name, int in) = 0;
  /// `keep`: the architecture's keep probability (ModelOptions::dropoutKeep overrides it).
  virtual int dropout(const std::string& name, int in, double keep) = 0;
  /// A volume flattened into `out` features (its weight is a column shard), with bias.
  virtual int flattenDense(const std::string& name, int in, int out) = 0;
  virtual int dense(const std::string& name, int in, int out) = 0;  // features, with bias
  virtual int scaledTanh(const std::string& name, int in, double scale) = 0;
  virtual int log1p(const std::string& name, int in) = 0;
  virtual int concat(const std::string& name, int a, int b) = 0;  // channels of a, then of b
};

}  // namespace hybrid3d
