#include <hybrid3d/io/Hdf5Lock.hpp>

namespace hybrid3d::io {

std::mutex& hdf5Mutex() {
  static std::mutex m;
  return m;
}

}  // namespace hybrid3d::io
