#include "CalibrateOptions.hpp"

#include <filesystem>
#include <sstream>

#include <hybrid3d/core/Error.hpp>

#include "../Options.hpp"
#include "../RecordedPath.hpp"

namespace hybrid3d::app::calibrate {

namespace {

// A word as a shell reads it back: quoted when it holds anything but plain characters.
std::string shellWord(const std::string& w) {
  if (!w.empty() && w.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                        "0123456789-_./,=:+@%") == std::string::npos)
    return w;
  std::string q = "'";
  for (char c : w) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

int positive(const std::string& option, const std::string& text) {
  const long long v = integerOption("calibrate", option, text);
  if (v < 1 || v > 1 << 20) fail("calibrate: ", option, " must be a positive integer, not ", text);
  return static_cast<int>(v);
}

}  // namespace

CalibrateOptions parseCalibrateOptions(const std::vector<std::string>& args, int ranks) {
  CalibrateOptions o;
  std::ostringstream line;
  line << "mpirun -n " << ranks << " hybrid3d calibrate";
  // Paths as recordedPath gives them: the header goes into a file that may be committed.
  for (const std::string& a : args)
    line << ' ' << shellWord(!a.empty() && a[0] != '-' ? recordedPath(a) : a);
  o.commandLine = line.str();
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    auto value = [&]() -> const std::string& {
      if (i + 1 >= args.size()) fail("calibrate: ", a, " needs a value");
      return args[++i];
    };
    if (a == "--out") {
      o.out = value();
    } else if (a == "--name") {
      o.name = value();
    } else if (a == "--base") {
      o.base = value();
    } else if (a == "--steps") {
      o.steps = positive(a, value());
    } else if (a == "--scratch") {
      o.scratch = value();
    } else if (a == "--file-mib") {
      o.fileMiB = positive(a, value());
    } else if (a == "--sizes") {
      std::istringstream list(value());
      for (std::string s; std::getline(list, s, ',');) o.sizes.push_back(positive("--sizes", s));
      if (o.sizes.empty()) fail("calibrate: --sizes needs at least one size");
    } else if (!a.empty() && a[0] == '-') {
      fail("calibrate: unknown option ", a);
    } else {
      o.decks.push_back(a);
    }
  }
  if (o.out.empty()) fail("calibrate: no --out FILE.xml given (the machine file to write)");
  if (o.decks.empty()) fail("calibrate: no deck given (the models whose layers are timed)");
  const std::filesystem::path outDir = std::filesystem::path(o.out).parent_path();
  if (!outDir.empty() && !std::filesystem::is_directory(outDir))
    fail("calibrate: --out ", o.out, ": the directory ", outDir.string(), " does not exist");
  if (o.scratch.empty()) o.scratch = outDir.empty() ? "." : outDir.string();
  if (!std::filesystem::is_directory(o.scratch))
    fail("calibrate: --scratch ", o.scratch, " is not a directory");
  return o;
}

}  // namespace hybrid3d::app::calibrate
