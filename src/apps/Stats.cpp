// `hybrid3d stats DIR [--log1p]`: per-channel mean and standard deviation of a training set,
// over all ranks in one pass, printed as the deck lines `channel offset` and `channel scale`,
// recorded in the dataset's manifest and in the cache a deck's `auto` reads.
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include <mpi.h>

#include <hybrid3d/core/Error.hpp>
#include <hybrid3d/core/ExactText.hpp>
#include <hybrid3d/data/ChannelStatisticsCache.hpp>
#include <hybrid3d/data/CollectiveVerdict.hpp>
#include <hybrid3d/generate/Manifest.hpp>

#include "Command.hpp"

namespace {

namespace fs = std::filesystem;
using namespace hybrid3d;

struct StatsOptions {
  std::string dir;
  bool log1p = false;
};

StatsOptions parseStatsOptions(const std::vector<std::string>& args) {
  StatsOptions o;
  for (const std::string& a : args) {
    if (a == "--log1p")
      o.log1p = true;
    else if (a.rfind("--", 0) == 0 || !o.dir.empty())
      fail("stats: unknown argument '", a, "' (DIR [--log1p])");
    else
      o.dir = a;
  }
  if (o.dir.empty()) fail("stats: missing DIR (a dataset, its train directory or a list file)");
  return o;
}

// The training set of DIR: DIR/train when DIR holds a dataset (manifest.txt), else DIR itself.
std::string trainingSetOf(const std::string& dir) {
  std::error_code ec;
  if (fs::exists(fs::path(dir) / "manifest.txt", ec) && fs::is_directory(fs::path(dir) / "train"))
    return (fs::path(dir) / "train").string();
  return dir;
}

// The manifest of the dataset the training set belongs to, or "" when it has none.
std::string manifestOf(const std::string& trainingSet) {
  std::error_code ec;
  const fs::path parent = fs::path(trainingSet).parent_path();
  const fs::path beside = (parent.empty() ? fs::path(".") : parent) / "manifest.txt";
  const fs::path inside = fs::path(trainingSet) / "manifest.txt";
  if (fs::is_directory(trainingSet, ec) && fs::exists(inside, ec)) return inside.string();
  if (fs::path(trainingSet).filename() == "train" && fs::exists(beside, ec)) return beside.string();
  return "";
}

// The manifest's record of these statistics (replacing the one of the same log1p flag), or a
// note why there is none.
std::string record(const std::string& manifest, const data::ChannelStatistics& s) {
  if (manifest.empty()) return "no manifest.txt beside the data: statistics not recorded";
  generate::Manifest m = generate::readManifest(manifest);
  std::vector<generate::ManifestStatistics> kept;
  for (const auto& st : m.statistics)
    if (st.log1p != s.log1p) kept.push_back(st);
  kept.push_back({s.log1p, s.samples, s.mean, s.std});
  m.statistics = kept;
  try {
    generate::writeManifest(m, manifest);
  } catch (const Error& e) {
    return std::string("not recorded: ") + e.what();
  }
  return "recorded in " + manifest;
}

std::string deckList(const std::vector<double>& v) {
  std::string out;
  for (double x : v) out += (out.empty() ? "" : ", ") + exactText(x);
  return "{" + out + "}";
}

int runStats(const std::vector<std::string>& args) {
  const StatsOptions o = parseStatsOptions(args);
  int rank = 0, ranks = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &ranks);
  const double start = MPI_Wtime();
  // Listed on rank 0 and broadcast, as training lists its data.
  const data::Dataset set = data::Dataset::listOnce(
      MPI_COMM_WORLD, [&] { return data::Dataset::open(trainingSetOf(o.dir)); });
  // Every file's shape, so that the odd one is named whichever file it is.
  const data::SampleSpec spec = data::commonInputSpec(MPI_COMM_WORLD, set);
  const data::CachedStatistics r = data::cachedChannelStatistics(
      MPI_COMM_WORLD, set, spec, o.log1p, data::channelStatisticsCachePath(set.source(), o.log1p));
  const data::ChannelStatistics& s = r.statistics;
  std::string recorded;
  data::collectively(MPI_COMM_WORLD, [&] {
    if (rank == 0) recorded = record(manifestOf(set.source()), s);
  });
  if (rank != 0) return 0;
  std::printf(
      "stats: %lld samples of %s (%d channels of %lldx%lldx%lld)%s on %d rank(s) in "
      "%.2f s; %s\n",
      static_cast<long long>(s.samples), set.source().c_str(), spec.channels,
      static_cast<long long>(spec.extents[0]), static_cast<long long>(spec.extents[1]),
      static_cast<long long>(spec.extents[2]), o.log1p ? ", after log1p," : "", ranks,
      MPI_Wtime() - start, r.note.c_str());
  for (std::size_t c = 0; c < s.mean.size(); ++c)
    std::printf("  channel %zu: mean %.6g, standard deviation %.6g\n", c, s.mean[c], s.std[c]);
  std::printf(
      "deck lines (Data section%s; y = (%s - offset) * scale then has mean 0 and "
      "standard deviation 1 per channel):\n",
      o.log1p ? ", with log1p true" : "", o.log1p ? "log1p(x)" : "x");
  std::printf("    <Parameter name=\"channel offset\" type=\"Array(double)\" value=\"%s\"/>\n",
              deckList(s.offsets()).c_str());
  std::printf("    <Parameter name=\"channel scale\" type=\"Array(double)\" value=\"%s\"/>\n",
              deckList(s.scales()).c_str());
  std::printf("manifest: %s\n", recorded.c_str());
  return 0;
}

const app::Registration registration{
    "stats",
    {"DIR [--log1p]",
     "per-channel mean and standard deviation of a training set, printed as the deck lines "
     "channel offset / channel scale",
     "  DIR                  a dataset (manifest.txt: its train/ directory), a directory of "
     "sample files or a list file\n"
     "  --log1p              of log(1 + x), for decks with Data/log1p true\n",
     "mpirun -n 2 hybrid3d stats hybrid3d_demo_data --log1p"},
    runStats};

}  // namespace
