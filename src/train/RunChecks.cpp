#include <hybrid3d/core/Error.hpp>
#include <hybrid3d/train/RunChecks.hpp>

namespace hybrid3d {

void checkTrainConfig(const TrainConfig& config, int groups) {
  const ModelOptions mo = groupModelOptions(config, groups);  // refuses an uneven mini-batch
  if (config.epochs < 1) fail("training: epochs must be >= 1");
  config.schedule.validate();
  const ModelTraits traits = modelTraits(mo);
  if (traits.log1pOfInput && config.data.log1p)
    fail("training: Data/log1p would take log(1 + x) a second time: ", mo.architecture,
         " does it in its first layer (set Data/log1p to false)");
  if (config.optimizer != "sgd" && config.optimizer != "adam")
    fail("training: unknown optimizer \"", config.optimizer, "\" (sgd or adam)");
  if (config.validationBatch < 0)
    fail("training: validation mini-batch ", config.validationBatch,
         " must be >= 1 (0: the mini-batch)");
}

data::Dataset listDataset(MPI_Comm world, const TrainConfig& config, bool training) {
  if (training && !config.data.trainFiles.empty())
    return data::Dataset::listOnce(
        world, [&] { return data::Dataset::ofFiles(config.data.trainFiles, "command line"); });
  return data::Dataset::openShared(world, training ? config.data.train : config.data.validation);
}

data::SampleSpec sampleSpec(const ModelTraits& traits, const Index3& extents) {
  const SampleFields f = traits.task->fields(traits.outputs);
  return {f.input, traits.inputChannels, extents, f.labels, f.targets, f.numTargets, f.classes};
}

data::SampleSpec sampleSpec(const ModelTraits& traits, const Index3& extents,
                            const DataConfig& data) {
  data::SampleSpec spec = sampleSpec(traits, extents);
  spec.layout = data.layout;
  if (!data.targetsDataset.empty()) {
    if (spec.targets.empty())
      fail("training: key 'Data/targets dataset' = \"", data.targetsDataset,
           "\", but this model reads labels '", spec.labels, "', not targets");
    spec.targets = data.targetsDataset;
  }
  return spec;
}

}  // namespace hybrid3d
