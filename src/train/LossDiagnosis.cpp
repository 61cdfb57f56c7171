#include <hybrid3d/train/LossDiagnosis.hpp>

#include <algorithm>
#include <climits>
#include <cmath>
#include <sstream>
#include <vector>

#include <hybrid3d/core/Error.hpp>

namespace hybrid3d {

// The kernels live in a named namespace: CUDA refuses device lambdas in functions of internal
// linkage (an unnamed namespace).
namespace Impl {

// Whether n values at `data` (memory space M) are all finite: x - x is 0 for finite x only.
template <class T, class M>
bool allFinite(const T* data, std::size_t n) {
  using exec = typename M::execution_space;
  Kokkos::View<const T*, M, Kokkos::MemoryTraits<Kokkos::Unmanaged>> v(data, n);
  long long bad = 0;  // a count (a sum starts at 0; a Max reducer would start at its minimum)
  Kokkos::parallel_reduce(
      "hybrid3d::LossDiagnosis::finite", Kokkos::RangePolicy<exec>(0, n),
      KOKKOS_LAMBDA(std::size_t i, long long& b) {
        const ComputeOf<T> x = v(i), d = x - x;
        if (!(d == 0)) ++b;
      },
      bad);
  return bad == 0;
}

// Whether a layer's output is finite: its owned cells (a volume's ghosts hold whatever the memory
// held before, where the activations share memory, until its consumer's halo gather).
template <class T, class M>
bool tensorFinite(const EdgeTensor<T, M>& t) {
  if (t.empty()) return true;
  if (!t.isVolume()) return allFinite<T, M>(t.features.data(), t.features.span());
  using Policy =
      Kokkos::MDRangePolicy<typename M::execution_space, Kokkos::Rank<5>, Kokkos::IndexType<Index>>;
  const auto& a = t.volume;
  const Index3 e = a.owned().extents();
  const auto v = a.view();
  const Index gd = a.ghosts().lo[0], gh = a.ghosts().lo[1], gw = a.ghosts().lo[2];
  long long bad = 0;
  if (a.owned().empty()) return true;
  Kokkos::parallel_reduce(
      "hybrid3d::LossDiagnosis::ownedFinite",
      Policy({0, 0, 0, 0, 0}, {Index(a.batch()), Index(a.channels()), e[0], e[1], e[2]}),
      KOKKOS_LAMBDA(Index n, Index c, Index d, Index h, Index w, long long& b) {
        const ComputeOf<T> x = v(n, c, gd + d, gh + h, gw + w), z = x - x;
        if (!(z == 0)) ++b;
      },
      bad);
  return bad == 0;
}

}  // namespace Impl

namespace {

// The lowest value over the world (INT_MAX: none).
int lowest(int mine, MPI_Comm world) {
  int all = INT_MAX;
  MPI_Allreduce(&mine, &all, 1, MPI_INT, MPI_MIN, world);
  return all;
}

// The dataset index of the first slot of this rank's batch for which `bad(slot)` holds.
template <class Bad>
int firstBadSample(const data::HostBatch& b, Bad bad) {
  int first = INT_MAX;
  for (int s = 0; s < b.filled; ++s)
    if (bad(s)) first = std::min(first, int(b.samples[std::size_t(s)]));
  return first;
}

// Every sample of the step's global mini-batch, by file name (a few, then how many more).
// `samples`: this rank's slots' dataset indices, -1 for an empty slot (HostBatch::samples).
std::string batchFiles(const std::vector<Index>& samples, const data::Dataset& set,
                       MPI_Comm world) {
  int size;
  MPI_Comm_size(world, &size);
  std::vector<int> mine(samples.begin(), samples.end());
  std::vector<int> all(mine.size() * std::size_t(size));
  MPI_Allgather(mine.data(), int(mine.size()), MPI_INT, all.data(), int(mine.size()), MPI_INT,
                world);
  std::sort(all.begin(), all.end());
  all.erase(std::unique(all.begin(), all.end()), all.end());
  all.erase(std::remove(all.begin(), all.end(), -1), all.end());
  std::string text;
  const std::size_t shown = std::min<std::size_t>(all.size(), 6);
  for (std::size_t i = 0; i < shown; ++i) text += (i ? ", " : "") + set.file(all[i]);
  if (all.size() > shown) text += " and " + std::to_string(all.size() - shown) + " more";
  return text;
}

}  // namespace

template <class T, class M>
std::string diagnoseNonFiniteLoss(const LossDiagnosisInputs<T, M>& in) {
  const MPI_Comm world = in.grid->worldComm();
  Graph<T, M>& graph = *in.graph;
  const data::HostBatch& b = *in.batch;
  Kokkos::fence();
  std::ostringstream head;
  head << "training: the loss is " << in.loss << " at step " << in.step + 1 << " (epoch "
       << in.epoch + 1 << "; batch " << batchFiles(b.samples, *in.dataset, world);
  // The step before, whose update made this step's weights: a huge loss there points at its
  // batch (a target of 1e30 overflows only the next step).
  if (in.previousSamples && !in.previousSamples->empty())
    head << "; step " << in.step << " had loss " << in.previousLoss << ", batch "
         << batchFiles(*in.previousSamples, *in.dataset, world);
  head << "); the first non-finite value: ";
  auto file = [&](int sample) { return in.dataset->file(sample); };

  // The input after preprocessing, slot by slot (a slot is contiguous in LayoutRight).
  const auto& x = graph.input().volume.view();
  const std::size_t perSlot = x.extent(0) ? x.span() / x.extent(0) : 0;
  const int input =
      lowest(firstBadSample(
                 b, [&](int s) { return !Impl::allFinite<T, M>(x.data() + s * perSlot, perSlot); }),
             world);
  if (input != INT_MAX)
    return head.str() + "the input of " + file(input) +
           " after preprocessing (Data/log1p, channel scale and offset)";

  const int target = lowest(firstBadSample(b,
                                           [&](int s) {
                                             const float* t = b.targetsOf(s);
                                             for (std::size_t k = 0; k < b.targets.extent(1); ++k)
                                               if (!std::isfinite(t[k])) return true;
                                             return false;
                                           }),
                            world);
  if (target != INT_MAX) return head.str() + "a target of " + file(target);

  const auto parameters = graph.parameters();
  int weight = INT_MAX;
  for (std::size_t i = 0; i < parameters.size() && weight == INT_MAX; ++i)
    if (!Impl::allFinite<ParamOf<T>, M>(parameters[i].param.value.data(),
                                        parameters[i].param.value.size()))
      weight = int(i);
  weight = lowest(weight, world);
  if (weight != INT_MAX)
    return head.str() + "weight " + parameters[std::size_t(weight)].path() +
           (in.step == in.restartStep && !in.restartFrom.empty()
                ? " (as loaded from " + in.restartFrom + ")"
                : " (after the update of step " + std::to_string(in.step) +
                      ": a huge gradient; lower the learning rate or check that step's targets)");

  // Each layer's output as the forward computed it, looked at right after its layer ran again:
  // where the activations share memory (recomputation) a later layer's output takes over an
  // output's memory once its readers have run (Graph::outputOf).
  int layer = INT_MAX;
  graph.replayForward(typename M::execution_space(),
                      [&](std::size_t i, const EdgeTensor<T, M>& out) {
                        if (layer == INT_MAX && !Impl::tensorFinite(out)) layer = int(i);
                      });
  layer = lowest(layer, world);
  if (layer != INT_MAX)
    return head.str() + "the output of layer " + graph.node(std::size_t(layer)).name() +
           " (its input and the weights are finite, values grew too large: lower the learning "
           "rate, scale the input, or check the targets of the steps before)";

  // Everything finite: the loss overflowed. The largest target names the likely culprit.
  struct {
    double value;
    int sample;
  } largest{-1, -1};
  for (int s = 0; s < b.filled; ++s)
    for (std::size_t k = 0; k < b.targets.extent(1); ++k)
      if (std::fabs(b.targetsOf(s)[k]) > largest.value)
        largest = {std::fabs(b.targetsOf(s)[k]), int(b.samples[std::size_t(s)])};
  MPI_Allreduce(MPI_IN_PLACE, &largest, 1, MPI_DOUBLE_INT, MPI_MAXLOC, world);
  std::ostringstream tail;
  tail << "none: inputs, targets, weights and every layer's output are finite, the loss itself "
          "overflowed";
  if (largest.sample >= 0)
    tail << " (largest |target| " << largest.value << ", in " << file(largest.sample) << ")";
  return head.str() + tail.str();
}

template std::string diagnoseNonFiniteLoss<float, DefaultMemorySpace>(
    const LossDiagnosisInputs<float, DefaultMemorySpace>&);
template std::string diagnoseNonFiniteLoss<double, DefaultMemorySpace>(
    const LossDiagnosisInputs<double, DefaultMemorySpace>&);
template std::string diagnoseNonFiniteLoss<bfloat16, DefaultMemorySpace>(
    const LossDiagnosisInputs<bfloat16, DefaultMemorySpace>&);
template std::string diagnoseNonFiniteLoss<float16, DefaultMemorySpace>(
    const LossDiagnosisInputs<float16, DefaultMemorySpace>&);

}  // namespace hybrid3d
