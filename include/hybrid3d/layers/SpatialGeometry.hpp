#pragma once
/// \file
/// One description of a spatial layer's geometry, shared by every layer that works on volumes
/// (Conv3d, ConvTranspose3d, the pools, BatchNorm3d, the element-wise layers, Concat, Dropout
/// and FlattenDense's volume side): its name and the label its messages start with, the input
/// and output shapes, their decompositions over the grid, this rank's owned boxes, the input
/// ghost widths its receptive field needs on every rank, the one tensor check, and its
/// profiling region names, made once at set-up (no allocation in the step).
///
/// Built from the grid's dimensions and this rank's coordinates, not from a ProcessGrid, so
/// that it needs no communicator: it is global data plus where this rank sits.
///
/// Tensor check convention (one message format, naming the layer, the tensor's role and label
/// and what is wrong): an input-side tensor (x, dx) must have the input shape on the input
/// decomposition at this rank's coordinates and, when the layer reads ghosts
/// (InputGhosts::Exact), exactly this rank's inputGhosts() widths: kernels index by them and
/// the halo was built for them. An element-wise layer (InputGhosts::Any) reads only owned cells
/// and accepts any ghosts, as does every output-side tensor (y, dy: the next layer's ghosts).

#include <array>
#include <string>
#include <string_view>

#include <hybrid3d/comm/HaloPlan.hpp>
#include <hybrid3d/core/Error.hpp>
#include <hybrid3d/core/KernelLabel.hpp>
#include <hybrid3d/core/Types.hpp>
#include <hybrid3d/grid/BlockDecomposition.hpp>
#include <hybrid3d/grid/DistTensor.hpp>
#include <hybrid3d/grid/GhostWidths.hpp>
#include <hybrid3d/grid/TensorShape.hpp>

namespace hybrid3d {

/// Whether a layer's input-side tensors must carry exactly its input ghosts.
enum class InputGhosts {
  Exact,  // a windowed layer: it reads ghost cells, which the halo fills
  Any     // an element-wise layer: it reads owned cells only
};

/// The passes whose profiling regions every spatial layer names the same way.
enum class Pass { Forward, BackwardData, BackwardWeights, Backward };

/// How a layer is named. `kind` is its class ("Conv3d"), for profiling regions; `label` is how
/// its messages (and its halo's) start: the bare name for the convolutions, "MaxPool3d 'p1'"
/// for the pools and batch norm, as their tests and users have read them so far.
struct LayerNaming {
  std::string kind, name, label;
  static LayerNaming bare(std::string kind, const std::string& name) {
    return {std::move(kind), name, name};
  }
  static LayerNaming quoted(const std::string& kind, const std::string& name) {
    return {kind, name, kind + " '" + name + "'"};
  }
};

class SpatialGeometry {
public:
  SpatialGeometry() = default;
  /// `ghosts` holds every rank's input ghost widths (none by default). Throws naming the layer
  /// when a width reaches past an immediate neighbour (comm/HaloPlan.hpp checkGhostWidths), as
  /// the halo would, before anything collective is set up.
  SpatialGeometry(LayerNaming naming, const Int3& dims, const Int3& coords,
                  const TensorShape& input, const TensorShape& output, InputGhosts rule,
                  const GhostMap& ghosts = {});

  /// The ghost map a rule computes from the input and output decompositions, for layers whose
  /// ghosts follow from them (layers/Window.hpp windowGhosts, requiredGhosts).
  template <class GhostRule>
  static SpatialGeometry withGhostRule(LayerNaming naming, const Int3& dims, const Int3& coords,
                                       const TensorShape& input, const TensorShape& output,
                                       GhostRule&& rule) {
    const BlockDecomposition in(input.extents, dims), out(output.extents, dims);
    return SpatialGeometry(std::move(naming), dims, coords, input, output, InputGhosts::Exact,
                           rule(in, out));
  }

