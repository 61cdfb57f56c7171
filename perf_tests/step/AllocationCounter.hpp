#pragma once
// Counts the C++ heap allocations of the whole process (operator new and new[], replaced in
// AllocationCounter.cpp, which a program links in once): bench_train_step and
// unit_tests/train/StepAllocationTest check with it that a training step after the first
// allocates nothing (docs/design.md sections 9 and 10).
//
// Counts are of the calling thread (the one that runs the training step), except two:
//   - vendor: made on any thread inside a hybrid3d::VendorCallScope that thread opened, i.e.
//     inside oneDNN's own code, which builds its own argument map on every primitive execute;
//     we cannot avoid those;
//   - otherThreads: made on the other threads outside vendor calls: the data loader's
//     prefetch thread opening and reading sample files (HDF5 and the file system allocate),
//     and a vendor's worker threads (oneDNN runs on the calling thread with one OpenMP thread).
// Among the calling thread's own, one kind is told apart:
//   - labels: std::strings freed holding a Kokkos kernel or profiling-region label
//     ("hybrid3d::..." or "Kokkos..."): Kokkos takes labels as std::string, so a kernel launched
//     with a string literal longer than the small-string buffer allocates one per launch.
//     They are tiny and short-lived (no fresh pages), but they are allocations: counted apart
//     so that every other allocation stands out, and so that the ones left can be removed
//     (a label made once, as model/Graph does).
// Aligned operator new (over-aligned types) is not counted.

namespace hybrid3d::bench {

struct AllocationCounts {
  long long ours = 0;          // this thread's operator new outside vendor calls, labels included
  long long labels = 0;        // label strings this thread freed (see above)
  long long vendor = 0;        // operator new inside vendor calls, all threads
  long long otherThreads = 0;  // operator new outside vendor calls on the other threads

  long long unexplained() const { return ours - labels; }
  AllocationCounts operator-(const AllocationCounts& o) const {
    return {ours - o.ours, labels - o.labels, vendor - o.vendor, otherThreads - o.otherThreads};
  }
};

// Counts since the process started, as seen from the calling thread.
AllocationCounts allocationCounts();

}  // namespace hybrid3d::bench
