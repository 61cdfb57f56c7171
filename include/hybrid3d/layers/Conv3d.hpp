#pragma once
/// \file
/// 3-D convolution (PyTorch's Conv3d: cubic odd kernel, stride, symmetric zero padding, optional
/// bias) on a block-decomposed NCDHW activation.
///
/// Forward: gather x's halo (its ghosts are the receptive-field overhang, zero padding at the
/// domain boundary), then for bounded chunks of output rows im2col -> one KokkosBlas::gemm
/// Y[Cout, cols] = W[Cout, Cin*k^3] * col[Cin*k^3, cols] -> copy into y's owned cells (+ bias).
/// Chunks hold whole output rows and may span samples, so the gemm's column dimension stays long
/// even for 4^3 boxes; their size is bounded by Options::workspaceBytes (on host memory a
/// cache-sized 4 MiB, Impl::hostChunkBytes, when that is smaller), never k^3 x the activation.
/// A 1^3 kernel with stride 1 and no padding skips im2col: the gemm reads x and writes y
/// directly, one sample at a time.
///
/// Backward-data: dcol = W^T dY per chunk, then col2im in gather form (each ghosted input cell
/// sums what it fed, no atomics) into the ghosted dx, then the halo's scatterAdd (the adjoint of
/// the forward gather) sends ghost contributions to their owners. Backward-weights:
/// dW += dY col^T and db += dY 1 per chunk; x must still hold the ghosts forward gathered.
///
/// With Options::overlap, forward computes the interior of the output box between the halo's
/// gatherBegin and gatherEnd and the shell around it afterwards, and backward-data the shell,
/// then the interior while the adjoint exchange travels (layers/impl/ConvSplit.hpp).
///
/// That im2col path is the `kokkos` engine. Options::engine may hand the local box to a vendor
/// library instead (engines/ConvEngine.hpp: `onednn` on host memory); the halo gather, the
/// adjoint scatterAdd and the gradient contract stay the layer's, whatever the engine.
///
/// `auto` chooses per pass by time (engines/ConvTimings.hpp): each candidate that can run a pass
/// (kokkos; the vendor engine where it can run the scalar, memory space and box; the direct AVX2
/// host kernels for forward and backward-weights) is timed on this rank's box at set-up, or its
/// times read from the cache file; every rank takes, per pass, the candidate whose slowest rank
/// is fastest. A layer holds what its passes run: the vendor engine's parts when some pass runs
/// it, the kokkos workspaces when some pass runs that.
///
/// Mixed precision (T = bfloat16 or float16, core/Scalar16.hpp): activations and their
/// gradients are T, the parameters float master weights (ParamOf<T>), and every sum runs in
/// float (ComputeOf<T>). The kokkos engine's workspaces are float: im2col converts as it gathers,
/// the gemm runs in float against the float weights, and the copy into y (+ bias) rounds each
/// output once. Backward-data sums col2im in a float copy of the ghosted dx and rounds it into
/// dx once, before the halo's scatterAdd (so a ghost contribution is rounded before it is added
/// to its owner's value, in float, and rounded again). Backward-weights accumulates dW and db in
/// float. The 1^3 path runs through im2col (a converting copy) rather than a gemm on x itself,
/// the direct host kernels (float only) do not run, and the halo is not overlapped (each part's
/// adds into dx would round).

#include <array>
#include <cstddef>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include <Kokkos_Core.hpp>
#include <mpi.h>

#include <hybrid3d/comm/Halo.hpp>
#include <hybrid3d/core/Devices.hpp>
#include <hybrid3d/core/Precision.hpp>
#include <hybrid3d/grid/BlockDecomposition.hpp>
#include <hybrid3d/grid/DistTensor.hpp>
#include <hybrid3d/grid/LayerGrid.hpp>
#include <hybrid3d/grid/TensorShape.hpp>
#include <hybrid3d/engines/ConvEngine.hpp>
#include <hybrid3d/engines/ConvTimings.hpp>
#include <hybrid3d/layers/LayerConvention.hpp>
#include <hybrid3d/layers/LayerFlops.hpp>
#include <hybrid3d/layers/Parameter.hpp>
#include <hybrid3d/layers/SpatialGeometry.hpp>
#include <hybrid3d/layers/Window.hpp>
#include <hybrid3d/layers/impl/ConvSplit.hpp>
#include <hybrid3d/kernels/Im2col.hpp>
#include <hybrid3d/engines/impl/LocalConvolution.hpp>

