#include <cstdlib>
#include <cstring>

#include <hybrid3d/core/Error.hpp>
#include <hybrid3d/engines/impl/HostWorkspace.hpp>

namespace hybrid3d::Impl {

HostWorkspace& HostWorkspace::instance() {
  static HostWorkspace w;
  return w;
}

void HostWorkspace::reserve(std::size_t bytes) {
  if (bytes <= size_) return;
  const std::size_t rounded = (bytes + 4095) / 4096 * 4096;
  void* p = std::aligned_alloc(4096, rounded);
  if (!p) fail("convolution workspace: cannot allocate ", rounded >> 20, " MiB");
  std::memset(p, 0, rounded);
  std::free(data_);
  data_ = static_cast<char*>(p);
  size_ = rounded;
}

void HostWorkspace::release() {
  std::free(data_);
  data_ = nullptr;
  size_ = 0;
}

HostWorkspace::~HostWorkspace() { std::free(data_); }

}  // namespace hybrid3d::Impl
