# The deck key `Model/halo overlap` reaches the built model: with it, `train` on two ranks
# reports each convolution with a halo to overlap as overlapped (the start-up lines of
# `hybrid3d train`, from the layers themselves); without it, none (off by default).
include(${CMAKE_CURRENT_LIST_DIR}/Common.cmake)
set(launch ${MPIEXEC} -n 2 --oversubscribe ${HYBRID3D} train)
set(oneStep "<Parameter name=\"max steps\" type=\"int\" value=\"1\"/>")

h3d_deck(${WORK}/on.xml ${WORK}/data/train
  "<Parameter name=\"halo overlap\" type=\"bool\" value=\"true\"/>" "${oneStep}")
h3d_run(TRUE on ${launch} ${WORK}/on.xml)
# 16^3 over 2x1x1: conv1 and conv2 own 8x16x16 and 4x8x8 boxes, deep enough for an interior.
foreach(layer conv1 conv2)
  if(NOT on MATCHES "\n  ${layer}: [^\n]*halo overlapped: interior \\+ [1-9]")
    message(FATAL_ERROR "${layer} is not overlapped with 'halo overlap' on:\n${on}")
  endif()
endforeach()

h3d_deck(${WORK}/off.xml ${WORK}/data/train "" "${oneStep}")
h3d_run(TRUE off ${launch} ${WORK}/off.xml --overwrite)  # the same output directory as "on"
h3d_expect("${off}" "\n  conv1: ")
string(FIND "${off}" "halo overlapped" at)
if(NOT at EQUAL -1)
  message(FATAL_ERROR "a convolution overlaps without 'halo overlap' in the deck:\n${off}")
endif()
message(STATUS "with 'halo overlap' on:\n${on}")
