#pragma once
// The performance model's answers as text (plan/StepCost.hpp, plan/LayoutSearch.hpp): per
// layer what one rank computes, exchanges and (with a machine) how long it takes; the step's
// phases and volumes; the ranked layouts of a rank count; and one CSV row per layout for
// scripts (perf_tests/scaling/). What `hybrid3d plan` prints after the dry run's plan.

#include <string>
#include <vector>

#include <hybrid3d/plan/LayoutSearch.hpp>

namespace hybrid3d::app {

// Per layer and in total for the rank `cost` describes; `timed`: cost came from a machine.
std::string costText(const RunPlan& run, const StepCost& cost, bool timed);

// What the run recomputes (Model/recompute; "" for none): the segments, the layers run forward
// again and those whose halos are gathered again, and what it adds to the step of the rank
// `cost` describes; `chosen`: the planner chose the segments (auto), for `limitBytes` per rank.
std::string recomputeText(const RunPlan& run, const StepCost& cost, bool timed,
                          const LayoutChoice* chosen, double limitBytes);

// The best `top` layouts, with the step time relative to `reference` seconds (0: none).
std::string layoutText(const std::vector<LayoutChoice>& layouts, std::size_t top, double reference);

std::string csvHeader();
std::string csvRow(const std::string& deck, const std::string& machine, const LayoutChoice& c);

}  // namespace hybrid3d::app
