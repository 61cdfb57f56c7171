# `hybrid3d plan`: on 2 ranks it prints the very plan `hybrid3d check` prints (one code path),
# then the per-layer costs, the predicted step and the best layouts on a shipped machine file;
# the bytes its CSV predicts for world rank 0 equal what a real 2-rank training step records in
# metrics.csv; on 1 rank it plans other rank counts (--ranks 1,2,4) with the predicted strong
# scaling, and every machine file in inputs/machines/ reads.
include(${CMAKE_CURRENT_LIST_DIR}/Common.cmake)

h3d_deck(${WORK}/deck.xml ${WORK}/data/train ""
         "<Parameter name=\"max steps\" type=\"int\" value=\"1\"/>")
set(machine ${SOURCE_DIR}/inputs/machines/lassen-v100.xml)
set(launch ${MPIEXEC} -n 2 --oversubscribe)

# The dry run's plan, from "layout" to the memory rows, appears unchanged in the plan's output.
h3d_run(TRUE check ${launch} ${HYBRID3D} check ${WORK}/deck.xml)
h3d_run(TRUE plan ${launch} ${HYBRID3D} plan ${WORK}/deck.xml --machine ${machine}
        --csv ${WORK}/plan.csv)
string(FIND "${check}" "  layout " from)
string(FIND "${check}" "hybrid3d: no sample contents read" to)
math(EXPR length "${to} - ${from}")
string(SUBSTRING "${check}" ${from} ${length} checked)
h3d_expect("${plan}" "${checked}")
foreach(text "cost per step of spatial rank" "conv1          Conv3d 4>16 k3 s1"
             "per step on this rank:" "predicted step" "best layouts of 2 rank(s)"
             "layout G:DxHxW" "1:2x1x1")
  h3d_expect("${plan}" "${text}")
endforeach()

# The CSV's bytes of world rank 0 against the trainer's own count in the same layout.
file(STRINGS ${WORK}/plan.csv rows)
list(GET rows 0 header)
h3d_expect("${header}" "deck,machine,architecture,size,batch,ranks,groups,grid,step_s")
list(GET rows 1 row)
string(REPLACE "," ";" predicted "${row}")
list(GET predicted 15 halo)
list(GET predicted 16 reduction)
h3d_run(TRUE trained ${launch} ${HYBRID3D} train ${WORK}/deck.xml)
file(STRINGS ${WORK}/run/metrics.csv metrics)
list(GET metrics 1 step)
string(REPLACE "," ";" measured "${step}")
list(GET measured -2 measured_halo)  # the last two columns (empty fields drop out)
list(GET measured -1 measured_reduction)
if(NOT halo STREQUAL measured_halo OR NOT reduction STREQUAL measured_reduction)
  message(FATAL_ERROR "plan predicts ${halo} halo and ${reduction} reduction bytes, the step "
                      "recorded ${measured_halo} and ${measured_reduction}")
endif()
if(halo EQUAL 0 OR reduction EQUAL 0)
  message(FATAL_ERROR "2 ranks on one sample exchange halos and reduce gradients: ${row}")
endif()

# Other rank counts from one rank: a plan per count and the predicted scaling.
h3d_run(TRUE scaling ${MPIEXEC} -n 1 ${HYBRID3D} plan ${WORK}/deck.xml --ranks 1,2,4
        --machine ${machine} --csv ${WORK}/scaling.csv)
foreach(text "on 4 rank(s) of machine lassen-v100" "strong scaling predicted on lassen-v100"
             "      4 ranks: best ")
  h3d_expect("${scaling}" "${text}")
endforeach()
file(STRINGS ${WORK}/scaling.csv rows)
list(LENGTH rows n)
if(NOT n EQUAL 4)
  message(FATAL_ERROR "expected a header and 3 rows in scaling.csv:\n${rows}")
endif()

file(GLOB machines ${SOURCE_DIR}/inputs/machines/*.xml)
foreach(m IN LISTS machines)
  h3d_run(TRUE out ${MPIEXEC} -n 1 ${HYBRID3D} plan ${WORK}/deck.xml --ranks 8 --machine ${m})
  h3d_expect("${out}" "best layouts of 8 rank(s)")
endforeach()
