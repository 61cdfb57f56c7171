#pragma once
/// \file
/// Marks the calls into a vendor library whose inner allocations are the library's own and
/// cannot be avoided from outside (oneDNN's primitive execute builds its own argument map on
/// every call). Allocation counters (bench_train_step, unit_tests/train/StepAllocationTest) count
/// what happens inside a VendorCallScope separately, so that "no allocation inside the step
/// loop" can be checked for our code and stated honestly for the vendor's. The mark is per
/// thread, so that another thread's allocations (the data loader's) are not taken for the
/// vendor's; what the library's own worker threads allocate is another thread's too.

namespace hybrid3d {

class VendorCallScope {
public:
  VendorCallScope() { ++depth(); }
  ~VendorCallScope() { --depth(); }
  VendorCallScope(const VendorCallScope&) = delete;
  VendorCallScope& operator=(const VendorCallScope&) = delete;

  /// True while this thread is inside a vendor call.
  static bool active() { return depth() > 0; }

private:
  static int& depth() {
    static thread_local int d = 0;
    return d;
  }
};

}  // namespace hybrid3d
