#pragma once
// A float input value that would silently turn the loss into NaN is refused with its file, its
// array and its voxel, whatever format the sample came in (SampleReader.cpp, NpySample.cpp).

#include <cmath>
#include <string>
#include <vector>

#include <hybrid3d/core/Error.hpp>

namespace hybrid3d::data::Impl {

// `count` is the read's shape ([C,D,H,W] or [D,H,W,C]), `lo` the global voxel of its first
// element; `name` says which array ("dataset '/full'", "array").
template <class Size>
void checkFinite(const std::string& path, const std::string& name, const float* v,
                 const std::vector<Size>& count, const std::vector<Size>& lo, bool channelsLast) {
  std::size_t n = 1;
  for (Size c : count) n *= std::size_t(c);
  for (std::size_t i = 0; i < n; ++i) {
    if (std::isfinite(v[i])) continue;
    std::vector<Size> at(count.size());
    for (std::size_t k = count.size(), rest = i; k-- > 0; rest /= std::size_t(count[k]))
      at[k] = Size(rest % std::size_t(count[k]));
    const std::size_t c = channelsLast ? 3 : 0, d = channelsLast ? 0 : 1;
    fail(path, ": ", name, " holds NaN or Inf (", v[i], " in channel ", at[c], " at voxel (",
         lo[0] + at[d], ",", lo[1] + at[d + 1], ",", lo[2] + at[d + 2], "))");
  }
}

}  // namespace hybrid3d::data::Impl
