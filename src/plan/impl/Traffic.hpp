#pragma once
// Private helper of StepCost.cpp: what one rank's exchanges move and the memory their packing
// touches, counted from the exchange plans themselves (comm/HaloPlan's boxes,
// comm/RedistributePlan's blocks), so the bytes are those the halo and the redistribution send.

#include <vector>

#include <hybrid3d/comm/HaloPlan.hpp>
#include <hybrid3d/comm/RedistributePlan.hpp>
#include <hybrid3d/plan/StepCost.hpp>

namespace hybrid3d::Impl {

// Bytes of the whole 64-byte lines each contiguous run of `box` covers: a run is a row along W,
// and the box has `rows` planes of them (batch x channels, or channels for one sample), so a
// box one voxel wide in W costs a line per value.
double lineBytes(const Box3& box, double rows, double scalar);

// One halo exchange from the boxes the rank sends (`rows` = batch x channels): bytes, distinct
// neighbours, packed lines.
HaloTraffic haloTraffic(const std::vector<HaloBox>& boxes, double rows, double scalar);

// One direction of a redistribution of `channels` channels (a feature matrix when !volume: a
// sample's row of `channels` values is one contiguous run) with scalars of `scalarBytes`.
RedistributeTraffic redistributeTraffic(const RedistributePlan& plan, int channels, bool volume,
                                        std::size_t scalarBytes);

}  // namespace hybrid3d::Impl
