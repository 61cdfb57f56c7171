#pragma once
/// \file
/// Math functions callable inside kernels on every backend. Kokkos 3.4 has them in
/// Kokkos::Experimental, Kokkos 3.7 and later in Kokkos (the Experimental names were later
/// removed); kernels call hybrid3d::math::sqrt and so on and build against either.

#include <Kokkos_Core.hpp>

namespace hybrid3d::math {

#if KOKKOS_VERSION >= 30700
using Kokkos::exp;
using Kokkos::fabs;
using Kokkos::log;
using Kokkos::log1p;
using Kokkos::sqrt;
using Kokkos::tanh;
#else
using Kokkos::Experimental::exp;
using Kokkos::Experimental::fabs;
using Kokkos::Experimental::log;
using Kokkos::Experimental::log1p;
using Kokkos::Experimental::sqrt;
using Kokkos::Experimental::tanh;
#endif

}  // namespace hybrid3d::math
