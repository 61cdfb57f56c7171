// `hybrid3d refcheck DIR [--grid DxHxW] [--tolerance T]`: runs every reference case file in DIR
// (format: unit_tests/reference/README.md) on this run's process grid and compares every tensor.
// One line per case with the worst relative error; exit status 1 if any case fails.
//
// Without --grid, every rank works on the case as one spatial group (P = world size, grid
// chosen by autoSpatialGrid for the case's input extents). With --grid, the world splits into
// world / P data-parallel groups, each running the whole case (so G > 1 checks that groups do
// not disturb each other).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>

#include <mpi.h>

#include <hybrid3d/core/Error.hpp>

#include "../Command.hpp"
#include "RefCase.hpp"

namespace hybrid3d::app::refcheck {
namespace {

struct Options {
  std::string dir;
  std::string grid;  // empty: auto
  double tolerance = 1e-10;
};

Options parse(const std::vector<std::string>& args) {
  Options o;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    auto value = [&]() -> const std::string& {
      if (i + 1 >= args.size()) fail("refcheck: ", a, " needs a value");
      return args[++i];
    };
    if (a == "--grid") {
      o.grid = value();
    } else if (a == "--tolerance") {
      const std::string& v = value();
      char* end = nullptr;
      o.tolerance = std::strtod(v.c_str(), &end);
      if (end == v.c_str() || *end != '\0' || !(o.tolerance > 0))
        fail("refcheck: --tolerance \"", v, "\" is not a positive number");
    } else if (!a.empty() && a[0] == '-') {
      fail("refcheck: unknown option ", a);
    } else if (o.dir.empty()) {
      o.dir = a;
    } else {
      fail("refcheck: more than one directory given (", o.dir, ", ", a, ")");
    }
  }
  if (o.dir.empty()) fail("refcheck: no case directory given");
  return o;
}

std::vector<std::string> caseFiles(const std::string& dir) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) fail("refcheck: ", dir, ": not a directory");
  std::vector<std::string> files;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.is_regular_file() && e.path().extension() == ".h5") files.push_back(e.path().string());
  std::sort(files.begin(), files.end());
  if (files.empty()) fail("refcheck: ", dir, ": no .h5 case files");
  return files;
}

// Spatial extents of the case's input: the last three dimensions of a 5-D `input`.
Index3 inputExtents(const RefCase& c) {
  const std::vector<Index> s = c.shape("input");
  if (s.size() == 5) return {s[2], s[3], s[4]};
  return {1, 1, 1};
}

int run(const std::vector<std::string>& args) {
  const Options opt = parse(args);
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const Int3 fixedGrid = opt.grid.empty() ? Int3{0, 0, 0} : parseGridSpec(opt.grid);

  int failed = 0, total = 0;
  for (const std::string& path : caseFiles(opt.dir)) {
    const std::string name = std::filesystem::path(path).filename().string();
    ++total;
    std::string op = "?", verdict, detail;
    std::vector<Comparison> results;
    try {
      RefCase c(path);
      op = c.op();
      const auto it = refOps().find(op);
      if (it == refOps().end()) fail("no runner for op '", op, "'");
      const Int3 dims = opt.grid.empty() ? autoSpatialGrid(size, inputExtents(c)) : fixedGrid;
      ProcessGrid grid(MPI_COMM_WORLD, dims);
      detail = "grid " + toString(dims) + " G=" + std::to_string(grid.numGroups());
      results = it->second(c, grid);
      if (results.empty()) fail("runner compared no tensor");
    } catch (const std::exception& e) {
      verdict = e.what();
    }
    // Every rank computed the errors of the same global arrays; take the worst anyway, and
    // let a failure on any rank fail the case on all.
    int bad = verdict.empty() ? 0 : 1;
    MPI_Allreduce(MPI_IN_PLACE, &bad, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    double worst = 0;
    std::string worstTensor = "-";
    if (!bad) {
      for (Comparison& r : results) {
        MPI_Allreduce(MPI_IN_PLACE, &r.maxRelError, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
        if (!(r.maxRelError <= worst)) {
          worst = r.maxRelError;
          worstTensor = r.tensor;
        }
      }
    }
    const bool pass = !bad && worst <= opt.tolerance;
    failed += pass ? 0 : 1;
    if (!verdict.empty())
      std::fprintf(stderr, "refcheck %s on rank %d: %s\n", name.c_str(), rank, verdict.c_str());
    if (rank == 0) {
      if (bad)
        std::printf("FAIL  %-28s %-22s error (see message)\n", name.c_str(), op.c_str());
      else
        std::printf("%s  %-28s %-22s %-16s worst %.2e (%s) over %zu tensors\n",
                    pass ? "PASS" : "FAIL", name.c_str(), op.c_str(), detail.c_str(), worst,
                    worstTensor.c_str(), results.size());
      std::fflush(stdout);
    }
  }
  if (rank == 0)
    std::printf("refcheck: %d passed, %d failed (tolerance %.1e relative)\n", total - failed,
                failed, opt.tolerance);
  return failed ? 1 : 0;
}

const Registration reg{
    "refcheck",
    {"DIR [--grid DxHxW] [--tolerance T]",
     "runs the reference cases (*.h5) in DIR on these ranks; exit status 1 if any fails",
     "  --grid DxHxW    ranks per sample; the world splits into world/P data-parallel groups\n"
     "                  (default: every rank on one sample, grid chosen for the case)\n"
     "  --tolerance T   largest accepted relative error (default 1e-10)\n",
     "mpirun -n 4 hybrid3d refcheck unit_tests/reference --grid 2x1x1"},
    run};

}  // namespace
}  // namespace hybrid3d::app::refcheck
