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

}  // namespace hybrid3d::app
