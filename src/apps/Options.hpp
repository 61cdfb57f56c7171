#pragma once
// Numbers on the command line: the whole word must be one, else a one-line error naming the
// command and the option (std::stoll's own message is just "stoll").
#include <cerrno>
#include <cstdlib>
#include <string>

#include <hybrid3d/core/Error.hpp>

namespace hybrid3d::app {

inline long long integerOption(const std::string& command, const std::string& option,
                               const std::string& text) {
  char* end = nullptr;
  errno = 0;
  const long long v = std::strtoll(text.c_str(), &end, 10);
  if (text.empty() || *end != '\0' || errno == ERANGE)
    fail(command, ": ", option, " needs an integer, not '", text, "'");
  return v;
}

// --memory-limit GiB (per rank), as bytes.
inline double memoryLimitOption(const std::string& command, const std::string& text) {
  char* end = nullptr;
  const double gib = std::strtod(text.c_str(), &end);
  if (text.empty() || *end != '\0' || !(gib > 0) || !(gib < 1e9))
    fail(command, ": --memory-limit needs a positive number of GiB, not '", text, "'");
  return gib * double(1 << 30);
}

}  // namespace hybrid3d::app
