#pragma once
// Definitions of Conv3d (declared in layers/Conv3d.hpp); instantiated for float and double in
// src/layers/Conv3d.cpp.

#include <KokkosBlas2_gemv.hpp>
#include <KokkosBlas3_gemm.hpp>

#include <hybrid3d/core/Error.hpp>
#include <hybrid3d/layers/HostBlas.hpp>
#include <hybrid3d/layers/impl/CudnnConvolution.hpp>
#include <hybrid3d/layers/impl/OneDnnConvolution.hpp>

namespace hybrid3d {

namespace Impl {
// The vendor engine `engine` (already resolved for T and M) for one rank's problem.
template <class T, class M>
std::unique_ptr<LocalConvolution<T, M>> createVendorConvolution(ConvEngine engine,
                                                                const LocalConvProblem& problem) {
#if HYBRID3D_ENABLE_ONEDNN
  if constexpr (oneDnnCanRun<T, M>())
    if (engine == ConvEngine::OneDnn) return std::make_unique<OneDnnConvolution>(problem);
#endif
#if HYBRID3D_ENABLE_CUDNN
  if constexpr (cudnnCanRun<T, M>())
    if (engine == ConvEngine::Cudnn) return std::make_unique<CudnnConvolution<T>>(problem);
#endif
  fail(problem.layer, ": convolution engine ", toString(engine), " cannot run this layer");
}
}  // namespace Impl

template <class T, class M>
Conv3d<T, M>::Conv3d(const ProcessGrid& grid, const std::string& name, const TensorShape& input,
                     const Options& options)
    : name_(name),
      forwardRegion_("hybrid3d::Conv3d::forward " + name),
      backwardDataRegion_("hybrid3d::Conv3d::backwardData " + name),
      backwardWeightsRegion_("hybrid3d::Conv3d::backwardWeights " + name),
      options_(options),
      inShape_(input) {
  hostBlasThreadsFollowKokkos();
  const int k = options.kernel, s = options.stride, p = options.padding;
  const std::string where =
      Impl::concat("input ", input.batch, "x", input.channels, "x", toString(input.extents),
                   ", grid ", toString(grid.dims()));
  if (k < 1 || k % 2 == 0)
    fail(name, ": kernel ", k, " must be odd and positive (1, 3, 5, ...); ", where);
  if (s < 1) fail(name, ": stride ", s, " must be positive; ", where);
  if (p < 0) fail(name, ": padding ", p, " must not be negative; ", where);
  if (options.outChannels < 1 || input.channels < 1 || input.batch < 1)
    fail(name, ": channels (in ", input.channels, ", out ", options.outChannels,
         ") and batch must be positive; ", where);
  for (int d = 0; d < 3; ++d)
    if (input.extents[d] < 1 || input.extents[d] + 2 * p < k)
      fail(name, ": kernel ", k, " does not fit input extent ", input.extents[d], " along ",
           "DHW"[d], " with padding ", p, "; ", where);

  const Window window = Window::cubic(k, s, p);
  outShape_ = {input.batch, options.outChannels, windowOutputExtents(input.extents, window)};
  inDec_ = BlockDecomposition(input.extents, grid.dims());
  outDec_ = BlockDecomposition(outShape_.extents, grid.dims());
  ghosts_ = windowGhosts(inDec_, outDec_, window, name);
  inOwned_ = inDec_.ownedBox(grid.coords());
  outOwned_ = outDec_.ownedBox(grid.coords());

  auto& g = geometry_;
  g.k = k;
  g.s = s;
  g.cin = input.channels;
  g.cout = options.outChannels;
  g.od = outOwned_.extent(0);
  g.oh = outOwned_.extent(1);
  g.ow = outOwned_.extent(2);
  if (!outOwned_.empty())
    for (int d = 0; d < 3; ++d)
      g.inOffset[d] = outOwned_.lo[d] * s - p - inOwned_.lo[d] + ghosts_.lo[d];
  pointwise_ = k == 1 && s == 1 && p == 0;

  const Index K = g.cin * g.taps();
  rows_ = Index(input.batch) * g.od * g.oh;
  rowsPerChunk_ = Impl::rowsPerChunk(Impl::chunkBytes<M>(options.workspaceBytes), sizeof(T),
                                     K + g.cout, g.ow, rows_);
  engine_ = resolveConvEngine<T, M>(options.engine, name, g.od * g.oh * g.ow);
  if (engine_ == ConvEngine::Kokkos) {
    const Index columns = rowsPerChunk_ * g.ow;
    col_ = Kokkos::View<T*, M>(name + "/im2col", K * columns);
    out_ = Kokkos::View<T*, M>(name + "/chunk", g.cout * columns);
    // The 1^3 path sums the bias gradient over a whole sample's voxels at once.
    const Index onesLength = std::max(columns, pointwise_ ? g.od * g.oh * g.ow : Index(0));
    ones_ = Kokkos::View<T*, M>(name + "/ones", onesLength);
    Kokkos::deep_copy(ones_, T(1));
  } else {
    Impl::LocalConvProblem problem;
    problem.layer = name;
    problem.batch = input.batch;
    problem.cin = g.cin;
    problem.cout = g.cout;
    problem.kernel = k;
    problem.stride = s;
    problem.outExtents = {g.od, g.oh, g.ow};
    problem.inOffset = {g.inOffset[0], g.inOffset[1], g.inOffset[2]};
    problem.inLocalExtents =
        TensorLayout(input.batch, input.channels, inDec_, grid.coords(), ghosts_)
            .localBox()
            .extents();
    problem.bias = options.bias;
    vendor_ = Impl::createVendorConvolution<T, M>(engine_, problem);
  }

  weight_ = createParameter<T, M>(name, "weight", {g.cout, g.cin, k, k, k});
  if (options.bias) bias_ = createParameter<T, M>(name, "bias", {g.cout});

  if (!ghosts_.none())
    halo_ = createHalo<T, M>(
        grid, TensorLayout(input.batch, input.channels, inDec_, grid.coords(), ghosts_), name);
}

template <class T, class M>
void Conv3d<T, M>::checkTensor(const tensor_type& t, const char* what, const TensorShape& shape,
                               const BlockDecomposition& dec, const GhostWidths* ghosts) const {
  const bool ghostsOk = !ghosts || t.owned().empty() || t.ghosts() == *ghosts;
  if (t.batch() != shape.batch || t.channels() != shape.channels || !(t.decomposition() == dec) ||
      !ghostsOk)
    fail(name_, ": ", what, " tensor '", t.view().label(), "' is ", t.batch(), "x", t.channels(),
         "x", toString(t.globalExtents()), " on grid ", toString(t.decomposition().dims()),
         ghostsOk ? "" : " with other ghost widths than inputGhosts()", ", expected ", shape.batch,
         "x", shape.channels, "x", toString(shape.extents), " on grid ", toString(dec.dims()));
}

template <class T, class M>
std::string Conv3d<T, M>::engineDescription() const {
  return vendor_ ? vendor_->describe() : "kokkos (im2col + " + gemmDescription<M>() + ")";
}

template <class T, class M>
bool Conv3d<T, M>::direct(const tensor_type& outputLike) const {
  return pointwise_ && outputLike.ghosts().none();
}

template <class T, class M>
typename Conv3d<T, M>::Matrix Conv3d<T, M>::weightMatrix() const {
  return Matrix(weight_.value.data(), geometry_.cout, geometry_.cin * geometry_.taps());
}
template <class T, class M>
typename Conv3d<T, M>::Matrix Conv3d<T, M>::weightGradMatrix() const {
  return Matrix(weight_.grad.data(), geometry_.cout, geometry_.cin * geometry_.taps());
}
template <class T, class M>
typename Conv3d<T, M>::Vector Conv3d<T, M>::biasVector() const {
  return options_.bias ? Vector(bias_.value.data(), geometry_.cout) : Vector();
}
template <class T, class M>
typename Conv3d<T, M>::Vector Conv3d<T, M>::biasGradVector() const {
  return Vector(bias_.grad.data(), geometry_.cout);
}

// Note on ordering: KokkosBlas::gemm runs on the default execution space instance, as our
// kernels do when `exec` is that instance (the only one Kokkos 3.4 Serial has).

template <class T, class M>
void Conv3d<T, M>::forward(const execution_space& exec, const tensor_type& x,
                           const tensor_type& y) {
  checkTensor(x, "input", inShape_, inDec_, &ghosts_);
  checkTensor(y, "output", outShape_, outDec_, nullptr);
  Kokkos::Profiling::pushRegion(forwardRegion_);
  if (halo_ && !inputGhostsFilled_) halo_->gather(exec, x);
  const auto& g = geometry_;
  const Index K = g.cin * g.taps(), V = g.od * g.oh * g.ow;
  const auto W = weightMatrix();
  if (vendor_) {
    vendor_->forward(exec, x, weight_.value, bias_.value, y);
  } else if (direct(y)) {
    // 1^3 kernel: x(n) is already the [Cin, V] column matrix and y(n) the [Cout, V] result.
    for (int n = 0; n < inShape_.batch && V > 0; ++n) {
      Matrix xn(x.view().data() + n * g.cin * V, g.cin, V);
      Matrix yn(y.view().data() + n * g.cout * V, g.cout, V);
      KokkosBlas::gemm("N", "N", T(1), W, xn, T(0), yn);
      if (options_.bias)
        Impl::chunkToTensor("hybrid3d::Conv3d::forward::bias", exec, yn, y.view(),
                            Index3{0, 0, 0}, g, Index(n) * g.od * g.oh, g.od * g.oh,
                            biasVector());
    }
  } else {
    for (Index r0 = 0; r0 < rows_; r0 += rowsPerChunk_) {
      const Index nr = std::min(rowsPerChunk_, rows_ - r0), cols = nr * g.ow;
      Matrix col(col_.data(), K, cols), out(out_.data(), g.cout, cols);
      Impl::im2col(exec, x.view(), col, g, r0, nr);
      KokkosBlas::gemm("N", "N", T(1), W, col, T(0), out);
      Impl::chunkToTensor("hybrid3d::Conv3d::forward", exec, out, y.view(),
                          Impl::lowGhosts(y.ghosts()), g, r0, nr, biasVector());
    }
  }
  Kokkos::Profiling::popRegion();
}

template <class T, class M>
void Conv3d<T, M>::backwardData(const execution_space& exec, const tensor_type& dy,
                                const tensor_type& dx) {
  checkTensor(dy, "output gradient", outShape_, outDec_, nullptr);
  checkTensor(dx, "input gradient", inShape_, inDec_, &ghosts_);
  Kokkos::Profiling::pushRegion(backwardDataRegion_);
  const auto& g = geometry_;
  const Index K = g.cin * g.taps(), V = g.od * g.oh * g.ow;
  const auto W = weightMatrix();
  if (vendor_) {
    vendor_->backwardData(exec, weight_.value, dy, dx);
  } else if (direct(dy)) {
    for (int n = 0; n < inShape_.batch && V > 0; ++n) {
      Matrix dyn(dy.view().data() + n * g.cout * V, g.cout, V);
      Matrix dxn(dx.view().data() + n * g.cin * V, g.cin, V);
      KokkosBlas::gemm("T", "N", T(1), W, dyn, T(0), dxn);
    }
  } else {
    // col2im adds chunk by chunk into the whole ghosted array, ghosts included.
    Kokkos::deep_copy(exec, dx.view(), T(0));
    for (Index r0 = 0; r0 < rows_; r0 += rowsPerChunk_) {
      const Index nr = std::min(rowsPerChunk_, rows_ - r0), cols = nr * g.ow;
      Matrix dcol(col_.data(), K, cols), dyc(out_.data(), g.cout, cols);
      Impl::tensorToChunk("hybrid3d::Conv3d::backwardData::pack", exec, dy.view(),
                          Impl::lowGhosts(dy.ghosts()), dyc, g, r0, nr);
      KokkosBlas::gemm("T", "N", T(1), W, dyc, T(0), dcol);
      Impl::col2imAdd(exec, dcol, dx.view(), g, r0, nr);
    }
  }
  // Ghost cells hold contributions to voxels other ranks own (or to the zero padding). (The
  // 1^3 path has no ghosts, hence no halo.)
  if (halo_) halo_->scatterAdd(exec, dx);
  Kokkos::Profiling::popRegion();
}

template <class T, class M>
void Conv3d<T, M>::backwardWeights(const execution_space& exec, const tensor_type& x,
                                   const tensor_type& dy) {
  checkTensor(x, "input", inShape_, inDec_, &ghosts_);
  checkTensor(dy, "output gradient", outShape_, outDec_, nullptr);
  Kokkos::Profiling::pushRegion(backwardWeightsRegion_);
  const auto& g = geometry_;
  const Index K = g.cin * g.taps(), V = g.od * g.oh * g.ow;
  const auto dW = weightGradMatrix();
  if (vendor_) {
    vendor_->backwardWeights(exec, x, dy, weight_.grad, bias_.grad);
  } else if (direct(dy)) {
    for (int n = 0; n < inShape_.batch && V > 0; ++n) {
      Matrix xn(x.view().data() + n * g.cin * V, g.cin, V);
      Matrix dyn(dy.view().data() + n * g.cout * V, g.cout, V);
      KokkosBlas::gemm("N", "T", T(1), dyn, xn, T(1), dW);
      if (options_.bias)
        KokkosBlas::gemv("N", T(1), dyn, Vector(ones_.data(), V), T(1), biasGradVector());
    }
  } else {
    for (Index r0 = 0; r0 < rows_; r0 += rowsPerChunk_) {
      const Index nr = std::min(rowsPerChunk_, rows_ - r0), cols = nr * g.ow;
      Matrix col(col_.data(), K, cols), dyc(out_.data(), g.cout, cols);
      Impl::im2col(exec, x.view(), col, g, r0, nr);
      Impl::tensorToChunk("hybrid3d::Conv3d::backwardWeights::pack", exec, dy.view(),
                          Impl::lowGhosts(dy.ghosts()), dyc, g, r0, nr);
      KokkosBlas::gemm("N", "T", T(1), dyc, col, T(1), dW);
      if (options_.bias)
        KokkosBlas::gemv("N", T(1), dyc, Vector(ones_.data(), cols), T(1), biasGradVector());
    }
  }
  Kokkos::Profiling::popRegion();
}

template <class T, class M>
std::vector<Parameter<T, M>> Conv3d<T, M>::parameters() const {
  std::vector<Parameter<T, M>> p{weight_};
  if (options_.bias) p.push_back(bias_);
  return p;
}

}  // namespace hybrid3d
