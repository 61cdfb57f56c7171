#include "RefCase.hpp"

#include <algorithm>
#include <cmath>

#include <hybrid3d/core/Error.hpp>

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

}  // namespace hybrid3d::app::refcheck
