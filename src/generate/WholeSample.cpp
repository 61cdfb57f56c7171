#include <hybrid3d/core/Error.hpp>
#include <hybrid3d/data/ChannelStatistics.hpp>
#include <hybrid3d/data/Hdf5.hpp>
#include <hybrid3d/data/NpyFile.hpp>
#include <hybrid3d/generate/DatasetTransform.hpp>
#include <hybrid3d/generate/WholeSample.hpp>

#include <filesystem>

namespace hybrid3d::generate {

namespace {

namespace fs = std::filesystem;

// A numpy sample's targets are read with its input; an HDF5 file's are copied with its
// attributes (copyTargetsAndAttributes), whatever their shape.
data::SampleSpec specOf(const std::string& path, Index width) {
  data::SampleSpec spec = data::inputSpecOf(path);
  const Index3 cube{width, width, width};
  if (spec.extents != cube)
    fail(path, ": /full is ", spec.channels, " channels of ", spec.extents[0], "x", spec.extents[1],
         "x", spec.extents[2], ", not of ", width, "^3 as the dataset's size says");
  if (data::isNpySample(path)) {
    spec.targets = "/unitPar";  // NAME.label.npy: the reader names a missing or bad one
    std::error_code ec;
    const std::string label = data::npyLabelPath(path);
    spec.numTargets =
        fs::exists(label, ec) ? int(data::NpyFile(label).header().elements()) : spec.numTargets;
  }
  return spec;
}

}  // namespace

WholeSample readWholeSample(const std::string& path, Index width) {
  const data::SampleSpec spec = specOf(path, width);
  data::Subvolume whole;
  whole.extents = spec.extents;
  whole.owned = Box3{{0, 0, 0}, spec.extents};
  whole.local = whole.read = whole.owned;
  data::SampleReader reader(MPI_COMM_SELF, spec, whole, data::ReadMode::Independent);
  WholeSample s;
  s.path = path;
  s.channels = spec.channels;
  s.width = width;
  s.format = reader.inspect(path);
  const std::size_t values = std::size_t(spec.channels) * std::size_t(whole.read.size());
  void* input = nullptr;
  if (s.format.type == data::StoredType::Int16) {
    s.int16.resize(values);
    input = s.int16.data();
  } else {
    s.float32.resize(values);
    input = s.float32.data();
  }
  s.numpyTargets.resize(std::size_t(reader.targetCount()));
  s.format = reader.read(path, input, nullptr, s.numpyTargets.data());
  return s;
}

std::vector<float> floatChannelsFirst(const WholeSample& s) {
  const std::size_t C = std::size_t(s.channels), voxels = std::size_t(s.width * s.width * s.width);
  std::vector<float> out(C * voxels);
  auto at = [&](std::size_t i) {
    return s.format.type == data::StoredType::Int16 ? float(s.int16[i]) : s.float32[i];
  };
  for (std::size_t c = 0; c < C; ++c)
    for (std::size_t v = 0; v < voxels; ++v)
      out[c * voxels + v] = at(s.format.channelsLast ? v * C + c : c * voxels + v);
  return out;
}

void copyTargetsAndAttributes(const WholeSample& source, SampleWriter& file,
                              const std::vector<std::string>& rewritten) {
  if (data::isNpySample(source.path)) {
    file.writeWhole("unitPar", {Index(source.numpyTargets.size())}, source.numpyTargets.data());
    return;
  }
  copyTargetsAndAttributes(data::File(source.path), file, rewritten);
}

std::string ownSampleName(const std::string& file, const std::string& split) {
  const fs::path p(file);
  std::string name = p.filename().string();
  for (const std::string suffix : {".data.npy", ".hdf5", ".h5"})
    if (name.size() > suffix.size() &&
        name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0) {
      name.resize(name.size() - suffix.size());
      break;
    }
  const fs::path folder = p.parent_path().empty() ? fs::path(split) : p.parent_path();
  return (folder / (name + ".h5")).string();
}

}  // namespace hybrid3d::generate
