// Command-line parsing of `hybrid3d generate` (no Teuchos: the generators live in the core).
#include <hybrid3d/core/Error.hpp>
#include <hybrid3d/generate/GenerateDataset.hpp>

#include <cerrno>
#include <cstdlib>

namespace hybrid3d::generate {

namespace {

std::uint64_t parseUnsigned(const std::string& flag, const std::string& text) {
  if (text.empty() || text.find_first_not_of("0123456789") != std::string::npos)
    fail(flag, ": '", text, "' is not a non-negative whole number");
  errno = 0;
  char* end = nullptr;
  const unsigned long long v = std::strtoull(text.c_str(), &end, 10);
  if (errno == ERANGE) fail(flag, ": '", text, "' is too large");
  return static_cast<std::uint64_t>(v);
}

Index parseCount(const std::string& flag, const std::string& text) {
  const std::uint64_t v = parseUnsigned(flag, text);
  if (v > (std::uint64_t(1) << 40)) fail(flag, ": '", text, "' is too large");
  return static_cast<Index>(v);
}

double parseNumber(const std::string& flag, const std::string& text) {
  char* end = nullptr;
  errno = 0;
  const double v = std::strtod(text.c_str(), &end);
  if (text.empty() || *end != '\0' || errno == ERANGE) fail(flag, ": '", text, "' is not a number");
  return v;
}

}  // namespace

std::string generateUsage() {
  return "cosmology|segmentation --out DIR --size S [--train N] [--validation N] [--test N] "
         "[--seed K] [--params amplitude,slope,cutoff,growth] [--mean-count X] [--replace]";
}

GenerateOptions parseGenerateOptions(const std::vector<std::string>& args) {
  GenerateOptions o;
  if (args.empty() || args[0].rfind("--", 0) == 0)
    fail("generate: missing the generator (cosmology or segmentation) before the flags");
  o.generator = args[0];
  if (o.generator != "cosmology" && o.generator != "segmentation")
    fail("generate: unknown generator '", o.generator, "' (cosmology or segmentation)");
  bool sawSize = false, sawParams = false, sawMeanCount = false;
  for (std::size_t i = 1; i < args.size(); ++i) {
    const std::string& flag = args[i];
    if (flag.rfind("--", 0) != 0) fail("generate: unexpected argument '", flag, "'");
    if (flag == "--replace") {
      o.replace = true;
      continue;
    }
    static const char* known[] = {"--out",  "--size", "--train",  "--validation",
                                  "--test", "--seed", "--params", "--mean-count"};
    bool isKnown = false;
    for (const char* k : known) isKnown = isKnown || flag == k;
    if (!isKnown) fail("generate: unknown flag '", flag, "'");
    if (i + 1 >= args.size()) fail(flag, ": missing value");
    const std::string& value = args[++i];
    if (flag == "--out") {
      if (value.empty()) fail("--out: empty directory name");
      o.outDir = value;
    } else if (flag == "--size") {
      o.size = parseCount(flag, value);
      sawSize = true;
    } else if (flag == "--train") {
      o.train = parseCount(flag, value);
    } else if (flag == "--validation") {
      o.validation = parseCount(flag, value);
    } else if (flag == "--test") {
      o.test = parseCount(flag, value);
    } else if (flag == "--seed") {
      o.seed = parseUnsigned(flag, value);
    } else if (flag == "--params") {
      std::array<double, 4> v{};
      std::size_t start = 0;
      for (int p = 0; p < 4; ++p) {
        const std::size_t comma = value.find(',', start);
        if ((p < 3) != (comma != std::string::npos))
          fail("--params: '", value,
               "' is not four comma-separated numbers "
               "(amplitude,slope,cutoff,growth)");
        v[p] = parseNumber(flag, value.substr(start, comma - start));
        start = comma + 1;
      }
      const CosmologyParameters params = CosmologyParameters::fromValues(v);
      checkCosmologyParameters(params, "--params");
      o.fixedParameters = params;
      sawParams = true;
    } else if (flag == "--mean-count") {
      o.meanCount = parseNumber(flag, value);
      if (!(o.meanCount > 0.0 && o.meanCount <= 1000.0))
        fail("--mean-count: ", value, " is outside (0, 1000]");
      sawMeanCount = true;
    }
  }
  if (o.outDir.empty()) fail("--out: missing (the dataset directory)");
  if (!sawSize) fail("--size: missing (the volume is SIZE^3 voxels)");
  if (o.size < 8) fail("--size: ", o.size, " is too small (at least 8)");
  if (o.train + o.validation + o.test == 0)
    fail("generate: no samples requested (give --train, --validation or --test)");
  if (o.generator != "cosmology" && (sawParams || sawMeanCount))
    fail(sawParams ? "--params" : "--mean-count", ": only the cosmology generator takes it");
  return o;
}

}  // namespace hybrid3d::generate
