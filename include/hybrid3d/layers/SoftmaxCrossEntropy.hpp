#pragma once
/// \file
/// Softmax cross-entropy over voxels (segmentation): logits [N, C, D, H, W] as a DistTensor,
/// integer class labels as a DistTensor<int> [N, 1, D, H, W] on the same decomposition (any
/// ghosts on either; the sample reader's segmentation volume). The loss is the mean over all
/// N*G*D*H*W voxels of the global mini-batch, as PyTorch's CrossEntropyLoss; each rank sums its
/// owned voxels and the sum is reduced over grid.worldComm(). Per voxel it uses the log-sum-exp
/// with the channel maximum subtracted, so large logits do not overflow.
///
/// NaN: the returned loss is the same on every rank of the world and NaN/Inf if any voxel's
/// term is, so `std::isfinite(loss)` is a test every rank answers alike. A label outside
/// [0, C) throws hybrid3d::Error on every rank (the count of bad labels is reduced too).

#include <string>

#include <Kokkos_Core.hpp>

#include <hybrid3d/core/Devices.hpp>
#include <hybrid3d/comm/Allreduce.hpp>
#include <hybrid3d/core/OwnedComm.hpp>
#include <hybrid3d/core/ProfilingRegion.hpp>
#include <hybrid3d/core/Error.hpp>
#include <hybrid3d/core/KernelLabel.hpp>
#include <hybrid3d/core/Math.hpp>
#include <hybrid3d/grid/DistTensor.hpp>
#include <hybrid3d/grid/LayerGrid.hpp>
#include <hybrid3d/grid/TensorShape.hpp>
#include <hybrid3d/layers/LayerConvention.hpp>
#include <hybrid3d/layers/Parameter.hpp>
#include <hybrid3d/layers/impl/DenseKernels.hpp>
#include <hybrid3d/kernels/Elementwise.hpp>

namespace hybrid3d {

template <class T, class MemorySpace = DefaultMemorySpace>
class SoftmaxCrossEntropy {
public:
  HYBRID3D_LAYER_TYPES(T, MemorySpace);
  using label_type = DistTensor<int, MemorySpace>;

  /// `logits` is the per-group shape. Collective over grid.worldComm().
  SoftmaxCrossEntropy(const LayerGrid& grid, const std::string& name, const TensorShape& logits);

  const std::string& name() const { return name_; }
  const TensorShape& inputShape() const { return shape_; }
  const BlockDecomposition& inputDecomposition() const { return decomposition_; }
  GhostMap inputGhosts() const { return {}; }

  /// The global mean loss (collective over the world).
  double forward(const execution_space& exec, const tensor_type& logits,
                 const label_type& labels) const {
    return evaluate(exec, logits, labels, nullptr);
  }
  /// The global mean loss, and dlogits owned cells := dL/dlogits = (softmax - onehot) / count,
  /// in one pass (collective over the world). dlogits may be logits itself.
  /// gradientScale multiplies dlogits, not the loss (half's loss scaling, train/LossScale.hpp).
  double forwardBackward(const execution_space& exec, const tensor_type& logits,
                         const label_type& labels, const tensor_type& dlogits,
                         double gradientScale = 1.0) const {
    return evaluate(exec, logits, labels, &dlogits, gradientScale);
  }

