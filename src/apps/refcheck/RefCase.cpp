#include "RefCase.hpp"

#include <algorithm>
#include <climits>
#include <cmath>

#include <hybrid3d/comm/Allreduce.hpp>
#include <hybrid3d/core/Error.hpp>
#include <hybrid3d/layers/DistributedParameter.hpp>

namespace hybrid3d::app::refcheck {

GlobalArray<double> RefCase::tensor(const std::string& name) const {
  const std::vector<Index> s = shape(name);
  if (s.empty() || s.size() > 5)
    fail(path(), ": tensor '", name, "' has rank ", s.size(), " (expected 1 to 5)");
  Index e[5] = {1, 1, 1, 1, 1};
  std::copy(s.begin(), s.end(), e);
  GlobalArray<double> a(name, e[0], e[1], e[2], e[3], e[4]);
  const std::vector<double> v = flat(name);
  std::copy(v.begin(), v.end(), a.data());
  return a;
}

double maxRelativeError(const double* got, const double* want, std::size_t n) {
  double diff = 0, scale = 0;
  bool nan = false;  // std::max would silently drop a NaN
  for (std::size_t i = 0; i < n; ++i) {
    const double d = std::abs(got[i] - want[i]);
    nan = nan || std::isnan(d);
    diff = std::max(diff, d);
    scale = std::max(scale, std::abs(want[i]));
  }
  if (nan) return INFINITY;
  return scale > 0 ? diff / scale : diff;
}

int intAttribute(const RefCase& c, const std::string& name) {
  if (!c.hasNumber(name)) fail(c.path(), ": ", c.op(), " case lacks attribute '", name, "'");
  return static_cast<int>(c.number(name));
}

int intAttribute(const RefCase& c, const std::string& name, int fallback) {
  return c.hasNumber(name) ? static_cast<int>(c.number(name)) : fallback;
}

TensorShape shapeOf(const GlobalArray<double>& a) {
  return {int(a.extent(0)),
          int(a.extent(1)),
          {Index(a.extent(2)), Index(a.extent(3)), Index(a.extent(4))}};
}

void reduceWorst(std::vector<Comparison>& comparisons, MPI_Comm comm) {
  for (Comparison& cmp : comparisons)
    MPI_Allreduce(MPI_IN_PLACE, &cmp.maxRelError, 1, MPI_DOUBLE, MPI_MAX, comm);
}

namespace {

// The whole batch from every group's samples (each group holds its own after gatherToGlobal).
GlobalArray<double> wholeBatch(const GlobalArray<double>& mine, const ProcessGrid& grid) {
  const Index n = mine.extent(0);
  GlobalArray<double> all(mine.label(), n * grid.numGroups(), mine.extent(1), mine.extent(2),
                          mine.extent(3), mine.extent(4));
  const Kokkos::pair<Index, Index> range(grid.group() * n, grid.group() * n + n);
  Kokkos::deep_copy(Kokkos::subview(all, range, Kokkos::ALL, Kokkos::ALL, Kokkos::ALL, Kokkos::ALL),
                    mine);
  if (all.size() > static_cast<std::size_t>(INT_MAX))
    fail("refcheck: array '", mine.label(), "' too large");
  MPI_Allreduce(MPI_IN_PLACE, all.data(), static_cast<int>(all.size()), MPI_DOUBLE, MPI_SUM,
                grid.dataComm());
  return all;
}

}  // namespace

void load(const RefCase& c, const std::string& dataset, const Kokkos::View<double*>& to) {
  const std::vector<double> v = c.flat(dataset);
  if (v.size() != to.size())
    fail(c.path(), ": dataset '", dataset, "' has ", v.size(), " values, the layer expects ",
         to.size());
  auto h = Kokkos::create_mirror_view(to);
  std::copy(v.begin(), v.end(), h.data());
  Kokkos::deep_copy(to, h);
}

void loadParameters(const RefCase& c, const std::vector<Parameter<double>>& params) {
  for (const Parameter<double>& p : params) {
    const std::vector<double> v = c.flat(p.name);
    if (Index(v.size()) != globalSize(p.shape))
      fail(c.path(), ": dataset '", p.name, "' has ", v.size(), " values, the layer expects ",
           globalSize(p.shape));
    scatterGlobal(p, v, p.value);  // this rank's part
  }
}

FeatureView<double> toFeatures(const GlobalArray<double>& a) {
  FeatureView<double> v(a.label(), a.extent(0),
                        a.extent(1) * a.extent(2) * a.extent(3) * a.extent(4));
  auto h = Kokkos::create_mirror_view(v);
  std::copy(a.data(), a.data() + a.size(), h.data());
  Kokkos::deep_copy(v, h);
  return v;
}

Comparison compareVector(const RefCase& c, const std::string& dataset,
                         const Kokkos::View<double*>& got) {
  return compare(dataset, Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), got),
                 c.tensor(dataset));
}

Comparison compareSamples(const RefCase& c, const std::string& dataset,
                          const DistTensor<double>& got, const ProcessGrid& grid, Index first,
                          Index count) {
  return compare(dataset, gatherToGlobal(got, grid.spatialComm()),
                 samples(c.tensor(dataset), first, count));
}

Comparison compareWholeBatch(const RefCase& c, const std::string& dataset,
                             const DistTensor<double>& got, const ProcessGrid& grid) {
  return compare(dataset, wholeBatch(gatherToGlobal(got, grid.spatialComm()), grid),
                 c.tensor(dataset));
}

Comparison compareSamples(const RefCase& c, const std::string& dataset,
                          const FeatureView<double>& got, Index first, Index count) {
  return compare(dataset, Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), got),
                 samples(c.tensor(dataset), first, count));
}

void compareGradients(const RefCase& c, const std::vector<Parameter<double>>& params,
                      const ProcessGrid& grid, std::vector<Comparison>& out) {
  for (const Parameter<double>& p : params) {
    const std::string name = "grad_" + p.name;
    if (!c.has(name)) continue;
    out.push_back(compare(name, globalGradient(p, grid), c.tensor(name)));
  }
}

}  // namespace hybrid3d::app::refcheck
