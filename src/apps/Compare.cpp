// `hybrid3d compare A.h5 B.h5 [--tolerance T]`: compares every dataset of A with the dataset of
// the same path in B (shape and values, max |a - b| / max |b|); one line per dataset, exit 1
// if any is missing, differs in shape or exceeds the tolerance. For checking `gradients`
// output against another run or another framework. Rank 0 does the work.
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include <mpi.h>

#include <hybrid3d/core/Error.hpp>
#include <hybrid3d/io/Hdf5.hpp>

#include "Command.hpp"
#include "refcheck/RefCase.hpp"

namespace hybrid3d::app {
namespace {

herr_t collect(hid_t, const char* name, const H5O_info_t* info, void* out) {
  if (info->type == H5O_TYPE_DATASET)
    static_cast<std::vector<std::string>*>(out)->push_back(std::string("/") + name);
  return 0;
}

int compareFiles(const std::string& a, const std::string& b, double tolerance) {
  const io::File fa(a), fb(b);
  std::vector<std::string> names;
  if (H5Ovisit(fa.id(), H5_INDEX_NAME, H5_ITER_INC, collect, &names) < 0)
    fail(a, ": cannot list its datasets");
  if (names.empty()) fail(a, ": no datasets");
  int bad = 0;
  for (const std::string& n : names) {
    if (!fb.hasDataset(n)) {
      std::printf("MISSING %s (not in %s)\n", n.c_str(), b.c_str());
      ++bad;
      continue;
    }
    if (fa.shape(n) != fb.shape(n)) {
      std::printf("SHAPE   %s differs\n", n.c_str());
      ++bad;
      continue;
    }
    const std::vector<double> va = fa.read<double>(n), vb = fb.read<double>(n);
    const double err = refcheck::maxRelativeError(va.data(), vb.data(), va.size());
    const bool ok = err <= tolerance;
    bad += ok ? 0 : 1;
    std::printf("%s %-40s max relative error %.2e\n", ok ? "SAME   " : "DIFFER ", n.c_str(), err);
  }
  std::printf("compare: %zu datasets, %d differ (tolerance %.1e)\n", names.size(), bad, tolerance);
  return bad ? 1 : 0;
}

int run(const std::vector<std::string>& args) {
  std::vector<std::string> files;
  double tolerance = 1e-10;
  for (std::size_t i = 0; i < args.size(); ++i) {
    if (args[i] == "--tolerance") {
      if (i + 1 >= args.size()) fail("compare: --tolerance needs a value");
      char* end = nullptr;
      tolerance = std::strtod(args[++i].c_str(), &end);
      if (*end != '\0' || !(tolerance >= 0)) fail("compare: bad --tolerance ", args[i]);
    } else {
      files.push_back(args[i]);
    }
  }
  if (files.size() != 2) fail("compare: usage: hybrid3d compare A.h5 B.h5 [--tolerance T]");
  int rank, code = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  if (rank == 0) code = compareFiles(files[0], files[1], tolerance);
  MPI_Bcast(&code, 1, MPI_INT, 0, MPI_COMM_WORLD);
  return code;
}

const Registration reg{
    "compare",
    {"A.h5 B.h5 [--tolerance T]",
     "compares two HDF5 files dataset by dataset (shape, values); exit status 1 if any differs",
     "  --tolerance T   largest accepted max|a-b| / max|b| per dataset (default 1e-10)\n",
     "mpirun -n 1 hybrid3d compare grads_1rank.h5 grads_2ranks.h5 --tolerance 1e-6"},
    run};

}  // namespace
}  // namespace hybrid3d::app
