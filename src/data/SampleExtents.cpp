#include <hybrid3d/data/SampleExtents.hpp>

#include <filesystem>
#include <mutex>

#include <hybrid3d/core/Error.hpp>
#include <hybrid3d/data/Hdf5.hpp>
#include <hybrid3d/data/Hdf5Lock.hpp>
#include <hybrid3d/data/InputLayout.hpp>
#include <hybrid3d/data/NpyFile.hpp>

namespace hybrid3d::data {

namespace {

// Channels first or last, from the attribute, the deck, or the one end of the shape that has
// the channel count.
Index3 extentsOf(const std::string& what, const std::vector<Index>& shape, const SampleSpec& spec,
                 const std::string& attribute) {
  if (shape.size() != 4)
    fail(what, " has shape ", shapeText(shape),
         "; expected [C,D,H,W] or [D,H,W,C] with C = ", spec.channels);
  bool last;
  if (attribute == "DHWC" || attribute == "CDHW")
    last = attribute == "DHWC";
  else if (spec.layout != LayoutChoice::Auto)
    last = spec.layout == LayoutChoice::DHWC;
  else if (shape[0] == spec.channels && shape[3] == spec.channels)
    fail(what, " has shape ", shapeText(shape),
         ": its channels may be first or last; set the "
         "file's layout attribute or the deck's 'Data/layout'");
  else if (shape[0] == spec.channels || shape[3] == spec.channels)
    last = shape[0] != spec.channels;
  else
    fail(what, " has shape ", shapeText(shape), ", but the model takes ", spec.channels,
         " channel(s): expected [C,D,H,W] or [D,H,W,C] with C = ", spec.channels);
  return last ? Index3{shape[0], shape[1], shape[2]} : Index3{shape[1], shape[2], shape[3]};
}

}  // namespace

Index3 sampleExtents(const std::string& path, const SampleSpec& spec) {
  if (isNpySample(path)) return extentsOf(path + ": array", NpyFile(path).header().shape, spec, "");
  std::lock_guard<std::mutex> lock(hdf5Mutex());
  QuietErrors quiet;
  const File f(path);
  if (!f.hasDataset(spec.input)) fail(path, ": no dataset '", spec.input, "' (input)");
  const Handle in = f.openDataset(spec.input);
  const std::string where = path + ": dataset '" + spec.input + "'";
  std::string attribute = stringAttribute(in, "layout", where).value_or("");
  if (attribute.empty()) attribute = stringAttribute(f.id(), "layout", path).value_or("");
  return extentsOf(where, f.shape(spec.input), spec, attribute);
}

bool sampleHolds(const std::string& path, const std::string& dataset) {
  if (dataset.empty()) return false;
  if (isNpySample(path))
    return dataset != "/segmentation" && std::filesystem::exists(npyLabelPath(path));
  std::lock_guard<std::mutex> lock(hdf5Mutex());
  QuietErrors quiet;
  return File(path).hasDataset(dataset);
}

}  // namespace hybrid3d::data
