# `hybrid3d gradients` writes the same /loss, /output and /grads/<layer>/<param> (double
# precision, dropout off) whether one rank or two split each sample; `hybrid3d compare` says
# so. The weights come from a one-step training run's checkpoint.
include(${CMAKE_CURRENT_LIST_DIR}/Common.cmake)
h3d_deck(${WORK}/deck.xml ${WORK}/data/train
  "<Parameter name=\"precision\" type=\"string\" value=\"double\"/><Parameter name=\"dropout keep probability\" type=\"double\" value=\"1\"/>"
  "<Parameter name=\"max steps\" type=\"int\" value=\"1\"/>")
h3d_run(TRUE out ${MPIEXEC} -n 1 ${HYBRID3D} train ${WORK}/deck.xml)
set(samples ${WORK}/data/train/cosmo_000000.h5 ${WORK}/data/train/cosmo_000003.h5)
h3d_run(TRUE out ${MPIEXEC} -n 1 ${HYBRID3D} gradients ${WORK}/deck.xml
        --weights ${WORK}/run/checkpoint.h5 --out ${WORK}/one.h5 ${samples})
h3d_run(TRUE out ${MPIEXEC} -n 2 --oversubscribe ${HYBRID3D} gradients ${WORK}/deck.xml
        --weights ${WORK}/run/checkpoint.h5 --out ${WORK}/two.h5 ${samples})
h3d_run(TRUE out ${MPIEXEC} -n 1 ${HYBRID3D} compare ${WORK}/two.h5 ${WORK}/one.h5 --tolerance 1e-9)
h3d_expect("${out}" "/grads/conv1/weight")
h3d_expect("${out}" ", 0 differ")
message(STATUS "${out}")

# The samples are on the command line: a deck without Data/train will do, with the same result.
file(READ ${WORK}/deck.xml deck)
string(REGEX REPLACE "<Parameter name=\"train\"[^>]*/>" "" deck "${deck}")
string(FIND "${deck}" "name=\"train\"" still)
if(NOT still EQUAL -1)
  message(FATAL_ERROR "the test failed to remove Data/train from the deck")
endif()
file(WRITE ${WORK}/notrain.xml "${deck}")
h3d_run(TRUE out ${MPIEXEC} -n 1 ${HYBRID3D} gradients ${WORK}/notrain.xml
        --weights ${WORK}/run/checkpoint.h5 --out ${WORK}/notrain.h5 ${samples})
h3d_run(TRUE out ${MPIEXEC} -n 1 ${HYBRID3D} compare ${WORK}/notrain.h5 ${WORK}/one.h5 --tolerance 0)
h3d_expect("${out}" ", 0 differ")

# `hybrid3d gradients` on 2 ranks with the deck's Parallel section set to PARALLEL writes the
# 1-rank file.
function(h3d_gradients_on_two_ranks name parallel)
  file(READ ${WORK}/deck.xml deck)
  string(REPLACE "<ParameterList name=\"Model\">" "<ParameterList name=\"Parallel\">${parallel}</ParameterList><ParameterList name=\"Model\">" deck "${deck}")
  file(WRITE ${WORK}/${name}.xml "${deck}")
  h3d_run(TRUE out ${MPIEXEC} -n 2 --oversubscribe ${HYBRID3D} gradients ${WORK}/${name}.xml
          --weights ${WORK}/run/checkpoint.h5 --out ${WORK}/${name}.h5 ${samples})
  h3d_run(TRUE out ${MPIEXEC} -n 1 ${HYBRID3D} compare ${WORK}/${name}.h5 ${WORK}/one.h5 --tolerance 1e-9)
  h3d_expect("${out}" ", 0 differ")
endfunction()

# Two data-parallel groups (spatial grid 1x1x1 on 2 ranks): one sample each, outputs gathered
# along the batch, gradients summed over the groups.
h3d_gradients_on_two_ranks(groups
  "<Parameter name=\"spatial grid\" type=\"string\" value=\"1x1x1\"/>")

# Layer grids (2x1x1 for the first layers, a sample per rank from conv3 on): the same file, the
# output moved back to where the spatial grid holds it.
h3d_gradients_on_two_ranks(staged
  "<Parameter name=\"spatial grid\" type=\"string\" value=\"2x1x1\"/><Parameter name=\"layer grids\" type=\"string\" value=\"conv3..fc3=1x1x1\"/>")
