#pragma once
/// \file
/// A Kokkos profiling region as a scope: pushed when made, popped when the scope ends, also when
/// it ends by an exception (a bad file or a failed check on one rank throws through a halo
/// exchange or a layer, and a tool must not see the regions of the rest of the run nested in an
/// unclosed one). Kokkos 4.1 has Kokkos::Profiling::ScopedRegion; Kokkos 3.4 has none.
///
/// Give it an interned label (Impl::kernelLabel, or a member string made once): pushRegion takes
/// a std::string, and a temporary one would allocate inside the step.

#include <string>

#include <Kokkos_Core.hpp>

namespace hybrid3d {

class ProfilingRegion {
public:
  explicit ProfilingRegion(const std::string& name) { Kokkos::Profiling::pushRegion(name); }
  ~ProfilingRegion() { Kokkos::Profiling::popRegion(); }
  ProfilingRegion(const ProfilingRegion&) = delete;
  ProfilingRegion& operator=(const ProfilingRegion&) = delete;
};

}  // namespace hybrid3d
