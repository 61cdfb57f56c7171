# `hybrid3d --help`, `hybrid3d help COMMAND` and `hybrid3d COMMAND --help` print hybrid3d's own
# usage once (not Kokkos's option list, which Kokkos::initialize prints for --help) and exit 0,
# on one rank and on two; an unknown command or none is an error.
include(${CMAKE_CURRENT_LIST_DIR}/Common.cmake)
set(commands calibrate check compare deck-help downsample generate gradients import plan refcheck
             split stats train)

function(expect_only_ours text)
  string(FIND "${text}" "Kokkos command line arguments" kokkos)
  if(NOT kokkos EQUAL -1)
    message(FATAL_ERROR "Kokkos's help printed:\n${text}")
  endif()
  string(REGEX MATCHALL "usage: mpirun" usages "${text}")
  list(LENGTH usages n)
  if(NOT n EQUAL 1)
    message(FATAL_ERROR "usage printed ${n} times:\n${text}")
  endif()
endfunction()

foreach(launch "${MPIEXEC};-n;1" "${MPIEXEC};-n;2;--oversubscribe")
  h3d_run(TRUE out ${launch} ${HYBRID3D} --help)
  expect_only_ours("${out}")
  h3d_expect("${out}" "usage: mpirun -n N hybrid3d COMMAND [ARGS]")
  foreach(c IN LISTS commands)
    h3d_expect("${out}" "hybrid3d ${c} ")
  endforeach()

  foreach(c IN LISTS commands)
    h3d_run(TRUE out ${launch} ${HYBRID3D} ${c} --help)
    expect_only_ours("${out}")
    h3d_expect("${out}" "usage: mpirun -n N hybrid3d ${c} ")
    h3d_expect("${out}" "example:\n  mpirun -n ")
  endforeach()
endforeach()

# --help anywhere among a command's words, -h, and `help COMMAND` say the same.
h3d_run(TRUE out ${MPIEXEC} -n 1 ${HYBRID3D} train some_deck.xml --max-steps 3 -h)
expect_only_ours("${out}")
h3d_expect("${out}" "  --restart CHECKPOINT")
h3d_expect("${out}" "  --dry-run ")
h3d_run(TRUE out ${MPIEXEC} -n 1 ${HYBRID3D} help gradients)
h3d_expect("${out}" "  --weights W.h5")
# `import nifti --help`: the format's word before the flag changes nothing.
h3d_run(TRUE out ${MPIEXEC} -n 2 --oversubscribe ${HYBRID3D} import nifti --help)
expect_only_ours("${out}")
h3d_expect("${out}" "usage: mpirun -n N hybrid3d import nifti --images DIR --labels DIR --out DIR")
h3d_expect("${out}" "  --classes N ")

# deck-help prints the schema train validates against, the architectures from the registry.
h3d_run(TRUE out ${MPIEXEC} -n 2 --oversubscribe ${HYBRID3D} deck-help)
h3d_expect("${out}" "  Training/mini-batch ")
h3d_expect("${out}" "required; cosmoflow | cosmoflow_mlperf | unet3d")
string(REGEX MATCHALL "Keys of a training deck" heads "${out}")
list(LENGTH heads n)
if(NOT n EQUAL 1)
  message(FATAL_ERROR "deck-help printed ${n} times on 2 ranks:\n${out}")
endif()

h3d_run(FALSE out ${MPIEXEC} -n 1 ${HYBRID3D} trian deck.xml)
h3d_expect("${out}" "hybrid3d: unknown command 'trian'")
h3d_run(FALSE out ${MPIEXEC} -n 1 ${HYBRID3D})
h3d_expect("${out}" "usage: mpirun -n N hybrid3d COMMAND [ARGS]")
message(STATUS "help and usage as expected")
