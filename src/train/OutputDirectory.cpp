#include <hybrid3d/train/OutputDirectory.hpp>

#include <cstdio>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <hybrid3d/core/Error.hpp>
#include <hybrid3d/data/CollectiveVerdict.hpp>

namespace hybrid3d {

namespace fs = std::filesystem;

namespace {

fs::path normalised(const std::string& p) {
  std::error_code ec;
  fs::path n = fs::weakly_canonical(fs::absolute(p), ec);
  return ec ? fs::absolute(p).lexically_normal() : n;
}

std::string stamp() {
  char text[32];
  const std::time_t now = std::time(nullptr);
  std::strftime(text, sizeof text, "%Y%m%d-%H%M%S", std::localtime(&now));
  return text;
}

bool holdsMetrics(const std::string& file) {
  std::error_code ec;
  return fs::exists(file, ec) && fs::file_size(file, ec) > 0 && !ec;
}

void refuseNesting(const OutputDirectoryOptions& o) {
  for (const std::string& set : o.datasets) {
    std::error_code ec;
    if (set.empty() || !fs::is_directory(set, ec)) continue;
    if (pathWithin(o.dir, set))
      fail("'Training/output directory' ", o.dir, " lies inside the dataset directory ", set,
           ": its checkpoint and metrics would mix with the samples; choose a directory outside");
    if (pathWithin(set, o.dir))
      fail("the dataset directory ", set, " lies inside 'Training/output directory' ", o.dir,
           ": a run's files and a dataset's must not mix; choose another output directory");
  }
}

void makeDirectory(const std::string& dir) {
  std::error_code ec;
  if (fs::exists(dir, ec) && !fs::is_directory(dir, ec))
    fail("'Training/output directory' ", dir, " exists and is not a directory");
  fs::create_directories(dir, ec);
  if (ec) fail("'Training/output directory' ", dir, " cannot be created (", ec.message(), ")");
}

// An earlier run's files: refused, or with `overwrite` kept under a dated name.
void keepEarlierRun(const OutputDirectoryOptions& o, std::vector<std::string>& notes) {
  const std::string checkpoint = o.dir + "/checkpoint.h5", metrics = o.dir + "/metrics.csv";
  std::error_code ec;
  const bool hasCheckpoint = fs::exists(checkpoint, ec), hasMetrics = holdsMetrics(metrics);
  if (!hasCheckpoint && !hasMetrics) return;
  const std::string what = hasCheckpoint && hasMetrics ? "checkpoint.h5 and metrics.csv"
                           : hasCheckpoint             ? "checkpoint.h5"
                                                       : "metrics.csv";
  if (!o.overwrite)
    fail(o.dir, " holds an earlier run's ", what, ": resume it with --restart ", checkpoint,
         ", or start over with --overwrite (the old files are kept under a dated name)");
  const std::string when = stamp();
  auto keep = [&](const std::string& from, const std::string& stem, const std::string& ext) {
    if (!fs::exists(from, ec)) return;
    const std::string to = o.dir + "/" + stem + "." + when + ext;
    fs::rename(from, to, ec);
    if (ec) fail(from, ": cannot keep it as ", to, " (", ec.message(), ")");
    notes.push_back("--overwrite: the earlier " + stem + ext + " is kept as " + to);
  };
  keep(checkpoint, "checkpoint", ".h5");
  keep(metrics, "metrics", ".csv");
}

// A restart continues metrics.csv from the checkpoint's step.
void trimMetrics(const OutputDirectoryOptions& o, std::vector<std::string>& notes) {
  const std::string metrics = o.dir + "/metrics.csv";
  if (!holdsMetrics(metrics)) return;
  std::ifstream in(metrics, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  int dropped = 0;
  const std::string kept = metricsUpToStep(text.str(), o.restartStep, dropped);
  if (dropped == 0) return;
  const std::string tmp = metrics + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out << kept;
    out.flush();
    if (!out) {
      std::remove(tmp.c_str());
      fail(metrics, ": cannot rewrite it without the rows after step ", o.restartStep);
    }
  }
  if (std::rename(tmp.c_str(), metrics.c_str()) != 0)
    fail(metrics, ": cannot rename ", tmp, " over it");
  notes.push_back("restart: dropped " + std::to_string(dropped) + " row(s) of " + metrics +
                  " after the checkpoint's step " + std::to_string(o.restartStep));
}

}  // namespace

bool pathWithin(const std::string& inner, const std::string& outer) {
  const fs::path a = normalised(inner), b = normalised(outer);
  auto ai = a.begin();
  for (auto bi = b.begin(); bi != b.end(); ++bi, ++ai) {
    if (bi->empty()) continue;  // a trailing separator
    if (ai == a.end() || *ai != *bi) return false;
  }
  return true;
}

std::string metricsUpToStep(const std::string& text, long long step, int& dropped) {
  std::istringstream in(text);
  std::string line, kept;
  dropped = 0;
  bool first = true;
  while (std::getline(in, line)) {
    const bool header = first && line.rfind("kind,", 0) == 0;
    first = false;
    bool keep = header;
    if (!header) {
      // kind,step,... with kind train or validation
      const std::size_t comma = line.find(',');
      const std::string kind = line.substr(0, comma);
      if (comma != std::string::npos && (kind == "train" || kind == "validation")) {
        char* end = nullptr;
        const char* digits = line.c_str() + comma + 1;
        const long long s = std::strtoll(digits, &end, 10);
        keep = end != digits && *end == ',' && s <= step && line.find('\0') == std::string::npos;
      }
    }
    if (keep)
      kept += line + "\n";
    else
      ++dropped;
  }
  return kept;
}

OutputDirectory::OutputDirectory(MPI_Comm comm, const OutputDirectoryOptions& o) {
  int rank = 0;
  MPI_Comm_rank(comm, &rank);
  std::vector<std::string> notes;
  data::collectively(comm, [&] {
    if (rank != 0) return;
    refuseNesting(o);
    makeDirectory(o.dir);
    std::string note;
    lock_ = std::make_unique<RunLock>(o.dir, note);
    if (!note.empty()) notes.push_back(note);
    if (o.restarting)
      trimMetrics(o, notes);
    else
      keepEarlierRun(o, notes);
  });
  for (const std::string& n : notes) std::printf("hybrid3d: %s\n", n.c_str());
  if (!notes.empty()) std::fflush(stdout);
}

OutputDirectory::~OutputDirectory() = default;

}  // namespace hybrid3d
