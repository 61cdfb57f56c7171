# Finds hybrid3d's dependencies and gives them uniform target names, both for hybrid3d's own
# build and (installed beside hybrid3dConfig.cmake) for projects that find_package(hybrid3d):
#   MPI::MPI_CXX, Kokkos::kokkos, hybrid3d::kokkoskernels, hdf5::hdf5, hybrid3d::fftw3_mpi,
#   hybrid3d::nifti2, and with the onednn convolution engine hybrid3d::dnnl, with the cudnn one
#   hybrid3d::cudnn
# Works with Debian's Trilinos (Kokkos 3.4, TriBITS-style exports) and with a standalone
# Kokkos/Kokkos-Kernels 4.x (Kokkos::kokkos, Kokkos::kokkoskernels).
include_guard(GLOBAL)

# An installed hybrid3d names the package directories it was built with
# (HYBRID3D_BUILT_WITH_<Pkg>_DIR, set by hybrid3dConfig.cmake): a consumer then finds exactly
# those, never another Kokkos on its own search paths (a library compiled for Kokkos 4 with
# OpenMP does not link against Debian's Kokkos 3.4), and a consumer that already found another
# one is stopped naming both. In hybrid3d's own build the variables are unset: a plain search.
macro(hybrid3d_find_built_with pkg)
  if(HYBRID3D_BUILT_WITH_${pkg}_DIR)
    find_package(${pkg} REQUIRED CONFIG PATHS "${HYBRID3D_BUILT_WITH_${pkg}_DIR}" NO_DEFAULT_PATH)
    get_filename_component(_h3d_found "${${pkg}_DIR}" REALPATH)
    get_filename_component(_h3d_built "${HYBRID3D_BUILT_WITH_${pkg}_DIR}" REALPATH)
    if(NOT _h3d_found STREQUAL _h3d_built)
      message(FATAL_ERROR "hybrid3d was built with ${pkg} from ${HYBRID3D_BUILT_WITH_${pkg}_DIR}, "
                          "but this project uses ${pkg} from ${${pkg}_DIR}; use the same one")
    endif()
  else()
    find_package(${pkg} REQUIRED ${ARGN})
  endif()
endmacro()

find_package(MPI REQUIRED COMPONENTS C CXX)
hybrid3d_find_built_with(Kokkos)
# Kokkos-Kernels beside the Kokkos found (one prefix, as build-kokkos4.sh and most installs
# make them) before the system's: -DKokkos_ROOT alone must not pair Kokkos 4 with Debian's 3.4
# Kokkos-Kernels.
hybrid3d_find_built_with(KokkosKernels HINTS "${Kokkos_DIR}/..")
include("${CMAKE_CURRENT_LIST_DIR}/Hybrid3dKokkosRequirements.cmake")

# Debian's Trilinos exports Kokkos::kokkos with the include directory "/usr/lib/include", which
# does not exist (CMake then refuses to generate), and without /usr/include/trilinos, where the
# headers are. Keep the entries that exist and add the TriBITS include variable.
if(TARGET Kokkos::kokkos)
  get_target_property(_h3d_inc Kokkos::kokkos INTERFACE_INCLUDE_DIRECTORIES)
  set(_h3d_keep)
  foreach(_d IN LISTS _h3d_inc Kokkos_INCLUDE_DIRS)
    if(_d AND EXISTS "${_d}")
      list(APPEND _h3d_keep "${_d}")
    endif()
  endforeach()
  list(REMOVE_DUPLICATES _h3d_keep)
  set_target_properties(Kokkos::kokkos PROPERTIES INTERFACE_INCLUDE_DIRECTORIES "${_h3d_keep}")
endif()

if(NOT TARGET hybrid3d::kokkoskernels)
  add_library(hybrid3d::kokkoskernels INTERFACE IMPORTED)
  if(TARGET Kokkos::kokkoskernels)
    set_target_properties(hybrid3d::kokkoskernels PROPERTIES
      INTERFACE_LINK_LIBRARIES "Kokkos::kokkoskernels;Kokkos::kokkos")
  else()
    # TriBITS export: library names (imported targets) plus an include variable.
    set_target_properties(hybrid3d::kokkoskernels PROPERTIES
      INTERFACE_INCLUDE_DIRECTORIES "${KokkosKernels_INCLUDE_DIRS}"
      INTERFACE_LINK_LIBRARIES "${KokkosKernels_LIBRARIES};Kokkos::kokkos")
  endif()
