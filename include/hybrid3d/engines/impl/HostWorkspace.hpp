#pragma once
// One host buffer for the blocked copies and scratchpads of every vendor convolution of the
// process (the onednn engine). Convolutions run one at a time, so it holds the largest single
// pass. It grows only while layers are set up, and its pages are touched then: first touch of
// fresh pages costs more than the arithmetic on these machines (docs/design.md section 10), and a
// training step must allocate nothing. Its size is part of what a rank's model holds
// (model/GraphMemory.hpp).

#include <cstddef>

namespace hybrid3d::Impl {

class HostWorkspace {
public:
  static HostWorkspace& instance();
  HostWorkspace(const HostWorkspace&) = delete;
  HostWorkspace& operator=(const HostWorkspace&) = delete;

  // At least `bytes` (rounded up to whole 4 KiB pages), zero-filled; the old contents go.
  void reserve(std::size_t bytes);
  // Frees the buffer. Only while no convolution that uses it exists (benchmarks and tests
  // that build one model after another, so that each starts from nothing).
  void release();
  char* data() const { return data_; }
  std::size_t bytes() const { return size_; }

private:
  HostWorkspace() = default;
  ~HostWorkspace();
  char* data_ = nullptr;
  std::size_t size_ = 0;
};

}  // namespace hybrid3d::Impl
