#include <hybrid3d/engines/ConvTimings.hpp>

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <set>
#include <sstream>

#include <Kokkos_Core.hpp>

#include <hybrid3d/Config.hpp>
#include <hybrid3d/core/Error.hpp>
#if HYBRID3D_ENABLE_ONEDNN
#include <hybrid3d/engines/impl/OneDnnConvolution.hpp>
#endif

namespace hybrid3d {

namespace {

constexpr const char* header = "hybrid3d convolution timings 1";

std::string text(const Index3& v, char separator) {
  return Impl::concat(v[0], separator, v[1], separator, v[2]);
}

// "avx2 fma" etc.: the flags of /proc/cpuinfo that choose among oneDNN's and our kernels.
std::string cpuFlagsThatMatter(const std::string& flags) {
  static const std::set<std::string> matter{"avx",         "avx2",        "fma",      "f16c",
                                            "avx512f",     "avx512bw",    "avx512vl", "avx512_bf16",
                                            "avx512_fp16", "avx512_vnni", "avx_vnni", "amx_bf16",
                                            "amx_tile",    "amx_fp16",    "sve",      "asimd"};
  std::istringstream words(flags);
  std::string word, kept;
  while (words >> word)
    if (matter.count(word)) kept += (kept.empty() ? "" : " ") + word;
  return kept;
}

// The value of the first /proc/cpuinfo line starting with `field` ("" when absent).
std::string cpuInfoField(const std::string& field) {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line))
    if (line.compare(0, field.size(), field) == 0) {
      const auto colon = line.find(':');
      if (colon == std::string::npos) continue;
      const auto start = line.find_first_not_of(" \t", colon + 1);
      return start == std::string::npos ? "" : line.substr(start);
    }
  return "";
}

std::string timeText(double seconds) {
  if (!std::isfinite(seconds)) return "-";
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.6g", seconds);
  return buffer;
}

// The times as the file holds them (six digits), so that the process that measured a row and
// one that reads it choose alike even between near-equal times.
ConvTimes asWritten(ConvTimes times) {
  for (auto& pass : times)
    for (double& t : pass)
      if (std::isfinite(t)) t = std::strtod(timeText(t).c_str(), nullptr);
  return times;
}

// One row "KEY t t t ... (12)"; false when it does not parse.
bool parseRow(const std::string& line, std::string& key, ConvTimes& times) {
  std::istringstream in(line);
  if (!(in >> key)) return false;
  for (auto& pass : times)
    for (double& t : pass) {
      std::string word;
      if (!(in >> word)) return false;
      if (word == "-") {
        t = notCandidate;
        continue;
      }
      char* end = nullptr;
      t = std::strtod(word.c_str(), &end);
      if (end == word.c_str() || *end != '\0' || !std::isfinite(t) || t < 0) return false;
    }
  std::string extra;
  return !(in >> extra);
}

// The rows of `path` when it holds this CPU's and these versions' timings; else none, and
// `why` says why ("" when the file does not exist).
std::map<std::string, ConvTimes> readRows(const std::string& path, const std::string& cpu,
                                          const std::string& versions, std::string& why) {
  std::map<std::string, ConvTimes> rows;
  std::ifstream in(path);
  if (!in) return rows;
  auto ignored = [&](const std::string& reason) {
    why = Impl::concat("convolution timings ", path, " ignored: ", reason,
                       "; auto measures again and rewrites it");
    return std::map<std::string, ConvTimes>{};
  };
  std::string line;
  if (!std::getline(in, line) || line != header) return ignored("not a timings file (header)");
  if (!std::getline(in, line) || line.rfind("cpu ", 0) != 0) return ignored("no cpu line");
  if (line.substr(4) != cpu) return ignored("written on another CPU (" + line.substr(4) + ")");
  if (!std::getline(in, line) || line.rfind("versions ", 0) != 0)
    return ignored("no versions line");
  if (line.substr(9) != versions)
    return ignored("written by other library versions (" + line.substr(9) + ")");
  for (int number = 4; std::getline(in, line); ++number) {
    std::string key;
    ConvTimes times;
    if (!parseRow(line, key, times))
      return ignored(Impl::concat("line ", number, " is not a timing row (corrupt)"));
    rows[key] = times;
  }
  return rows;
}

// An exclusive flock on "<path>.lock" for the scope (none when it cannot be taken: the rename
// still keeps the file whole, only a concurrent writer's rows may be lost).
class FileLock {
public:
  explicit FileLock(const std::string& path) : fd_(::open(path.c_str(), O_CREAT | O_RDWR, 0644)) {
    if (fd_ >= 0) ::flock(fd_, LOCK_EX);
  }
  ~FileLock() {
    if (fd_ >= 0) ::close(fd_);  // closing releases the lock
  }
  FileLock(const FileLock&) = delete;
  FileLock& operator=(const FileLock&) = delete;

private:
  int fd_;
};

std::string uniqueTemporary(const std::string& path) {
  char host[256] = "host";
  ::gethostname(host, sizeof host - 1);
  static int counter = 0;
  return Impl::concat(path, ".tmp.", host, ".", ::getpid(), ".", ++counter);
}

}  // namespace

