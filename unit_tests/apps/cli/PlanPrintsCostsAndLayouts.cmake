# `hybrid3d plan`: on 2 ranks it prints the very plan `hybrid3d check` prints (one code path),
# then the per-layer costs, the predicted step and the best layouts on a shipped machine file;
# the bytes its CSV predicts for world rank 0 equal what a real 2-rank training step records in
# metrics.csv, on one grid and on layer grids; on 1 rank it plans other rank counts (--ranks 1,2,4) with the predicted strong
# scaling, plans in the precision --precision names (bfloat16: half the halo bytes, the same
# reduction bytes), and every machine file in inputs/machines/ reads.
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

# The CSV's bytes of world rank 0 against the trainer's own count in the same layout: halos,
# gradient reductions and, on layer grids, redistributions.
function(expect_counted_bytes csv metrics staged)
  file(STRINGS ${csv} rows)
  list(GET rows 0 header)
  h3d_expect("${header}" "deck,machine,architecture,size,batch,ranks,groups,grid,step_s")
  list(GET rows 1 row)
  file(STRINGS ${metrics} measured)
  list(GET measured 0 measured_header)
  list(GET measured 1 step)
  foreach(column halo_bytes allreduce_bytes redistribute_bytes)
    h3d_csv_field("${header}" "${row}" ${column} predicted)
    h3d_csv_field("${measured_header}" "${step}" ${column} recorded)
    if(recorded STREQUAL "")
      set(recorded 0)  # metrics.csv leaves the redistribution columns empty on one grid
    endif()
    if(NOT predicted STREQUAL recorded)
      message(FATAL_ERROR "plan predicts ${predicted} ${column}, the step recorded ${recorded}")
    endif()
    if(predicted EQUAL 0 AND (staged OR NOT column STREQUAL "redistribute_bytes"))
      message(FATAL_ERROR "2 ranks on one sample send ${column}: ${row}")
    endif()
  endforeach()
endfunction()
h3d_run(TRUE trained ${launch} ${HYBRID3D} train ${WORK}/deck.xml)
expect_counted_bytes(${WORK}/plan.csv ${WORK}/run/metrics.csv FALSE)
# The CSV may be committed: the deck relative to where plan ran (WORK's parent), not its absolute
# path (RecordedPath.hpp).
file(STRINGS ${WORK}/plan.csv rows)
list(GET rows 0 header)
list(GET rows 1 row)
get_filename_component(work_name ${WORK} NAME)
h3d_csv_field("${header}" "${row}" deck recorded_deck)
if(NOT recorded_deck STREQUAL "${work_name}/deck.xml")
  message(FATAL_ERROR "plan's CSV records the deck as ${recorded_deck}, not ${work_name}/deck.xml")
endif()

# On layer grids (the deep layers on one rank per sample): check's table gains each layer's
# grid, every redistribution's bytes and the buffers; plan and a real step agree on the bytes.
h3d_deck(${WORK}/staged.xml ${WORK}/data/train ""
         "<Parameter name=\"max steps\" type=\"int\" value=\"1\"/>")
file(READ ${WORK}/staged.xml deck)
string(REPLACE "<ParameterList name=\"Model\">" "<ParameterList name=\"Parallel\">
    <Parameter name=\"layer grids\" type=\"string\" value=\"conv2..fc3=1x1x1\"/>
  </ParameterList>
  <ParameterList name=\"Model\">" deck "${deck}")
string(REPLACE "${WORK}/run" "${WORK}/staged_run" deck "${deck}")  # a run of its own
file(WRITE ${WORK}/staged.xml "${deck}")
h3d_run(TRUE check ${launch} ${HYBRID3D} check ${WORK}/staged.xml)
foreach(text "layer grids conv2..fc3=1x1x1" "grid         output C x DxHxW"
             "\n  pool1->conv2   Redistribute     1x1x1 x 2 " "2x1x1 -> 1x1x1 x 2: sends "
             "buffers       model")
  h3d_expect("${check}" "${text}")
