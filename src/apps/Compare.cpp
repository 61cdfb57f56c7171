// `hybrid3d compare A.h5 B.h5 [--tolerance T] [--floor F]`: compares the datasets of two HDF5
// files, both ways: a dataset in either file only is reported MISSING. For each dataset of both
// it prints the shape check and three numbers:
//   max|a-b|          the largest absolute difference;
//   of max            max|a-b| / max(|a|,|b|) over the dataset: what a large entry sees;
//   elementwise       max over entries of |a-b| / max(|a|, |b|, F * max over the dataset),
//                     the one the tolerance applies to: an error in a small entry cannot hide
//                     behind the large ones (entries below F times the largest are measured
//                     against that floor, so rounding noise around zero does not count).
// Exit status 1 if any dataset is missing, differs in shape or exceeds the tolerance; NaN in
// one file and not the other always exceeds it. Rank 0 does the work.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <set>
#include <string>
#include <vector>

#include <mpi.h>

#include <hybrid3d/core/Error.hpp>
#include <hybrid3d/data/CollectiveVerdict.hpp>
#include <hybrid3d/data/Hdf5.hpp>

#include "Command.hpp"

namespace hybrid3d::app {
namespace {

herr_t collect(hid_t, const char* name, const H5O_info_t* info, void* out) {
  if (info->type == H5O_TYPE_DATASET)
    static_cast<std::set<std::string>*>(out)->insert(std::string("/") + name);
  return 0;
}

std::set<std::string> datasetsOf(const data::File& f) {
  std::set<std::string> names;
  if (H5Ovisit(f.id(), H5_INDEX_NAME, H5_ITER_INC, collect, &names) < 0)
    fail(f.path(), ": cannot list its datasets");
  return names;
}

struct Difference {
  double absolute = 0, ofMax = 0, elementwise = 0;
  std::size_t worst = 0;  // the entry with the largest elementwise error
};

Difference differenceOf(const std::vector<double>& a, const std::vector<double>& b, double floor) {
  const double inf = std::numeric_limits<double>::infinity();
  double largest = 0;
  for (std::size_t i = 0; i < a.size(); ++i)
    largest = std::max({largest, std::abs(a[i]), std::abs(b[i])});
  const double tiny = floor * largest;
  Difference d;
  for (std::size_t i = 0; i < a.size(); ++i) {
    const bool nanA = std::isnan(a[i]), nanB = std::isnan(b[i]);
    if (nanA && nanB) continue;  // both NaN: the same
    const double diff = nanA || nanB ? inf : std::abs(a[i] - b[i]);
    const double scale = std::max({std::abs(a[i]), std::abs(b[i]), tiny});
    const double rel = diff == 0 ? 0 : scale > 0 ? diff / scale : inf;
    d.absolute = std::max(d.absolute, diff);
    if (rel > d.elementwise || (std::isinf(rel) && !std::isinf(d.elementwise))) {
      d.elementwise = rel;
      d.worst = i;
    }
  }
  d.ofMax = d.absolute == 0 ? 0 : largest > 0 ? d.absolute / largest : inf;
  return d;
}

int compareFiles(const std::string& a, const std::string& b, double tolerance, double floor) {
  const data::File fa(a), fb(b);
  const std::set<std::string> inA = datasetsOf(fa), inB = datasetsOf(fb);
  std::set<std::string> all = inA;
  all.insert(inB.begin(), inB.end());
  if (all.empty()) fail(a, " and ", b, ": no datasets in either");
  int bad = 0;
  for (const std::string& n : all) {
    if (!inA.count(n) || !inB.count(n)) {
      std::printf("MISSING %s (only in %s)\n", n.c_str(), inA.count(n) ? a.c_str() : b.c_str());
      ++bad;
      continue;
    }
    if (fa.shape(n) != fb.shape(n)) {
      std::printf("SHAPE   %s differs\n", n.c_str());
      ++bad;
      continue;
    }
    const Difference d = differenceOf(fa.read<double>(n), fb.read<double>(n), floor);
    const bool ok = d.elementwise <= tolerance;
    bad += ok ? 0 : 1;
    std::printf("%s %-40s max|a-b| %.2e  of max %.2e  elementwise %.2e", ok ? "SAME   " : "DIFFER ",
                n.c_str(), d.absolute, d.ofMax, d.elementwise);
    if (!ok) std::printf(" (entry %zu)", d.worst);
    std::printf("\n");
  }
  std::printf("compare: %zu datasets, %d differ (elementwise tolerance %.1e, floor %.1e)\n",
              all.size(), bad, tolerance, floor);
  return bad ? 1 : 0;
}

double number(const std::string& option, const std::string& text) {
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  if (text.empty() || *end != '\0' || !(v >= 0)) fail("compare: bad ", option, " ", text);
  return v;
}

int run(const std::vector<std::string>& args) {
  std::vector<std::string> files;
  double tolerance = 1e-10, floor = 1e-6;
  for (std::size_t i = 0; i < args.size(); ++i) {
    if (args[i] == "--tolerance" || args[i] == "--floor") {
      if (i + 1 >= args.size()) fail("compare: ", args[i], " needs a value");
      (args[i] == "--tolerance" ? tolerance : floor) = number(args[i], args[i + 1]);
      ++i;
    } else if (!args[i].empty() && args[i][0] == '-') {
      fail("compare: unknown option ", args[i]);
    } else {
      files.push_back(args[i]);
    }
  }
  if (files.size() != 2)
    fail("compare: usage: hybrid3d compare A.h5 B.h5 [--tolerance T] [--floor F]");
  int rank, code = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  // Rank 0 reads; a bad file stops every rank with its message (the others do not wait).
  data::collectively(MPI_COMM_WORLD, [&] {
    if (rank == 0) code = compareFiles(files[0], files[1], tolerance, floor);
  });
  MPI_Bcast(&code, 1, MPI_INT, 0, MPI_COMM_WORLD);
  return code;
}

const Registration reg{
    "compare",
    {"A.h5 B.h5 [--tolerance T] [--floor F]",
     "compares two HDF5 files dataset by dataset, both ways; exit status 1 if any differs",
     "  --tolerance T   largest accepted elementwise error per dataset, |a-b| / max(|a|,|b|)\n"
     "                  (default 1e-10); max|a-b| and max|a-b| / max are printed beside it\n"
     "  --floor F       entries below F times the dataset's largest are measured against\n"
     "                  that (default 1e-6), so rounding noise around zero does not count\n",
     "mpirun -n 1 hybrid3d compare grads_1rank.h5 grads_2ranks.h5 --tolerance 1e-6"},
    run};

}  // namespace
}  // namespace hybrid3d::app
