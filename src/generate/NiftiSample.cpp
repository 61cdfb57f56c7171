// One image/label pair of `hybrid3d import nifti` into one segmentation sample file.
#include <hybrid3d/core/Error.hpp>
#include <hybrid3d/generate/CentredCube.hpp>
#include <hybrid3d/generate/NiftiImport.hpp>
#include <hybrid3d/generate/NiftiVolume.hpp>
#include <hybrid3d/generate/SampleWriter.hpp>

#include <cmath>
#include <cstdint>
#include <filesystem>
#include <new>
#include <sstream>

namespace hybrid3d::generate {

namespace {

namespace fs = std::filesystem;

// "35x51x35" in NIfTI's (x, y, z) order, as a user reading the header sees it.
std::string xyz(const std::array<Index, 3>& dhw) {
  return std::to_string(dhw[2]) + "x" + std::to_string(dhw[1]) + "x" + std::to_string(dhw[0]);
}

// Refuses a label volume that cannot go with its image or holds a value outside the classes.
void checkLabels(const NiftiVolume& labels, const NiftiVolume& image, int classes) {
  if (labels.channels != 1)
    fail(labels.path, ": holds ", labels.channels, " volumes along t; a label file holds one");
  if (labels.extent != image.extent)
    fail(labels.path, ": ", xyz(labels.extent), " voxels (x,y,z), but its image ", image.path,
         " has ", xyz(image.extent));
  const Index H = labels.extent[1], W = labels.extent[2];
  for (std::size_t v = 0; v < labels.values.size(); ++v) {
    const double label = labels.values[v];
    if (label >= 0 && label < classes && label == std::floor(label)) continue;
    const Index at = static_cast<Index>(v);
    fail(labels.path, ": holds label ", label, " at voxel (i,j,k) = (", at % W, ",", at / W % H,
         ",", at / (W * H), "); --classes ", classes, " allows whole numbers 0 to ", classes - 1);
  }
}

struct Moments {
  double mean = 0, std = 1;
};

// Mean and standard deviation of one channel over its whole volume (in double: a 512^3 sum of
// floats would round); a constant channel keeps std 1, so it becomes 0.
Moments moments(const double* v, Index n) {
  double sum = 0;
  for (Index i = 0; i < n; ++i) sum += v[i];
  Moments m;
  m.mean = sum / double(n);
  double squares = 0;
  for (Index i = 0; i < n; ++i) squares += (v[i] - m.mean) * (v[i] - m.mean);
  const double std = std::sqrt(squares / double(n));
  m.std = std > 0 ? std : 1.0;
  return m;
}

std::vector<double> asDoubles(const std::array<Index, 3>& a) {
  return {double(a[0]), double(a[1]), double(a[2])};
}

// The sample's arrays: every channel normalised and centred in S^3, and the labels alike.
struct SampleArrays {
  std::vector<float> volume;  // [C, S, S, S]
  std::vector<std::uint8_t> segmentation;
  std::vector<double> means, stds;
};

SampleArrays sampleArrays(const NiftiVolume& image, const NiftiVolume& labels, Index S) {
  const Index C = image.channels, n = image.voxels();
  const Index H = image.extent[1], W = image.extent[2];
  SampleArrays a;
  a.volume.reserve(static_cast<std::size_t>(C * S * S * S));
  for (Index c = 0; c < C; ++c) {
    const double* channel = image.values.data() + c * n;
    const Moments m = moments(channel, n);
    a.means.push_back(m.mean);
    a.stds.push_back(m.std);
    const std::vector<float> cube =
        centredCube<float>(image.extent, S, 0.0f, [&](Index d, Index h, Index w) {
          return static_cast<float>((channel[(d * H + h) * W + w] - m.mean) / m.std);
        });
    a.volume.insert(a.volume.end(), cube.begin(), cube.end());
  }
  a.segmentation = centredCube<std::uint8_t>(labels.extent, S, 0, [&](Index d, Index h, Index w) {
    return static_cast<std::uint8_t>(labels.values[(d * H + h) * W + w]);
  });
  return a;
}

// sampleArrays, or one line naming the size and the memory when the machine has too little.
SampleArrays sampleArraysOrFail(const NiftiVolume& image, const NiftiVolume& labels, Index S) {
  try {
    return sampleArrays(image, labels, S);
  } catch (const std::bad_alloc&) {
    // The volume, one channel's cube while it is built, and the labels.
    const double bytes = double(S) * double(S) * double(S) * (4.0 * double(image.channels + 1) + 1);
    fail("--size ", S, ": ", image.path, " as a sample of ", image.channels, " channel(s) of ", S,
         "^3 voxels needs ", bytes / double(1 << 30),
         " GiB of memory, which could not be allocated; give a smaller --size");
  }
}

}  // namespace

NiftiSampleInfo convertNiftiPair(const NiftiImportOptions& o, const std::string& name,
                                 const std::string& samplePath) {
  const NiftiVolume image = readNiftiVolume((fs::path(o.imagesDir) / name).string());
  const NiftiVolume labels = readNiftiVolume((fs::path(o.labelsDir) / name).string());
  checkLabels(labels, image, o.classes);

  const Index S = o.size, C = image.channels;
  const SampleArrays a = sampleArraysOrFail(image, labels, S);
  std::vector<double> offset;
  for (int a = 0; a < 3; ++a)
    offset.push_back(double(centredPlacement(image.extent[a], S).offset()));
  SampleWriter file(MPI_COMM_SELF, samplePath);
  file.writeWhole("volume", {C, S, S, S}, a.volume.data());
  file.writeWhole("segmentation", {S, S, S}, a.segmentation.data());
  file.attribute("generator", "hybrid3d import nifti");
  file.attribute("source_image", name);
  file.attribute("nifti_version", double(image.version));
  file.attribute("source_datatype", image.datatype);
  file.attribute("spacing", std::vector<double>(image.spacing.begin(), image.spacing.end()));
  file.attribute("spacing_units", image.spacingUnits);
  file.attribute("source_shape", asDoubles(image.extent));
  file.attribute("source_offset", offset);
  file.attribute("channel_mean", a.means);
  file.attribute("channel_std", a.stds);
  file.commit();

  std::ostringstream line;
  line << name << "  " << xyz(image.extent) << (C > 1 ? "x" + std::to_string(C) : "") << " "
       << image.datatype << " NIfTI-" << image.version << ", spacing " << image.spacing[2] << "x"
       << image.spacing[1] << "x" << image.spacing[0] << " " << image.spacingUnits << " -> " << C
       << "x" << S << "^3";
  return {name, line.str(), C};
}

}  // namespace hybrid3d::generate