const char* toString(ConvPass pass) {
  switch (pass) {
    case ConvPass::Forward:
      return "forward";
    case ConvPass::BackwardData:
      return "backward-data";
    case ConvPass::BackwardWeights:
      break;
  }
  return "backward-weights";
}

const char* toString(ConvCandidate candidate) {
  switch (candidate) {
    case ConvCandidate::Kokkos:
      return "kokkos";
    case ConvCandidate::Direct:
      return "direct";
    case ConvCandidate::OneDnn:
      return "onednn";
    case ConvCandidate::Cudnn:
      break;
  }
  return "cudnn";
}

ConvTimes noConvTimes() {
  ConvTimes t;
  for (auto& pass : t) pass.fill(notCandidate);
  return t;
}

bool sameCandidates(const ConvTimes& a, const ConvTimes& b) {
  for (int p = 0; p < convPassCount; ++p)
    for (int c = 0; c < convCandidateCount; ++c)
      if (std::isfinite(a[p][c]) != std::isfinite(b[p][c])) return false;
  return true;
}

ConvCandidate fastestCandidate(const std::array<double, convCandidateCount>& seconds) {
  int best = 0;
  for (int c = 1; c < convCandidateCount; ++c)
    if (seconds[c] < seconds[best]) best = c;
  return std::isfinite(seconds[best]) ? ConvCandidate(best) : ConvCandidate::Kokkos;
}

std::string ConvShape::key() const {
  return Impl::concat("n", batch, ":c", cin, ">", cout, ":in", text(inLocal, 'x'), ":out",
                      text(out, 'x'), ":k", kernel, "s", stride, "p", padding, ":g",
                      text(ghostsLo, ','), "/", text(ghostsHi, ','), bias ? ":bias:" : ":",
                      toString(precision), ":threads", threads);
}

std::string convTimingCpu() {
  const std::string model = cpuInfoField("model name");
  return Impl::concat(model.empty() ? "unknown CPU" : model, "; ",
                      cpuFlagsThatMatter(cpuInfoField("flags")));
}

std::string convTimingVersions() {
  return Impl::concat(
#if HYBRID3D_ENABLE_ONEDNN
      "onednn ", Impl::oneDnnVersion(), " ",
#endif
      "kokkos ", KOKKOS_VERSION, " hybrid3d ", HYBRID3D_VERSION_TEXT);
}

std::string convTimingCachePath() {
  if (const char* set = std::getenv("HYBRID3D_CONV_TIMINGS")) return set;
  if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg && *xdg)
    return std::string(xdg) + "/hybrid3d/conv-timings.txt";
  if (const char* home = std::getenv("HOME"); home && *home)
    return std::string(home) + "/.cache/hybrid3d/conv-timings.txt";
  return "";
}

ConvTimingCache::ConvTimingCache(std::string path, std::string cpu, std::string versions)
    : path_(std::move(path)), cpu_(std::move(cpu)), versions_(std::move(versions)) {
  if (!path_.empty()) rows_ = readRows(path_, cpu_, versions_, note_);
}

ConvTimingCache& ConvTimingCache::shared() {
  static ConvTimingCache cache(convTimingCachePath(), convTimingCpu(), convTimingVersions());
  return cache;
}

std::optional<ConvTimes> ConvTimingCache::find(const std::string& shapeKey) const {
  const auto found = rows_.find(shapeKey);
  if (found == rows_.end()) return std::nullopt;
  return found->second;
}

ConvTimes ConvTimingCache::record(const std::string& shapeKey, const ConvTimes& measured) {
  const ConvTimes times = asWritten(measured);
  rows_[shapeKey] = times;
  if (path_.empty()) return times;
  std::error_code error;
  const std::filesystem::path dir = std::filesystem::path(path_).parent_path();
  if (!dir.empty()) std::filesystem::create_directories(dir, error);
  const FileLock lock(path_ + ".lock");
  // Rows other writers added since this process read the file join ours; a row already there
  // stays, and is this process's too (a job and its restart choose by the same times).
  std::string ignoredWhy;
  std::map<std::string, ConvTimes> merged = readRows(path_, cpu_, versions_, ignoredWhy);
  for (const auto& [key, row] : merged)
    if (key != shapeKey || sameCandidates(row, times)) rows_[key] = row;
  for (const auto& [key, row] : rows_) merged[key] = row;
  const std::string tmp = uniqueTemporary(path_);
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << header << "\ncpu " << cpu_ << "\nversions " << versions_ << "\n";
    for (const auto& [key, row] : merged) {
      out << key;
      for (const auto& pass : row)
        for (double t : pass) out << ' ' << timeText(t);
      out << '\n';
    }
    out.flush();
    if (out && std::rename(tmp.c_str(), path_.c_str()) == 0) return rows_[shapeKey];
  }
  std::remove(tmp.c_str());
  if (note_.empty())
    note_ = Impl::concat("convolution timings: cannot write ", path_, " (", std::strerror(errno),
                         "); this run's timings stay in memory");
  return rows_[shapeKey];
}

std::string ConvTimingCache::takeNote() {
  std::string note;
  note.swap(note_);
  return note;
}

}  // namespace hybrid3d
