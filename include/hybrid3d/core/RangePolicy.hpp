#pragma once
/// \file
/// A flat-range policy on a given execution space instance that allocates nothing.
///
/// Kokkos 4 built with its deprecated 4.x code (the default) makes every
/// RangePolicy(exec, begin, end) ask for a chunk size through the static
/// `concurrency(const Exec& = Exec())` with no argument: a default-constructed OpenMP or Serial
/// instance, whose shared-pointer control block is a heap allocation per kernel launch inside
/// the training step (step_allocation_tests). Passing the chunk size skips that question. The
/// chunk asked for is one contiguous block per thread, what a static schedule of a uniform loop
/// does anyway (GCC's OpenMP backend ignores the chunk of a static schedule; device backends
/// size their blocks themselves).

#include <algorithm>
#include <type_traits>
#include <utility>

#include <Kokkos_Core.hpp>

#include <hybrid3d/core/Types.hpp>

namespace hybrid3d {

namespace Impl {
/// Whether Exec has the deprecated static concurrency(const Exec&) (Kokkos 4 with deprecated code).
template <class Exec, class = void>
struct ConcurrencyTakesAnInstance : std::false_type {};
template <class Exec>
struct ConcurrencyTakesAnInstance<
    Exec, std::void_t<decltype(Exec::concurrency(std::declval<const Exec&>()))>> : std::true_type {
};
}  // namespace Impl

/// How many threads `exec` runs, without constructing another instance: the static that takes
/// the instance where Kokkos has it; otherwise the member (Kokkos 4 without deprecated code) or
/// the static without arguments (Kokkos 3), neither of which constructs one.
template <class Exec>
int concurrencyOf(const Exec& exec) {
  if constexpr (Impl::ConcurrencyTakesAnInstance<Exec>::value)
    return Exec::concurrency(exec);
  else
    return exec.concurrency();
}

/// Kokkos::RangePolicy<Exec, Properties...>(exec, begin, end) with Index indices and a chunk
/// size of its own (above).
template <class Exec, class... Properties>
Kokkos::RangePolicy<Exec, Kokkos::IndexType<Index>, Properties...> rangePolicy(const Exec& exec,
                                                                               Index begin,
                                                                               Index end) {
  const Index threads = std::max(1, concurrencyOf(exec));
  const Index chunk = std::max<Index>(1, (end - begin + threads - 1) / threads);
  return Kokkos::RangePolicy<Exec, Kokkos::IndexType<Index>, Properties...>(
      exec, begin, end, Kokkos::ChunkSize(static_cast<int>(std::min<Index>(chunk, 1 << 30))));
}

}  // namespace hybrid3d
