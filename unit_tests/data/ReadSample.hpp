#pragma once
// One sample read the way training reads it: this rank's box through SampleReader, then
// Preprocess into the input tensor (conversion and zero padding, nothing else).

#include <string>
#include <vector>

#include <hybrid3d/data/Preprocess.hpp>
#include <hybrid3d/data/SampleReader.hpp>
#include <hybrid3d/grid/DistTensor.hpp>
#include <hybrid3d/grid/ProcessGrid.hpp>

namespace hybrid3d::test {

struct ReadResult {
  DistTensor<float> x;
  std::vector<int> labels;
  std::vector<float> targets;
  data::ReadCounters counters;
  data::SampleFormat format;
};

inline ReadResult readOne(const ProcessGrid& grid, const std::string& path,
                          const data::SampleSpec& spec, const GhostWidths& ghosts,
                          data::ReadMode mode) {
  const BlockDecomposition dec(spec.extents, grid.dims());
  ReadResult r;
  r.x = createDistTensor<float>("x", 1, spec.channels, dec, grid.coords(), ghosts);
  const auto sub = data::Subvolume::of(r.x);
  data::SampleReader reader(grid.spatialComm(), spec, sub, mode);
  std::vector<unsigned char> input(reader.inputCapacityBytes());
  r.labels.resize(std::size_t(reader.labelCount()));
  r.targets.resize(std::size_t(reader.targetCount()));
  r.format = reader.read(path, input.data(), r.labels.data(), r.targets.data());
  data::Preprocess<float>({}, spec.channels, sub)
      .apply(DefaultExecutionSpace(), r.format, input.data(), r.x, 0);
  r.counters = reader.counters();
  return r;
}

}  // namespace hybrid3d::test
