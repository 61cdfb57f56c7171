#include <hybrid3d/train/Inference.hpp>

#include <algorithm>
#include <cmath>

#include <hybrid3d/comm/GatherBoxes.hpp>
#include <hybrid3d/core/Error.hpp>
#include <hybrid3d/train/Checkpoint.hpp>

namespace hybrid3d {

template <class T, class M>
InferenceModel<T, M>::InferenceModel(const ProcessGrid& grid, ModelOptions options,
                                     const std::string& checkpoint)
    : grid_(grid) {
  if (grid.numGroups() != 1)
    fail("predict: the spatial grid ", toString(grid.dims()), " must hold every one of the ",
         grid.worldSize(), " ranks");
  options.inference = true;
  options.batch = 1;
  model_ = buildModel<T, M>(grid, options);
  auto& graph = *model_.graph;
  const int last = int(graph.size()) - 1;
  // The layer-grid rule is the caller's: the output must be where the spatial grid holds it.
  if (!(graph.grid(last).layout() == model_.grids->spatial().layout()))
    fail("predict: the model's last layer runs on another grid than the input");
  readCheckpoint<ParamOf<T>, M>(checkpoint, grid.worldComm(),
                                {graph.parameters(), graph.buffers(), nullptr});
  // data::Preprocess writes the input's ghosts too (from the file, or zero padding).
  graph.setInputGhostsFilled(true);
}

template <class T, class M>
void InferenceModel<T, M>::forward() {
  model_.graph->forward(exec_);
  exec_.fence();
}

template <class T, class M>
std::vector<double> InferenceModel<T, M>::outputs() const {
  const auto& o = model_.graph->output();
  if (o.isVolume()) fail("predict: the model's output is a volume, not targets");
  auto h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), o.features);
  std::vector<double> v;
  for (std::size_t f = 0; f < h.extent(1); ++f) v.push_back(double(ComputeOf<T>(h(0, f))));
  return v;
}

namespace {

// Per voxel of `box` (rows of the owned view `logits`, [C][box]): the first class of largest
// logit, and the softmax when asked for (in double: the probabilities are compared with
// PyTorch's to rounding).
template <class H>
void classify(const H& logits, const Box3& box, const Index3& origin, bool probabilities,
              std::vector<std::uint8_t>& labels, std::vector<float>& softmax) {
  const Index C = Index(logits.extent(1));
  const Index n = box.size();
  labels.assign(std::size_t(n), 0);
  if (probabilities) softmax.assign(std::size_t(C * n), 0.0f);
  std::vector<double> z(static_cast<std::size_t>(C));
  Index i = 0;
  for (Index d = box.lo[0]; d < box.hi[0]; ++d)
    for (Index h = box.lo[1]; h < box.hi[1]; ++h)
      for (Index w = box.lo[2]; w < box.hi[2]; ++w, ++i) {
        const Index ld = d - origin[0], lh = h - origin[1], lw = w - origin[2];
        int best = 0;
        for (Index c = 0; c < C; ++c) {
          z[c] = double(ComputeOf<typename H::value_type>(logits(0, c, ld, lh, lw)));
          if (z[c] > z[best]) best = int(c);
        }
        labels[std::size_t(i)] = static_cast<std::uint8_t>(best);
        if (!probabilities) continue;
        double sum = 0;
        for (Index c = 0; c < C; ++c) sum += std::exp(z[c] - z[best]);
        for (Index c = 0; c < C; ++c)
          softmax[std::size_t(c * n + i)] = static_cast<float>(std::exp(z[c] - z[best]) / sum);
      }
}

}  // namespace

template <class T, class M>
SegmentationResult InferenceModel<T, M>::segmentation(const Index3& valid,
                                                      bool probabilities) const {
  const auto& o = model_.graph->output();
  if (!o.isVolume()) fail("predict: the model's output is targets, not a volume");
  const auto& y = o.volume;
  const Box3 box = intersect(y.owned(), Box3{{0, 0, 0}, valid});
  auto logits = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), y.ownedView());
  std::vector<std::uint8_t> labels;
  std::vector<float> softmax;
  if (!box.empty()) classify(logits, box, y.owned().lo, probabilities, labels, softmax);
  const MPI_Comm comm = grid_.spatialComm();
  SegmentationResult r;
  r.extents = valid;
  r.labels = gatherBoxes(comm, 0, box, labels, 1, valid);
  if (probabilities) r.probabilities = gatherBoxes(comm, 0, box, softmax, y.channels(), valid);
  return r;
}

template class InferenceModel<float, DefaultMemorySpace>;
template class InferenceModel<double, DefaultMemorySpace>;
template class InferenceModel<bfloat16, DefaultMemorySpace>;
template class InferenceModel<float16, DefaultMemorySpace>;

}  // namespace hybrid3d
