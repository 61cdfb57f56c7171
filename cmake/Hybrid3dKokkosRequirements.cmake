# What the Kokkos found must provide, when the configuration asks (the CMake presets do):
#   HYBRID3D_REQUIRE_KOKKOS_DEVICES  backends, e.g. "OPENMP" or "CUDA" (Kokkos_DEVICES names)
#   HYBRID3D_REQUIRE_KOKKOS_ARCH     architectures, e.g. "HOPPER90" or "AMD_GFX90A" (Kokkos_ARCH)
# A preset for an H100 pointed at a Kokkos built for an A100 (or for the host only) then stops at
# configure time naming the Kokkos, instead of building code that cannot run on the device.
include_guard(GLOBAL)

set(HYBRID3D_REQUIRE_KOKKOS_DEVICES "" CACHE STRING
    "Kokkos backends the Kokkos found must have (e.g. OPENMP, CUDA, HIP); empty: any")
set(HYBRID3D_REQUIRE_KOKKOS_ARCH "" CACHE STRING
    "Kokkos architectures the Kokkos found must be built for (e.g. HOPPER90); empty: any")

foreach(_h3d_kind DEVICES ARCH)
  set(_h3d_missing)
  string(TOUPPER "${Kokkos_${_h3d_kind}}" _h3d_have)
  foreach(_h3d_want IN LISTS HYBRID3D_REQUIRE_KOKKOS_${_h3d_kind})
    string(TOUPPER "${_h3d_want}" _h3d_want)
    if(NOT _h3d_want IN_LIST _h3d_have)
      list(APPEND _h3d_missing "${_h3d_want}")
    endif()
  endforeach()
  if(_h3d_missing)
    message(FATAL_ERROR "hybrid3d: the Kokkos in ${Kokkos_DIR} lacks Kokkos_${_h3d_kind} "
                        "'${_h3d_missing}' (it has '${Kokkos_${_h3d_kind}}'; "
                        "HYBRID3D_REQUIRE_KOKKOS_${_h3d_kind}); point Kokkos_ROOT at a Kokkos "
                        "built for it")
  endif()
endforeach()
