#include "PredictOptions.hpp"

#include "../Options.hpp"

#include <hybrid3d/core/Error.hpp>
#include <hybrid3d/grid/ProcessGrid.hpp>

namespace hybrid3d::app {

std::string predictUsage() {
  return "hybrid3d predict --checkpoint RUN/checkpoint.h5 --in PATH... --out DIR [--labels DIR] "
         "[--grid DxHxW|auto] [--precision P] [--probabilities] [--cubes] [--memory-limit GiB] "
         "[--overwrite]";
}

PredictOptions parsePredictOptions(const std::vector<std::string>& args) {
  PredictOptions o;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    auto value = [&]() -> const std::string& {
      if (i + 1 >= args.size() || args[i + 1].rfind("--", 0) == 0)
        fail("predict: ", a, " needs a value");
      return args[++i];
    };
    if (a == "--checkpoint") {
      o.checkpoint = value();
    } else if (a == "--in") {
      o.inputs.push_back(value());
      while (i + 1 < args.size() && args[i + 1].rfind("--", 0) != 0) o.inputs.push_back(args[++i]);
    } else if (a == "--out") {
      o.out = value();
    } else if (a == "--labels") {
      o.labels = value();
    } else if (a == "--grid") {
      const std::string g = value();
      try {
        if (g != "auto") o.grid = parseGridSpec(g);
      } catch (const Error& e) {
        fail("predict: --grid ", g, ": ", e.what());
      }
    } else if (a == "--precision") {
      const std::string p = value();
      try {
        o.precision = parsePrecision(p);
      } catch (const Error& e) {
        fail("predict: --precision ", p, ": ", e.what());
      }
    } else if (a == "--probabilities") {
      o.probabilities = true;
    } else if (a == "--cubes") {
      o.cubes = true;
    } else if (a == "--memory-limit") {
      o.memoryLimit = memoryLimitOption("predict", value());
    } else if (a == "--overwrite") {
      o.overwrite = true;
    } else {
      fail("predict: unknown option ", a, "; usage: ", predictUsage());
    }
  }
  if (o.checkpoint.empty() || o.inputs.empty() || o.out.empty())
    fail("predict: give --checkpoint, --in and --out; usage: ", predictUsage());
  return o;
}

}  // namespace hybrid3d::app