namespace hybrid3d {

template <class T, class MemorySpace = DefaultMemorySpace>
class Conv3d : public SpatialLayer,
               public LayerBackward<Conv3d<T, MemorySpace>, DistTensor<T, MemorySpace>> {
public:
  HYBRID3D_LAYER_TYPES(T, MemorySpace);

  struct Options {
    int outChannels = 0;
    int kernel = 3;  // cubic, odd
    int stride = 1;
    int padding = 1;  // zeros on every side
    bool bias = false;
    /// Bound on the im2col workspace (columns and the gemm result of one chunk); host memory
    /// spaces use at most Impl::hostChunkBytes of it, so chunks stay in cache. A chunk is at
    /// least one output row, so a tiny value means many small gemms, never a failure.
    std::size_t workspaceBytes = std::size_t(64) << 20;
    /// Who computes the local box; Auto takes the fastest engine built for T and MemorySpace.
    ConvEngine engine = ConvEngine::Auto;
    /// Overlap the halo exchanges with computation (layers/impl/ConvSplit.hpp): forward
    /// computes the interior of the output box while x's halo travels, then the shell;
    /// backward-data computes the shell, starts the adjoint exchange, then the interior. Off:
    /// exchange, then the whole box at once (one engine call per pass). Ignored for 16-bit T
    /// (see the top of this file).
    bool overlap = convOverlapByDefault;
    /// Auto only: a seam for tests that gives the candidates' times instead of running them
    /// (neither the cache file nor the kernels are then used). Empty: time them (or read them).
    ConvTimer timer{};
  };

  /// Collective over grid.worldComm(). Throws hybrid3d::Error naming the layer for an even or
  /// non-positive kernel, a kernel larger than the padded extent, bad channels/stride/padding,
  /// or a grid too fine for the receptive field's halo.
  Conv3d(const LayerGrid& grid, const std::string& name, const TensorShape& input,
         const Options& options);

  // name(), shapes, decompositions and inputGhosts(): SpatialLayer (layers/SpatialGeometry.hpp).
  const Options& options() const { return options_; }

  /// y's owned cells := conv(x). Gathers x's halo first (x's ghosts are overwritten), unless
  /// the caller fills them (setInputGhostsFilled).
  void forward(const execution_space& exec, const tensor_type& x, const tensor_type& y);
  /// dx's owned cells := dL/dx (dx's ghosts are used as scratch).
  void backwardData(const execution_space& exec, const tensor_type& dy, const tensor_type& dx);
  /// weight.grad (and bias.grad) += this rank's contribution. x is the tensor forward ran on,
  /// with the ghosts forward gathered still in place.
  void backwardWeights(const execution_space& exec, const tensor_type& x, const tensor_type& dy);
  // backward(exec, x, dy, dx): both passes, dx's only where wanted (LayerBackward).

  /// filled = true: whoever writes x also writes its ghost cells, with the neighbours' values
  /// and zero padding outside the domain (data::Preprocess does, from ghosts read from the file),
  /// so forward exchanges no halo: the model input's ghosts are read or exchanged, not both.
  void setInputGhostsFilled(bool filled) { inputGhostsFilled_ = filled; }
  /// The inputs share memory with other tensors (Graph::finalize(true) places the activations
  /// by their lives): the halo zeroes the padding at every gather, not only a tensor's first.
  void setInputsShareMemory(bool shared) {
    if (halo_) halo_->setZeroPaddingEveryGather(shared);
  }
  /// A replay from a kept input (ForwardPass::RecomputeKeptInput) exchanges no halo; it
  /// computes the same parts (interior and shell with overlap) as the first forward did.
  void setForwardPass(ForwardPass pass) { forwardPass_ = pass; }
  /// x's halo gathered again, as forward gathers it: backwardWeights reads x's ghosts, and a
  /// recomputed x (model/Recompute.hpp) holds its owned cells only when its consumer's forward is
  /// not replayed (a segment's last layer).
  void gatherInputGhosts(const execution_space& exec, const tensor_type& x) {
    if (halo_ && !inputGhostsFilled_) halo_->gather(exec, x);
  }

  /// "weight" [Cout, Cin, k, k, k] and, with Options::bias, "bias" [Cout]. Values start at zero;
  /// whoever builds the model initialises them.
  /// For 16-bit T they are float (ParamOf<T>), as are their gradients.
  std::vector<Parameter<ParamOf<T>, MemorySpace>> parameters() const;
  /// Inference only (Graph::finalize(true)): frees the parameter gradients and backward-data's
  /// float sum.
  void releaseBackward() {
    weight_.grad = {};
    bias_.grad = {};
    dxSum_ = {};
  }
  /// This rank's arithmetic per pass: Cin * k^3 multiply-adds per owned output value.
  LayerFlops flops() const {
    const auto& g = geometry_;
    const double outputs =
        double(g.outputShape().batch) * g.outputShape().channels * g.outputOwned().size();
    const double k3 = double(options_.kernel) * options_.kernel * options_.kernel;
    return convolutionFlops(outputs * g.inputShape().channels * k3, options_.bias ? outputs : 0.0);
  }

  /// Output rows (n, od, oh) per gemm chunk of the kokkos engine, for tests and benchmarks.
  Index rowsPerChunk() const { return whole_.rowsPerChunk; }
  /// Whether this rank's passes overlap the halo exchange: asked for, and the output box has
  /// both an interior and a shell (not on 1 rank, nor on boxes too thin for an interior).
  bool overlaps() const { return !shell_.empty(); }
  /// The vendor engine this layer holds for some pass, else kokkos (never Auto).
  ConvEngine engine() const { return engine_; }
  /// The code that runs `pass`, and (auto) the candidates' times it was chosen by: seconds, the
  /// most over the ranks, notCandidate for those that cannot run a pass. Named engines: none.
  ConvCandidate passEngine(ConvPass pass) const { return pass_[int(pass)]; }
  const ConvTimes& passTimes() const { return times_; }
  /// Which implementation runs each pass (and under auto, the times and where they came from).
  std::string engineDescription() const;

private:
  // Parameters, workspaces and gemm operands: T itself for float and double, float for the
  // 16-bit types (ParamOf<T> and ComputeOf<T> are the same type).
  using Compute = ComputeOf<T>;
  static_assert(std::is_same_v<Compute, ParamOf<T>>);
  using Matrix = Impl::Matrix<Compute, MemorySpace>;
  using Vector = Impl::Vector<Compute, MemorySpace>;

  // The constructor's steps, in the order it takes them (Conv3d_impl.hpp).
  // Throws naming the layer, its input and grid for a window, channels or batch it cannot take.
  static void validate(const std::string& name, const TensorShape& input, const Options& options,
                       const Int3& dims);
  // geometry_ (shapes, decompositions, the window's input ghosts) and the overlap's regions.
  void placeGeometry(const LayerGrid& grid, const std::string& name, const TensorShape& input);
  // window_ over the whole owned output box, where its input starts in x's local array, and
  // pointwise_.
  void placeWindow(const TensorShape& input);
  // The engines' description of this rank's whole problem, from window_.
  Impl::LocalConvProblem ownedBoxProblem(const std::string& name, const TensorShape& input) const;
  // pass_ and engine_ (a named engine, or auto's choice by time), whole_ with the vendor part
  // where some pass runs it.
  // (layers/impl/Conv3dChoice_impl.hpp)
  void chooseEngines(const Impl::LocalConvProblem& problem, const TensorShape& input,
                     MPI_Comm world);
  // Auto: this rank's candidates' times (from the timer seam, the cache, or measured here),
  // their most over the ranks into times_, and pass_. True when this rank measured (and so
  // built whole_ with every candidate).
  bool chooseByTime(const Impl::LocalConvProblem& problem, const TensorShape& input,
                    MPI_Comm world);
  // Auto: the candidates of each pass on this rank (0 where one can run, else notCandidate).
  ConvTimes candidates() const;
  ConvShape timingShape(const Impl::LocalConvProblem& problem) const;
  // Runs every candidate of every pass on scratch tensors of this rank's shapes (once, or a few
  // times when short: Impl::fastestRun), having built whole_ and the kokkos workspaces for all.
  ConvTimes measure(const ConvTimes& can, const Impl::LocalConvProblem& problem,
                    const TensorShape& input);
  bool holdsVendor() const {
    return vendorRuns(ConvPass::Forward) || vendorRuns(ConvPass::BackwardData) ||
           vendorRuns(ConvPass::BackwardWeights);
  }
  bool vendorRuns(ConvPass pass) const {
    const ConvCandidate c = pass_[int(pass)];
    return c == ConvCandidate::OneDnn || c == ConvCandidate::Cudnn;
  }
  bool anyPassRuns(ConvCandidate c) const {
    return pass_[0] == c || pass_[1] == c || pass_[2] == c;
  }
  // With overlap asked for and possible, interior_ and shell_; else they stay empty.
  void splitForOverlap(const Impl::LocalConvProblem& problem, const TensorShape& input);
  // The kokkos engine's col_, out_, ones_ (and dxSum_ for 16-bit T), sized for every part.
  void allocateKokkosWorkspaces(const TensorShape& input);

  // One box of output voxels computed as a unit: the whole owned box, or with overlap the
  // interior or one shell slab. Built once at set-up.
  struct Part {
    Impl::OutputPart box;
    Impl::ConvGeometry geometry;       // the part's extents, and where its input window starts
    Index rows = 0, rowsPerChunk = 1;  // the part's output rows N*OD*OH, rows per gemm chunk
    std::unique_ptr<Impl::LocalConvolution<T, MemorySpace>> vendor;  // null: kokkos engine
  };
  Part makePart(const Impl::OutputPart& box, const Impl::LocalConvProblem& wholeProblem,
                bool accumulateDx) const;
  // y's cells of the part := conv(x) (+ bias).
  void forwardPart(const execution_space& exec, const tensor_type& x, const tensor_type& y,
                   const Part& part);
  // dx += the part's adjoint (kokkos engine; a vendor part overwrites unless accumulateDx).
  void backwardDataPart(const execution_space& exec, const tensor_type& dy, const tensor_type& dx,
                        const Part& part);
  // The passes on the whole owned box without the halo exchanges (x's ghosts already filled;
  // dx's ghosts left for the scatterAdd).
  void forwardLocal(const execution_space& exec, const tensor_type& x, const tensor_type& y);
  void backwardDataLocal(const execution_space& exec, const tensor_type& dy, const tensor_type& dx);
  void backwardWeightsLocal(const execution_space& exec, const tensor_type& x,
                            const tensor_type& dy);
  bool direct(const tensor_type& outputLike) const;  // the 1x1 path applies to this call
  // dxSum_ (16-bit T) shaped as dx's ghosted local array.
  using SumView = Kokkos::View<Compute*****, Kokkos::LayoutRight, MemorySpace,
                               Kokkos::MemoryTraits<Kokkos::Unmanaged>>;
  SumView dxSumView(const tensor_type& dx) const;
  Matrix weightMatrix() const;
  Matrix weightGradMatrix() const;
  Vector biasVector() const;
  Vector biasGradVector() const;

  // Profiling regions inside the geometry's, with overlap (interned at set-up):
  // "hybrid3d::Conv3d::forward::interior <name>", ...::shell, and backwardData's.
  const std::string* forwardInteriorRegion_ = nullptr;
  const std::string* forwardShellRegion_ = nullptr;
  const std::string* backwardDataInteriorRegion_ = nullptr;
  const std::string* backwardDataShellRegion_ = nullptr;
  Options options_;
  Impl::ConvGeometry window_;       // the kernel window over the whole owned box
  bool pointwise_ = false;          // k = 1, s = 1, p = 0
  bool inputGhostsFilled_ = false;  // see setInputGhostsFilled
  ForwardPass forwardPass_ = ForwardPass::First;
  ConvEngine engine_ = ConvEngine::Kokkos;
  // The code each pass runs ([ConvPass]) and, under auto, the times that chose it (the most over
  // the ranks) and where this rank's came from ("measured", "cached", "given" by the timer,
  // "none on this rank" without output voxels; null: a named engine).
  std::array<ConvCandidate, convPassCount> pass_{ConvCandidate::Kokkos, ConvCandidate::Kokkos,
                                                 ConvCandidate::Kokkos};
  ConvTimes times_ = noConvTimes();
  const char* timesFrom_ = nullptr;
  // Elements of this rank's largest operand as the vendor engines lay it out, and whether auto
  // took the kokkos engine because a vendor engine cannot index it (ConvEngine.hpp).
  Index largestOperand_ = 0;
  bool beyondVendorLimit_ = false;
  Part whole_;                          // the owned box (backward-weights, and no overlap)
  std::vector<Part> interior_, shell_;  // with overlap: one interior part, the shell slabs

  Parameter<ParamOf<T>, MemorySpace> weight_, bias_;
  // Workspaces of the kokkos engine (left empty for the others), in ComputeOf<T>.
  Kokkos::View<Compute*, MemorySpace> col_;   // [Cin*k^3, chunk columns]: im2col / dcol
  Kokkos::View<Compute*, MemorySpace> out_;   // [Cout, chunk columns]: Y or dY of a chunk
  Kokkos::View<Compute*, MemorySpace> ones_;  // bias gradient = dY * ones
  // 16-bit T only: backward-data's sum over the chunks in float, the ghosted dx's cells.
  Kokkos::View<Compute*, MemorySpace> dxSum_;
  std::unique_ptr<Halo<T, MemorySpace>> halo_;
};

}  // namespace hybrid3d

#include <hybrid3d/layers/impl/Conv3d_impl.hpp>
#include <hybrid3d/layers/impl/Conv3dChoice_impl.hpp>

namespace hybrid3d {
#define HYBRID3D_EXTERN(T, D) extern template class Conv3d<T, D>;
HYBRID3D_FOR_EACH_SCALAR_AND_DEVICE(HYBRID3D_EXTERN)
HYBRID3D_FOR_EACH_SCALAR16_AND_DEVICE(HYBRID3D_EXTERN)
#undef HYBRID3D_EXTERN
}  // namespace hybrid3d
