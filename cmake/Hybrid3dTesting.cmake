# One way to register a test for every rank count: hybrid3d_add_mpi_test(NAME TARGET
# [RANKS 1 2 4 8] [ARGS ...] [TIMEOUT s] [LABELS ...]) adds NAME.npN running
# `mpiexec -n N TARGET ARGS`, with the CTest LABELS given (`ctest -L` / `-LE` select by them).
# Oversubscription lets 8 ranks run on 2 cores; the environment lets OpenMPI run as root and
# keeps OpenBLAS to one thread per rank so ranks and BLAS threads do not fight over cores.
# --bind-to none: OpenMPI binds each rank to one core when it starts 2 ranks or fewer, which
# would run all OpenMP threads of a rank (OMP_NUM_THREADS) on that core, one at a time.
set(HYBRID3D_TEST_RANKS 1 2 4 8 CACHE STRING "Rank counts at which MPI tests are registered")
set(HYBRID3D_MPIEXEC_EXTRA_FLAGS "--oversubscribe --bind-to none" CACHE STRING
    "Flags for mpiexec in tests (OpenMPI needs --oversubscribe for more ranks than cores)")
set(HYBRID3D_TEST_ENVIRONMENT
    "OMPI_ALLOW_RUN_AS_ROOT=1;OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1;OPENBLAS_NUM_THREADS=1"
    CACHE STRING "Environment of every MPI test")
# auto's convolution timings (engines/ConvTimings.hpp) in the build tree: the suite neither reads
# nor writes the user's ~/.cache, and a later run reads what an earlier one measured.
list(APPEND HYBRID3D_TEST_ENVIRONMENT
     "HYBRID3D_CONV_TIMINGS=${PROJECT_BINARY_DIR}/conv-timings.txt")

function(hybrid3d_add_mpi_test name target)
  cmake_parse_arguments(A "" "TIMEOUT" "RANKS;ARGS;LABELS" ${ARGN})
  if(NOT A_RANKS)
    set(A_RANKS ${HYBRID3D_TEST_RANKS})
  endif()
  if(NOT A_TIMEOUT)
    set(A_TIMEOUT 300)
  endif()
  separate_arguments(_extra UNIX_COMMAND "${HYBRID3D_MPIEXEC_EXTRA_FLAGS}")
  foreach(n IN LISTS A_RANKS)
    add_test(NAME ${name}.np${n}
             COMMAND ${MPIEXEC_EXECUTABLE} ${MPIEXEC_NUMPROC_FLAG} ${n} ${_extra}
                     ${MPIEXEC_PREFLAGS} $<TARGET_FILE:${target}> ${MPIEXEC_POSTFLAGS} ${A_ARGS})
    # A hang (a rank that failed before a collective) becomes a failure, not a stuck CI.
    set_tests_properties(${name}.np${n} PROPERTIES
      ENVIRONMENT "${HYBRID3D_TEST_ENVIRONMENT}" TIMEOUT ${A_TIMEOUT} PROCESSORS ${n})
    if(A_LABELS)
      set_tests_properties(${name}.np${n} PROPERTIES LABELS "${A_LABELS}")
    endif()
  endforeach()
endfunction()

# The Kokkos backends the per-backend tests are built for (hybrid3d_backend_test in
# unit_tests/CMakeLists.txt): each of Serial, OpenMP, Cuda and HIP this Kokkos was built with
# (Kokkos_DEVICES), as "NAME=EXECUTION_SPACE" pairs; NAME suffixes the executables and tests.
set(HYBRID3D_TEST_BACKENDS)
foreach(_h3d_backend IN ITEMS Serial OpenMP Cuda HIP)
  string(TOUPPER "${_h3d_backend}" _h3d_device)
  if(_h3d_device IN_LIST Kokkos_DEVICES)
    string(TOLOWER "${_h3d_backend}" _h3d_name)
    list(APPEND HYBRID3D_TEST_BACKENDS "${_h3d_name}=Kokkos::${_h3d_backend}")
  endif()
endforeach()
if(NOT HYBRID3D_TEST_BACKENDS)
  message(FATAL_ERROR "hybrid3d: the Kokkos in ${Kokkos_DIR} enables none of SERIAL, OPENMP, "
                      "CUDA, HIP (Kokkos_DEVICES: '${Kokkos_DEVICES}'); the tests need one")
endif()
# Kokkos's default execution space: a device backend before OpenMP before Serial, so the last
# of the list above (Threads and HPX, which would come before Serial, are not tested here).
list(GET HYBRID3D_TEST_BACKENDS -1 HYBRID3D_DEFAULT_TEST_BACKEND)
string(REGEX REPLACE "=.*" "" HYBRID3D_DEFAULT_TEST_BACKEND "${HYBRID3D_DEFAULT_TEST_BACKEND}")
