#include <hybrid3d/train/RunIdentity.hpp>

#include <hybrid3d/core/Error.hpp>

namespace hybrid3d {

namespace {

enum class OnChange { Refuse, Report, RefuseWithGroupBatchNorm };

struct Rule {
  const char* key;
  OnChange onChange;
};

// Why each rule: the mini-batch and the training samples fix which samples make each step and
// where epochs end; the seed fixes shuffles and dropout masks; optimizer and batch-norm
// statistics change the arithmetic; data-parallel groups change it only where batch statistics
// are taken per group (everything else is summed over the world: docs/design.md section 5). Epochs,
// the spatial grid and the output directory change no step's result. Precision is reported, not
// refused: checkpoints hold float master weights and optimizer state whatever the activations
// were stored in, and going on in bfloat16 from a float run (or back) is a user's choice, as
// PyTorch's autocast is.
constexpr Rule rules[] = {
    {"architecture", OnChange::Refuse},
    {"input width", OnChange::Refuse},
    {"precision", OnChange::Report},
    {"mini-batch", OnChange::Refuse},
    {"training samples", OnChange::Refuse},
    {"seed", OnChange::Refuse},
    {"optimizer", OnChange::Refuse},
    {"batch norm statistics", OnChange::Refuse},
    {"data-parallel groups", OnChange::RefuseWithGroupBatchNorm},
    {"epochs", OnChange::Report},
    {"spatial grid", OnChange::Report},
    {"output directory", OnChange::Report},
    {"learning rate", OnChange::Report},
    {"schedule", OnChange::Report},
};

std::string valueOf(const RunIdentity& id, const std::string& key) {
  const auto it = id.find(key);
  return it == id.end() ? "(not recorded)" : it->second;
}

}  // namespace

RunIdentity runIdentity(const TrainConfig& c, const ProcessGrid& grid, Precision precision,
                        long long trainingSamples) {
  const char* schedules[] = {"constant", "step", "cosine"};
  return {
      {"architecture", c.model.architecture},
      {"input width", std::to_string(c.model.inputWidth)},
      {"precision", toString(precision)},
      {"mini-batch", std::to_string(c.globalBatch)},
      {"training samples", std::to_string(trainingSamples)},
      {"seed", std::to_string(c.model.seed)},
      {"optimizer", c.optimizer},
      {"batch norm statistics", c.model.batchNormPerGroup ? "spatial group" : "global"},
      {"data-parallel groups", std::to_string(grid.numGroups())},
      {"epochs", std::to_string(c.epochs)},
      {"spatial grid", toString(grid.dims())},
      {"output directory", c.outputDir},
      {"learning rate", Impl::concat(c.schedule.baseRate)},
      {"schedule", schedules[static_cast<int>(c.schedule.kind)]},
  };
}

std::vector<std::string> checkRestart(const std::string& checkpoint, const RunState& saved,
                                      const RunIdentity& now, const std::string& /*deckNow*/) {
  if (saved.identity.empty())
    return {checkpoint +
            " records no run identity (written before hybrid3d checked restarts): "
            "nothing checked"};
  const bool groupBatchNorm = valueOf(now, "batch norm statistics") == "spatial group";
  std::vector<std::string> notes;
  for (const Rule& rule : rules) {
    const std::string was = valueOf(saved.identity, rule.key), is = valueOf(now, rule.key);
    if (was == is) continue;
    const bool refuse = rule.onChange == OnChange::Refuse ||
                        (rule.onChange == OnChange::RefuseWithGroupBatchNorm && groupBatchNorm);
    if (refuse)
      fail("restart from ", checkpoint, ": '", rule.key, "' was ", was,
           " in the checkpoint's run but is ", is,
           " now; that changes what the run computes (start afresh or restore ", was, ")");
    notes.push_back(std::string(rule.key) + " " + was + " -> " + is);
  }
  return notes;
}

}  // namespace hybrid3d
