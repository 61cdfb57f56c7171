#include "HostInfo.hpp"

#include <unistd.h>

#include <cstdlib>
#include <fstream>

namespace hybrid3d::app::calibrate {

namespace {

// The text after the ':' of the first line of `file` that starts with `key`, trimmed.
std::string field(const char* file, const std::string& key) {
  std::ifstream in(file);
  for (std::string line; std::getline(in, line);) {
    if (line.compare(0, key.size(), key) != 0) continue;
    const std::size_t colon = line.find(':');
    if (colon == std::string::npos) continue;
    const std::size_t begin = line.find_first_not_of(" \t", colon + 1);
    return begin == std::string::npos ? "" : line.substr(begin);
  }
  return "";
}

}  // namespace

std::string cpuModel() {
  const std::string m = field("/proc/cpuinfo", "model name");
  return m.empty() ? "unknown" : m;
}

int cpuCount() {
  const long n = ::sysconf(_SC_NPROCESSORS_ONLN);
  return n > 0 ? static_cast<int>(n) : 1;
}

std::size_t memTotalBytes() {
  // "MemTotal:       24683548 kB"
  return std::size_t(std::strtoull(field("/proc/meminfo", "MemTotal").c_str(), nullptr, 10)) * 1024;
}

}  // namespace hybrid3d::app::calibrate
