// The segmentation task (Tasks.hpp): SoftmaxCrossEntropy over the model's output logits
// [N, K, D, H, W] and the samples' labels; validation counts, per class, the voxels predicted,
// labelled and both (Dice), the correct voxels and the summed cross-entropy, on the device.
// The reader gives each rank the labels of its box of the input's grid; where the output runs
// on another grid (grid/LayerGrid.hpp) they are moved there as the activations are.
#include <algorithm>
#include <vector>

#include <mpi.h>

#include <hybrid3d/comm/Redistribute.hpp>
#include <hybrid3d/core/Error.hpp>
#include <hybrid3d/core/KernelLabel.hpp>
#include <hybrid3d/core/Math.hpp>
#include <hybrid3d/layers/SoftmaxCrossEntropy.hpp>
#include <hybrid3d/kernels/Elementwise.hpp>
#include <hybrid3d/model/Tasks.hpp>

namespace hybrid3d {

// Kernels live in a named namespace: CUDA refuses device lambdas in functions of internal
// linkage (an unnamed namespace) and in private member functions.
namespace Impl {

// Per-class counts of a segmentation batch: intersection, predicted, labelled (K each), then
// correct voxels and voxels, over this rank's owned voxels of samples [0, real), into `counts`;
// returns their summed cross-entropy (the loss's per-voxel term, so partial batches weigh what
// they hold).
template <class T, class M>
double countSegmentation(const typename M::execution_space& exec, const DistTensor<T, M>& logits,
                         const DistTensor<int, M>& labels,
                         const Kokkos::View<long long*, M>& counts, int real) {
  const int K = logits.channels();
  Impl::zeroFill(exec, counts);  // not deep_copy, which allocates (see zeroFill)
  const Index3 e = logits.owned().extents();
  double crossEntropy = 0;
  if (logits.owned().empty() || real <= 0) return crossEntropy;
  const auto x = logits.view();
  const auto lab = labels.view();
  const Index g0 = logits.ghosts().lo[0], g1 = logits.ghosts().lo[1], g2 = logits.ghosts().lo[2];
  using Policy =
      Kokkos::MDRangePolicy<typename M::execution_space, Kokkos::Rank<4>, Kokkos::IndexType<Index>>;
  Kokkos::parallel_reduce(
      Impl::kernelLabel("hybrid3d::Segmentation::count"),
      Policy(exec, {0, 0, 0, 0}, {Index(real), e[0], e[1], e[2]}),
      KOKKOS_LAMBDA(const Index n, const Index d, const Index h, const Index w, double& ce) {
        using C = ComputeOf<T>;  // float for the 16-bit types
        int best = 0;
        for (int c = 1; c < K; ++c)
          if (C(x(n, c, g0 + d, g1 + h, g2 + w)) > C(x(n, best, g0 + d, g1 + h, g2 + w))) best = c;
        const C m = x(n, best, g0 + d, g1 + h, g2 + w);
        C sumExp = 0;
        for (int c = 0; c < K; ++c) sumExp += math::exp(C(x(n, c, g0 + d, g1 + h, g2 + w)) - m);
        const int l = lab(n, 0, d, h, w);
        if (l >= 0 && l < K) {
          ce += double(m + math::log(sumExp) - C(x(n, l, g0 + d, g1 + h, g2 + w)));
          Kokkos::atomic_add(&counts(2 * K + l), 1LL);
          if (l == best) {
            Kokkos::atomic_add(&counts(l), 1LL);
            Kokkos::atomic_add(&counts(3 * K), 1LL);
          }
        }
        Kokkos::atomic_add(&counts(K + best), 1LL);
        Kokkos::atomic_add(&counts(3 * K + 1), 1LL);
      },
      crossEntropy);
  return crossEntropy;
}

}  // namespace Impl

namespace {

template <class T, class M>
class Segmentation final : public Task<T, M> {
public:
  using typename Task<T, M>::execution_space;
  using typename Task<T, M>::graph_type;

  explicit Segmentation(const TaskLayout& layout)
      : grid_(layout.output),
        classes_(layout.shape.channels),
        loss_(layout.output, "loss", layout.shape),
        labels_(createDistTensor<int, M>("hybrid3d::Segmentation::labels", layout.shape.batch, 1,
                                         BlockDecomposition(layout.shape.extents, grid_.dims()),
                                         grid_.coords())),
        counts_("hybrid3d::Segmentation::counts", 3 * layout.shape.channels + 2),
        countsHost_(Kokkos::create_mirror_view(counts_)),
        sums_(3 * std::size_t(layout.shape.channels) + 3, 0.0) {
    if (layout.output.layout() == layout.input.layout()) return;
    const TensorShape shape{layout.groupBatch, 1, layout.shape.extents};
    read_ = createDistTensor<int, M>("hybrid3d::Segmentation::labels read", shape.batch, 1,
                                     BlockDecomposition(shape.extents, layout.input.dims()),
                                     layout.input.coords());
    move_ = createRedistribute<int, M>(layout.input, layout.output, shape, false, "labels");
  }

