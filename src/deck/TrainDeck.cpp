#include <hybrid3d/deck/TrainDeck.hpp>

#include <hybrid3d/core/Error.hpp>
#include <hybrid3d/model/Architecture.hpp>

namespace hybrid3d::deck {

namespace {
using Type = deck::DeckKey::Type;
constexpr double Big = 1e300;

deck::DeckKey key(const std::string& path, Type type, const std::string& fallback, double min,
                  double max, const std::string& help, std::vector<std::string> choices = {}) {
  return {path, type, fallback, false, min, max, std::move(choices), help};
}

// Parallel: the process grid and the layers' grids.
std::vector<DeckKey> parallelKeys() {
  return {
      key("Parallel/spatial grid", Type::String, "auto", -Big, Big,
          "ranks per sample as DxHxW, or auto (world / data-parallel groups, closest to cubes)"),
      key("Parallel/data-parallel groups", Type::Int, "1", 1, 1e6,
          "G, with spatial grid auto: world = G x spatial ranks"),
      key("Parallel/layer grids", Type::String, "", -Big, Big,
          "layers on other grids than the spatial grid, as FIRST..LAST=DxHxW or NAME=DxHxW "
          "entries separated by commas (layers in the architecture's order; at most the "
          "spatial grid's ranks, the group's samples spread over the sub-grids), e.g. "
          "conv4..pool4=4x2x1, conv5..fc3=1x1x1"),
      key("Parallel/minimum box width", Type::Int, "0", 0, 1e6,
          "K > 0: every layer no entry of 'layer grids' names runs on the finest coarsening of "
          "the spatial grid whose input boxes are at least K voxels wide where cut (0: off)"),
      key("Parallel/shard replicated state", Type::String, "none", -Big, Big,
          "none, optimizer (each rank holding a copy of a parameter updates only its 1/P part "
          "and keeps only that part's optimizer state, the parameter gathered whole after the "
          "step: ZeRO stage 1) or gradients (besides, the gradient sum is a reduce-scatter "
          "leaving each rank its part: stage 2); P: the ranks summing its gradient, spatial "
          "groups and data-parallel groups together; results and checkpoints as with none",
          {"none", "optimizer", "gradients"}),
  };
}

// Model: the network, its precision and its convolutions.
std::vector<DeckKey> modelKeys() {
  return {
      {"Model/architecture", Type::String, "", true, -Big, Big, architectureNames(),
       "the network (docs/design.md section 6)"},
      key("Model/input width", Type::Int, "128", 8, 4096, "S: samples are S^3 voxels"),
      key("Model/dropout keep probability", Type::Double, "", 1e-6, 1,
          "overrides the model's keep probability; 1 disables dropout"),
      key("Model/batch norm statistics", Type::String, "global", -Big, Big,
          "global (every rank of the mini-batch) or spatial group", {"global", "spatial group"}),
      key("Model/seed", Type::Int, "1", 0, 2147483647,
          "initialisation, shuffling and dropout seed"),
      key("Model/precision", Type::String, "float", -Big, Big,
          "activations, their gradients and halos in float, double, bfloat16 or half (the "
          "16-bit ones: parameters, gradient sums, statistics, loss and optimizer in float)",
          {"float", "double", "bfloat16", "half"}),
      key("Model/loss scale", Type::Double, "65536", 1, 1e30,
          "half only: the initial dynamic loss scale (halved on an overflow, the step skipped)"),
      key("Model/loss scale growth interval", Type::Int, "2000", 1, 2147483647,
          "half only: clean steps after which the loss scale doubles"),
      key("Model/convolution workspace MiB", Type::Int, "64", 1, 65536,
          "bound on each convolution's im2col workspace (kokkos engine)"),
      key("Model/convolution engine", Type::String, "auto", -Big, Big,
          "who computes each rank's local convolution: auto (the fastest built for the "
          "precision and memory space), kokkos (im2col + gemm, every backend), onednn (float, "
          "host memory) or cudnn (float and double, CUDA device memory)",
          {"auto", "kokkos", "onednn", "cudnn"}),
      // Off by default (engines/ConvEngine.hpp, convOverlapByDefault): on 2 cores with
      // shared-memory MPI the shell slabs cost more than the exposed halo time saved.
      key("Model/halo overlap", Type::Bool, convOverlapByDefault ? "1" : "0", -Big, Big,
          "overlap each convolution's halo exchange with its interior's computation (measured "
          "slower on 2 cores with shared-memory MPI; try it where messages cross a network)"),
      key("Model/recompute", Type::String, "none", -Big, Big,
          "activations a training step drops after the forward pass and computes again in the "
          "backward pass: none, all (each convolution's and dense layer's output up to the "
          "next one), auto (the planner's choice that fits the memory limit at the least "
          "predicted time: check/train --machine FILE) or layer ranges FIRST..LAST, NAME, ... "
          "(the names `check` prints)"),
  };
}

// Data: the samples and how they are read and preprocessed.
std::vector<DeckKey> dataKeys() {
  return {
      key("Data/train", Type::String, "", -Big, Big,
          "directory, list file or one sample file of training samples"),
      key("Data/validation", Type::String, "", -Big, Big,
          "directory, list file or one sample file; empty: none"),
      key("Data/read mode", Type::String, "independent", -Big, Big,
          "independent (per-rank POSIX reads, prefetchable) or collective (MPI-IO)",
          {"independent", "collective"}),
      key("Data/layout", Type::String, "auto", -Big, Big,
          "where the input files keep their channels: auto (a file's layout attribute, else "
          "its shape: [C,D,H,W] or [D,H,W,C]), CDHW or DHWC (for shapes that read both ways; "
          "a file whose attribute says otherwise is refused)",
          {"auto", "CDHW", "DHWC"}),
      key("Data/targets dataset", Type::String, "", -Big, Big,
          "the HDF5 dataset holding a sample's targets (default: the model's, unitPar for "
          "cosmoflow); numpy samples keep theirs in NAME.label.npy"),
      key("Data/prefetch", Type::Bool, "1", -Big, Big, "read the next mini-batch during the step"),
      key("Data/cache MiB", Type::Int, "0", 0, 1e7, "keep subvolumes in memory up to this size"),
      key("Data/log1p", Type::Bool, "0", -Big, Big, "apply log(1 + x) to the input when loading"),
      key("Data/channel scale", Type::DoubleList, "", -Big, Big,
          "one factor per input channel, or auto: 1 / each channel's standard deviation over "
          "the training set (after log1p), computed before step 1 and cached beside the data "
          "(what hybrid3d stats prints)",
          {"auto"}),
      key("Data/channel offset", Type::DoubleList, "", -Big, Big,
          "one value per input channel, subtracted before the scale, or auto: each channel's "
          "mean over the training set (after log1p), as for channel scale",
          {"auto"}),
  };
}

// Data/Generate: a synthetic dataset made before the run.
std::vector<DeckKey> generateKeys() {
  return {
      key("Data/Generate/generator", Type::String, "", -Big, Big,
          "make a synthetic dataset first (if its manifest is missing)",
          {"cosmology", "segmentation"}),
      key("Data/Generate/directory", Type::String, "hybrid3d_data", -Big, Big,
          "where the generated dataset goes (train/ and validation/ inside)"),
      key("Data/Generate/train samples", Type::Int, "16", 1, 1e7, "generated training samples"),
      key("Data/Generate/validation samples", Type::Int, "4", 0, 1e7,
          "generated validation samples"),
      key("Data/Generate/seed", Type::Int, "7", 0, 2147483647, "generator seed"),
      key("Data/Generate/mean count", Type::Double, "8", 1e-6, 1e9,
          "cosmology: mean particles per voxel"),
  };
}

// Training: the mini-batch, the optimizer and its schedule, checkpoints and output.
std::vector<DeckKey> trainingKeys() {
  return {
      key("Training/mini-batch", Type::Int, "1", 1, 1e7, "global mini-batch (multiple of G)"),
      key("Training/validation mini-batch", Type::Int, "", 1, 1e7,
          "samples per validation mini-batch, any size (default: the mini-batch); every "
          "validation sample is evaluated once"),
      key("Training/epochs", Type::Int, "1", 1, 1e7, "epochs"),
      key("Training/max steps", Type::Int, "-1", -1, 1e12,
          "stop after this many steps (-1: no limit)"),
      key("Training/optimizer", Type::String, "sgd", -Big, Big, "sgd or adam", {"sgd", "adam"}),
      key("Training/learning rate", Type::Double, "0.001", 1e-12, 100, "base learning rate"),
      key("Training/momentum", Type::Double, "0.9", 0, 0.999999, "SGD momentum"),
      key("Training/nesterov", Type::Bool, "0", -Big, Big, "Nesterov momentum"),
      key("Training/weight decay", Type::Double, "0", 0, 1, "L2 weight decay"),
      key("Training/adam beta1", Type::Double, "0.9", 0, 0.999999, "Adam beta1"),
      key("Training/adam beta2", Type::Double, "0.999", 0, 0.99999999, "Adam beta2"),
      key("Training/adam eps", Type::Double, "1e-8", 1e-20, 1, "Adam epsilon"),
      key("Training/schedule", Type::String, "constant", -Big, Big,
          "learning-rate schedule after warm-up", {"constant", "step", "cosine"}),
      key("Training/warm-up epochs", Type::Double, "0", 0, 1e6, "linear warm-up length"),
      key("Training/decay epochs", Type::DoubleList, "", 0, 1e7, "step schedule: decay at these"),
      key("Training/decay factor", Type::Double, "0.1", 1e-12, 1, "step schedule: factor"),
      key("Training/minimum learning rate", Type::Double, "0", 0, 100,
          "cosine schedule: final rate"),
      key("Training/checkpoint every", Type::Int, "0", 0, 1e12,
          "steps between checkpoints, besides those at every epoch end, on preemption and at the "
          "end (0: none by step count)"),
      key("Training/checkpoint minutes", Type::Double, "30", 0, 1e9,
          "wall-clock minutes after which the next step writes a checkpoint (0: never by time)"),
      key("Training/print every", Type::Int, "1", 1, 1e12, "steps between progress lines"),
      key("Training/output directory", Type::String, "hybrid3d_run", -Big, Big,
          "checkpoint.h5 and metrics.csv go here; a run locks it, refuses one holding an earlier "
          "run's files (resume with --restart, or --overwrite) and one inside a dataset"),
      key("Training/collective timeout", Type::Double, "600", 0, 1e7,
          "seconds a rank may wait for the others in one collective (a halo exchange, a "
          "reduction, the step agreement) before every rank stops with a line naming it "
          "(0: wait forever)"),
  };
}

}  // namespace

const std::vector<DeckKey>& trainDeckSchema() {
  static const std::vector<deck::DeckKey> schema = [] {
    std::vector<DeckKey> all;
    for (auto section : {parallelKeys, modelKeys, dataKeys, generateKeys, trainingKeys}) {
      const std::vector<DeckKey> keys = section();
      all.insert(all.end(), keys.begin(), keys.end());
    }
    return all;
  }();
  return schema;
}

namespace {

// One reader per section of the deck, called in an order where each finds what it needs: the
// process grid the model's input width, the generated dataset the same width.

void readModel(const Deck& d, const std::string& path, DeckRun& r) {
  ModelOptions& m = r.config.model;
  m.architecture = d.getString("Model/architecture");
  m.inputWidth = d.getInt("Model/input width");
  m.seed = static_cast<std::uint64_t>(d.getInt("Model/seed"));
  if (d.has("Model/dropout keep probability"))
    m.dropoutKeep = d.getDouble("Model/dropout keep probability");
  m.batchNormPerGroup = d.getString("Model/batch norm statistics") == "spatial group";
  m.convWorkspaceBytes = std::size_t(d.getInt("Model/convolution workspace MiB")) << 20;
  m.convEngine = parseConvEngine(d.getString("Model/convolution engine"));
  m.convOverlap = d.getBool("Model/halo overlap");
  try {
    m.recompute = parseRecompute(d.getString("Model/recompute"));
  } catch (const Error& e) {
    fail(path, ": ", e.what());  // the message names the key
  }
  r.precision = parsePrecision(d.getString("Model/precision"));
  r.config.lossScale.initial = d.getDouble("Model/loss scale");
  r.config.lossScale.growthInterval = d.getInt("Model/loss scale growth interval");
}

// The layers' grids, and the process grid: explicit, or auto from the world size and the
// number of groups.
void readParallel(const Deck& d, const std::string& path, int worldSize, DeckRun& r) {
  ModelOptions& m = r.config.model;
  try {
    if (d.has("Parallel/layer grids"))
      m.layerGrids.entries = parseLayerGridEntries(d.getString("Parallel/layer grids"));
  } catch (const Error& e) {
    fail(path, ": key 'Parallel/layer grids': ", e.what());
  }
  m.layerGrids.minimumBoxWidth = d.getInt("Parallel/minimum box width");
  r.config.stateSharding = parseStateSharding(d.getString("Parallel/shard replicated state"));
  if (worldSize <= 0) return;  // the caller chooses the process grid
  const Index S = m.inputWidth;
  const std::string grid = d.getString("Parallel/spatial grid");
  const int groups = d.getInt("Parallel/data-parallel groups");
  if (grid == "auto") {
    if (worldSize % groups != 0)
      fail(path, ": key 'Parallel/data-parallel groups' = ", groups, " does not divide the ",
           worldSize, " ranks");
    r.spatialGrid = autoSpatialGrid(worldSize / groups, {S, S, S});
  } else {
    try {
      r.spatialGrid = parseGridSpec(grid);
    } catch (const Error& e) {
      fail(path, ": key 'Parallel/spatial grid': ", e.what());
    }
  }
}

void readData(const Deck& d, const std::string& path, DataConfig& c) {
  c.train = d.has("Data/train") ? d.getString("Data/train") : "";
  c.validation = d.has("Data/validation") ? d.getString("Data/validation") : "";
  c.readMode = d.getString("Data/read mode") == "collective" ? data::ReadMode::Collective
                                                             : data::ReadMode::Independent;
  c.layout = data::parseLayoutChoice(d.getString("Data/layout"));
  if (d.has("Data/targets dataset")) {
    const std::string t = d.getString("Data/targets dataset");
    if (t.empty() || t == "/") fail(path, ": key 'Data/targets dataset' is empty");
    c.targetsDataset = t[0] == '/' ? t : "/" + t;
  }
  c.prefetch = d.getBool("Data/prefetch");
  c.cacheBytes = std::size_t(d.getInt("Data/cache MiB")) << 20;
  c.log1p = d.getBool("Data/log1p");
  // A list, or the word auto (the key's one choice: Deck.hpp).
  c.channelScaleAuto = d.has("Data/channel scale") && d.getString("Data/channel scale") == "auto";
  c.channelOffsetAuto =
      d.has("Data/channel offset") && d.getString("Data/channel offset") == "auto";
  if (d.has("Data/channel scale") && !c.channelScaleAuto)
    c.channelScale = d.getDoubleList("Data/channel scale");
  if (d.has("Data/channel offset") && !c.channelOffsetAuto)
    c.channelOffset = d.getDoubleList("Data/channel offset");
}

// A Data/Generate section: the dataset to make first, and where Data/train and Data/validation
// then point unless given.
void readGenerate(const Deck& d, DeckRun& r) {
  if (!d.has("Data/Generate/generator")) return;
  r.generate = true;
  auto& g = r.generation;
  g.generator = d.getString("Data/Generate/generator");
  g.outDir = d.getString("Data/Generate/directory");
  g.size = r.config.model.inputWidth;
  g.train = d.getInt("Data/Generate/train samples");
  g.validation = d.getInt("Data/Generate/validation samples");
  g.seed = static_cast<std::uint64_t>(d.getInt("Data/Generate/seed"));
  g.meanCount = d.getDouble("Data/Generate/mean count");
  DataConfig& c = r.config.data;
  if (c.train.empty()) c.train = g.outDir + "/train";
  if (c.validation.empty() && g.validation > 0) c.validation = g.outDir + "/validation";
}

void readTraining(const Deck& d, const std::string& path, TrainConfig& c) {
  c.globalBatch = d.getInt("Training/mini-batch");
  if (d.has("Training/validation mini-batch"))
    c.validationBatch = d.getInt("Training/validation mini-batch");
  c.epochs = d.getInt("Training/epochs");
  c.maxSteps = d.getInt("Training/max steps");
  c.optimizer = d.getString("Training/optimizer");
  c.sgd.momentum = d.getDouble("Training/momentum");
  c.sgd.nesterov = d.getBool("Training/nesterov");
  c.sgd.weightDecay = d.getDouble("Training/weight decay");
  c.adam.beta1 = d.getDouble("Training/adam beta1");
  c.adam.beta2 = d.getDouble("Training/adam beta2");
  c.adam.eps = d.getDouble("Training/adam eps");
  c.adam.weightDecay = c.sgd.weightDecay;
  auto& s = c.schedule;
  s.baseRate = d.getDouble("Training/learning rate");
  s.kind = LearningRateSchedule::parseKind(d.getString("Training/schedule"));
  s.warmupEpochs = d.getDouble("Training/warm-up epochs");
  if (d.has("Training/decay epochs")) s.decayEpochs = d.getDoubleList("Training/decay epochs");
  s.decayFactor = d.getDouble("Training/decay factor");
  s.minRate = d.getDouble("Training/minimum learning rate");
  s.totalEpochs = c.epochs;
  try {
    s.validate();
  } catch (const Error& e) {
    fail(path, ": ", e.what());
  }
  c.checkpointEvery = d.getInt("Training/checkpoint every");
  c.checkpointMinutes = d.getDouble("Training/checkpoint minutes");
  c.printEvery = d.getInt("Training/print every");
  c.outputDir = d.getString("Training/output directory");
  c.collectiveTimeoutSeconds = d.getDouble("Training/collective timeout");
}

}  // namespace

DeckRun readTrainDeck(const std::string& path, int worldSize, bool needTrainData) {
  return readTrainDeck(deck::Deck::fromFile(path, trainDeckSchema()), path, worldSize,
                       needTrainData);
}

DeckRun readTrainDeckText(const std::string& xml, const std::string& name) {
  return readTrainDeck(deck::Deck::fromString(xml, trainDeckSchema(), name), name, 0,
                       /*needTrainData=*/false);
}

DeckRun readTrainDeck(const Deck& d, const std::string& path, int worldSize, bool needTrainData) {
  DeckRun r;
  r.config.deckText = d.text();
  readModel(d, path, r);
  readParallel(d, path, worldSize, r);
  readData(d, path, r.config.data);
  readGenerate(d, r);
  if (r.config.data.train.empty() && needTrainData)
    fail(path, ": give 'Data/train' or a 'Data/Generate' section");
  readTraining(d, path, r.config);
  return r;
}

}  // namespace hybrid3d::deck
