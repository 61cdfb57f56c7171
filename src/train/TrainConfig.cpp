#include <hybrid3d/core/Error.hpp>
#include <hybrid3d/train/TrainConfig.hpp>

namespace hybrid3d {

bool batchSplits(const TrainConfig& config, int groups) {
  return groups >= 1 && config.globalBatch >= 1 && config.globalBatch % groups == 0;
}

int groupBatch(const TrainConfig& config, int groups) {
  if (!batchSplits(config, groups))
    fail("training: mini-batch ", config.globalBatch, " is not a positive multiple of the ", groups,
         " data-parallel groups");
  return config.globalBatch / groups;
}

StateSharding parseStateSharding(const std::string& word) {
  for (StateSharding s : {StateSharding::None, StateSharding::Optimizer, StateSharding::Gradients})
    if (word == toString(s)) return s;
  fail("unknown state sharding '", word, "' (none, optimizer or gradients)");
}

const char* toString(StateSharding s) {
  switch (s) {
    case StateSharding::Optimizer:
      return "optimizer";
    case StateSharding::Gradients:
      return "gradients";
    default:
      return "none";
  }
}

ModelOptions groupModelOptions(const TrainConfig& config, int groups) {
  ModelOptions o = config.model;
  o.batch = groupBatch(config, groups);
  return o;
}

}  // namespace hybrid3d
