# `hybrid3d stats` and a deck's `channel offset = auto`: stats prints the same deck lines on 1
# and 2 ranks and records them in the manifest; a training whose deck says auto gives losses
# bit-identical to the same deck with the printed lines pasted in, on 1 and 2 ranks, reading
# the cache stats left (not recomputing), and computing and caching again once it is removed.
include(${CMAKE_CURRENT_LIST_DIR}/Common.cmake)
file(REMOVE_RECURSE ${WORK})
file(MAKE_DIRECTORY ${WORK})
h3d_run(TRUE out ${MPIEXEC} -n 1 ${HYBRID3D} generate cosmology --out ${WORK}/data --size 16
        --train 4 --validation 0 --test 0 --seed 3)
set(cache ${WORK}/data/train/.hybrid3d_channel_statistics_log1p)

# The two deck lines stats printed.
function(deck_lines text out_var)
  string(REGEX MATCHALL "<Parameter name=\"channel (offset|scale)\" type=\"Array\\(double\\)\" value=\"{[^}]*}\"/>"
         lines "${text}")
  list(LENGTH lines n)
  if(NOT n EQUAL 2)
    message(FATAL_ERROR "stats printed ${n} deck lines:\n${text}")
  endif()
  string(JOIN "\n" joined ${lines})
  set(${out_var} "${joined}" PARENT_SCOPE)
endfunction()

h3d_run(TRUE out ${MPIEXEC} -n 1 ${HYBRID3D} stats ${WORK}/data --log1p)
h3d_expect("${out}" "stats: 4 samples of ${WORK}/data/train (4 channels of 16x16x16), after log1p,")
h3d_expect("${out}" "cached in ${cache}")
h3d_expect("${out}" "manifest: recorded in ${WORK}/data/manifest.txt")
deck_lines("${out}" one_rank)
file(REMOVE ${cache})
h3d_run(TRUE out ${MPIEXEC} -n 2 --oversubscribe ${HYBRID3D} stats ${WORK}/data --log1p)
deck_lines("${out}" two_ranks)
if(NOT one_rank STREQUAL two_ranks)
  message(FATAL_ERROR "stats differs on 1 and 2 ranks:\n${one_rank}\n${two_ranks}")
endif()
file(READ ${WORK}/data/manifest.txt manifest)
h3d_expect("${manifest}" "statistics log1p 4 4 ")

function(train name ranks data_lines out_var)
  h3d_deck(${WORK}/${name}.xml ${WORK}/data/train ""
           "<Parameter name=\"epochs\" type=\"int\" value=\"2\"/>")
  file(READ ${WORK}/${name}.xml deck)
  string(REPLACE "<Parameter name=\"log1p\" type=\"bool\" value=\"true\"/>"
         "<Parameter name=\"log1p\" type=\"bool\" value=\"true\"/>\n${data_lines}" deck "${deck}")
  string(REPLACE "${WORK}/run" "${WORK}/${name}" deck "${deck}")
  file(WRITE ${WORK}/${name}.xml "${deck}")
  h3d_run(TRUE printed ${MPIEXEC} -n ${ranks} --oversubscribe ${HYBRID3D} train ${WORK}/${name}.xml)
  h3d_metrics_columns(${WORK}/${name}/metrics.csv 4 rows)  # to loss
  set(${out_var} "${rows}" PARENT_SCOPE)
  set(printed "${printed}" PARENT_SCOPE)
endfunction()

set(auto "<Parameter name=\"channel offset\" type=\"string\" value=\"auto\"/>
<Parameter name=\"channel scale\" type=\"string\" value=\"auto\"/>")
foreach(ranks 1 2)
  train(pasted_np${ranks} ${ranks} "${one_rank}" pasted)
  train(auto_np${ranks} ${ranks} "${auto}" automatic)
  h3d_expect("${printed}" "channel statistics of the 4 training samples after log1p")
  h3d_expect("${printed}" "read from ${cache}")
  h3d_expect("${pasted}" "train,1,")
  if(NOT pasted STREQUAL automatic)
    message(FATAL_ERROR "auto and the pasted values differ on ${ranks} rank(s):\n${pasted}\n${automatic}")
  endif()
endforeach()
file(REMOVE ${cache})
train(auto_again 2 "${auto}" again)
h3d_expect("${printed}" "cached in ${cache}")
if(NOT again STREQUAL automatic)
  message(FATAL_ERROR "auto without the cache differs:\n${automatic}\n${again}")
endif()
