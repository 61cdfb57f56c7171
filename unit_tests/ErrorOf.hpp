#pragma once
// The message of the hybrid3d::Error a call throws: what the tests of bad input compare.

#include <string>

#include <hybrid3d/core/Error.hpp>

namespace hybrid3d::test {

// The message of the hybrid3d::Error that f() throws, "" when it throws none.
template <class F>
std::string errorOf(F&& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

}  // namespace hybrid3d::test
