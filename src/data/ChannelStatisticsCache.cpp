#include <hybrid3d/core/Error.hpp>
#include <hybrid3d/core/ExactText.hpp>
#include <hybrid3d/data/ChannelStatisticsCache.hpp>

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace hybrid3d::data {

namespace {

namespace fs = std::filesystem;

enum Found : int { Missing, Valid, Stale, Damaged };

// FNV-1a, 64 bits: what the key needs (a changed dataset is told apart; no adversary).
std::uint64_t digest(const std::string& text) {
  std::uint64_t h = 14695981039346656037ull;
  for (unsigned char ch : text) {
    h ^= ch;
    h *= 1099511628211ull;
  }
  return h;
}

// On rank 0: the key of the dataset as it is now. Files are named relative to the cache's
// folder, so `stats DIR` and a deck naming DIR/train by another path (absolute, ./) share it.
std::string keyOf(const Dataset& set, const SampleSpec& spec, bool log1p,
                  const std::string& cachePath) {
  std::error_code ec;
  const fs::path folder = fs::weakly_canonical(fs::path(cachePath).parent_path(), ec);
  std::ostringstream text;
  text << "log1p " << log1p << "\nchannels " << spec.channels << "\nextents " << spec.extents[0]
       << " " << spec.extents[1] << " " << spec.extents[2] << "\n";
  for (Index i = 0; i < set.size(); ++i) {
    std::error_code timeError, nameError;
    const auto time = fs::last_write_time(set.file(i), timeError);
    const fs::path file = fs::weakly_canonical(set.file(i), nameError);
    text << (nameError || ec ? fs::path(set.file(i)) : file.lexically_relative(folder)).string()
         << "\t" << set.bytes(i) << "\t"
         << (timeError ? -1 : static_cast<long long>(time.time_since_epoch().count())) << "\n";
  }
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(digest(text.str())));
  return hex;
}

std::string numbers(const std::vector<double>& v) {
  std::string out;
  for (double x : v) out += " " + exactText(x);
  return out;
}

// Reads `path`; Missing, Valid (s filled), Stale (another key) or Damaged (why in `problem`).
Found readCache(const std::string& path, const std::string& key, int channels, ChannelStatistics& s,
                std::string& problem) {
  std::ifstream in(path);
  if (!in) return fs::exists(path) ? (problem = "cannot be read", Damaged) : Missing;
  std::string line, word, cachedKey;
  bool sawSamples = false, sawLog1p = false;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream words(line);
    words >> word;
    std::vector<double>* list = word == "mean" ? &s.mean : word == "std" ? &s.std : nullptr;
    if (word == "key") {
      words >> cachedKey;
    } else if (word == "samples") {
      sawSamples = static_cast<bool>(words >> s.samples);
    } else if (word == "log1p") {
      sawLog1p = static_cast<bool>(words >> s.log1p);
    } else if (list) {
      double v;
      while (words >> v) list->push_back(v);
      if (!words.eof()) return problem = "a malformed '" + word + "' line", Damaged;
    } else {
      return problem = "an unknown line '" + line + "'", Damaged;
    }
  }
  if (cachedKey.empty() || !sawSamples || !sawLog1p)
    return problem = "no key, samples or log1p line", Damaged;
  if (cachedKey != key) return Stale;
  if (int(s.mean.size()) != channels || int(s.std.size()) != channels)
    return problem = "not one mean and std per channel", Damaged;
  for (double sd : s.std)
    if (!(sd > 0)) return problem = "a standard deviation that is not positive", Damaged;
  return Valid;
}

// Writes the cache atomically; false when the directory cannot be written.
bool writeCache(const std::string& path, const std::string& key, const ChannelStatistics& s) {
  const std::string temporary = path + ".tmp";
  {
    std::ofstream out(temporary);
    if (!out) return false;
    out << "# hybrid3d channel statistics of a training set (data/ChannelStatisticsCache.hpp):\n"
        << "# recomputed when its files, their sizes or times, or log1p change\n"
        << "key " << key << "\nsamples " << s.samples << "\nlog1p " << s.log1p << "\nmean"
        << numbers(s.mean) << "\nstd" << numbers(s.std) << "\n";
    out.flush();
    if (!out) {
      std::remove(temporary.c_str());
      return false;
    }
  }
  if (std::rename(temporary.c_str(), path.c_str()) != 0) {
    std::remove(temporary.c_str());
    return false;
  }
  return true;
}

void broadcast(MPI_Comm comm, std::vector<double>& v) {
  int n = int(v.size());
  MPI_Bcast(&n, 1, MPI_INT, 0, comm);
  v.resize(std::size_t(n));
  MPI_Bcast(v.data(), n, MPI_DOUBLE, 0, comm);
}

}  // namespace

std::string channelStatisticsCachePath(const std::string& path, bool log1p) {
  const std::string name = std::string("hybrid3d_channel_statistics") + (log1p ? "_log1p" : "");
  std::error_code ec;
  if (fs::is_directory(path, ec)) return (fs::path(path) / ("." + name)).string();
  const fs::path list(path);
  return (list.parent_path() / ("." + list.filename().string() + "." + name)).string();
}

CachedStatistics cachedChannelStatistics(MPI_Comm comm, const Dataset& set, const SampleSpec& spec,
                                         bool log1p, const std::string& cachePath) {
  int rank = 0;
  MPI_Comm_rank(comm, &rank);
  CachedStatistics r;
  std::string key, problem;
  int found = Missing;
  if (rank == 0 && !cachePath.empty()) {
    key = keyOf(set, spec, log1p, cachePath);
    found = readCache(cachePath, key, spec.channels, r.statistics, problem);
  }
  MPI_Bcast(&found, 1, MPI_INT, 0, comm);
  if (found == Valid) {
    broadcast(comm, r.statistics.mean);
    broadcast(comm, r.statistics.std);
    r.statistics.samples = set.size();
    r.statistics.log1p = log1p;
    r.fromCache = true;
    r.note = "read from " + cachePath;
    return r;
  }
  r.statistics = channelStatistics(comm, set, spec, log1p);
  if (rank != 0) return r;
  if (cachePath.empty()) {
    r.note = "not cached (the training files were given one by one)";
  } else if (!writeCache(cachePath, key, r.statistics)) {
    r.note = "not cached: cannot write " + cachePath + " (read-only directory?)";
  } else {
    r.note =
        found == Stale
            ? "the dataset changed since " + cachePath + " was written: recomputed and cached there"
        : found == Damaged ? cachePath + " was damaged (" + problem + "): recomputed and replaced"
                           : "cached in " + cachePath;
  }
  return r;
}

}  // namespace hybrid3d::data