endif()

# oneDNN (Debian: libdnnl-dev) for the onednn convolution engine. It threads through OpenMP,
# whose thread count the engine sets (one thread per rank with the Serial backend). Found by
# header and library: Debian's dnnl CMake package demands OpenCL's development files (its GPU
# runtime), which the CPU engine never uses.
# HYBRID3D_ENABLE_ONEDNN: AUTO takes it when found; ON requires it; the result is ON or OFF.
# An installed hybrid3d's convolution engine library exactly as it was linked
# (HYBRID3D_BUILT_WITH_<ENGINE>_INCLUDE_DIR / _LINK, set by hybrid3dConfig.cmake), instead of
# searching again: the consumer's paths may hold another oneDNN or cuDNN.
macro(hybrid3d_engine_as_built target engine)
  if(DEFINED HYBRID3D_BUILT_WITH_${engine}_LINK AND NOT TARGET ${target})
    add_library(${target} INTERFACE IMPORTED)
    set_target_properties(${target} PROPERTIES
      INTERFACE_INCLUDE_DIRECTORIES "${HYBRID3D_BUILT_WITH_${engine}_INCLUDE_DIR}"
      INTERFACE_LINK_LIBRARIES "${HYBRID3D_BUILT_WITH_${engine}_LINK}")
  endif()
endmacro()

if(NOT HYBRID3D_ENABLE_ONEDNN STREQUAL "OFF")
  hybrid3d_engine_as_built(hybrid3d::dnnl DNNL)
endif()
if(NOT HYBRID3D_ENABLE_ONEDNN STREQUAL "OFF" AND NOT TARGET hybrid3d::dnnl)
  find_path(HYBRID3D_DNNL_INCLUDE_DIR oneapi/dnnl/dnnl.hpp)
  find_library(HYBRID3D_DNNL_LIBRARY dnnl)
  find_package(OpenMP QUIET COMPONENTS CXX)
  if(HYBRID3D_DNNL_INCLUDE_DIR AND HYBRID3D_DNNL_LIBRARY AND OpenMP_CXX_FOUND)
    add_library(hybrid3d::dnnl INTERFACE IMPORTED)
    set_target_properties(hybrid3d::dnnl PROPERTIES
      INTERFACE_INCLUDE_DIRECTORIES "${HYBRID3D_DNNL_INCLUDE_DIR}"
      INTERFACE_LINK_LIBRARIES "${HYBRID3D_DNNL_LIBRARY};${OpenMP_CXX_LIBRARIES}")
  elseif(HYBRID3D_ENABLE_ONEDNN STREQUAL "ON")
    message(FATAL_ERROR "HYBRID3D_ENABLE_ONEDNN=ON needs oneDNN (oneapi/dnnl/dnnl.hpp, libdnnl) "
                        "and OpenMP; on Debian: libdnnl-dev")
  else()
    message(STATUS "hybrid3d: oneDNN not found, the onednn convolution engine is left out "
                   "(Debian: libdnnl-dev)")
  endif()
endif()
if(NOT HYBRID3D_ENABLE_ONEDNN STREQUAL "OFF" AND TARGET hybrid3d::dnnl)
  set(HYBRID3D_ENABLE_ONEDNN ON)
  # What hybrid3dConfig.cmake records for consumers.
  get_target_property(HYBRID3D_DNNL_INCLUDE hybrid3d::dnnl INTERFACE_INCLUDE_DIRECTORIES)
  get_target_property(HYBRID3D_DNNL_LINK hybrid3d::dnnl INTERFACE_LINK_LIBRARIES)
else()
  set(HYBRID3D_ENABLE_ONEDNN OFF)
endif()

