#pragma once
/// \file
/// The shortest decimal text of a number that reads back as exactly that number (0.6, not
/// 0.59999999999999998): for files that are read again (manifests, caches) and for values a
/// user pastes into a deck, where the pasted number must be the computed one, bit for bit.

#include <iomanip>
#include <limits>
#include <sstream>
#include <string>

namespace hybrid3d {

template <class T>
std::string exactText(T v) {
  for (int digits = std::numeric_limits<T>::digits10;; ++digits) {
    std::ostringstream os;
    os << std::setprecision(digits) << v;
    std::istringstream back(os.str());
    T w{};
    back >> w;
    if (w == v || digits >= std::numeric_limits<T>::max_digits10) return os.str();
  }
}

}  // namespace hybrid3d
