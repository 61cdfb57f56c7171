#include <hybrid3d/core/Error.hpp>
#include <hybrid3d/data/CollectiveVerdict.hpp>
#include <hybrid3d/data/Hdf5.hpp>
#include <hybrid3d/data/Hdf5Lock.hpp>
#include <hybrid3d/data/NpyFile.hpp>
#include <hybrid3d/data/SampleReader.hpp>

#include <chrono>
#include <cmath>
#include <vector>

#include "impl/FiniteCheck.hpp"

namespace hybrid3d::data {
namespace {

std::string typeText(hid_t type) {
  const H5T_class_t c = H5Tget_class(type);
  const std::size_t bits = 8 * H5Tget_size(type);
  if (c == H5T_FLOAT) return "float" + std::to_string(bits);
  if (c == H5T_INTEGER)
    return (H5Tget_sign(type) == H5T_SGN_NONE ? "uint" : "int") + std::to_string(bits);
  if (c == H5T_STRING) return "string";
  if (c == H5T_COMPOUND) return "compound";
  return "an unsupported class";
}

// Opens dataset `name`, checks its type class and shape; returns it.
Handle checkedDataset(const File& f, const std::string& name, const std::string& role,
                      const std::vector<Index>& expected, const std::string& expectedText) {
  if (!f.hasDataset(name)) fail(f.path(), ": no dataset '", name, "' (", role, ")");
  Handle d = f.openDataset(name);
  const std::vector<Index> shape = f.shape(name);
  if (shape.size() != expected.size())
    fail(f.path(), ": dataset '", name, "' has rank ", shape.size(), " (shape ", shapeText(shape),
         "); expected rank ", expected.size(), " ", expectedText, " = ", shapeText(expected));
  if (shape != expected)
    fail(f.path(), ": dataset '", name, "' has shape ", shapeText(shape), "; expected ",
         expectedText, " = ", shapeText(expected));
  return d;
}

// Reads the hyperslab [start, start+count) of `dset` into `buf` (contiguous, row-major), or
// takes part with an empty selection when `empty` (collective reads need every rank).
void readHyperslab(const std::string& path, const std::string& name, hid_t dset,
                   const std::vector<hsize_t>& start, const std::vector<hsize_t>& count, bool empty,
                   hid_t memType, void* buf, hid_t dxpl) {
  Handle fileSpace(H5Dget_space(dset), H5Sclose);
  Handle memSpace;
  herr_t status;
  if (empty) {
    const hsize_t one = 1;
    memSpace = Handle(H5Screate_simple(1, &one, nullptr), H5Sclose);
    status = H5Sselect_none(fileSpace) < 0 || H5Sselect_none(memSpace) < 0 ? -1 : 0;
  } else {
    memSpace =
        Handle(H5Screate_simple(static_cast<int>(count.size()), count.data(), nullptr), H5Sclose);
    status = H5Sselect_hyperslab(fileSpace, H5S_SELECT_SET, start.data(), nullptr, count.data(),
                                 nullptr);
  }
  if (status >= 0) status = H5Dread(dset, memType, memSpace, fileSpace, dxpl, buf);
  if (status < 0) fail(path, ": cannot read dataset '", name, "' (damaged or truncated file)");
}

double secondsSince(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

SampleReader::SampleReader(MPI_Comm spatialComm, const SampleSpec& spec, const Subvolume& subvolume,
                           ReadMode mode)
    : comm_(spatialComm), spec_(spec), sub_(subvolume), mode_(mode) {
  if (spec.channels < 1) fail("sample reader: ", spec.channels, " input channels");
  if (spec.extents != subvolume.extents)
    fail("sample reader: sample extents ", toString(spec.extents),
         " differ from the input tensor's ", toString(subvolume.extents));
  if (!spec.targets.empty() && spec.numTargets < 1)
    fail("sample reader: ", spec.numTargets, " targets in '", spec.targets, "'");
}

SampleFormat SampleReader::inspect(const std::string& path) const {
  return isNpySample(path) ? inspectNpy(path) : inspectHdf5(path);
}

SampleFormat SampleReader::inspectHdf5(const std::string& path) const {
  std::lock_guard<std::mutex> lock(hdf5Mutex());
  QuietErrors quiet;
  const File f(path);
  const Index3& e = spec_.extents;
  SampleFormat format;
  if (!f.hasDataset(spec_.input)) fail(path, ": no dataset '", spec_.input, "' (input)");
  Handle in = f.openDataset(spec_.input);
  {
    // The layout attribute may sit on the dataset or on the root group (the converted
    // CosmoFlow files); the published ones carry none, and their shape tells.
    const std::string where = path + ": dataset '" + spec_.input + "'";
    std::string attribute = stringAttribute(in, "layout", where).value_or("");
    if (attribute.empty()) attribute = stringAttribute(f.id(), "layout", path).value_or("");
    format.channelsLast =
        isChannelsLast(where, f.shape(spec_.input), spec_.channels, e, spec_.layout, attribute);
  }
  {
    Handle type(H5Dget_type(in), H5Tclose);
    const H5T_class_t c = H5Tget_class(type);
    const std::size_t size = H5Tget_size(type);
    if (c == H5T_FLOAT && size == 4)
      format.type = StoredType::Float32;
    else if (c == H5T_INTEGER && size == 2 && H5Tget_sign(type) == H5T_SGN_2)
      format.type = StoredType::Int16;
    else
      fail(path, ": dataset '", spec_.input, "' has type ", typeText(type),
           "; expected float32 or int16");
  }
  if (!spec_.labels.empty()) {
    Handle d = checkedDataset(f, spec_.labels, "labels", {e[0], e[1], e[2]}, "[D,H,W]");
    Handle type(H5Dget_type(d), H5Tclose);
    if (H5Tget_class(type) != H5T_INTEGER || H5Tget_size(type) > 4)
      fail(path, ": dataset '", spec_.labels, "' has type ", typeText(type),
           "; expected integer class labels of at most 32 bits");
  }
  if (!spec_.targets.empty()) {
    Handle d = checkedDataset(f, spec_.targets, "targets", {Index(spec_.numTargets)}, "[targets]");
    Handle type(H5Dget_type(d), H5Tclose);
    if (H5Tget_class(type) != H5T_FLOAT)
      fail(path, ": dataset '", spec_.targets, "' has type ", typeText(type), "; expected float");
  }
  return format;
}

SampleFormat SampleReader::read(const std::string& path, void* input, int* labels, float* targets) {
  const auto t0 = std::chrono::steady_clock::now();
  const bool collective = mode_ == ReadMode::Collective;
  SampleFormat format;
  if (collective) {
    // Metadata first, verdict second: no rank enters MPI-IO with a file another rank rejected.
    collectively(comm_, [&] { format = inspect(path); });
  } else {
    format = inspect(path);
  }

  std::string readError;  // collective mode: every rank takes part in every read, then agrees
  if (isNpySample(path)) {
    try {
      readNpy(path, format, input, targets);
    } catch (const Error& e) {
      if (!collective) throw;
      readError = e.what();
    }
  } else {
    readHdf5(path, format, input, labels, targets, readError);
  }
  if (collective) agreeOnError(comm_, readError);
  counters_.samples += 1;
  counters_.seconds += secondsSince(t0);
  return format;
}

void SampleReader::readHdf5(const std::string& path, const SampleFormat& format, void* input,
                            int* labels, float* targets, std::string& readError) {
  std::lock_guard<std::mutex> lock(hdf5Mutex());
  QuietErrors quiet;
  const bool collective = mode_ == ReadMode::Collective;
  const File f(path, collective ? comm_ : MPI_COMM_SELF);
  Handle dxpl(H5Pcreate(H5P_DATASET_XFER), H5Pclose);
  if (collective) H5Pset_dxpl_mpio(dxpl, H5FD_MPIO_COLLECTIVE);
  const Box3& r = sub_.read;
  const hsize_t C = static_cast<hsize_t>(spec_.channels);
  auto run = [&](auto&& step) {
    try {
      step();
    } catch (const Error& e) {
      if (!collective) throw;
      if (readError.empty()) readError = e.what();
    }
  };
  run([&] {
    std::vector<hsize_t> start, count;
    const std::vector<hsize_t> lo{hsize_t(r.lo[0]), hsize_t(r.lo[1]), hsize_t(r.lo[2])};
    const std::vector<hsize_t> ext{hsize_t(r.extent(0)), hsize_t(r.extent(1)),
                                   hsize_t(r.extent(2))};
    if (format.channelsLast) {
      start = {lo[0], lo[1], lo[2], 0};
      count = {ext[0], ext[1], ext[2], C};
    } else {
      start = {0, lo[0], lo[1], lo[2]};
      count = {C, ext[0], ext[1], ext[2]};
    }
    Handle d = f.openDataset(spec_.input);
    const hid_t mem = format.type == StoredType::Int16 ? H5T_NATIVE_INT16 : H5T_NATIVE_FLOAT;
    readHyperslab(path, spec_.input, d, start, count, r.empty(), mem, input, dxpl);
    if (format.type == StoredType::Float32 && !r.empty())
      Impl::checkFinite(path, "dataset '" + spec_.input + "'", static_cast<const float*>(input),
                        count, lo, format.channelsLast);
    counters_.inputBytes += C * r.size() * format.elementSize();
  });
  if (!spec_.labels.empty())
    run([&] {
      const Box3& o = sub_.owned;
      Handle d = f.openDataset(spec_.labels);
      Handle type(H5Dget_type(d), H5Tclose);
      readHyperslab(path, spec_.labels, d, {hsize_t(o.lo[0]), hsize_t(o.lo[1]), hsize_t(o.lo[2])},
                    {hsize_t(o.extent(0)), hsize_t(o.extent(1)), hsize_t(o.extent(2))}, o.empty(),
                    H5T_NATIVE_INT, labels, dxpl);
      if (spec_.classes > 0)
        for (Index i = 0; i < o.size(); ++i)
          if (labels[i] < 0 || labels[i] >= spec_.classes) {
            const Index w = i % o.extent(2), h = i / o.extent(2) % o.extent(1),
                        dd = i / (o.extent(2) * o.extent(1));
            fail(path, ": dataset '", spec_.labels, "' holds label ", labels[i], " at voxel (",
                 o.lo[0] + dd, ",", o.lo[1] + h, ",", o.lo[2] + w, "); the model has classes 0..",
                 spec_.classes - 1);
          }
      counters_.labelBytes += o.size() * H5Tget_size(type);
    });
  if (!spec_.targets.empty())
    run([&] {
      // Tiny and needed by every rank: an independent read of the whole dataset.
      Handle d = f.openDataset(spec_.targets);
      if (H5Dread(d, H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, targets) < 0)
        fail(path, ": cannot read dataset '", spec_.targets, "' (damaged or truncated file)");
      for (int i = 0; i < spec_.numTargets; ++i)
        if (!std::isfinite(targets[i]))
          fail(path, ": dataset '", spec_.targets, "' holds NaN or Inf (", targets[i],
               " at element ", i, ")");
      counters_.targetBytes += spec_.numTargets * sizeof(float);
    });
}

}  // namespace hybrid3d::data
