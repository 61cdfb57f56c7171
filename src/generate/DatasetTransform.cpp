#include <hybrid3d/core/Error.hpp>
#include <hybrid3d/data/ChannelStatistics.hpp>
#include <hybrid3d/data/CollectiveVerdict.hpp>
#include <hybrid3d/data/Dataset.hpp>
#include <hybrid3d/data/FilesOverRanks.hpp>
#include <hybrid3d/generate/DatasetTransform.hpp>
#include <hybrid3d/generate/GenerateDataset.hpp>
#include <hybrid3d/generate/StagedFiles.hpp>
#include <hybrid3d/generate/WholeSample.hpp>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <sstream>

namespace hybrid3d::generate {

namespace {

namespace fs = std::filesystem;

// A directory as the file system names it, so ./d, d/ and d are one directory.
fs::path canonicalOrSelf(const std::string& dir) {
  std::error_code ec;
  const fs::path p = fs::weakly_canonical(fs::path(dir), ec);
  return ec ? fs::path(dir) : p;
}

// A dataset without manifest.txt (the published CosmoFlow files, MLPerf HPC's numpy pairs, any
// directory `train` reads): its samples as a training run lists them, per split folder (train/,
// validation/, test/) where it has such folders, else the directory itself as the train split;
// cosmology samples (/full and /unitPar, as `train` reads them) of the first file's width.
Manifest manifestOfFiles(const std::string& dir) {
  std::vector<std::string> splits;
  std::error_code ec;
  for (const char* split : {"train", "validation", "test"})
    if (fs::is_directory(fs::path(dir) / split, ec)) splits.push_back(split);
  Manifest m;
  m.generator = "cosmology";
  for (const std::string& split : splits.empty() ? std::vector<std::string>{""} : splits) {
    const data::Dataset files =
        data::Dataset::open(split.empty() ? dir : (fs::path(dir) / split).string());
    m.splits.push_back({split.empty() ? "train" : split, files.size()});
    for (const std::string& file : files.files()) {
      ManifestSample s;
      s.split = m.splits.back().first;
      s.file = fs::path(file).lexically_relative(dir).string();
      s.index = m.samples.size();
      m.samples.push_back(s);
    }
  }
  const std::string first = (fs::path(dir) / m.samples.at(0).file).string();
  const data::SampleSpec spec = data::inputSpecOf(first);
  if (spec.extents[1] != spec.extents[0] || spec.extents[2] != spec.extents[0])
    fail(first, ": /full is ", spec.extents[0], "x", spec.extents[1], "x", spec.extents[2],
         " voxels, not a cube");
  m.size = spec.extents[0];
  return m;
}

// Rank 0 checks the directories and reads the manifest (or lists the files of a dataset that
// has none); every rank gets the same verdict and the same manifest.
Manifest readSourceManifest(MPI_Comm comm, const DatasetTransform& t) {
  int rank = 0;
  MPI_Comm_rank(comm, &rank);
  const std::string path = (fs::path(t.inDir) / "manifest.txt").string();
  std::string text;
  data::collectively(comm, [&] {
    if (rank != 0) return;
    std::error_code ec;
    if (!fs::is_directory(t.inDir, ec))
      fail("--in: ", t.inDir, " is not a directory (", t.command,
           " reads a dataset directory, with a manifest.txt or sample files as train reads them)");
    const Manifest m = fs::exists(path, ec) ? readManifest(path) : manifestOfFiles(t.inDir);
    t.check(m);
    if (canonicalOrSelf(t.inDir) == canonicalOrSelf(t.outDir))
      fail("--out: ", t.outDir, " is the input directory; the files would be overwritten");
    const std::string error = prepareSplitDirectories(t.outDir, m.splits);
    if (!error.empty()) throw Error(error);
    text = manifestText(m);
  });
  long long bytes = static_cast<long long>(text.size());
  MPI_Bcast(&bytes, 1, MPI_LONG_LONG, 0, comm);
  text.resize(std::size_t(bytes));
  MPI_Bcast(text.data(), int(bytes), MPI_CHAR, 0, comm);
  std::istringstream in(text);
  return parseManifest(in, path);
}

// The new dataset's files, checked before any is written: each inside --out, none twice (two
// sources of one name, a.hdf5 and a.h5, would write one file).
void refuseClashingOutputs(const std::vector<ManifestSample>& outputs, const std::string& outDir) {
  std::map<std::string, std::size_t> seen;
  for (const ManifestSample& out : outputs) {
    if (!staysInside(out.file)) fail("--out: ", out.file, " would be written outside ", outDir);
    if (!seen.emplace(fs::path(out.file).lexically_normal().string(), 0).second)
      fail("--out: two samples of the source would both be written as ", outDir, "/", out.file);
  }
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
  m.source = t.inDir;
  m.samples.clear();
  m.statistics.clear();  // of other voxels: `hybrid3d stats` computes the new dataset's
  std::vector<std::vector<std::string>> outPaths(source.samples.size());
  std::map<std::string, Index> perSplit;
  for (std::size_t i = 0; i < source.samples.size(); ++i) {
    ManifestSample own = source.samples[i];
    own.file = ownSampleName(own.file, own.split);
    for (const ManifestSample& out : t.outputsOf(source, own)) {
      outPaths[i].push_back((fs::path(t.outDir) / out.file).string());
      perSplit[out.split] += 1;
      m.samples.push_back(out);
    }
  }
  refuseClashingOutputs(m.samples, t.outDir);  // the same verdict on every rank
  for (auto& [split, count] : m.splits) count = perSplit[split];
  // Written under staging names and renamed together: a transform stopped on its third file
  // leaves no piece where a training run would list it.
  StagedFiles staged;
  data::forEachFileOfThisRank(comm, source.samples.size(), [&](std::size_t i) {
    std::vector<std::string> names;
    for (const std::string& out : outPaths[i]) names.push_back(staged.stage(out));
    t.write(source, (fs::path(t.inDir) / source.samples[i].file).string(), names);
  });
  staged.publish(comm);
  t.describe(source, m);
  data::collectively(comm, [&] {
    if (rank == 0) writeManifest(m, (fs::path(t.outDir) / "manifest.txt").string());
  });
  return m;
}

}  // namespace hybrid3d::generate
