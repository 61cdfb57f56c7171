#pragma once
// A file's path as a result file records it (plan's CSV, calibrate's machine-file header and
// notes): such files get committed, and an absolute path would name the machine they were made
// on. Relative to the directory the command runs in when the file lies below it, else the
// file's name alone (perf_tests/scaling/compare.py applies the same rule to its titles).

#include <filesystem>
#include <string>

namespace hybrid3d::app {

// "inputs/deck.xml" for /checkout/inputs/deck.xml run in /checkout (or given as inputs/deck.xml);
// "deck.xml" for /elsewhere/deck.xml or ../x/deck.xml; "." for the run directory itself.
inline std::string recordedPath(const std::string& path, const std::filesystem::path& runDirectory =
                                                             std::filesystem::current_path()) {
  namespace fs = std::filesystem;
  const fs::path full =
      (fs::path(path).is_absolute() ? fs::path(path) : runDirectory / path).lexically_normal();
  const fs::path relative = full.lexically_proximate(runDirectory.lexically_normal());
  // lexically_proximate leaves a path it cannot make relative as it was (absolute), and one
  // outside the run directory starts with "..": both would spell out this machine's folders.
  if (!relative.empty() && !relative.is_absolute() && *relative.begin() != "..")
    return relative.string();
  const fs::path name = full.has_filename() ? full.filename() : full.parent_path().filename();
  return name.empty() ? "." : name.string();  // "/" itself
}

}  // namespace hybrid3d::app
