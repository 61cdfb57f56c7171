# Script mode: install BUILD_DIR into PREFIX, build CONSUMER_SOURCE against it, run it; check
# that the consumer found the Kokkos and Kokkos-Kernels hybrid3d was built with (KOKKOS_DIR,
# KOKKOSKERNELS_DIR), and that a consumer naming another Kokkos (OTHER_KOKKOS_DIR) is stopped.
function(run)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "failed (${rc}): ${ARGN}\n${out}\n${err}")
  endif()
endfunction()
function(same_dir what found expected)
  get_filename_component(found "${found}" REALPATH)
  get_filename_component(expected "${expected}" REALPATH)
  if(NOT found STREQUAL expected)
    message(FATAL_ERROR "the consumer found ${what} in ${found}, hybrid3d was built with ${expected}")
  endif()
endfunction()
# The consumer uses the compilers hybrid3d was built with (nvcc_wrapper in a CUDA build).
set(compilers "-DCMAKE_CXX_COMPILER=${CXX_COMPILER}" "-DCMAKE_C_COMPILER=${C_COMPILER}")
file(REMOVE_RECURSE "${PREFIX}" "${CONSUMER_BUILD}" "${CONSUMER_BUILD}-other")
run(${CMAKE_COMMAND} --install "${BUILD_DIR}" --prefix "${PREFIX}")
run(${CMAKE_COMMAND} -S "${CONSUMER_SOURCE}" -B "${CONSUMER_BUILD}" ${compilers}
    "-DCMAKE_PREFIX_PATH=${PREFIX}" -DCMAKE_BUILD_TYPE=Release)
file(STRINGS "${CONSUMER_BUILD}/found-dependencies.txt" found REGEX "_DIR=")
foreach(line IN LISTS found)
  if(line MATCHES "^Kokkos_DIR=(.*)$")
    same_dir(Kokkos "${CMAKE_MATCH_1}" "${KOKKOS_DIR}")
  elseif(line MATCHES "^KokkosKernels_DIR=(.*)$")
    same_dir(Kokkos-Kernels "${CMAKE_MATCH_1}" "${KOKKOSKERNELS_DIR}")
  endif()
endforeach()
run(${CMAKE_COMMAND} --build "${CONSUMER_BUILD}")
run(${MPIEXEC} -n 1 "${CONSUMER_BUILD}/consumer")

execute_process(COMMAND ${CMAKE_COMMAND} -S "${CONSUMER_SOURCE}" -B "${CONSUMER_BUILD}-other"
                        ${compilers} "-DCMAKE_PREFIX_PATH=${PREFIX}" "-DKokkos_DIR=${OTHER_KOKKOS_DIR}"
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(rc EQUAL 0 OR NOT err MATCHES "hybrid3d was built with Kokkos from")
  message(FATAL_ERROR "a consumer naming another Kokkos was not stopped (${rc}):\n${err}")
endif()
message(STATUS "installed hybrid3d found with its own Kokkos, built against and run; "
               "another Kokkos refused")
