#include <hybrid3d/data/Hdf5Lock.hpp>

namespace hybrid3d::data {

std::mutex& hdf5Mutex() {
  static std::mutex m;
  return m;
}

}  // namespace hybrid3d::data