  const std::string& kind() const { return naming_.kind; }
  const std::string& name() const { return naming_.name; }
  /// What the layer's messages start with.
  const std::string& label() const { return naming_.label; }
  const TensorShape& inputShape() const { return in_; }
  const TensorShape& outputShape() const { return out_; }
  const BlockDecomposition& inputDecomposition() const { return inDec_; }
  const BlockDecomposition& outputDecomposition() const { return outDec_; }
  const Int3& coords() const { return coords_; }
  const Box3& inputOwned() const { return inOwned_; }
  const Box3& outputOwned() const { return outOwned_; }
  /// Every rank's input ghost widths (a tensor for x or dx is made with them), and this rank's.
  const GhostMap& inputGhosts() const { return ghostMap_; }
  const GhostWidths& ghosts() const { return ghosts_; }
  /// This rank's input layout for `batch` x `channels` (a halo is built from it).
  TensorLayout inputLayout() const { return {in_.batch, in_.channels, inDec_, coords_, ghostMap_}; }

  /// "hybrid3d::<kind>::<pass> <name>", interned at set-up.
  const std::string& region(Pass pass) const { return *regions_[static_cast<int>(pass)]; }
  /// The same for another pass ("forward::interior"), interned. Set-up only: it builds the
  /// name before looking it up; keep the reference it returns (it lives as long as the process).
  const std::string& region(std::string_view pass) const;
  /// "hybrid3d::<name>/<what>": the label of a view the layer allocates.
  std::string viewLabel(std::string_view what) const {
    return Impl::viewLabel(naming_.name + "/" + std::string(what));
  }

  /// Throws naming the layer, `role` ("input", "output gradient") and what differs. Called on
  /// every pass: the tensor's label (View::label() returns a new std::string) is read only to
  /// say what is wrong, never when all is well.
  template <class T, class M>
  void checkInput(const DistTensor<T, M>& t, const char* role) const {
    if (!matches(t.batch(), t.channels(), t.decomposition(), t.coords(), in_, inDec_))
      badShape(t.batch(), t.channels(), t.decomposition(), t.coords(), t.view().label(), role, in_,
               inDec_);
    if (rule_ == InputGhosts::Exact && t.ghosts() != ghosts_)
      badGhosts(t.ghosts(), t.view().label(), role);
  }
  template <class T, class M>
  void checkOutput(const DistTensor<T, M>& t, const char* role) const {
    if (!matches(t.batch(), t.channels(), t.decomposition(), t.coords(), out_, outDec_))
      badShape(t.batch(), t.channels(), t.decomposition(), t.coords(), t.view().label(), role, out_,
               outDec_);
  }

private:
  bool matches(int batch, int channels, const BlockDecomposition& dec, const Int3& coords,
               const TensorShape& want, const BlockDecomposition& wantDec) const {
    return batch == want.batch && channels == want.channels && dec == wantDec && coords == coords_;
  }
  [[noreturn]] void badShape(int batch, int channels, const BlockDecomposition& dec,
                             const Int3& coords, const std::string& tensor, const char* role,
                             const TensorShape& want, const BlockDecomposition& wantDec) const;
  [[noreturn]] void badGhosts(const GhostWidths& has, const std::string& tensor,
                              const char* role) const;

  LayerNaming naming_;
  TensorShape in_, out_;
  BlockDecomposition inDec_, outDec_;
  Int3 coords_{0, 0, 0};
  Box3 inOwned_, outOwned_;
  InputGhosts rule_ = InputGhosts::Any;
  GhostMap ghostMap_;   // every rank's input ghosts: the halo plans the neighbours' from it
  GhostWidths ghosts_;  // this rank's (an empty input box too: those its owned output reads)
  std::array<const std::string*, 4> regions_{};  // interned (core/KernelLabel.hpp), per Pass
};

/// The accessors every spatial layer exposes, written once: the layers derive from this and
/// fill geometry_ in their constructors (the model's nodes call them by these names).
class SpatialLayer {
public:
  const SpatialGeometry& geometry() const { return geometry_; }
  const std::string& name() const { return geometry_.name(); }
  const TensorShape& inputShape() const { return geometry_.inputShape(); }
  const TensorShape& outputShape() const { return geometry_.outputShape(); }
  const BlockDecomposition& inputDecomposition() const { return geometry_.inputDecomposition(); }
  const BlockDecomposition& outputDecomposition() const { return geometry_.outputDecomposition(); }
  /// Every rank's input ghost widths (a tensor for x or dx is made with them).
  const GhostMap& inputGhosts() const { return geometry_.inputGhosts(); }

protected:
  SpatialLayer() = default;
  explicit SpatialLayer(SpatialGeometry geometry) : geometry_(std::move(geometry)) {}
  SpatialGeometry geometry_;
};

}  // namespace hybrid3d
