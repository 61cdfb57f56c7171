# A mistyped deck key, an impossible grid and a truncated sample file each stop every rank of a
# 2-rank run with a one-line message naming the culprit and a non-zero exit (no hang: the
# test's timeout would catch one).
include(${CMAKE_CURRENT_LIST_DIR}/Common.cmake)
set(run ${MPIEXEC} -n 2 --oversubscribe ${HYBRID3D} train)

h3d_deck(${WORK}/typo.xml ${WORK}/data/train "" "<Parameter name=\"minibatch\" type=\"int\" value=\"2\"/>")
h3d_run(FALSE out ${run} ${WORK}/typo.xml)
h3d_expect("${out}" "typo.xml: unknown key 'Training/minibatch'")

h3d_deck(${WORK}/range.xml ${WORK}/data/train "" "<Parameter name=\"epochs\" type=\"int\" value=\"0\"/>")
h3d_run(FALSE out ${run} ${WORK}/range.xml)
h3d_expect("${out}" "range.xml: key 'Training/epochs' = 0 is outside [1,")

h3d_deck(${WORK}/grid.xml ${WORK}/data/train "" "")
file(READ ${WORK}/grid.xml deck)
string(REPLACE "<ParameterList name=\"Model\">" "<ParameterList name=\"Parallel\"><Parameter name=\"spatial grid\" type=\"string\" value=\"3x1x1\"/></ParameterList><ParameterList name=\"Model\">" deck "${deck}")
file(WRITE ${WORK}/grid.xml "${deck}")
h3d_run(FALSE out ${run} ${WORK}/grid.xml)
h3d_expect("${out}" "world size 2 is not a multiple of the spatial grid 3x1x1")

# Replace one sample by the first 2000 bytes of another: a truncated HDF5 file.
file(REMOVE ${WORK}/data/train/cosmo_000002.h5)
execute_process(COMMAND head -c 2000 ${WORK}/data/train/cosmo_000001.h5
                OUTPUT_FILE ${WORK}/data/train/cosmo_000002.h5)
h3d_deck(${WORK}/bad.xml ${WORK}/data/train "" "<Parameter name=\"epochs\" type=\"int\" value=\"2\"/>")
h3d_run(FALSE out ${run} ${WORK}/bad.xml)
h3d_expect("${out}" "cosmo_000002.h5")
message(STATUS "every bad input stopped the run with its message")
