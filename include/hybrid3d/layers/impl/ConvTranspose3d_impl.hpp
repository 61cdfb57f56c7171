#pragma once
// Definitions of ConvTranspose3d (declared in layers/ConvTranspose3d.hpp); instantiated for
// float, double and the 16-bit activation types in src/layers/ConvTranspose3d.cpp.

#include <hybrid3d/core/Error.hpp>
#include <hybrid3d/core/ProfilingRegion.hpp>
#include <hybrid3d/engines/HostBlas.hpp>
#include <hybrid3d/kernels/Elementwise.hpp>
#include <hybrid3d/engines/impl/InstanceBlas.hpp>

namespace hybrid3d {

template <class T, class M>
ConvTranspose3d<T, M>::ConvTranspose3d(const LayerGrid& grid, const std::string& name,
                                       const TensorShape& input, const Options& options)
    : options_(options) {
  hostBlasThreadsFollowKokkos();
  const int k = options.kernel;
  const std::string where = Impl::concat("input ", input.batch, "x", input.channels, "x",
                                         toString(input.extents), ", grid ", toString(grid.dims()));
  if (k < 1 || options.stride != k || options.padding != 0)
    fail(name, ": only kernel == stride >= 1 with padding 0 is supported (got kernel ", k,
         ", stride ", options.stride, ", padding ", options.padding, "); ", where);
  if (options.outChannels < 1 || input.channels < 1 || input.batch < 0)
    fail(name, ": channels (in ", input.channels, ", out ", options.outChannels,
         ") must be positive and the batch not negative; ", where);
  for (int d = 0; d < 3; ++d)
    if (input.extents[d] < 1)
      fail(name, ": input extent ", input.extents[d], " along ", "DHW"[d], " must be positive; ",
           where);

  Index3 outExtents;
  for (int d = 0; d < 3; ++d) outExtents[d] = transposedOutputExtent(input.extents[d], k, k, 0);
  geometry_ = SpatialGeometry::withGhostRule(
      LayerNaming::bare("ConvTranspose3d", name), grid.dims(), grid.coords(), input,
      {input.batch, options.outChannels, outExtents},
      [&](const BlockDecomposition& in, const BlockDecomposition& out) {
        return requiredGhosts(
            in, out, [k](int, Index a, Index b) { return transposedInputRange(a, b, k, k, 0); },
            name);
      });
  const TensorLayout inLayout = geometry_.inputLayout();
  const GhostWidths& ghosts = geometry_.ghosts();

  // The input range R this rank's owned outputs read, as rows (n, rd, rh) of RW voxels.
  const Box3& inOwned = geometry_.inputOwned();
  const Box3& outOwned = geometry_.outputOwned();
  auto& b = blocks_;
  b.k = k;
  b.cout = options.outChannels;
  Index3 extent{0, 0, 0};
  if (!outOwned.empty()) {
    for (int d = 0; d < 3; ++d) {
      const IndexRange r = transposedInputRange(outOwned.lo[d], outOwned.hi[d], k, k, 0);
      extent[d] = r.last - r.first;
      b.inLo[d] = r.first;
      b.outLo[d] = outOwned.lo[d];
      b.outHi[d] = outOwned.hi[d];
      rangeOffset_[d] = r.first - inOwned.lo[d] + ghosts.lo[d];
    }
  }
  b.rd = extent[0];
  b.rh = extent[1];
  b.rw = extent[2];
  range_.od = extent[0];
  range_.oh = extent[1];
  range_.ow = extent[2];

  const Index cin = input.channels, blockRows = Index(options.outChannels) * k * k * k;
  rows_ = Index(input.batch) * extent[0] * extent[1];
  rowsPerChunk_ = Impl::rowsPerChunk(Impl::chunkBytes<M>(options.workspaceBytes), sizeof(Compute),
                                     cin + blockRows, extent[2], rows_);
  const Index columns = rowsPerChunk_ * extent[2];
  in_ = Kokkos::View<Compute*, M>(geometry_.viewLabel("columns"), cin * columns);
  blockBuf_ = Kokkos::View<Compute*, M>(geometry_.viewLabel("blocks"), blockRows * columns);
  ones_ = Kokkos::View<Compute*, M>(geometry_.viewLabel("ones"), columns);
  Kokkos::deep_copy(ones_, Compute(1));
  if (options.bias) perTap_ = Kokkos::View<Compute*, M>(geometry_.viewLabel("perTap"), blockRows);

  weight_ = createParameter<ParamOf<T>, M>(name, "weight", {cin, options.outChannels, k, k, k});
  if (options.bias) bias_ = createParameter<ParamOf<T>, M>(name, "bias", {options.outChannels});

  // Collective: every rank builds the halo when any rank has ghosts.
  if (!geometry_.inputGhosts().none()) halo_ = createHalo<T, M>(grid, inLayout, name);
}

template <class T, class M>
typename ConvTranspose3d<T, M>::Matrix ConvTranspose3d<T, M>::weightMatrix(bool grad) const {
  const Index k = blocks_.k;
  return Matrix(grad ? weight_.grad.data() : weight_.value.data(), geometry_.inputShape().channels,
                blocks_.cout * k * k * k);
}

template <class T, class M>
void ConvTranspose3d<T, M>::forward(const execution_space& exec, const tensor_type& x,
                                    const tensor_type& y) {
  geometry_.checkInput(x, "input");
  geometry_.checkOutput(y, "output");
  if (x.batch() == 0) return;  // no samples on this rank (a layer grid's idle sub-grid)
  const ProfilingRegion region(geometry_.region(Pass::Forward));
  if (halo_ && forwardPass_ != ForwardPass::RecomputeKeptInput) halo_->gather(exec, x);
  const Index cin = geometry_.inputShape().channels, k = blocks_.k,
              blockRows = blocks_.cout * k * k * k;
  const auto W = weightMatrix(false);
  const Vector bias = options_.bias ? Vector(bias_.value.data(), blocks_.cout) : Vector();
  for (Index r0 = 0; r0 < rows_; r0 += rowsPerChunk_) {
    const Index nr = std::min(rowsPerChunk_, rows_ - r0), cols = nr * blocks_.rw;
    Matrix xc(in_.data(), cin, cols), yb(blockBuf_.data(), blockRows, cols);
    Impl::tensorToChunk("hybrid3d::ConvTranspose3d::forward::pack", exec, x.view(), rangeOffset_,
                        xc, range_, r0, nr);
    Impl::gemm(exec, "T", "N", Compute(1), W, xc, Compute(0), yb);
    Impl::blocksToTensor(exec, yb, y.view(), Impl::lowGhosts(y.ghosts()), blocks_, r0, nr, bias);
  }
}

template <class T, class M>
void ConvTranspose3d<T, M>::backwardData(const execution_space& exec, const tensor_type& dy,
                                         const tensor_type& dx) {
  geometry_.checkOutput(dy, "output gradient");
  geometry_.checkInput(dx, "input gradient");
  if (dy.batch() == 0) return;
  const ProfilingRegion region(geometry_.region(Pass::BackwardData));
  const Index cin = geometry_.inputShape().channels, k = blocks_.k,
              blockRows = blocks_.cout * k * k * k;
  const auto W = weightMatrix(false);
  // Owned voxels outside R get no local contribution; ghosts get the parts other ranks own.
  Impl::zeroFill(exec, dx.view());
  for (Index r0 = 0; r0 < rows_; r0 += rowsPerChunk_) {
    const Index nr = std::min(rowsPerChunk_, rows_ - r0), cols = nr * blocks_.rw;
    Matrix dxc(in_.data(), cin, cols), dyb(blockBuf_.data(), blockRows, cols);
    Impl::tensorToBlocks("hybrid3d::ConvTranspose3d::backwardData::pack", exec, dy.view(),
                         Impl::lowGhosts(dy.ghosts()), dyb, blocks_, r0, nr);
    Impl::gemm(exec, "N", "N", Compute(1), W, dyb, Compute(0), dxc);
    Impl::chunkToTensor("hybrid3d::ConvTranspose3d::backwardData", exec, dxc, dx.view(),
                        rangeOffset_, range_, r0, nr, Vector());
  }
  if (halo_) halo_->scatterAdd(exec, dx);
}

template <class T, class M>
void ConvTranspose3d<T, M>::backwardWeights(const execution_space& exec, const tensor_type& x,
                                            const tensor_type& dy) {
  geometry_.checkInput(x, "input");
  geometry_.checkOutput(dy, "output gradient");
  if (x.batch() == 0) return;
  const ProfilingRegion region(geometry_.region(Pass::BackwardWeights));
  const Index cin = geometry_.inputShape().channels, k = blocks_.k,
              blockRows = blocks_.cout * k * k * k;
  const auto dW = weightMatrix(true);
  if (options_.bias) Impl::zeroFill(exec, perTap_);
  for (Index r0 = 0; r0 < rows_; r0 += rowsPerChunk_) {
    const Index nr = std::min(rowsPerChunk_, rows_ - r0), cols = nr * blocks_.rw;
    Matrix xc(in_.data(), cin, cols), dyb(blockBuf_.data(), blockRows, cols);
    Impl::tensorToChunk("hybrid3d::ConvTranspose3d::backwardWeights::pack", exec, x.view(),
                        rangeOffset_, xc, range_, r0, nr);
    Impl::tensorToBlocks("hybrid3d::ConvTranspose3d::backwardWeights::packGrad", exec, dy.view(),
                         Impl::lowGhosts(dy.ghosts()), dyb, blocks_, r0, nr);
    Impl::gemm(exec, "N", "T", Compute(1), xc, dyb, Compute(1), dW);
    if (options_.bias)
      Impl::gemv(exec, "N", Compute(1), dyb, Vector(ones_.data(), cols), Compute(1),
                 Vector(perTap_.data(), blockRows));
  }
  if (options_.bias)
    Impl::foldTaps(exec, Vector(perTap_.data(), blockRows), Vector(bias_.grad.data(), blocks_.cout),
                   k * k * k);
}

template <class T, class M>
std::vector<Parameter<ParamOf<T>, M>> ConvTranspose3d<T, M>::parameters() const {
  std::vector<Parameter<ParamOf<T>, M>> p{weight_};
  if (options_.bias) p.push_back(bias_);
  return p;
}

}  // namespace hybrid3d
