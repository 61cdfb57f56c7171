// The dataset driver of `hybrid3d generate`: directories, splits, samples, manifest.
#include <hybrid3d/core/Error.hpp>
#include <hybrid3d/generate/CosmologyGenerator.hpp>
#include <hybrid3d/generate/GenerateDataset.hpp>
#include <hybrid3d/generate/SegmentationGenerator.hpp>

#include <cstdio>
#include <filesystem>
#include <fstream>

namespace hybrid3d::generate {

namespace {

namespace fs = std::filesystem;

// Runs `check` on rank 0 (file-system work is done once) and throws the same error on every
// rank when it returned a message, so no rank is left waiting in a collective.
template <class Check>
void checkOnRoot(MPI_Comm comm, Check check) {
  int rank = 0;
  MPI_Comm_rank(comm, &rank);
  std::string message;
  if (rank == 0) message = check();
  int length = static_cast<int>(message.size());
  MPI_Bcast(&length, 1, MPI_INT, 0, comm);
  message.resize(static_cast<std::size_t>(length));
  MPI_Bcast(message.data(), length, MPI_CHAR, 0, comm);
  if (!message.empty()) throw Error(message);
}

std::string sampleFileName(const std::string& generator, std::uint64_t index) {
  char name[64];
  std::snprintf(name, sizeof name, "%s_%06llu.h5", generator == "cosmology" ? "cosmo" : "seg",
                static_cast<unsigned long long>(index));
  return name;
}

Manifest emptyManifest(const GenerateOptions& o) {
  Manifest m;
  m.generator = o.generator;
  m.size = o.size;
  m.seed = o.seed;
  m.splits = {{"train", o.train}, {"validation", o.validation}, {"test", o.test}};
  if (o.generator == "cosmology") {
    m.settings = {{"mean_count", o.meanCount}};
    for (const auto& r : cosmologyParameterRanges()) m.parameters.push_back({r.name, r.lo, r.hi});
    m.hasTargets = true;
  } else {
    m.parameters = {{"lesions", kMinLesions, kMaxLesions},
                    {"organ_radius", kOrganRadiusLo, kOrganRadiusHi}};
  }
  return m;
}

}  // namespace

std::string prepareSplitDirectories(const std::string& outDir,
                                    const std::vector<std::pair<std::string, Index>>& splits) {
  for (const auto& [split, count] : splits) {
    if (count == 0) continue;
    const fs::path dir = fs::path(outDir) / split;
    std::error_code ec;
    fs::create_directories(dir, ec);
    if (ec) return "--out: cannot create directory '" + dir.string() + "': " + ec.message();
    const fs::path probe = dir / ".hybrid3d_write_probe";
    if (!std::ofstream(probe).good())
      return "--out: directory '" + dir.string() + "' is not writable";
    fs::remove(probe, ec);
  }
  return {};
}

Manifest generateDataset(MPI_Comm comm, const GenerateOptions& o,
                         const std::function<void(const ManifestSample&, double)>& onSample) {
  int ranks = 1;
  MPI_Comm_size(comm, &ranks);
  if (o.size < ranks)
    fail("--size: ", o.size, " is smaller than the number of ranks (", ranks,
         "); every rank needs at least one plane of the volume");
  checkOnRoot(comm, [&] {
    return prepareSplitDirectories(
        o.outDir, {{"train", o.train}, {"validation", o.validation}, {"test", o.test}});
  });

  Manifest m = emptyManifest(o);
  std::uint64_t index = 0;
  for (const auto& [split, count] : m.splits) {
    for (Index i = 0; i < count; ++i, ++index) {
      ManifestSample s;
      s.split = split;
      s.file = split + "/" + sampleFileName(o.generator, index);
      s.index = index;
      const std::string path = (fs::path(o.outDir) / s.file).string();
      const double start = MPI_Wtime();
      if (o.generator == "cosmology") {
        const CosmologyParameters p =
            o.fixedParameters ? *o.fixedParameters : drawCosmologyParameters(o.seed, index);
        writeCosmologySample(comm, {o.size, o.meanCount}, p, o.seed, index, path);
        const auto v = p.values();
        const auto u = toUnitParameters(p);
        s.parameters.assign(v.begin(), v.end());
        s.unitPar.assign(u.begin(), u.end());
      } else {
        writeSegmentationSample(comm, {o.size}, o.seed, index, path);
        const SegmentationScene scene = drawSegmentationScene(o.size, o.seed, index);
        s.parameters = {static_cast<double>(scene.lesions.size()),
                        (scene.organRadii[0] + scene.organRadii[1] + scene.organRadii[2]) / 3};
      }
      MPI_Barrier(comm);  // the time of the slowest rank
      const double seconds = MPI_Wtime() - start;
      m.samples.push_back(s);
      if (onSample) onSample(s, seconds);
    }
  }
  checkOnRoot(comm, [&]() -> std::string {
    try {
      writeManifest(m, (fs::path(o.outDir) / "manifest.txt").string());
    } catch (const Error& e) {
      return e.what();
    }
    return {};
  });
  return m;
}

}  // namespace hybrid3d::generate