  void load(const execution_space& exec, const HostTruth& truth, int first, int real) override {
    loadRead(exec, truth, first, real);
    if (move_) move_->forward(exec, read_, labels_);
  }

  // The labels as the reader gives them: on the input's grid.
  void loadRead(const execution_space& exec, const HostTruth& truth, int first, int real) {
    const auto& v = (move_ ? read_ : labels_).view();
    const std::size_t perSlot = v.extent(2) * v.extent(3) * v.extent(4);
    if (real > 0 && truth.labelsPerSlot != perSlot)
      fail("segmentation: the samples hold ", truth.labelsPerSlot, " labels per rank, the model ",
           perSlot);
    if (real < int(v.extent(0))) Impl::zeroFill(exec, v);  // padding: no class
    if (real <= 0) return;
    Kokkos::View<const int*****, Kokkos::LayoutRight, Kokkos::HostSpace,
                 Kokkos::MemoryTraits<Kokkos::Unmanaged>>
        host(truth.labels + std::size_t(first) * perSlot, std::size_t(real), 1, v.extent(2),
             v.extent(3), v.extent(4));
    Kokkos::deep_copy(exec,
                      Kokkos::subview(v, Kokkos::pair<std::size_t, std::size_t>(0, real),
                                      Kokkos::ALL, Kokkos::ALL, Kokkos::ALL, Kokkos::ALL),
                      host);
  }

  double loss(const execution_space& exec, const graph_type& graph, bool withGradient) override {
    const auto& logits = graph.output().volume;
    return withGradient ? loss_.forwardBackward(exec, logits, labels_,
                                                graph.outputGradient().volume, this->gradientScale_)
                        : loss_.forward(exec, logits, labels_);
  }

  void clearMetrics() override { std::fill(sums_.begin(), sums_.end(), 0.0); }

  // sums_: intersection, predicted, labelled (K each), correct, voxels, cross-entropy.
  void addMetrics(const execution_space& exec, const graph_type& graph, int real) override {
    const int K = classes_;
    const double crossEntropy = Impl::countSegmentation(exec, graph.output().volume, labels_,
                                                        counts_, grid_.localBatch(real));
    Kokkos::deep_copy(exec, countsHost_, counts_);
    exec.fence();
    for (int i = 0; i < 3 * K + 2; ++i) sums_[std::size_t(i)] += double(countsHost_(i));
    sums_[std::size_t(3 * K + 2)] += crossEntropy;
  }

  // Voxels are distributed over every rank: summed over the world.
  void summarize(const ProcessGrid& grid, EvalSummary& s) override {
    const std::size_t K = std::size_t(classes_);
    std::vector<double> sums = sums_;
    MPI_Allreduce(MPI_IN_PLACE, sums.data(), int(sums.size()), MPI_DOUBLE, MPI_SUM,
                  grid.worldComm());
    const double correct = sums[3 * K], voxels = sums[3 * K + 1], crossEntropy = sums[3 * K + 2];
    if (voxels > 0) {
      s.accuracy = correct / voxels;
      s.loss = crossEntropy / voxels;
    }
    for (std::size_t c = 0; c < K; ++c) {
      const double denominator = sums[K + c] + sums[2 * K + c];
      s.dice.push_back(denominator > 0 ? 2 * sums[c] / denominator : 1.0);
    }
  }

private:
  LayerGrid grid_;  // the output's
  int classes_;
  SoftmaxCrossEntropy<T, M> loss_;
  DistTensor<int, M> labels_;                   // on the output's grid
  DistTensor<int, M> read_;                     // on the input's, where that differs
  std::unique_ptr<Redistribute<int, M>> move_;  // read_ -> labels_
  Kokkos::View<long long*, M> counts_;
  typename Kokkos::View<long long*, M>::HostMirror countsHost_;
  std::vector<double> sums_;
};

SampleFields fields(int outputs) { return {"/volume", "/segmentation", "", 0, outputs}; }

}  // namespace

const TaskKind& segmentationTask() {
  static const TaskKind kind{"segmentation", fields, taskMakers<Segmentation>()};
  return kind;
}

}  // namespace hybrid3d