# cuDNN for the cudnn convolution engine, only where Kokkos has the CUDA backend (the engine
# computes on Kokkos::CudaSpace memory, on the execution space instance's stream). Looked for
# under $CUDNN_ROOT, then the CUDA toolkit ($CUDA_HOME, default /usr/local/cuda), which is where
# NVIDIA's packages and ours put it; found by header and library (cuDNN ships no CMake package).
# HYBRID3D_ENABLE_CUDNN: AUTO takes it when both are there; ON requires them; the result is ON
# or OFF.
if(NOT HYBRID3D_ENABLE_CUDNN STREQUAL "OFF" AND Kokkos_ENABLE_CUDA)
  hybrid3d_engine_as_built(hybrid3d::cudnn CUDNN)
endif()
if(NOT HYBRID3D_ENABLE_CUDNN STREQUAL "OFF" AND Kokkos_ENABLE_CUDA AND NOT TARGET hybrid3d::cudnn)
  set(_h3d_cuda_home "$ENV{CUDA_HOME}")
  if(NOT _h3d_cuda_home)
    set(_h3d_cuda_home /usr/local/cuda)
  endif()
  find_path(HYBRID3D_CUDNN_INCLUDE_DIR cudnn.h
            HINTS "$ENV{CUDNN_ROOT}" "${_h3d_cuda_home}" PATH_SUFFIXES include)
  find_library(HYBRID3D_CUDNN_LIBRARY cudnn
               HINTS "$ENV{CUDNN_ROOT}" "${_h3d_cuda_home}" PATH_SUFFIXES lib64 lib)
  if(HYBRID3D_CUDNN_INCLUDE_DIR AND HYBRID3D_CUDNN_LIBRARY)
    add_library(hybrid3d::cudnn INTERFACE IMPORTED)
    set_target_properties(hybrid3d::cudnn PROPERTIES
      INTERFACE_INCLUDE_DIRECTORIES "${HYBRID3D_CUDNN_INCLUDE_DIR}"
      INTERFACE_LINK_LIBRARIES "${HYBRID3D_CUDNN_LIBRARY}")
  endif()
endif()
if(HYBRID3D_ENABLE_CUDNN STREQUAL "ON" AND NOT TARGET hybrid3d::cudnn)
  if(NOT Kokkos_ENABLE_CUDA)
    message(FATAL_ERROR "HYBRID3D_ENABLE_CUDNN=ON needs a Kokkos built with the CUDA backend "
                        "(this one has: ${Kokkos_DEVICES})")
  endif()
  message(FATAL_ERROR "HYBRID3D_ENABLE_CUDNN=ON needs cuDNN (cudnn.h, libcudnn) under "
                      "$CUDNN_ROOT or the CUDA toolkit ($CUDA_HOME)")
endif()
if(NOT HYBRID3D_ENABLE_CUDNN STREQUAL "OFF" AND TARGET hybrid3d::cudnn)
  set(HYBRID3D_ENABLE_CUDNN ON)
else()
  if(Kokkos_ENABLE_CUDA AND NOT HYBRID3D_ENABLE_CUDNN STREQUAL "OFF")
    message(STATUS "hybrid3d: cuDNN not found, the cudnn convolution engine is left out "
                   "(set CUDNN_ROOT or CUDA_HOME)")
  endif()
  set(HYBRID3D_ENABLE_CUDNN OFF)
endif()

set(HDF5_PREFER_PARALLEL ON)
find_package(HDF5 REQUIRED COMPONENTS C)
if(NOT HDF5_IS_PARALLEL)
  message(FATAL_ERROR "hybrid3d needs a parallel (MPI-IO) HDF5; on Debian: libhdf5-openmpi-dev")
endif()
if(NOT TARGET hdf5::hdf5)
  add_library(hdf5::hdf5 INTERFACE IMPORTED)
  set_target_properties(hdf5::hdf5 PROPERTIES
    INTERFACE_INCLUDE_DIRECTORIES "${HDF5_C_INCLUDE_DIRS}"
    INTERFACE_LINK_LIBRARIES "${HDF5_C_LIBRARIES}"
    INTERFACE_COMPILE_DEFINITIONS "${HDF5_C_DEFINITIONS}")
endif()

