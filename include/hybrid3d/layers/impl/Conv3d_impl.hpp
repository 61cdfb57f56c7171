#pragma once
// Definitions of Conv3d (declared in layers/Conv3d.hpp); instantiated for float, double and the
// 16-bit activation types in src/layers/Conv3d.cpp.

#include <hybrid3d/core/Error.hpp>
#include <hybrid3d/core/ProfilingRegion.hpp>
#include <hybrid3d/engines/HostBlas.hpp>
#include <hybrid3d/kernels/Elementwise.hpp>
#include <hybrid3d/engines/impl/InstanceBlas.hpp>
#include <hybrid3d/kernels/ConvForwardHost.hpp>
#include <hybrid3d/kernels/ConvWeightsHost.hpp>
#include <hybrid3d/engines/impl/CudnnConvolution.hpp>
#include <hybrid3d/engines/impl/OneDnnConvolution.hpp>

namespace hybrid3d {

namespace Impl {
// The vendor engine `engine` (already resolved for T and M) for one rank's problem.
template <class T, class M>
std::unique_ptr<LocalConvolution<T, M>> createVendorConvolution(ConvEngine engine,
                                                                const LocalConvProblem& problem) {
#if HYBRID3D_ENABLE_ONEDNN
  if constexpr (oneDnnCanRun<T, M>())
    if (engine == ConvEngine::OneDnn) return std::make_unique<OneDnnConvolution<T>>(problem);
#endif
#if HYBRID3D_ENABLE_CUDNN
  if constexpr (cudnnCanRun<T, M>())
    if (engine == ConvEngine::Cudnn) return std::make_unique<CudnnConvolution<T>>(problem);
#endif
  fail(problem.layer, ": convolution engine ", toString(engine), " cannot run this layer");
}
}  // namespace Impl

// The constructor in its steps, each below in this order; each step reads what those before it
// set.
template <class T, class M>
Conv3d<T, M>::Conv3d(const LayerGrid& grid, const std::string& name, const TensorShape& input,
                     const Options& options)
    : options_(options) {
  hostBlasThreadsFollowKokkos();
  validate(name, input, options, grid.dims());
  placeGeometry(grid, name, input);
  placeWindow(input);
  // (Before the engines: auto times its candidates on them.)
  const Index k = options.kernel;
  weight_ = createParameter<ParamOf<T>, M>(name, "weight", {window_.cout, window_.cin, k, k, k});
  if (options.bias) bias_ = createParameter<ParamOf<T>, M>(name, "bias", {window_.cout});

  const Impl::LocalConvProblem problem = ownedBoxProblem(name, input);
  chooseEngines(problem, input, grid.worldComm());
  splitForOverlap(problem, input);
  if (anyPassRuns(ConvCandidate::Kokkos)) allocateKokkosWorkspaces(input);

  // Collective: every rank builds the halo when any rank has ghosts (one without sends to one
  // with).
  if (!geometry_.inputGhosts().none())
    halo_ = createHalo<T, M>(grid, geometry_.inputLayout(), name);
}

template <class T, class M>
void Conv3d<T, M>::validate(const std::string& name, const TensorShape& input,
                            const Options& options, const Int3& dims) {
  const int k = options.kernel, s = options.stride, p = options.padding;
  const std::string where = Impl::concat("input ", input.batch, "x", input.channels, "x",
                                         toString(input.extents), ", grid ", toString(dims));
  if (k < 1 || k % 2 == 0)
    fail(name, ": kernel ", k, " must be odd and positive (1, 3, 5, ...); ", where);
  if (s < 1) fail(name, ": stride ", s, " must be positive; ", where);
  if (p < 0) fail(name, ": padding ", p, " must not be negative; ", where);
  if (options.outChannels < 1 || input.channels < 1 || input.batch < 0)
    fail(name, ": channels (in ", input.channels, ", out ", options.outChannels,
         ") must be positive and the batch not negative; ", where);
  for (int d = 0; d < 3; ++d)
    if (input.extents[d] < 1 || input.extents[d] + 2 * p < k)
      fail(name, ": kernel ", k, " does not fit input extent ", input.extents[d], " along ",
           "DHW"[d], " with padding ", p, "; ", where);
}

template <class T, class M>
void Conv3d<T, M>::placeGeometry(const LayerGrid& grid, const std::string& name,
                                 const TensorShape& input) {
  const Window window = Window::cubic(options_.kernel, options_.stride, options_.padding);
  geometry_ = SpatialGeometry::withGhostRule(
      LayerNaming::bare("Conv3d", name), grid.dims(), grid.coords(), input,
      {input.batch, options_.outChannels, windowOutputExtents(input.extents, window)},
      [&](const BlockDecomposition& in, const BlockDecomposition& out) {
        return windowGhosts(in, out, window, name);
      });
  forwardInteriorRegion_ = &geometry_.region("forward::interior");
  forwardShellRegion_ = &geometry_.region("forward::shell");
  backwardDataInteriorRegion_ = &geometry_.region("backwardData::interior");
  backwardDataShellRegion_ = &geometry_.region("backwardData::shell");
}

template <class T, class M>
void Conv3d<T, M>::placeWindow(const TensorShape& input) {
  const int k = options_.kernel, s = options_.stride, p = options_.padding;
  const GhostWidths& ghosts = geometry_.ghosts();
  const Box3& inOwned = geometry_.inputOwned();
  const Box3& outOwned = geometry_.outputOwned();
  auto& g = window_;
  g.k = k;
  g.s = s;
  g.cin = input.channels;
  g.cout = options_.outChannels;
  g.od = outOwned.extent(0);
  g.oh = outOwned.extent(1);
  g.ow = outOwned.extent(2);
  if (!outOwned.empty())
    for (int d = 0; d < 3; ++d)
      g.inOffset[d] = outOwned.lo[d] * s - p - inOwned.lo[d] + ghosts.lo[d];
  pointwise_ = k == 1 && s == 1 && p == 0;
}

template <class T, class M>
Impl::LocalConvProblem Conv3d<T, M>::ownedBoxProblem(const std::string& name,
                                                     const TensorShape& input) const {
  const auto& g = window_;
  Impl::LocalConvProblem problem;
  problem.layer = name;
  problem.batch = input.batch;
  problem.cin = g.cin;
  problem.cout = g.cout;
  problem.kernel = g.k;
  problem.stride = g.s;
  problem.outExtents = {g.od, g.oh, g.ow};
  problem.inOffset = {g.inOffset[0], g.inOffset[1], g.inOffset[2]};
  problem.inLocalExtents = geometry_.inputLayout().localBox().extents();
  problem.bias = options_.bias;
  problem.activations = precisionOf<T>();
  return problem;
}

template <class T, class M>
void Conv3d<T, M>::splitForOverlap(const Impl::LocalConvProblem& problem,
                                   const TensorShape& input) {
  // Overlap needs ghosts some neighbour fills (not the 1^3 path, not one rank alone) and an
  // interior: input cells this rank holds before the exchange ends are its owned ones and the
  // padding ghosts of sides at the domain boundary, which gatherBegin zeroes. Not for 16-bit
  // activations: the parts' sums into dx (whose input windows overlap) would each round.
  const GhostWidths& ghosts = geometry_.ghosts();
  const Box3& inOwned = geometry_.inputOwned();
  if (!options_.overlap || isScalar16<T> || ghosts.none() || pointwise_ || inOwned.empty()) return;
  Impl::ReadyInput ready;
  for (int d = 0; d < 3; ++d) {
    const Index owned = inOwned.extent(d), lo = ghosts.lo[d], hi = ghosts.hi[d];
    const bool lowRemote = lo > 0 && inOwned.lo[d] > 0;
    const bool highRemote = hi > 0 && inOwned.hi[d] < input.extents[d];
    ready.lo[d] = lowRemote ? lo : 0;
    ready.hi[d] = highRemote ? lo + owned : lo + owned + hi;
  }
  const Impl::OutputSplit split =
      Impl::splitOutputBox(problem.outExtents, problem.inOffset, window_.k, window_.s, ready);
  if (!split.interior.empty() && !split.shell.empty()) {
    interior_.push_back(makePart(split.interior, problem, true));
    for (const auto& box : split.shell) shell_.push_back(makePart(box, problem, true));
  }
}

template <class T, class M>
void Conv3d<T, M>::allocateKokkosWorkspaces(const TensorShape& input) {
  const auto& g = window_;
  // One workspace for every part's chunks: the widest chunk of any of them.
  Index columns = whole_.rowsPerChunk * g.ow;
  for (const auto* parts : {&interior_, &shell_})
    for (const Part& part : *parts)
      columns = std::max(columns, part.rowsPerChunk * part.geometry.ow);
  const Index K = g.cin * g.taps();
  col_ = Kokkos::View<Compute*, M>(geometry_.viewLabel("im2col"), K * columns);
  out_ = Kokkos::View<Compute*, M>(geometry_.viewLabel("chunk"), g.cout * columns);
  // The 1^3 path sums the bias gradient over a whole sample's voxels at once.
  const Index onesLength =
      std::max(columns, pointwise_ && !isScalar16<T> ? g.od * g.oh * g.ow : Index(0));
  ones_ = Kokkos::View<Compute*, M>(geometry_.viewLabel("ones"), onesLength);
  Kokkos::deep_copy(ones_, Compute(1));
  if (isScalar16<T>)
    dxSum_ = Kokkos::View<Compute*, M>(
        geometry_.viewLabel("dxSum"),
        Index(input.batch) * g.cin * geometry_.inputLayout().localBox().size());
}

template <class T, class M>
typename Conv3d<T, M>::Part Conv3d<T, M>::makePart(const Impl::OutputPart& box,
                                                   const Impl::LocalConvProblem& wholeProblem,
                                                   bool accumulateDx) const {
  Part part;
  part.box = box;
  auto& g = part.geometry;
  g = window_;
  g.od = box.extents[0];
  g.oh = box.extents[1];
  g.ow = box.extents[2];
  for (int d = 0; d < 3; ++d) g.inOffset[d] += box.lo[d] * g.s;
  part.rows = Index(geometry_.inputShape().batch) * g.od * g.oh;
  part.rowsPerChunk =
      Impl::rowsPerChunk(Impl::chunkBytes<M>(options_.workspaceBytes), sizeof(Compute),
                         g.cin * g.taps() + g.cout, g.ow, part.rows);
  // No samples here (a sub-grid of a layer grid holding none): no engine, no pass runs.
  if (holdsVendor() && geometry_.inputShape().batch > 0) {
    Impl::LocalConvProblem problem = wholeProblem;
    problem.outExtents = box.extents;
    problem.outOffset = box.lo;
    problem.inOffset = {g.inOffset[0], g.inOffset[1], g.inOffset[2]};
    problem.accumulateDx = accumulateDx;
    const ConvEngine vendor =
        anyPassRuns(ConvCandidate::OneDnn) ? ConvEngine::OneDnn : ConvEngine::Cudnn;
    part.vendor = Impl::createVendorConvolution<T, M>(vendor, problem);
  }
  return part;
}

template <class T, class M>
bool Conv3d<T, M>::direct(const tensor_type& outputLike) const {
  // 16-bit activations take the im2col route, whose copies convert to and from float.
  return pointwise_ && !isScalar16<T> && outputLike.ghosts().none();
}

template <class T, class M>
typename Conv3d<T, M>::SumView Conv3d<T, M>::dxSumView(const tensor_type& dx) const {
  const auto& v = dx.view();
  if (dxSum_.size() != v.span())
    fail(geometry_.name(), ": backward-data's float sum holds ", dxSum_.size(),
         " cells, the input gradient ", v.span());
  return SumView(dxSum_.data(), v.extent(0), v.extent(1), v.extent(2), v.extent(3), v.extent(4));
}

template <class T, class M>
typename Conv3d<T, M>::Matrix Conv3d<T, M>::weightMatrix() const {
  return Matrix(weight_.value.data(), window_.cout, window_.cin * window_.taps());
}
template <class T, class M>
typename Conv3d<T, M>::Matrix Conv3d<T, M>::weightGradMatrix() const {
  return Matrix(weight_.grad.data(), window_.cout, window_.cin * window_.taps());
}
template <class T, class M>
typename Conv3d<T, M>::Vector Conv3d<T, M>::biasVector() const {
  return options_.bias ? Vector(bias_.value.data(), window_.cout) : Vector();
}
template <class T, class M>
typename Conv3d<T, M>::Vector Conv3d<T, M>::biasGradVector() const {
  return Vector(bias_.grad.data(), window_.cout);
}

// Note on ordering: the products run on `exec` where Kokkos-Kernels takes an instance (4.1 and
// later), otherwise on the default instance, as our kernels do when `exec` is that instance
// (the only one Kokkos 3.4 Serial has); engines/impl/InstanceBlas.hpp.

template <class T, class M>
void Conv3d<T, M>::forwardPart(const execution_space& exec, const tensor_type& x,
                               const tensor_type& y, const Part& part) {
  const auto& g = part.geometry;
  const Index3 ghosts = Impl::lowGhosts(y.ghosts());
  const Index3 off{ghosts[0] + part.box.lo[0], ghosts[1] + part.box.lo[1],
                   ghosts[2] + part.box.lo[2]};
  if (pass_[int(ConvPass::Forward)] == ConvCandidate::Direct) {
    if constexpr (Impl::directConvHostTypes<T, M>)
      Impl::convForwardHost(
          exec, {Impl::directConvOperands(x.view(), y.view(), off, g), weight_.value.data(),
                 options_.bias ? bias_.value.data() : nullptr});
    return;
  }
  if (vendorRuns(ConvPass::Forward)) {
    part.vendor->forward(exec, x, weight_.value, bias_.value, y);
    return;
  }
  const Index K = g.cin * g.taps();
  const auto W = weightMatrix();
  for (Index r0 = 0; r0 < part.rows; r0 += part.rowsPerChunk) {
    const Index nr = std::min(part.rowsPerChunk, part.rows - r0), cols = nr * g.ow;
    Matrix col(col_.data(), K, cols), out(out_.data(), g.cout, cols);
    Impl::im2col(exec, x.view(), col, g, r0, nr);
    Impl::gemm(exec, "N", "N", Compute(1), W, col, Compute(0), out);
    Impl::chunkToTensor("hybrid3d::Conv3d::forward", exec, out, y.view(), off, g, r0, nr,
                        biasVector());
    if (halo_) halo_->progress();  // an exchange in flight moves on between chunks
  }
}

template <class T, class M>
void Conv3d<T, M>::backwardDataPart(const execution_space& exec, const tensor_type& dy,
                                    const tensor_type& dx, const Part& part) {
  if (vendorRuns(ConvPass::BackwardData)) {
    part.vendor->backwardData(exec, weight_.value, dy, dx);
    return;
  }
  const auto& g = part.geometry;
  const Index K = g.cin * g.taps();
  const auto W = weightMatrix();
  const Index3 ghosts = Impl::lowGhosts(dy.ghosts());
  const Index3 off{ghosts[0] + part.box.lo[0], ghosts[1] + part.box.lo[1],
                   ghosts[2] + part.box.lo[2]};
  for (Index r0 = 0; r0 < part.rows; r0 += part.rowsPerChunk) {
    const Index nr = std::min(part.rowsPerChunk, part.rows - r0), cols = nr * g.ow;
    Matrix dcol(col_.data(), K, cols), dyc(out_.data(), g.cout, cols);
    Impl::tensorToChunk("hybrid3d::Conv3d::backwardData::pack", exec, dy.view(), off, dyc, g, r0,
                        nr);
    Impl::gemm(exec, "T", "N", Compute(1), W, dyc, Compute(0), dcol);
    if constexpr (isScalar16<T>)
      Impl::col2imAdd(exec, dcol, dxSumView(dx), g, r0, nr);
    else
      Impl::col2imAdd(exec, dcol, dx.view(), g, r0, nr);
    if (halo_) halo_->progress();
  }
}

template <class T, class M>
void Conv3d<T, M>::forward(const execution_space& exec, const tensor_type& x,
                           const tensor_type& y) {
  geometry_.checkInput(x, "input");
  geometry_.checkOutput(y, "output");
  if (x.batch() == 0) return;  // no samples on this rank (a layer grid's idle sub-grid)
  const ProfilingRegion region(geometry_.region(Pass::Forward));
  const bool gather = halo_ && !inputGhostsFilled_;
  // A replay from a kept input takes the path the first forward took, without the exchange: the
  // same parts give the same bits.
  const bool exchange = gather && forwardPass_ != ForwardPass::RecomputeKeptInput;
  if (gather && overlaps()) {
    if (exchange) halo_->gatherBegin(exec, x);
    {
      const ProfilingRegion interior(*forwardInteriorRegion_);
      forwardPart(exec, x, y, interior_.front());
    }
    if (exchange) halo_->gatherEnd(exec, x);
    const ProfilingRegion shell(*forwardShellRegion_);
    for (const Part& part : shell_) forwardPart(exec, x, y, part);
  } else {
    if (exchange) halo_->gather(exec, x);
    forwardLocal(exec, x, y);
  }
}

template <class T, class M>
void Conv3d<T, M>::forwardLocal(const execution_space& exec, const tensor_type& x,
                                const tensor_type& y) {
  const auto& g = window_;
  const Index V = g.od * g.oh * g.ow;
  if (pass_[int(ConvPass::Forward)] == ConvCandidate::Kokkos && direct(y)) {
    // 1^3 kernel: x(n) is already the [Cin, V] column matrix and y(n) the [Cout, V] result.
    if constexpr (!isScalar16<T>) {  // (direct() is false for 16-bit T)
      const auto W = weightMatrix();
      for (int n = 0; n < x.batch() && V > 0; ++n) {
        Matrix xn(x.view().data() + n * g.cin * V, g.cin, V);
        Matrix yn(y.view().data() + n * g.cout * V, g.cout, V);
        Impl::gemm(exec, "N", "N", Compute(1), W, xn, Compute(0), yn);
        if (options_.bias)
          Impl::chunkToTensor("hybrid3d::Conv3d::forward::bias", exec, yn, y.view(),
                              Index3{0, 0, 0}, g, Index(n) * g.od * g.oh, g.od * g.oh,
                              biasVector());
      }
    }
  } else {
    forwardPart(exec, x, y, whole_);
  }
}

template <class T, class M>
void Conv3d<T, M>::backwardData(const execution_space& exec, const tensor_type& dy,
                                const tensor_type& dx) {
  geometry_.checkOutput(dy, "output gradient");
  geometry_.checkInput(dx, "input gradient");
  if (dy.batch() == 0) return;
  const ProfilingRegion region(geometry_.region(Pass::BackwardData));
  if (overlaps()) {
    // Only the shell reaches dx's ghost cells: once it is summed, they travel to their owners
    // while the interior adds into owned cells. Every part adds, so dx starts at zero.
    Impl::zeroFill(exec, dx.view());
    {
      const ProfilingRegion shell(*backwardDataShellRegion_);
      for (const Part& part : shell_) backwardDataPart(exec, dy, dx, part);
    }
    halo_->scatterAddBegin(exec, dx);
    {
      const ProfilingRegion interior(*backwardDataInteriorRegion_);
      backwardDataPart(exec, dy, dx, interior_.front());
    }
    halo_->scatterAddEnd(exec, dx);
  } else {
    backwardDataLocal(exec, dy, dx);
    // Ghost cells hold contributions to voxels other ranks own (or to the zero padding). (The
    // 1^3 path has no ghosts, hence no halo.)
    if (halo_) halo_->scatterAdd(exec, dx);
  }
}

template <class T, class M>
void Conv3d<T, M>::backwardDataLocal(const execution_space& exec, const tensor_type& dy,
                                     const tensor_type& dx) {
  const auto& g = window_;
  const Index V = g.od * g.oh * g.ow;
  if (vendorRuns(ConvPass::BackwardData)) {
    whole_.vendor->backwardData(exec, weight_.value, dy, dx);
  } else if (direct(dy)) {
    if constexpr (!isScalar16<T>) {
      const auto W = weightMatrix();
      for (int n = 0; n < dy.batch() && V > 0; ++n) {
        Matrix dyn(dy.view().data() + n * g.cout * V, g.cout, V);
        Matrix dxn(dx.view().data() + n * g.cin * V, g.cin, V);
        Impl::gemm(exec, "T", "N", Compute(1), W, dyn, Compute(0), dxn);
      }
    }
  } else if constexpr (isScalar16<T>) {
    // col2im adds chunk by chunk into a float copy of the whole ghosted array, ghosts
    // included; each cell of dx is then rounded once.
    Impl::zeroFill(exec, dxSum_);
    backwardDataPart(exec, dy, dx, whole_);
    Impl::roundInto("hybrid3d::Conv3d::backwardData::round", exec, dxSum_, dx.view());
  } else {
    // col2im adds chunk by chunk into the whole ghosted array, ghosts included.
    Impl::zeroFill(exec, dx.view());
    backwardDataPart(exec, dy, dx, whole_);
  }
}

template <class T, class M>
void Conv3d<T, M>::backwardWeights(const execution_space& exec, const tensor_type& x,
                                   const tensor_type& dy) {
  geometry_.checkInput(x, "input");
  geometry_.checkOutput(dy, "output gradient");
  if (x.batch() == 0) return;
  const ProfilingRegion region(geometry_.region(Pass::BackwardWeights));
  backwardWeightsLocal(exec, x, dy);
}

template <class T, class M>
void Conv3d<T, M>::backwardWeightsLocal(const execution_space& exec, const tensor_type& x,
                                        const tensor_type& dy) {
  const auto& g = window_;
  const Index K = g.cin * g.taps(), V = g.od * g.oh * g.ow;
  const auto dW = weightGradMatrix();
  const ConvCandidate how = pass_[int(ConvPass::BackwardWeights)];
  if (how == ConvCandidate::Direct) {
    if constexpr (Impl::directConvHostTypes<T, M>)
      Impl::convWeightsHost(
          exec, {Impl::directConvOperands(x.view(), dy.view(), Impl::lowGhosts(dy.ghosts()), g),
                 weight_.grad.data(), options_.bias ? bias_.grad.data() : nullptr});
  } else if (how == ConvCandidate::OneDnn || how == ConvCandidate::Cudnn) {
    whole_.vendor->backwardWeights(exec, x, dy, weight_.grad, bias_.grad);
  } else if (direct(dy)) {
    if constexpr (!isScalar16<T>) {
      for (int n = 0; n < x.batch() && V > 0; ++n) {
        Matrix xn(x.view().data() + n * g.cin * V, g.cin, V);
        Matrix dyn(dy.view().data() + n * g.cout * V, g.cout, V);
        Impl::gemm(exec, "N", "T", Compute(1), dyn, xn, Compute(1), dW);
        if (options_.bias)
          Impl::gemv(exec, "N", Compute(1), dyn, Vector(ones_.data(), V), Compute(1),
                     biasGradVector());
      }
    }
  } else {
    const Index rows = whole_.rows, rowsPerChunk = whole_.rowsPerChunk;
    for (Index r0 = 0; r0 < rows; r0 += rowsPerChunk) {
      const Index nr = std::min(rowsPerChunk, rows - r0), cols = nr * g.ow;
      Matrix col(col_.data(), K, cols), dyc(out_.data(), g.cout, cols);
      Impl::im2col(exec, x.view(), col, g, r0, nr);
      Impl::tensorToChunk("hybrid3d::Conv3d::backwardWeights::pack", exec, dy.view(),
                          Impl::lowGhosts(dy.ghosts()), dyc, g, r0, nr);
      Impl::gemm(exec, "N", "T", Compute(1), dyc, col, Compute(1), dW);
      if (options_.bias)
        Impl::gemv(exec, "N", Compute(1), dyc, Vector(ones_.data(), cols), Compute(1),
                   biasGradVector());
    }
  }
}

template <class T, class M>
std::vector<Parameter<ParamOf<T>, M>> Conv3d<T, M>::parameters() const {
  std::vector<Parameter<ParamOf<T>, M>> p{weight_};
  if (options_.bias) p.push_back(bias_);
  return p;
}

}  // namespace hybrid3d
