#include <hybrid3d/train/ResourceChecks.hpp>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <unistd.h>

#include <hybrid3d/core/Error.hpp>
#include <hybrid3d/data/CollectiveVerdict.hpp>

namespace hybrid3d {

namespace fs = std::filesystem;

namespace {

std::string mib(double bytes) {
  char text[32];
  std::snprintf(text, sizeof text, "%.0f MiB", bytes / double(1 << 20));
  return text;
}

std::string hostName() {
  char host[256] = "unknown";
  ::gethostname(host, sizeof host - 1);
  return host;
}

void probeWritable(const std::string& dir, int rank) {
  std::error_code ec;
  const std::string key = "'Training/output directory' " + dir;
  if (fs::exists(dir, ec) && !fs::is_directory(dir, ec))
    fail(key, " exists and is not a directory");
  fs::path at = fs::absolute(dir, ec);
  while (!fs::exists(at, ec) && at.has_parent_path() && at != at.parent_path())
    at = at.parent_path();
  if (!fs::is_directory(at, ec))
    fail(key, " cannot be created: ", at.string(), " is not a directory");
  const std::string probe =
      (at / (".hybrid3d-check-" + std::to_string(::getpid()) + "-" + std::to_string(rank)))
          .string();
  {
    std::ofstream out(probe);
    out << "probe\n";
    out.flush();
    if (!out) {
      const int error = errno;
      std::remove(probe.c_str());
      fail(key, " cannot be ", at == fs::absolute(dir, ec) ? "written" : "created", " on rank ",
           rank, " (host ", hostName(), "): ", at.string(), ": ", std::strerror(error));
    }
  }
  std::remove(probe.c_str());
}

// A cgroup's memory limit ("max" or absent: none).
double cgroupLimit() {
  for (const char* f :
       {"/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"}) {
    std::ifstream in(f);
    std::string text;
    if (in >> text && !text.empty() && text != "max") {
      const double v = std::strtod(text.c_str(), nullptr);
      if (v > 0 && v < 1e18) return v;
    }
  }
  return 0;
}

}  // namespace

void checkOutputWritable(MPI_Comm world, const std::string& dir) {
  int rank;
  MPI_Comm_rank(world, &rank);
  data::collectively(world, [&] { probeWritable(dir, rank); });
}

double nodeMemoryBytes() {
  const double physical = double(::sysconf(_SC_PHYS_PAGES)) * double(::sysconf(_SC_PAGE_SIZE));
  const double limit = cgroupLimit();
  return limit > 0 && limit < physical ? limit : physical;
}

void checkNodeMemory(MPI_Comm world, double bytesPerRank, double limitPerRank,
                     bool beforeWorkspaces) {
  const std::string needs = beforeWorkspaces ? "the plan needs at least " : "the plan needs ";
  const char* part = beforeWorkspaces ? " (before the convolution workspaces)" : "";
  MPI_Comm node;
  MPI_Comm_split_type(world, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
  int ranksHere = 1;
  MPI_Comm_size(node, &ranksHere);
  MPI_Comm_free(&node);
  data::collectively(world, [&] {
    if (limitPerRank > 0) {
      if (bytesPerRank > limitPerRank)
        fail(needs, mib(bytesPerRank), " per rank", part, ", more than --memory-limit ",
             mib(limitPerRank), "; use more ranks per sample or a smaller mini-batch");
      return;
    }
    const double memory = nodeMemoryBytes();
    if (bytesPerRank * ranksHere > memory)
      fail(needs, mib(bytesPerRank), " per rank", part, " x ", ranksHere, " rank(s) on node ",
           hostName(), " = ", mib(bytesPerRank * ranksHere), ", more than its ", mib(memory),
           "; use fewer ranks per node, more ranks per sample or a smaller mini-batch (or "
           "--memory-limit GiB per rank to override)");
  });
}

}  // namespace hybrid3d