endforeach()
h3d_run(TRUE plan ${launch} ${HYBRID3D} plan ${WORK}/staged.xml --machine ${machine}
        --csv ${WORK}/staged.csv)
foreach(text "redist ms" "redistributions between layer grids:" "+ redistribute ")
  h3d_expect("${plan}" "${text}")
endforeach()
h3d_run(TRUE trained ${launch} ${HYBRID3D} train ${WORK}/staged.xml)
expect_counted_bytes(${WORK}/staged.csv ${WORK}/staged_run/metrics.csv TRUE)

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

# In another precision (--precision, or the deck's Model/precision): the plan names it and the
# rate it computes at; bfloat16 halves the bytes of a halo (activations) and keeps the gradient
# reduction's (float master weights) against the same layout in float.
set(h100 ${SOURCE_DIR}/inputs/machines/h100-cluster.xml)
foreach(precision float bfloat16)
  h3d_run(TRUE out ${MPIEXEC} -n 1 ${HYBRID3D} plan ${WORK}/deck.xml --layout 2:2x1x1 --top 0
          --machine ${h100} --precision ${precision} --csv ${WORK}/${precision}.csv)
  h3d_expect("${out}" "on 4 rank(s) of machine h100-cluster in ${precision} (--precision)")
  h3d_expect("${out}" ", ${precision}\n")  # the plan's layout line
  file(STRINGS ${WORK}/${precision}.csv rows)
  list(GET rows 0 header)
  list(GET rows 1 row)
  foreach(column halo_bytes allreduce_bytes precision)
    h3d_csv_field("${header}" "${row}" ${column} ${precision}_${column})
  endforeach()
endforeach()
h3d_expect("${out}" "bfloat16 convolutions at 989400 GFLOP/s per rank\n")
if(NOT float_precision STREQUAL "float" OR NOT bfloat16_precision STREQUAL "bfloat16")
  message(FATAL_ERROR "CSV precision: ${float_precision}, ${bfloat16_precision}")
endif()
math(EXPR halved "${float_halo_bytes} / 2")
if(float_halo_bytes EQUAL 0 OR NOT bfloat16_halo_bytes EQUAL halved
   OR NOT bfloat16_allreduce_bytes EQUAL float_allreduce_bytes)
  message(FATAL_ERROR "bfloat16 halo ${bfloat16_halo_bytes} (float ${float_halo_bytes}), "
                      "allreduce ${bfloat16_allreduce_bytes} (float ${float_allreduce_bytes})")
endif()
# Half on a machine file without 16-bit rates: the float rate, said so.
file(READ ${machine} lassen)
string(REGEX REPLACE "<Parameter name=\"(bfloat16|half) GFLOP/s\"[^>]*>" "" lassen "${lassen}")
file(WRITE ${WORK}/no16.xml "${lassen}")
h3d_run(TRUE out ${MPIEXEC} -n 1 ${HYBRID3D} plan ${WORK}/deck.xml --ranks 2 --top 0
        --machine ${WORK}/no16.xml --precision half)
h3d_expect("${out}" "half convolutions at 15700 GFLOP/s per rank (the float rate: the machine file gives no 'Rank/half GFLOP/s')")
h3d_run(FALSE out ${MPIEXEC} -n 1 ${HYBRID3D} plan ${WORK}/deck.xml --precision single)
h3d_expect("${out}" "plan: --precision: precision 'single' is not one of float, double, bfloat16, half")

file(GLOB machines ${SOURCE_DIR}/inputs/machines/*.xml)
foreach(m IN LISTS machines)
  h3d_run(TRUE out ${MPIEXEC} -n 1 ${HYBRID3D} plan ${WORK}/deck.xml --ranks 8 --machine ${m})
  h3d_expect("${out}" "best layouts of 8 rank(s)")
endforeach()
