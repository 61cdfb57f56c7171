#pragma once
/// \file
/// One exception type for every user-facing failure (bad deck, impossible grid, bad file).
/// The message is a single line that names the culprit (key, file, extent, grid or rank);
/// the command-line front end prints it and exits non-zero.

#include <sstream>
#include <stdexcept>
#include <string>

namespace hybrid3d {

class Error : public std::runtime_error {
public:
  explicit Error(const std::string& what) : std::runtime_error(what) {}
};

/// An Error thrown by every rank of MPI_COMM_WORLD together, with the same message (agreed by
/// data::agreeOnError over the world): main can wait for all ranks to end the run cleanly.
class WorldError : public Error {
public:
  using Error::Error;
};

namespace Impl {
template <class... Args>
std::string concat(const Args&... args) {
  std::ostringstream os;
  (os << ... << args);
  return os.str();
}
}  // namespace Impl

/// Throws hybrid3d::Error with the pieces streamed together: fail("grid ", g, " too fine").
template <class... Args>
[[noreturn]] void fail(const Args&... args) {
  throw Error(Impl::concat(args...));
}

}  // namespace hybrid3d
