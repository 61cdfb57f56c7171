#include <hybrid3d/core/Error.hpp>
#include <hybrid3d/data/CollectiveVerdict.hpp>
#include <hybrid3d/data/FilesOverRanks.hpp>
#include <hybrid3d/generate/DatasetTransform.hpp>
#include <hybrid3d/generate/GenerateDataset.hpp>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <map>

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
Manifest readSourceManifest(MPI_Comm comm, const DatasetTransform& t) {
  int rank = 0;
  MPI_Comm_rank(comm, &rank);
  const std::string path = (fs::path(t.inDir) / "manifest.txt").string();
  Manifest m;
  data::collectively(comm, [&] {
    if (rank != 0) return;
    if (!fs::exists(path))
      fail("--in: ", path, " is missing (", t.command,
           " reads datasets written by hybrid3d generate)");
    m = readManifest(path);
    t.check(m);
    if (canonicalOrSelf(t.inDir) == canonicalOrSelf(t.outDir))
      fail("--out: ", t.outDir, " is the input directory; the files would be overwritten");
    const std::string error = prepareSplitDirectories(t.outDir, m.splits);
    if (!error.empty()) throw Error(error);
  });
  // Every rank reads sample files anyway, so each reads the manifest too.
  data::collectively(comm, [&] {
    if (rank != 0) m = readManifest(path);
  });
  return m;
}

}  // namespace

void copyTargetsAndAttributes(const data::File& source, SampleWriter& file,
                              const std::vector<std::string>& rewritten) {
  if (source.hasDataset("/unitPar")) {
    const std::vector<float> targets = source.read<float>("/unitPar");
    file.writeWhole("unitPar", source.shape("/unitPar"), targets.data());
  }
  for (const std::string& name : source.attributeNames()) {
    if (std::find(rewritten.begin(), rewritten.end(), name) != rewritten.end()) continue;
    if (source.attributeIsString(name))
      file.attribute(name, source.attributeString(name));
    else
      file.attribute(name, source.attributeNumber(name));
  }
}

Index parseWholeOption(const std::string& flag, const std::string& text, Index lo, Index hi) {
  char* end = nullptr;
  errno = 0;
  const long long v = std::strtoll(text.c_str(), &end, 10);
  if (text.empty() || *end != '\0' || errno == ERANGE || v < lo || v > hi)
    fail(flag, ": '", text, "' is not a whole number in [", lo, ", ", hi, "]");
  return static_cast<Index>(v);
}

Manifest transformDataset(MPI_Comm comm, const DatasetTransform& t) {
  int rank = 0;
  MPI_Comm_rank(comm, &rank);
  const Manifest source = readSourceManifest(comm, t);
  Manifest m = source;
  m.samples.clear();
  m.statistics.clear();  // of other voxels: `hybrid3d stats` computes the new dataset's
  std::vector<std::vector<std::string>> outPaths(source.samples.size());
  std::map<std::string, Index> perSplit;
  for (std::size_t i = 0; i < source.samples.size(); ++i)
    for (const ManifestSample& out : t.outputsOf(source, source.samples[i])) {
      outPaths[i].push_back((fs::path(t.outDir) / out.file).string());
      perSplit[out.split] += 1;
      m.samples.push_back(out);
    }
  for (auto& [split, count] : m.splits) count = perSplit[split];
  data::forEachFileOfThisRank(comm, source.samples.size(), [&](std::size_t i) {
    t.write(source, (fs::path(t.inDir) / source.samples[i].file).string(), outPaths[i]);
  });
  t.describe(source, m);
  data::collectively(comm, [&] {
    if (rank == 0) writeManifest(m, (fs::path(t.outDir) / "manifest.txt").string());
  });
  return m;
}

}  // namespace hybrid3d::generate
