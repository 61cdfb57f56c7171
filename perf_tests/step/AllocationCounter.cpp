// The counting operator new and delete of AllocationCounter.hpp: every plain C++ heap
// allocation of the process (libraries included) goes through these.
#include "AllocationCounter.hpp"

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <new>

#include <hybrid3d/core/VendorCall.hpp>

namespace {

// Ours and labels per thread; everything outside vendor calls, and the vendor's, per process.
thread_local long long ours = 0, labels = 0;
std::atomic<long long> anyThread{0}, vendor{0};

// Only the host pass needs these (see the replacements at the end); nvcc's device pass would
// warn that they are unused.
#if !defined(__CUDA_ARCH__)
void countAllocation() {
  if (hybrid3d::VendorCallScope::active()) {
    vendor.fetch_add(1, std::memory_order_relaxed);
  } else {
    ++ours;
    anyThread.fetch_add(1, std::memory_order_relaxed);
  }
}

// A block about to be freed that holds a label string. Every malloc block has at least 16
// usable bytes, so the comparisons stay inside it.
void countIfLabel(const void* p) {
  if (!p || hybrid3d::VendorCallScope::active()) return;
  const char* s = static_cast<const char*>(p);
  if (std::strncmp(s, "hybrid3d::", 10) == 0 || std::strncmp(s, "Kokkos", 6) == 0) ++labels;
}

void* allocate(std::size_t n) {
  countAllocation();
  if (void* p = std::malloc(n ? n : 1)) return p;
  throw std::bad_alloc();
}

void release(void* p) noexcept {
  countIfLabel(p);
  std::free(p);
}
#endif

}  // namespace

namespace hybrid3d::bench {

AllocationCounts allocationCounts() {
  return {ours, labels, vendor.load(std::memory_order_relaxed),
          anyThread.load(std::memory_order_relaxed) - ours};
}

}  // namespace hybrid3d::bench

// nvcc's device pass would take these replacements for __host__ __device__ functions and
// refuses a throw there; they count host allocations, so only the host pass compiles them.
#if !defined(__CUDA_ARCH__)
void* operator new(std::size_t n) { return allocate(n); }
void* operator new[](std::size_t n) { return allocate(n); }
void operator delete(void* p) noexcept { release(p); }
void operator delete[](void* p) noexcept { release(p); }
void operator delete(void* p, std::size_t) noexcept { release(p); }
void operator delete[](void* p, std::size_t) noexcept { release(p); }
#endif