# FFTW with its MPI interface (double precision), for the parallel data generators.
# Debian ships no CMake package for fftw3-mpi, so find the pieces directly.
if(NOT TARGET hybrid3d::fftw3_mpi)
  find_path(HYBRID3D_FFTW3_INCLUDE_DIR fftw3-mpi.h)
  find_library(HYBRID3D_FFTW3_LIBRARY fftw3)
  find_library(HYBRID3D_FFTW3_MPI_LIBRARY fftw3_mpi)
  if(NOT HYBRID3D_FFTW3_INCLUDE_DIR OR NOT HYBRID3D_FFTW3_LIBRARY OR NOT HYBRID3D_FFTW3_MPI_LIBRARY)
    message(FATAL_ERROR "hybrid3d needs FFTW 3 with MPI; on Debian: libfftw3-mpi-dev")
  endif()
  add_library(hybrid3d::fftw3_mpi INTERFACE IMPORTED)
  set_target_properties(hybrid3d::fftw3_mpi PROPERTIES
    INTERFACE_INCLUDE_DIRECTORIES "${HYBRID3D_FFTW3_INCLUDE_DIR}"
    INTERFACE_LINK_LIBRARIES "${HYBRID3D_FFTW3_MPI_LIBRARY};${HYBRID3D_FFTW3_LIBRARY};MPI::MPI_C")
endif()

# NIfTI-1/2 reading for `hybrid3d import nifti` (Debian: libnifti2-dev, the NIfTI clib's
# nifti2_io, which reads both versions, plain and gzipped through znzlib). Found by header and
# library: Debian 12's NIFTIConfig.cmake names libznz under /usr/lib (the package puts it under
# the multiarch folder) and command-line tools the package does not ship, so it stops any
# configure that loads it; no pkg-config file comes with it.
if(NOT TARGET hybrid3d::nifti2)
  find_path(HYBRID3D_NIFTI2_INCLUDE_DIR nifti2_io.h PATH_SUFFIXES nifti)
  find_library(HYBRID3D_NIFTI2_LIBRARY nifti2)
  find_library(HYBRID3D_ZNZ_LIBRARY znz)
  find_package(ZLIB QUIET)
  if(NOT HYBRID3D_NIFTI2_INCLUDE_DIR OR NOT HYBRID3D_NIFTI2_LIBRARY OR NOT HYBRID3D_ZNZ_LIBRARY
     OR NOT ZLIB_FOUND)
    message(FATAL_ERROR "hybrid3d needs the NIfTI library nifti2_io with znzlib and zlib; on "
                        "Debian: libnifti2-dev")
  endif()
  add_library(hybrid3d::nifti2 INTERFACE IMPORTED)
  set_target_properties(hybrid3d::nifti2 PROPERTIES
    INTERFACE_INCLUDE_DIRECTORIES "${HYBRID3D_NIFTI2_INCLUDE_DIR}"
    INTERFACE_LINK_LIBRARIES "${HYBRID3D_NIFTI2_LIBRARY};${HYBRID3D_ZNZ_LIBRARY};ZLIB::ZLIB;m")
endif()

# Teuchos (input decks) only where the deck front end is built; it is never a dependency of
# the core library. Debian's TriBITS export gives library names and an include variable.
if(HYBRID3D_ENABLE_DECKS AND NOT TARGET hybrid3d::teuchos)
  hybrid3d_find_built_with(Teuchos)
  # Debian's Teuchos brings Debian's Kokkos 3.4: refuse it beside another Kokkos.
  include("${CMAKE_CURRENT_LIST_DIR}/Hybrid3dTeuchosKokkos.cmake")
  hybrid3d_refuse_teuchos_kokkos_mix(KOKKOS_LIBS Kokkos::kokkos TEUCHOS_LIBS ${Teuchos_LIBRARIES})
  add_library(hybrid3d::teuchos INTERFACE IMPORTED)
  set_target_properties(hybrid3d::teuchos PROPERTIES
    INTERFACE_INCLUDE_DIRECTORIES "${Teuchos_INCLUDE_DIRS}"
    INTERFACE_LINK_LIBRARIES "${Teuchos_LIBRARIES}")
endif()
