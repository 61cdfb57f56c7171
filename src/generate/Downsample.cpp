#include <hybrid3d/core/Error.hpp>
#include <hybrid3d/generate/DatasetTransform.hpp>
#include <hybrid3d/generate/Downsample.hpp>
#include <hybrid3d/generate/SampleWriter.hpp>
#include <hybrid3d/generate/WholeSample.hpp>

#include <cstdint>

#include <Kokkos_Core.hpp>

namespace hybrid3d::generate {

namespace {

// One sample file, read whole by this rank and written again at 1/factor the resolution, as
// float32 [C, S, S, S] whatever its stored type and channel order.
void downsampleFile(const std::string& in, const std::string& out, Index width, Index factor) {
  WholeSample source = readWholeSample(in, width);
  const std::vector<float> fine = floatChannelsFirst(source);
  std::vector<std::int16_t>().swap(source.int16);  // the stored values are not needed any more
  std::vector<float>().swap(source.float32);
  const Index C = source.channels, s = width / factor;
  const std::vector<float> coarse = blockMean(fine, C, width, factor);

  SampleWriter file(MPI_COMM_SELF, out);
  file.writeSlab("full", {C, s, s, s}, 1, 0, s, coarse.data());
  copyTargetsAndAttributes(source, file, {"layout", "downsample_factor", "source_size"});
  file.attribute("downsample_factor", static_cast<double>(factor));
  file.attribute("source_size", static_cast<double>(width));
  file.commit();
}

}  // namespace

std::string downsampleUsage() { return "--in DIR --out DIR --factor F"; }

DownsampleOptions parseDownsampleOptions(const std::vector<std::string>& args) {
  DownsampleOptions o;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& flag = args[i];
    if (flag != "--in" && flag != "--out" && flag != "--factor")
      fail("downsample: unknown argument '", flag, "' (", downsampleUsage(), ")");
    if (i + 1 >= args.size()) fail(flag, ": missing value");
    const std::string& value = args[++i];
    if (flag == "--in") o.inDir = value;
    if (flag == "--out") o.outDir = value;
    if (flag == "--factor") o.factor = parseWholeOption("--factor", value, 2, 1024);
  }
  if (o.inDir.empty()) fail("--in: missing (the dataset to downsample)");
  if (o.outDir.empty()) fail("--out: missing (the directory of the downsampled dataset)");
  if (o.factor == 0) fail("--factor: missing (2 halves the resolution, 4 quarters it)");
  return o;
}

std::vector<float> blockMean(const std::vector<float>& volume, Index channels, Index size,
                             Index factor) {
  using HostExec = Kokkos::DefaultHostExecutionSpace;
  const Index s = size / factor;
  std::vector<float> out(static_cast<std::size_t>(channels * s * s * s));
  const float* in = volume.data();
  float* coarse = out.data();
  const double weight = 1.0 / double(factor * factor * factor);
  Kokkos::parallel_for(
      "hybrid3d::generate::blockMean",
      Kokkos::MDRangePolicy<HostExec, Kokkos::Rank<3>>(HostExec(), {0, 0, 0}, {channels, s, s}),
      [=](Index c, Index d, Index h) {
        for (Index w = 0; w < s; ++w) {
          double sum = 0;  // in double: a 4^3 block of counts in float would round
          for (Index i = 0; i < factor; ++i)
            for (Index j = 0; j < factor; ++j) {
              const float* row = in + ((c * size + d * factor + i) * size + h * factor + j) * size;
              for (Index k = 0; k < factor; ++k) sum += row[w * factor + k];
            }
          coarse[((c * s + d) * s + h) * s + w] = static_cast<float>(sum * weight);
        }
      });
  return out;
}

Manifest downsampleDataset(MPI_Comm comm, const DownsampleOptions& o) {
  DatasetTransform t;
  t.command = "downsample";
  t.inDir = o.inDir;
  t.outDir = o.outDir;
  t.check = [&](const Manifest& m) {
    if (m.generator != "cosmology")
      fail("--in: ", o.inDir, " holds a ", m.generator,
           " dataset; only cosmology densities are averaged (labels are not)");
    if (m.size % o.factor != 0)
      fail("--factor: ", o.factor, " does not divide the dataset's size ", m.size);
  };
  // The same relative name, one file for one.
  t.outputsOf = [](const Manifest&, const ManifestSample& s) {
    return std::vector<ManifestSample>{s};
  };
  t.write = [&](const Manifest& m, const std::string& in, const std::vector<std::string>& out) {
    downsampleFile(in, out.at(0), m.size, o.factor);
  };
  t.describe = [&](const Manifest& source, Manifest& m) {
    m.size = source.size / o.factor;
    m.settings.push_back({"downsample_factor", double(o.factor)});
    m.settings.push_back({"source_size", double(source.size)});
  };
  return transformDataset(comm, t);
}

}  // namespace hybrid3d::generate
