#pragma once
// A RunPlan (plan/RunPlan.hpp) as text for people: the layout, the model, the batches, one row
// per layer (output shape, owned box per rank, input ghost widths, parameters) and the memory
// of the ranks holding the most and the least. What `hybrid3d check` and
// `hybrid3d train --dry-run` print.

#include <string>

#include <hybrid3d/plan/RunPlan.hpp>

namespace hybrid3d::app {

std::string planText(const RunPlan& plan);

}  // namespace hybrid3d::app
