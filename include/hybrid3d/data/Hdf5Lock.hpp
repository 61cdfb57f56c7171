#pragma once
/// \file
/// The lock every HDF5 call of the data pipeline holds.
///
/// Debian's (and most sites') parallel HDF5 is built without its thread-safety option, so two
/// threads must never be inside the library at once. The prefetch thread reads samples while the
/// main thread computes; any other HDF5 use that can overlap it (a second loader, a checkpoint
/// written during training) takes this same lock.

#include <mutex>

namespace hybrid3d::data {

std::mutex& hdf5Mutex();

}  // namespace hybrid3d::data
