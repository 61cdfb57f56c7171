// The numpy half of SampleReader (SampleReader.hpp): NAME.data.npy holds the input, either
// layout, int16 or float32; NAME.label.npy beside it the float32 targets (MLPerf HPC's
// CosmoFlow release). No HDF5, no MPI: every rank preads its own box.
#include <hybrid3d/core/Error.hpp>
#include <hybrid3d/data/NpyFile.hpp>
#include <hybrid3d/data/SampleReader.hpp>

#include <cmath>
#include <filesystem>

#include "impl/FiniteCheck.hpp"

namespace hybrid3d::data {
namespace {

StoredType storedTypeOf(const NpyFile& f) {
  const NpyHeader& h = f.header();
  if (h.kind == 'i' && h.itemSize == 2) return StoredType::Int16;
  if (h.kind == 'f' && h.itemSize == 4) return StoredType::Float32;
  fail(f.path(), ": .npy array has dtype '", h.descr,
       "'; expected '<i2' (int16) or '<f4' (float32)");
}

// The targets file of sample `path`, its header checked: float32 [numTargets].
void checkLabelFile(const std::string& path, const NpyFile& label, int numTargets) {
  const NpyHeader& h = label.header();
  if (h.kind != 'f' || h.itemSize != 4)
    fail(label.path(), ": .npy array has dtype '", h.descr,
         "'; expected '<f4' (float32 targets of ", path, ")");
  if (h.shape != std::vector<Index>{Index(numTargets)})
    fail(label.path(), ": .npy array has shape ", shapeText(h.shape), "; expected [", numTargets,
         "] (the targets of ", path, ")");
}

std::string labelPathOf(const std::string& path) {
  const std::string label = npyLabelPath(path);
  std::error_code ec;
  if (!std::filesystem::exists(label, ec))
    fail(path, ": no targets file ", label, " beside it (NAME.data.npy needs NAME.label.npy)");
  return label;
}

}  // namespace

SampleFormat SampleReader::inspectNpy(const std::string& path) const {
  if (!spec_.labels.empty())
    fail(path, ": a numpy sample holds an input and its targets, but this model reads labels '",
         spec_.labels, "' (use HDF5 samples)");
  const NpyFile f(path);
  SampleFormat format;
  format.type = storedTypeOf(f);
  format.channelsLast = isChannelsLast(path + ": array", f.header().shape, spec_.channels,
                                       spec_.extents, spec_.layout, "");
  if (!spec_.targets.empty()) checkLabelFile(path, NpyFile(labelPathOf(path)), spec_.numTargets);
  return format;
}

void SampleReader::readNpy(const std::string& path, const SampleFormat& format, void* input,
                           float* targets) {
  const Box3& r = sub_.read;
  const Index C = spec_.channels;
  if (!r.empty()) {
    const NpyFile f(path);
    const std::vector<Index> lo{r.lo[0], r.lo[1], r.lo[2]};
    const std::vector<Index> ext{r.extent(0), r.extent(1), r.extent(2)};
    const std::vector<Index> start = format.channelsLast
                                         ? std::vector<Index>{lo[0], lo[1], lo[2], 0}
                                         : std::vector<Index>{0, lo[0], lo[1], lo[2]};
    const std::vector<Index> count = format.channelsLast
                                         ? std::vector<Index>{ext[0], ext[1], ext[2], C}
                                         : std::vector<Index>{C, ext[0], ext[1], ext[2]};
    f.readBox(start, count, input);
    if (format.type == StoredType::Float32)
      Impl::checkFinite(path, "array", static_cast<const float*>(input), count, lo,
                        format.channelsLast);
    counters_.inputBytes += std::uint64_t(C * r.size()) * format.elementSize();
  }
  if (!spec_.targets.empty()) {
    const NpyFile label(labelPathOf(path));
    checkLabelFile(path, label, spec_.numTargets);
    label.readAll(targets);
    for (int i = 0; i < spec_.numTargets; ++i)
      if (!std::isfinite(targets[i]))
        fail(label.path(), ": targets hold NaN or Inf (", targets[i], " at element ", i, ")");
    counters_.targetBytes += spec_.numTargets * sizeof(float);
  }
}

}  // namespace hybrid3d::data
