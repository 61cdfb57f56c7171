// `hybrid3d predict`: a checkpoint applied to whole volumes of any size (docs/predict.md). Each
// volume is decomposed over the ranks as training decomposes a sample (one spatial grid of every
// rank, volumes one after another); the U-Net's input is padded to a multiple of its total stride
// and its output cropped back, never tiled; CosmoFlow's fixed-width head takes a volume as the
// mean of its W^3 cubes. The plan (grid and memory per rank for each volume) is printed and
// checked against the node's memory before any volume is read.
#include <sys/resource.h>

#include <cstdio>
#include <map>
#include <memory>

#include <hybrid3d/core/Error.hpp>
#include <hybrid3d/data/CollectiveVerdict.hpp>
#include <hybrid3d/data/SampleExtents.hpp>
#include <hybrid3d/generate/NiftiVolume.hpp>
#include <hybrid3d/model/ModelPlan.hpp>
#include <hybrid3d/train/Inference.hpp>
#include <hybrid3d/train/ResourceChecks.hpp>

#include "../Command.hpp"
#include "PredictSetup.hpp"
#include "PredictTables.hpp"
#include "SegmentationOutputs.hpp"
#include "VolumeLoader.hpp"

namespace hybrid3d::app {
namespace {

constexpr Index unetStride = 8;  // unet3d's three 2^3 pools

Index roundUp(Index n, Index m) { return (n + m - 1) / m * m; }

// A volume's place in the run: its extents, the model input's, and the grid.
struct VolumePlan {
  Index3 extents{0, 0, 0}, modelExtents{0, 0, 0};
  Int3 grid{1, 1, 1};
};

double mib(double bytes) { return bytes / double(1 << 20); }

// Rank 0 reads each volume's extents (the header only); every rank gets them.
std::vector<Index3> volumeExtents(const std::vector<VolumeFile>& volumes,
                                  const data::SampleSpec& spec) {
  std::vector<Index3> e(volumes.size());
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  data::collectively(MPI_COMM_WORLD, [&] {
    if (rank != 0) return;
    for (std::size_t i = 0; i < volumes.size(); ++i) {
      if (!volumes[i].nifti) {
        e[i] = data::sampleExtents(volumes[i].path, spec);
        continue;
      }
      const generate::NiftiVolume v = generate::readNiftiVolume(volumes[i].path, false);
      e[i] = {v.extent[0], v.extent[1], v.extent[2]};
    }
  });
  MPI_Bcast(e.data(), int(3 * e.size()), MPI_INT64_T, 0, MPI_COMM_WORLD);
  return e;
}

// Refuses a volume the model cannot take, naming its size and what would be accepted; else
// the model's input extents for it.
Index3 modelExtentsFor(const PredictSetup& s, const VolumeFile& v, const Index3& e) {
  if (s.segmentation)
    return {roundUp(e[0], unetStride), roundUp(e[1], unetStride), roundUp(e[2], unetStride)};
  const Index W = s.model.inputWidth;
  for (const Index n : e)
    if (n < W || n % W != 0)
      fail(v.path, ": a volume of ", toString(e), " voxels; ", s.model.architecture,
           " takes cubes of ", W, "^3: every side a multiple of ", W,
           " (the prediction is the "
           "mean over the cubes)");
  return {W, W, W};
}

std::vector<VolumePlan> planVolumes(const PredictOptions& o, const PredictSetup& s,
                                    const std::vector<VolumeFile>& volumes) {
  int world = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &world);
  if (o.grid && (*o.grid)[0] * (*o.grid)[1] * (*o.grid)[2] != world)
    fail("predict: --grid ", toString(*o.grid), " has ", (*o.grid)[0] * (*o.grid)[1] * (*o.grid)[2],
         " ranks, the run ", world);
  if (!o.labels.empty() && !s.segmentation)
    fail("predict: --labels names label volumes for a segmentation model; the checkpoint's ",
         s.model.architecture, " predicts targets (read from the samples themselves)");
  const std::vector<Index3> extents = volumeExtents(volumes, s.spec);
  std::vector<VolumePlan> plans;
  for (std::size_t i = 0; i < volumes.size(); ++i) {
    VolumePlan p;
    p.extents = extents[i];
    p.modelExtents = modelExtentsFor(s, volumes[i], p.extents);
    p.grid = o.grid ? *o.grid : autoSpatialGrid(world, p.modelExtents);
    plans.push_back(p);
  }
  return plans;
}

// This rank's memory for the inference model of `p`, as the shape-only plan predicts it: the
// activations placed by their lives, the parameters' values, the convolution workspace and the
// redistribution buffers (ModelOptions::inference: no gradient).
template <class T>
double plannedBytes(const PredictSetup& s, const VolumePlan& p, int rank) {
  ModelOptions mo = s.model;
  mo.batch = 1;
  mo.inputExtents = p.modelExtents;
  mo.inference = true;
  const ModelPlan plan = planModel(mo, p.grid);
  const Int3 coords{rank / (p.grid[1] * p.grid[2]), rank / p.grid[2] % p.grid[1], rank % p.grid[2]};
  const GraphMemory m = predictMemory<T>(plan, coords);
  return double(m.total());
}

template <class T>
void announcePlan(const PredictOptions& o, const PredictSetup& s,
                  const std::vector<VolumeFile>& volumes, const std::vector<VolumePlan>& plans) {
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  double largest = 0;
  std::vector<double> perVolume;
  for (const VolumePlan& p : plans) {
    double bytes = 0;
    data::collectively(MPI_COMM_WORLD, [&] { bytes = plannedBytes<T>(s, p, rank); });
    MPI_Allreduce(MPI_IN_PLACE, &bytes, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    perVolume.push_back(bytes);
    largest = std::max(largest, bytes);
  }
  if (rank == 0) {
    std::printf("predict: %s (%s), %zu volume(s) in %s\n", s.model.architecture.c_str(),
                toString(s.precision), volumes.size(),
                s.segmentation ? "segmentation" : "regression");
    for (std::size_t i = 0; i < plans.size(); ++i)
      std::printf("  %s: %s voxels, model input %s, grid %s, planned memory per rank %.1f MiB\n",
                  volumes[i].name.c_str(), toString(plans[i].extents).c_str(),
                  toString(plans[i].modelExtents).c_str(), toString(plans[i].grid).c_str(),
                  mib(perVolume[i]));
    std::fflush(stdout);
  }
  checkNodeMemory(MPI_COMM_WORLD, largest, o.memoryLimit);
}

// The run over every volume, in precision T; rank 0 collects the rows and writes the files.
template <class T>
class Predictor {
public:
  Predictor(const PredictOptions& o, const PredictSetup& s)
      : o_(o), s_(s), regression_(s.outputs), metrics_(s.outputs) {}

  void run(const std::vector<VolumeFile>& volumes, const std::vector<VolumePlan>& plans) {
    for (std::size_t i = 0; i < volumes.size(); ++i) {
      const VolumeLoader volume(*grid(plans[i].grid), volumes[i], s_.spec, s_.preprocessing,
                                o_.labels);
      InferenceModel<T>& model = modelFor(plans[i]);
      if (s_.segmentation)
        segment(model, volumes[i], volume);
      else
        regress(model, volumes[i], volume);
      voxels_ += double(volume.extents()[0] * volume.extents()[1] * volume.extents()[2]);
    }
  }

  // Rank 0: the tables written, their means printed.
  void finish() const {
    data::collectively(MPI_COMM_WORLD, [&] {
      if (!root()) return;
      const std::string dir = o_.out + "/";
      if (!s_.segmentation) writeFileAtomically(dir + "predictions.csv", regression_.csv());
      if (!metrics_.empty()) writeFileAtomically(dir + "metrics.csv", metrics_.csv());
      const std::string means = s_.segmentation ? metrics_.summary() : regression_.summary();
      if (!means.empty()) std::printf("predict: %s\n", means.c_str());
    });
  }

  double voxels() const { return voxels_; }

private:
  static bool root() {
    int rank = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    return rank == 0;
  }

  const ProcessGrid* grid(const Int3& dims) {
    if (!grid_ || grid_->dims() != dims) {
      model_.reset();  // borrows the grid's communicators
      grid_.reset();
      grid_ = std::make_unique<ProcessGrid>(MPI_COMM_WORLD, dims);
    }
    return grid_.get();
  }

  // The model for this volume's input extents, kept while the extents and grid stay.
  InferenceModel<T>& modelFor(const VolumePlan& p) {
    if (!model_ || modelExtents_ != p.modelExtents) {
      model_.reset();
      ModelOptions mo = s_.model;
      if (s_.segmentation) mo.inputExtents = p.modelExtents;
      model_ = std::make_unique<InferenceModel<T>>(*grid(p.grid), mo, o_.checkpoint);
      modelExtents_ = p.modelExtents;
    }
    return *model_;
  }

  // The mean over the volume's W^3 cubes, each predicted as a volume of its own.
  void regress(InferenceModel<T>& model, const VolumeFile& v, const VolumeLoader& volume) {
    const Index W = s_.model.inputWidth;
    const Index3 e = volume.extents();
    std::vector<double> mean(std::size_t(s_.outputs), 0.0);
    const double cubes = double((e[0] / W) * (e[1] / W) * (e[2] / W));
    for (Index d = 0; d < e[0]; d += W)
      for (Index h = 0; h < e[1]; h += W)
        for (Index w = 0; w < e[2]; w += W) {
          volume.fill(model.input(), {d, h, w}, {W, W, W});
          model.forward();
          const std::vector<double> y = model.outputs();
          for (std::size_t t = 0; t < y.size(); ++t) mean[t] += y[t] / cubes;
          if (o_.cubes && cubes > 1)
            cubeRows_.push_back({v.name + "[" + std::to_string(d / W) + "," +
                                     std::to_string(h / W) + "," + std::to_string(w / W) + "]",
                                 y, volume.targets()});
        }
    regression_.add(v.name, mean, volume.targets());
    for (const CubeRow& c : cubeRows_) regression_.add(c.file, c.predicted, c.truth, false);
    cubeRows_.clear();
  }

  void segment(InferenceModel<T>& model, const VolumeFile& v, const VolumeLoader& volume) {
    volume.fill(model.input(), {0, 0, 0}, volume.extents());
    model.forward();
    const SegmentationResult r = model.segmentation(volume.extents(), o_.probabilities);
    data::collectively(MPI_COMM_WORLD, [&] {
      if (!root()) return;
      writeSegmentation(o_.out, v, r, s_.outputs);
      if (volume.hasLabels()) metrics_.add(v.name, r.labels, volume.labels());
    });
  }

  struct CubeRow {
    std::string file;
    std::vector<double> predicted, truth;
  };
  const PredictOptions& o_;
  const PredictSetup& s_;
  std::unique_ptr<ProcessGrid> grid_;
  std::unique_ptr<InferenceModel<T>> model_;  // declared after the grid: destroyed first
  Index3 modelExtents_{0, 0, 0};
  RegressionTable regression_;
  SegmentationTable metrics_;
  std::vector<CubeRow> cubeRows_;
  double voxels_ = 0;
};

// This process's peak resident memory (its high-water mark), the largest over the ranks.
double peakMemoryMiB() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  double kib = double(u.ru_maxrss);  // KiB on Linux
  MPI_Allreduce(MPI_IN_PLACE, &kib, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  return kib / 1024.0;
}

template <class T>
void predict(const PredictOptions& o, const PredictSetup& s) {
  const std::vector<VolumeFile> volumes = listPredictInputs(MPI_COMM_WORLD, o.inputs);
  std::vector<VolumePlan> plans;
  data::collectively(MPI_COMM_WORLD, [&] { plans = planVolumes(o, s, volumes); });
  announcePlan<T>(o, s, volumes, plans);
  prepareOutputDirectory(MPI_COMM_WORLD, o);
  MPI_Barrier(MPI_COMM_WORLD);
  const double start = MPI_Wtime();
  Predictor<T> predictor(o, s);
  predictor.run(volumes, plans);
  predictor.finish();
  const double seconds = MPI_Wtime() - start;
  const double peak = peakMemoryMiB();
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  if (rank == 0) {
    std::printf(
        "predict: %zu volume(s), %.0f voxels in %.3f s (%.1f voxels/s), peak memory per "
        "rank %.1f MiB\n",
        volumes.size(), predictor.voxels(), seconds,
        seconds > 0 ? predictor.voxels() / seconds : 0.0, peak);
    std::fflush(stdout);
  }
}

int run(const std::vector<std::string>& args) {
  PredictOptions o;
  data::collectively(MPI_COMM_WORLD, [&] { o = parsePredictOptions(args); });
  const PredictSetup s = readPredictSetup(MPI_COMM_WORLD, o);
  withPrecision(s.precision, [&](auto tag) { predict<typename decltype(tag)::type>(o, s); });
  return 0;
}

const Registration reg{
    "predict",
    {"--checkpoint RUN/checkpoint.h5 --in PATH... --out DIR [options]",
     "applies a trained checkpoint to whole volumes of any size; writes predictions, labels, "
     "metrics",
     "  --checkpoint F   a training run's checkpoint: the model, its preprocessing and classes\n"
     "  --in PATH...     sample files (.h5, .hdf5, .data.npy), NIfTI files (.nii, .nii.gz) or\n"
     "                   directories of either\n"
     "  --out DIR        where the outputs go (refused when not empty, unless --overwrite)\n"
     "  --labels DIR     NIfTI label files named as the inputs: OUT/metrics.csv with Dice\n"
     "  --grid DxHxW     the process grid of every volume (its product: the ranks); auto: the\n"
     "                   most cube-like boxes (default)\n"
     "  --precision P    float, double, bfloat16 or half (default: the checkpoint's)\n"
     "  --probabilities  the softmax per class as well (segmentation)\n"
     "  --cubes          a row per W^3 cube as well (regression over volumes wider than W)\n"
     "  --memory-limit G the plan's memory per rank is checked against G GiB, not the node's\n"
     "  --overwrite      write into a non-empty --out\n",
     "mpirun -n 4 hybrid3d predict --checkpoint run/checkpoint.h5 --in scans/ --out predicted/"},
    run};

}  // namespace
}  // namespace hybrid3d::app
