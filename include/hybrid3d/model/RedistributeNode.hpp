#pragma once
/// \file
/// The node the model builder puts on an edge whose two ends run on different grids (docs/design.md
/// section 11): forward moves the producer's output to the consumer's layout, backward moves the
/// gradient back with the exact adjoint (comm/Redistribute.hpp). It reads owned cells only and
/// writes owned cells only: the consumer's halo fills its ghosts, as for any input.

#include <memory>
#include <string>

#include <hybrid3d/comm/Redistribute.hpp>
#include <hybrid3d/model/Node.hpp>

namespace hybrid3d {

template <class T, class M = DefaultMemorySpace>
class RedistributeNode final : public Node<T, M> {
public:
  using typename Node<T, M>::execution_space;
  using typename Node<T, M>::value_type;
  using typename Node<T, M>::inputs_type;
  using side_type = typename Redistribute<T, M>::Side;

  /// `shape`: the group's batch, channels and global extents ({1, 1, 1} for features).
  /// Collective over the group.
  RedistributeNode(const LayerGrid& from, const LayerGrid& to, const std::string& name,
                   const TensorShape& shape, bool volume)
      : name_(name),
        volume_(volume),
        output_{to.localBatch(shape.batch), shape.channels, shape.extents},
        how_("redistribution " + from.layout().describe() + " -> " + to.layout().describe()),
        redistribute_(from, to, shape, !volume, name) {}

  const std::string& name() const override { return name_; }
  bool producesVolume() const override { return volume_; }
  TensorShape outputShape() const override { return output_; }
  std::string implementation() const override { return how_; }
  bool movesBetweenGrids() const override { return true; }
  std::size_t bufferBytes() const override { return redistribute_.bufferBytes(); }
  const Redistribute<T, M>& redistribution() const { return redistribute_; }

  void forward(const execution_space& exec, const inputs_type& in, const value_type& out) override {
    redistribute_.forward(exec, side(*in.at(0)), side(out));
  }
  void backward(const execution_space& exec, const inputs_type&, const value_type& dOut,
                const inputs_type& dIn) override {
    if (dIn.at(0)) redistribute_.adjoint(exec, side(dOut), side(*dIn[0]));  // none for data
  }

private:
  // A volume as it is; a feature matrix [N, F] as the array [N, F, 1, 1, 1] it is in memory.
  static side_type side(const value_type& v) {
    if (v.isVolume()) return Redistribute<T, M>::sideOf(v.volume);
    side_type s;
    s.view = typename Redistribute<T, M>::view_type(v.features.data(), v.features.extent(0),
                                                    v.features.extent(1), 1, 1, 1);
    return s;
  }

  std::string name_;
  bool volume_;
  TensorShape output_;
  std::string how_;
  Redistribute<T, M> redistribute_;
};

}  // namespace hybrid3d
