// The dataset driver of `hybrid3d generate`: directories, splits, samples, manifest.
#include <hybrid3d/core/Error.hpp>
#include <hybrid3d/generate/CosmologyGenerator.hpp>
#include <hybrid3d/generate/GenerateDataset.hpp>
#include <hybrid3d/generate/SegmentationGenerator.hpp>

#include <algorithm>
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

// Entries directly in `dir` (none when it does not exist).
std::vector<std::string> entriesOf(const std::string& dir) {
  std::vector<std::string> names;
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return names;
  for (const auto& e : fs::directory_iterator(dir, ec)) names.push_back(e.path().filename());
  std::sort(names.begin(), names.end());
  return names;
}

// Refuses to write into a directory that is not empty, unless told to replace a dataset there
// (a manifest, or nothing but split directories: an interrupted generation).
std::string refuseNonEmpty(const GenerateOptions& o) {
  const std::vector<std::string> names = entriesOf(o.outDir);
  if (names.empty()) return {};
  if (!o.replace)
    return "--out: " + o.outDir + " is not empty (it holds " + names.front() +
           (names.size() > 1 ? " and " + std::to_string(names.size() - 1) + " more" : "") +
           "); give --replace to replace the dataset there, or an empty directory";
  bool dataset = true;
  for (const std::string& n : names)
    dataset = dataset && (n == "manifest.txt" || n == "train" || n == "validation" || n == "test");
  if (!dataset)
    return "--replace: " + o.outDir + " holds " + names.front() +
           (names.size() > 1 ? " and more" : "") +
           ", which is not part of a dataset; refusing to replace it (give an empty directory)";
  return {};
}

// After a --replace: removes every file under the directory that `m` does not list.
std::size_t removeUnlisted(const std::string& dir, const Manifest& m) {
  std::vector<std::string> keep = {"manifest.txt"};
  for (const ManifestSample& s : m.samples) keep.push_back(s.file);
  std::sort(keep.begin(), keep.end());
  std::size_t removed = 0;
  std::error_code ec;
  std::vector<fs::path> gone;
  for (auto it = fs::recursive_directory_iterator(dir, ec); !ec && it != fs::end(it);
       it.increment(ec)) {
    if (it->is_directory(ec)) continue;
    const std::string rel = fs::relative(it->path(), dir, ec).generic_string();
    if (!std::binary_search(keep.begin(), keep.end(), rel)) gone.push_back(it->path());
  }
  for (const fs::path& p : gone) removed += fs::remove(p, ec) ? 1 : 0;
  for (const char* split : {"train", "validation", "test"}) {
    const fs::path d = fs::path(dir) / split;
    if (fs::is_directory(d, ec) && fs::is_empty(d, ec)) fs::remove(d, ec);
  }
  return removed;
}

}  // namespace

bool existingDatasetMatches(const GenerateOptions& o) {
  const std::string path = (fs::path(o.outDir) / "manifest.txt").string();
  std::error_code ec;
  if (!fs::exists(path, ec)) return false;
  const Manifest m = readManifest(path);
  auto differs = [&](const std::string& what, const std::string& had, const std::string& key,
                     const std::string& wants) {
    fail(path, ": the dataset there was generated with ", what, " ", had, " but the deck's '", key,
         "' is ", wants, "; point 'Data/Generate/directory' elsewhere or remove that dataset");
  };
  if (m.generator != o.generator)
    differs("generator", m.generator, "Data/Generate/generator", o.generator);
  if (m.size != o.size)
    differs("size", std::to_string(m.size), "Model/input width", std::to_string(o.size));
  if (m.seed != o.seed)
    differs("seed", std::to_string(m.seed), "Data/Generate/seed", std::to_string(o.seed));
  auto count = [&](const std::string& split) {
    for (const auto& [name, n] : m.splits)
      if (name == split) return n;
    return Index(0);
  };
  if (count("train") != o.train)
    differs("train samples", std::to_string(count("train")), "Data/Generate/train samples",
            std::to_string(o.train));
  if (count("validation") != o.validation)
    differs("validation samples", std::to_string(count("validation")),
            "Data/Generate/validation samples", std::to_string(o.validation));
  for (const auto& [name, value] : m.settings)
    if (name == "mean_count" && o.generator == "cosmology" && value != o.meanCount)
      differs("mean count", Impl::concat(value), "Data/Generate/mean count",
              Impl::concat(o.meanCount));
  return true;
}

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
    const std::string refused = refuseNonEmpty(o);
    if (!refused.empty()) return refused;
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
      if (o.replace) {
        const std::size_t removed = removeUnlisted(o.outDir, m);
        if (removed > 0)
          std::printf(
              "generate --replace: removed %zu file(s) of %s that the new manifest does "
              "not list\n",
              removed, o.outDir.c_str());
      }
    } catch (const Error& e) {
      return e.what();
    }
    return {};
  });
  return m;
}

}  // namespace hybrid3d::generate
