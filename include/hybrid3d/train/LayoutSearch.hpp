#pragma once
// The planner's search: every layout of a rank count -- G data-parallel groups (G dividing the
// mini-batch) x a spatial grid D x H x W of the remaining ranks -- that the model accepts,
// costed on a Machine (StepCost.hpp) and ranked: layouts whose largest rank fits the memory
// limit first, fastest first. A layout the model refuses (a grid too fine for a layer) is
// left out, as a run on it would fail.

#include <string>
#include <vector>

#include <hybrid3d/train/StepCost.hpp>

namespace hybrid3d {

struct Layout {
  int groups = 1;
  Int3 grid{1, 1, 1};
  int ranks() const { return groups * grid[0] * grid[1] * grid[2]; }
};

// "G:DxHxW" (e.g. "64:8x1x1") -> a Layout; throws naming the text.
Layout parseLayout(const std::string& text);
std::string toString(const Layout& layout);

struct LayoutChoice {
  Layout layout;
  RunPlan run;
  StepCost cost;       // the slowest spatial rank's
  StepCost firstRank;  // world rank 0's (the rank metrics.csv records)
  bool fits = true;
};

// Every accepted layout of `ranks` ranks for `config` on `machine`, ranked; `memoryLimit` in
// bytes per rank (0: the machine's memory). Precision T as the run's.
template <class T>
std::vector<LayoutChoice> searchLayouts(const TrainConfig& config, int ranks,
                                        const Machine& machine, double memoryLimit,
                                        const SetListing& train, const SetListing& validation,
                                        const IoModel& io = {});

// One layout, planned and costed (throws what a run on it would).
template <class T>
LayoutChoice costLayout(const TrainConfig& config, const Layout& layout, const Machine& machine,
                        double memoryLimit, const SetListing& train, const SetListing& validation,
                        const IoModel& io = {});

}  // namespace hybrid3d
