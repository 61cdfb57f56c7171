#pragma once
// Private helper of the plan: what one rank of a run holds of the model input and of the
// parameters (StepCost.cpp and RankMemory.cpp count with them).

#include <hybrid3d/data/Subvolume.hpp>
#include <hybrid3d/plan/RunPlan.hpp>

namespace hybrid3d::Impl {

// The rank's ghosted subvolume of the model input: what it reads of each sample.
data::Subvolume inputSubvolume(const RunPlan& r, const Int3& coords);

// The parameter values the rank holds, over all layers.
Index localParameters(const ModelPlan& m, const Int3& coords);

// The parameter values the rank updates and holds optimizer state for, as the deck shards them
// (RunPlan::stateSharding); reducedOnly: of the tensors summed over more than one rank only.
Index updatedParameters(const RunPlan& r, const Int3& coords, bool reducedOnly = false);

}  // namespace hybrid3d::Impl
