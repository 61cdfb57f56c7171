#include "PredictSetup.hpp"

#include <filesystem>

#include <hybrid3d/core/Error.hpp>
#include <hybrid3d/data/CollectiveVerdict.hpp>
#include <hybrid3d/data/Dataset.hpp>
#include <hybrid3d/deck/TrainDeck.hpp>
#include <hybrid3d/model/Architecture.hpp>
#include <hybrid3d/model/Tasks.hpp>
#include <hybrid3d/train/Checkpoint.hpp>
#include <hybrid3d/train/InputStatistics.hpp>
#include <hybrid3d/train/OutputDirectory.hpp>
#include <hybrid3d/train/RunChecks.hpp>

namespace hybrid3d::app {

namespace fs = std::filesystem;

PredictSetup readPredictSetup(MPI_Comm world, const PredictOptions& options) {
  const RunState state = readRunState(options.checkpoint, world);
  PredictSetup s;
  deck::DeckRun run;
  data::collectively(world, [&] {
    if (state.deck.empty())
      fail(options.checkpoint,
           ": holds no deck (root attribute 'deck'), so neither the model nor "
           "its preprocessing is known; a weights-only file cannot be used by predict");
    run = deck::readTrainDeckText(state.deck, options.checkpoint + " (its deck)");
    s.model = run.config.model;
    s.model.layerGrids = LayerGridRule{};
    s.precision = options.precision.value_or(run.precision);
    const ModelTraits traits = modelTraits(s.model);
    s.segmentation = traits.task == &segmentationTask();
    s.outputs = traits.outputs;
    s.spec = sampleSpec(traits, {0, 0, 0}, run.config.data);
  });
  const DataConfig& d = run.config.data;
  if (!d.channelOffsetAuto && !d.channelScaleAuto) {
    s.preprocessing.log1p = d.log1p;
    s.preprocessing.channelScale = d.channelScale;
    s.preprocessing.channelOffset = d.channelOffset;
    return s;
  }
  // The statistics training used come from its training set (cached beside it by then).
  const int S = s.model.inputWidth;
  data::SampleSpec train = s.spec;
  train.extents = {S, S, S};
  data::collectively(world, [&] {
    if (d.train.empty() || !fs::exists(d.train))
      fail(options.checkpoint,
           ": its deck computes the channel statistics ('auto') from "
           "Data/train '",
           d.train, "', which is not there");
  });
  const data::Dataset set = data::Dataset::openShared(world, d.train);
  s.preprocessing = preprocessOptions(world, d, set, train);
  return s;
}

void prepareOutputDirectory(MPI_Comm world, const PredictOptions& o) {
  int rank = 0;
  MPI_Comm_rank(world, &rank);
  data::collectively(world, [&] {
    if (rank != 0) return;
    std::error_code ec;
    for (const std::string& in : o.inputs)
      if (pathWithin(in, o.out)) fail(in, ": an input inside --out ", o.out);
    if (fs::exists(o.out, ec) && !fs::is_directory(o.out, ec))
      fail(o.out, ": --out is a file, not a directory");
    if (fs::is_directory(o.out, ec) && !fs::is_empty(o.out, ec) && !o.overwrite)
      fail(o.out, ": --out is not empty (add --overwrite to write over what it holds)");
    fs::create_directories(o.out, ec);
    if (ec) fail(o.out, ": cannot create --out (", ec.message(), ")");
  });
}

}  // namespace hybrid3d::app
