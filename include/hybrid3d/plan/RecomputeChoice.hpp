#pragma once
/// \file
/// `Model/recompute = auto` resolved by the planner: the set of recomputed segments that fits a
/// memory limit at the least predicted step time, as ranges (model/Recompute.hpp), before a
/// model is built.
///
/// The candidates are `all`'s segments (one per convolution or dense layer, allSegments); sub-
/// ranges are not tried. A segment's recomputation costs the same whichever others are
/// recomputed (what it recomputes depends on its own layers only), so a set's time is the step
/// without recomputation plus its segments' recomputation seconds (StepCost's
/// LayerCost::recomputeSeconds of the slowest rank with `all`); its memory is placed in full
/// (the activations' arena by their lives, predictMemoryBeforeEngines) on the ranks costLayout
/// weighs (the first, the central, the last, and the one whose model holds the most).
///
/// The search is greedy and deterministic: nothing when the run fits without recomputation;
/// else, from the empty set, each round tries adding each segment not yet chosen, and takes the
/// fastest of those that fit, or, where none fits, the one saving the most memory per second of
/// recomputation (ties: the earlier segment); then it drops every chosen segment, the costliest
/// first, whose removal still fits. The result is the fastest set among those it tried that fit.
/// Where even `all` does not fit, there is no such set.

#include <string>
#include <vector>

#include <hybrid3d/plan/StepCost.hpp>

namespace hybrid3d {

/// One set of segments weighed.
struct RecomputeCandidate {
  std::vector<RecomputeSegment> segments;
  std::size_t memoryBytes = 0;  // the most a weighed rank holds (StepCost::memoryBytes)
  double seconds = 0;           // predicted step of the slowest rank
  bool fits = false;
};

struct RecomputeChoice {
  RecomputeOption option;  // Mode::Ranges (no ranges: nothing recomputed)
  RecomputeCandidate chosen;
  std::vector<RecomputeCandidate> considered;  // in the order tried, `all` first
  bool fits = false;      // false: not even `all` fits (option: `all`'s ranges)
  double limitBytes = 0;  // what had to fit per rank
};

/// What must fit the limit: what the planner weighs a layout by (StepCost::memoryBytes: all but
/// the data cache and checkpoint staging, host memory on a GPU machine), or all the rank holds
/// (RankMemory::total: what `check` and `train` compare with this machine's memory).
enum class MemoryCounted { Planner, Whole };

/// `run` (planned without recomputation) with `option` (none, all or ranges): the model's option
/// set and each spatial rank's activations placed by it (its other memory is the same).
RunPlan withRecompute(const RunPlan& run, const RecomputeOption& option);

/// The choice above for `run` (planned without recomputation) on `machine`; `memoryLimit` bytes
/// per rank, 0: the machine's memory (no limit where the machine gives none: nothing recomputed).
RecomputeChoice chooseRecompute(const RunPlan& run, const Machine& machine, double memoryLimit,
                                const IoModel& io = {},
                                MemoryCounted counted = MemoryCounted::Planner);

/// chooseRecompute's option, or throws one line naming Model/recompute when not even `all` fits.
RecomputeOption resolveRecompute(const RunPlan& run, const Machine& machine, double memoryLimit,
                                 const IoModel& io = {},
                                 MemoryCounted counted = MemoryCounted::Planner);

/// The segments as ranges of layer names ("conv1..pool1").
RecomputeOption rangesOf(const ModelPlan& model, const std::vector<RecomputeSegment>& segments);

}  // namespace hybrid3d