  /// The kernel behind both. Public only because CUDA forbids device lambdas in private members.
  double evaluate(const execution_space& exec, const tensor_type& logits, const label_type& labels,
                  const tensor_type* dlogits, double gradientScale = 1.0) const;

private:
  std::string name_;
  TensorShape shape_;
  BlockDecomposition decomposition_;
  double count_ = 1;  // N * G * D * H * W
  OwnedComm world_;
  Kokkos::View<int, MemorySpace> badLabels_;
};

template <class T, class M>
SoftmaxCrossEntropy<T, M>::SoftmaxCrossEntropy(const LayerGrid& grid, const std::string& name,
                                               const TensorShape& logits)
    : name_(name),
      shape_(logits),
      decomposition_(logits.extents, grid.dims()),
      world_(grid.worldComm()),
      badLabels_(Impl::viewLabel(name + "/bad labels")) {
  const Index3& e = logits.extents;
  if (logits.batch < 0 || logits.channels <= 0 || e[0] * e[1] * e[2] <= 0)
    fail(name, ": SoftmaxCrossEntropy needs a batch >= 0, positive classes and extents (got ",
         logits.batch, "x", logits.channels, "x", toString(e), ")");
  // Every voxel of every sample once, wherever the layout puts them.
  const Box3 owned = decomposition_.ownedBox(grid.coords());
  count_ =
      sumOverRanks(double(logits.batch) * double(grid.active() ? owned.size() : 0), world_.get());
  if (count_ <= 0) fail(name, ": SoftmaxCrossEntropy over a mini-batch without voxels");
}

template <class T, class M>
double SoftmaxCrossEntropy<T, M>::evaluate(const execution_space& exec, const tensor_type& logits,
                                           const label_type& labels, const tensor_type* dlogits,
                                           double gradientScale) const {
  auto check = [&](const auto& t, int channels, const char* what) {
    if (t.batch() != shape_.batch || t.channels() != channels ||
        !(t.decomposition() == decomposition_))
      fail(name_, ": SoftmaxCrossEntropy ", what, " is ", t.batch(), "x", t.channels(), "x",
           toString(t.globalExtents()), " on grid ", toString(t.decomposition().dims()),
           ", expected ", shape_.batch, "x", channels, "x", toString(shape_.extents), " on grid ",
           toString(decomposition_.dims()));
  };
  check(logits, shape_.channels, "logits");
  check(labels, 1, "labels");
  if (dlogits) check(*dlogits, shape_.channels, "dlogits");

  const Impl::OwnedRows voxels(logits.batch(), 1, logits.owned().extents());
  const auto ox = Impl::ghostOffset(logits), ol = Impl::ghostOffset(labels);
  const auto x = logits.view();
  const auto lab = labels.view();
  const bool writeGradient = dlogits != nullptr;
  const auto g = writeGradient ? dlogits->view() : typename tensor_type::view_type();
  const auto og = writeGradient ? Impl::ghostOffset(*dlogits) : Impl::GhostOffset{};
  const int C = shape_.channels;
  using Real = ComputeOf<T>;  // float for the 16-bit types: softmax in float, dlogits rounded once
  const Real invCount = Real(gradientScale / count_);  // the loss itself sums unscaled
  const auto bad = badLabels_;
  Impl::zeroFill(exec, bad);
  const double sum = Impl::sumOverRowCells(
      "hybrid3d::SoftmaxCrossEntropy::evaluate", exec, voxels,
      KOKKOS_LAMBDA(const Index n, Index, const Index z, const Index y, const Index w, double& s) {
        const Index d = ox.d + z, h = ox.h + y, ww = ox.w + w;
        const int label = lab(n, 0, ol.d + z, ol.h + y, ol.w + w);
        const bool valid = label >= 0 && label < C;
        if (!valid) Kokkos::atomic_add(&bad(), 1);
        Real m = Real(x(n, 0, d, h, ww));
        for (int c = 1; c < C; ++c) {
          const Real v = Real(x(n, c, d, h, ww));
          m = v > m ? v : m;
        }
        Real sumExp = 0;
        for (int c = 0; c < C; ++c) sumExp += math::exp(Real(x(n, c, d, h, ww)) - m);
        const Real lse = m + math::log(sumExp);
        if (valid) s += double(lse - Real(x(n, label, d, h, ww)));
        if (writeGradient) {
          const Real inv = Real(1) / sumExp;
          for (int c = 0; c < C; ++c) {
            const Real p = math::exp(Real(x(n, c, d, h, ww)) - m) * inv;
            g(n, c, og.d + z, og.h + y, og.w + w) =
                valid ? T((p - (c == label ? Real(1) : Real(0))) * invCount) : T(0);
          }
        }
      });
  int badCount = 0;
  Kokkos::deep_copy(exec, badCount, bad);
  exec.fence();
  double totals[2] = {sum, double(badCount)};
  {
    const ProfilingRegion region(Impl::kernelLabel("hybrid3d::SoftmaxCrossEntropy::allreduce"));
    MPI_Allreduce(MPI_IN_PLACE, totals, 2, MPI_DOUBLE, MPI_SUM, world_.get());
  }
  if (totals[1] > 0)
    fail(name_, ": SoftmaxCrossEntropy found ", Index(totals[1]), " labels outside [0, ", C,
         ") in the mini-batch");
  return totals[0] / count_;
}

#define HYBRID3D_EXTERN(T, D) extern template class SoftmaxCrossEntropy<T, D>;
HYBRID3D_FOR_EACH_SCALAR_AND_DEVICE(HYBRID3D_EXTERN)
HYBRID3D_FOR_EACH_SCALAR16_AND_DEVICE(HYBRID3D_EXTERN)
#undef HYBRID3D_EXTERN

}  // namespace hybrid3d
