# `hybrid3d check DECK` and `hybrid3d train DECK --dry-run`, on 1 and 2 ranks: exit 0, print
# the plan (layout, every layer with its owned box and ghosts, steps per epoch, memory per
# rank), the very same text both ways (one code path), and write nothing: every file under
# WORK is unchanged and no output directory appears. No sample contents are read: a sample
# holding a NaN passes the check (training refuses it). A deck that generates its data is
# checked without generating them. A run too large for the node is refused before any engine
# is asked about its boxes.
include(${CMAKE_CURRENT_LIST_DIR}/Common.cmake)

# Every path under WORK with its size and checksum (directories by name).
function(snapshot out_var)
  file(GLOB_RECURSE paths LIST_DIRECTORIES true "${WORK}/*")
  list(SORT paths)
  set(s "")
  foreach(p IN LISTS paths)
    if(IS_DIRECTORY "${p}")
      string(APPEND s "${p}/\n")
    else()
      file(SIZE "${p}" size)
      file(MD5 "${p}" md5)
      string(APPEND s "${p} ${size} ${md5}\n")
    endif()
  endforeach()
  set(${out_var} "${s}" PARENT_SCOPE)
endfunction()

# A NaN in one sample's volume: only reading the contents finds it.
execute_process(COMMAND ${MAKE_BAD_FILE} ${WORK}/data/train/cosmo_000003.h5 ${WORK}/nan.h5
                        retype /full float32 set /full 12345 nan RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "make_bad_file failed (${rc})")
endif()
file(RENAME ${WORK}/nan.h5 ${WORK}/data/train/cosmo_000003.h5)

h3d_deck(${WORK}/deck.xml ${WORK}/data/train "" "")
# Data made by the run itself (Data/Generate): 6 training and 2 validation samples of 16^3.
file(WRITE ${WORK}/generating.xml "<ParameterList name=\"hybrid3d\">
  <ParameterList name=\"Model\">
    <Parameter name=\"architecture\" type=\"string\" value=\"cosmoflow\"/>
    <Parameter name=\"input width\" type=\"int\" value=\"16\"/>
  </ParameterList>
  <ParameterList name=\"Data\">
    <ParameterList name=\"Generate\">
      <Parameter name=\"generator\" type=\"string\" value=\"cosmology\"/>
      <Parameter name=\"directory\" type=\"string\" value=\"${WORK}/generated\"/>
      <Parameter name=\"train samples\" type=\"int\" value=\"6\"/>
      <Parameter name=\"validation samples\" type=\"int\" value=\"3\"/>
    </ParameterList>
  </ParameterList>
  <ParameterList name=\"Training\">
    <Parameter name=\"mini-batch\" type=\"int\" value=\"2\"/>
    <Parameter name=\"epochs\" type=\"int\" value=\"3\"/>
    <Parameter name=\"output directory\" type=\"string\" value=\"${WORK}/run\"/>
  </ParameterList>
</ParameterList>
")
snapshot(before)
h3d_expect("${before}" "data/train/cosmo_000003.h5 ")  # the snapshot sees the files

foreach(n 1 2)
  set(launch ${MPIEXEC} -n ${n} --oversubscribe)
  h3d_run(TRUE check ${launch} ${HYBRID3D} check ${WORK}/deck.xml)
  h3d_expect("${check}" "dry run of ${WORK}/deck.xml: the deck, the grid and the data check out")
  h3d_expect("${check}" "layout     ${n} rank(s) = 1 data-parallel group(s) x spatial grid ${n}x1x1")
  # 4 samples, mini-batch 2: 2 steps per epoch.
  h3d_expect("${check}" "4 samples in ${WORK}/data/train: mini-batch 2, 2 steps per epoch")
  h3d_expect("${check}" "validation none")
  foreach(layer conv1 pool1 conv7 drop1 fc1 fc3)
    h3d_expect("${check}" "\n  ${layer} ")
  endforeach()
  if(n EQUAL 2)
    # 16^3 over 2x1x1: conv1's owned box is 8x16x16, its input ghosts 1 on every side.
    if(NOT check MATCHES "\n  conv1 +Conv3d +16x16x16x16 +8x16x16 +1x1x1 / 1x1x1 +1,728\n")
      message(FATAL_ERROR "conv1's row on 2x1x1 is not as expected:\n${check}")
    endif()
  endif()
  h3d_expect("${check}" "memory per rank (MiB, batch 2 per group)")
  h3d_expect("${check}" "nothing written")

  h3d_run(TRUE dry ${launch} ${HYBRID3D} train ${WORK}/deck.xml --dry-run)
  if(NOT dry STREQUAL check)
    message(FATAL_ERROR "train --dry-run and check differ:\n${dry}\n---\n${check}")
  endif()

  h3d_run(TRUE gen ${launch} ${HYBRID3D} check ${WORK}/generating.xml)
  h3d_expect("${gen}" "6 samples in ${WORK}/generated/train (to be generated): mini-batch 2, 3 steps per epoch, 3 epoch(s): 9 steps")
  h3d_expect("${gen}" "3 samples in ${WORK}/generated/validation (to be generated): mini-batch 2, 2 steps per epoch (every sample once, the last mini-batch partial)")

  snapshot(after)
  if(NOT after STREQUAL before)
    message(FATAL_ERROR "the dry run on ${n} rank(s) wrote something:\nbefore:\n${before}\nafter:\n${after}")
  endif()
endforeach()
message(STATUS "check output on 2 ranks:\n${check}")

# A 2048^3 input on one rank (2^33 voxels: beyond what oneDNN's kernels index with 32 bits) is
# refused by its memory before any engine is asked about its boxes.
file(READ ${WORK}/generating.xml generating)
string(REPLACE "name=\"input width\" type=\"int\" value=\"16\""
               "name=\"input width\" type=\"int\" value=\"2048\"" huge "${generating}")
file(WRITE ${WORK}/huge.xml "${huge}")
h3d_run(FALSE hugeCheck ${MPIEXEC} -n 1 ${HYBRID3D} check ${WORK}/huge.xml)
h3d_expect("${hugeCheck}" "the plan needs at least ")
h3d_expect("${hugeCheck}" " per rank (before the convolution workspaces) x 1 rank(s) on node ")
file(REMOVE ${WORK}/huge.xml)

# Training reads the contents and refuses the NaN the check could not see.
h3d_run(FALSE out ${MPIEXEC} -n 1 ${HYBRID3D} train ${WORK}/deck.xml)
h3d_expect("${out}" "cosmo_000003.h5: dataset '/full' holds NaN or Inf")
message(STATUS "check and train --dry-run print the same plan and write nothing")
