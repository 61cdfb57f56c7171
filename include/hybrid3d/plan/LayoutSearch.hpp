#pragma once
/// \file
/// The planner's search: every layout of a rank count -- G data-parallel groups (G dividing the
/// mini-batch) x a spatial grid D x H x W of the remaining ranks x the layer grids
/// (model/LayerGridRule.hpp): the deck's own, and each minimum box width K = 2, 4, 8, ... up to
/// the input width that gives other grids than a smaller K -- that the model accepts, costed on a
/// Machine (StepCost.hpp) and ranked: layouts whose largest rank fits the memory limit first,
/// fastest first. A layout the model refuses (a grid too fine for a layer) is left out, as a
/// run on it would fail. With Model/recompute = `auto`, each layout is costed with the
/// recomputation chosen for it (plan/RecomputeChoice.hpp): a layout that fits only with
/// recomputation fits, at its time with it.

#include <string>
#include <vector>

#include <hybrid3d/plan/StepCost.hpp>

namespace hybrid3d {

struct Layout {
  int groups = 1;
  Int3 grid{1, 1, 1};
  /// 0: the layer grids the deck gives (none: every layer on `grid`); K > 0: every layer on the
  /// finest coarsening of `grid` whose input boxes are at least K wide (Parallel/minimum box
  /// width), in place of the deck's layer grids.
  int minimumBoxWidth = 0;
  int ranks() const { return groups * grid[0] * grid[1] * grid[2]; }
};

/// "G:DxHxW" or "G:DxHxW/K" (e.g. "64:8x2x2/16") -> a Layout; throws naming the text.
Layout parseLayout(const std::string& text);
std::string toString(const Layout& layout);

/// `config` run on `layout`: its layer-grid rule replaced where the layout gives a width.
TrainConfig configFor(const TrainConfig& config, const Layout& layout);

/// planRun in precision `p`: planRun<T> for float and double; for bfloat16 and half the float
/// plan with the precision set and each rank's memory predicted in it (predictMemoryIn).
RunPlan planRunIn(Precision p, const TrainConfig& config, const Int3& grid, int groups,
                  const SetListing& train, const SetListing& validation);

struct LayoutChoice {
  Layout layout;
  RunPlan run;
  StepCost cost;       // the slowest spatial rank's
  StepCost firstRank;  // world rank 0's (the rank metrics.csv records)
  /// The most any rank holds (StepCost::memoryBytes): the slowest, the first and the rank whose
  /// model holds the most (RunPlan::largestRank); what must fit.
  std::size_t memoryBytes = 0;
  bool fits = true;
  /// The deck's Model/recompute is `auto`: run.model.options.recompute holds the ranges chosen
  /// for this layout (plan/RecomputeChoice.hpp).
  bool recomputeChosen = false;
};

/// Every accepted layout of `ranks` ranks for `config` on `machine`, ranked; `memoryLimit` in
/// bytes per rank (0: the machine's memory). Precision T as the run's (float, double, bfloat16,
/// float16).
template <class T>
std::vector<LayoutChoice> searchLayouts(const TrainConfig& config, int ranks,
                                        const Machine& machine, double memoryLimit,
                                        const SetListing& train, const SetListing& validation,
                                        const IoModel& io = {});

/// One layout, planned and costed (throws what a run on it would).
template <class T>
LayoutChoice costLayout(const TrainConfig& config, const Layout& layout, const Machine& machine,
                        double memoryLimit, const SetListing& train, const SetListing& validation,
                        const IoModel& io = {});

}  // namespace hybrid3d
