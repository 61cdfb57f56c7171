#include <hybrid3d/core/Error.hpp>
#include <hybrid3d/data/CollectiveVerdict.hpp>
#include <hybrid3d/data/Hdf5.hpp>
#include <hybrid3d/generate/Downsample.hpp>
#include <hybrid3d/generate/FilesOverRanks.hpp>
#include <hybrid3d/generate/GenerateDataset.hpp>
#include <hybrid3d/generate/SampleWriter.hpp>

#include <cerrno>
#include <cstdlib>
#include <filesystem>

#include <Kokkos_Core.hpp>

namespace hybrid3d::generate {

namespace {

namespace fs = std::filesystem;

// A directory as the file system names it, so ./d, d/ and d are one directory.
fs::path canonicalOrSelf(const std::string& dir) {
  std::error_code ec;
  const fs::path p = fs::weakly_canonical(fs::path(dir), ec);
  return ec ? fs::path(dir) : p;
}

// Rank 0 checks the directories and reads the manifest; every rank gets the same verdict.
Manifest readSourceManifest(MPI_Comm comm, const DownsampleOptions& o) {
  int rank = 0;
  MPI_Comm_rank(comm, &rank);
  Manifest m;
  data::collectively(comm, [&] {
    if (rank != 0) return;
    const std::string path = (fs::path(o.inDir) / "manifest.txt").string();
    if (!fs::exists(path))
      fail("--in: ", path, " is missing (downsample reads datasets written by hybrid3d generate)");
    m = readManifest(path);
    if (m.generator != "cosmology")
      fail("--in: ", o.inDir, " holds a ", m.generator,
           " dataset; only cosmology densities are averaged (labels are not)");
    if (m.size % o.factor != 0)
      fail("--factor: ", o.factor, " does not divide the dataset's size ", m.size);
    if (canonicalOrSelf(o.inDir) == canonicalOrSelf(o.outDir))
      fail("--out: ", o.outDir, " is the input directory; the files would be overwritten");
    const std::string error = prepareSplitDirectories(o.outDir, m.splits);
    if (!error.empty()) throw Error(error);
  });
  // Every rank reads the sample files anyway, so each reads the manifest too.
  data::collectively(comm, [&] {
    if (rank != 0) m = readManifest((fs::path(o.inDir) / "manifest.txt").string());
  });
  return m;
}

// One sample file, read whole by this rank and written again at 1/factor the resolution.
void downsampleFile(const std::string& in, const std::string& out, Index factor) {
  const data::File source(in);
  const std::vector<Index> shape = source.shape("/full");
  if (shape.size() != 4 || shape[1] != shape[2] || shape[1] != shape[3])
    fail(in, ": /full is not [C, S, S, S]");
  if (source.hasAttribute("layout"))
    fail(in, ": /full is stored channels-last (attribute layout); downsample reads [C, S, S, S]");
  const Index C = shape[0], S = shape[1], s = S / factor;
  if (S % factor != 0) fail(in, ": /full is ", S, " wide, not a multiple of --factor ", factor);
  const std::vector<float> coarse = blockMean(source.read<float>("/full"), C, S, factor);

  SampleWriter file(MPI_COMM_SELF, out);
  file.writeSlab("full", {C, s, s, s}, 1, 0, s, coarse.data());
  if (source.hasDataset("/unitPar")) {
    const std::vector<float> targets = source.read<float>("/unitPar");
    file.writeWhole("unitPar", source.shape("/unitPar"), targets.data());
  }
  for (const std::string& name : source.attributeNames()) {
    if (source.attributeIsString(name))
      file.attribute(name, source.attributeString(name));
    else
      file.attribute(name, source.attributeNumber(name));
  }
  file.attribute("downsample_factor", static_cast<double>(factor));
  file.attribute("source_size", static_cast<double>(S));
  file.commit();
}

Index parseFactor(const std::string& text) {
  char* end = nullptr;
  errno = 0;
  const long long v = std::strtoll(text.c_str(), &end, 10);
  if (text.empty() || *end != '\0' || errno == ERANGE || v < 2 || v > 1024)
    fail("--factor: '", text, "' is not a whole number in [2, 1024]");
  return static_cast<Index>(v);
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
    if (flag == "--factor") o.factor = parseFactor(value);
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
  int rank = 0;
  MPI_Comm_rank(comm, &rank);
  Manifest m = readSourceManifest(comm, o);
  const Index source = m.size;
  forEachFileOfThisRank(comm, m.samples.size(), [&](std::size_t i) {
    downsampleFile((fs::path(o.inDir) / m.samples[i].file).string(),
                   (fs::path(o.outDir) / m.samples[i].file).string(), o.factor);
  });
  m.size = source / o.factor;
  m.settings.push_back({"downsample_factor", double(o.factor)});
  m.settings.push_back({"source_size", double(source)});
  data::collectively(comm, [&] {
    if (rank == 0) writeManifest(m, (fs::path(o.outDir) / "manifest.txt").string());
  });
  return m;
}

}  // namespace hybrid3d::generate
