#pragma once
/// \file
/// One mini-batch of this rank's subvolumes as stored in the files, in host memory: the staging
/// area between the reader (possibly on the prefetch thread) and Preprocess (on the device).
/// Allocated once, at its largest (4-byte values), and refilled every step. Input and labels
/// live in pinned host memory when the device's is not host-accessible (core/StagingSpace.hpp),
/// so that their copies to the device are single DMA transfers.

#include <vector>

#include <Kokkos_Core.hpp>

#include <hybrid3d/core/StagingSpace.hpp>
#include <hybrid3d/core/Types.hpp>
#include <hybrid3d/data/SampleReader.hpp>

namespace hybrid3d::data {

struct HostBatch {
  using staging_space = StagingSpace<DefaultMemorySpace>;
  int epoch = -1;
  Index batch = -1;
  int filled = 0;                     // slots [0, filled) hold samples (fewer than slots() only
                                      // in an evaluation pass's last mini-batch)
  std::vector<Index> samples;         // dataset index of each slot, -1 past `filled`
  std::vector<SampleFormat> formats;  // stored type and order of each slot's input
  Kokkos::View<unsigned char**, Kokkos::LayoutRight, staging_space> input;  // (slot, bytes)
  Kokkos::View<int****, Kokkos::LayoutRight, staging_space> labels;         // (slot, owned d,h,w)
  Kokkos::View<float**, Kokkos::LayoutRight, Kokkos::HostSpace> targets;    // (slot, target)

  HostBatch() = default;
  HostBatch(int slots, const SampleReader& reader)
      : samples(std::size_t(slots), -1),
        formats(std::size_t(slots)),
        input("hybrid3d::HostBatch::input", slots, reader.inputCapacityBytes()),
        labels("hybrid3d::HostBatch::labels", slots,
               reader.labelCount() ? reader.subvolume().owned.extent(0) : 0,
               reader.labelCount() ? reader.subvolume().owned.extent(1) : 0,
               reader.labelCount() ? reader.subvolume().owned.extent(2) : 0),
        targets("hybrid3d::HostBatch::targets", slots, reader.targetCount()) {}

  /// The bytes a HostBatch of `slots` holds for `spec` read on `sub`: what the constructor
  /// allocates (the memory plan counts it with this).
  static std::size_t bytes(int slots, const SampleSpec& spec, const Subvolume& sub) {
    return std::size_t(slots) * (inputSlotBytes(spec.channels, sub) +
                                 std::size_t(labelSlotCount(spec, sub)) * sizeof(int) +
                                 std::size_t(targetSlotCount(spec)) * sizeof(float));
  }

  int slots() const { return int(samples.size()); }
  /// Raw pointers of one slot (valid for zero-sized buffers too).
  unsigned char* inputOf(int s) const { return input.data() + std::size_t(s) * input.extent(1); }
  int* labelsOf(int s) const {
    return labels.data() + std::size_t(s) * labels.extent(1) * labels.extent(2) * labels.extent(3);
  }
  float* targetsOf(int s) const { return targets.data() + std::size_t(s) * targets.extent(1); }
};

}  // namespace hybrid3d::data
