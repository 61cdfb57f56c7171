# The plan's total per rank is what a rank of a real run holds (issue 39, point 5): on RANKS
# ranks, `hybrid3d calibrate` measures the fixed cost of a process (the peak resident memory of
# CosmoFlow at 16^3 less its plan) into a machine file; `hybrid3d check --machine` plans
# CosmoFlow at 32^3 (mini-batch 2, Adam: another size, another batch, the optimizer's state, a
# checkpoint at the end) with it; `hybrid3d train` runs that deck two steps and prints the peak
# resident memory of every rank (getrusage). The largest rank's peak must lie within 10 % of the
# plan's total: the rows the plan adds (optimizer state, gradient reduction, data buffers, each
# from the sizes the code allocates) are each more than that share here, so leaving one out
# fails; checkpoint staging is small since each rank writes its own parts (fc1's slabs). Without a machine file the plan says the fixed cost is unknown.
include(${CMAKE_CURRENT_LIST_DIR}/Common.cmake)
set(launch ${MPIEXEC} -n ${RANKS} --oversubscribe)
h3d_deck(${WORK}/calibrate.xml ${WORK}/data/train "" "")
h3d_run(TRUE out ${MPIEXEC} -n 1 ${HYBRID3D} generate cosmology --out ${WORK}/data32 --size 32
        --train 4 --validation 0 --test 0 --seed 3)
h3d_deck(${WORK}/deck.xml ${WORK}/data32/train ""
         "<Parameter name=\"optimizer\" type=\"string\" value=\"adam\"/>
    <Parameter name=\"max steps\" type=\"int\" value=\"2\"/>")
file(READ ${WORK}/deck.xml deck)
string(REPLACE "value=\"16\"" "value=\"32\"" deck "${deck}")
file(WRITE ${WORK}/deck.xml "${deck}")

# One rank cannot measure the network: the shipped machine file gives it.
set(base "")
if(RANKS EQUAL 1)
  set(base --base ${SOURCE_DIR}/inputs/machines/lassen-v100.xml)
endif()
h3d_run(TRUE out ${launch} ${HYBRID3D} calibrate --steps 1 --file-mib 8 ${base}
        --out ${WORK}/machine.xml ${WORK}/calibrate.xml)
if(NOT out MATCHES "fixed memory per process ([0-9.]+) MiB")
  message(FATAL_ERROR "calibrate measured no fixed memory:\n${out}")
endif()
message(STATUS "fixed memory per process: ${CMAKE_MATCH_1} MiB")

h3d_run(TRUE plan ${launch} ${HYBRID3D} check ${WORK}/deck.xml)
h3d_expect("${plan}" "fixed per process        unknown")
h3d_expect("${plan}" "without the fixed cost of a process")
h3d_run(TRUE plan ${launch} ${HYBRID3D} check --machine ${WORK}/machine.xml ${WORK}/deck.xml)
foreach(row "optimizer state" "gradient reduction" "data buffers" "checkpoint staging"
            "fixed per process")
  h3d_expect("${plan}" "    ${row} ")
endforeach()
if(NOT plan MATCHES "\n  total per rank +([0-9.]+)  what the rank's peak resident memory reaches")
  message(FATAL_ERROR "no total per rank in the plan:\n${plan}")
endif()
set(planned ${CMAKE_MATCH_1})

h3d_run(TRUE run ${launch} ${HYBRID3D} train ${WORK}/deck.xml)
if(NOT run MATCHES "peak resident memory per rank: largest ([0-9.]+) MiB \\(world rank [0-9]+\\)")
  message(FATAL_ERROR "train printed no peak resident memory:\n${run}")
endif()
set(measured ${CMAKE_MATCH_1})
string(REPLACE "." "" p "${planned}")
string(REPLACE "." "" m "${measured}")
math(EXPR off_permille "1000 * (${p} - ${m}) / ${m}")  # both have one decimal
message(STATUS "${RANKS} rank(s): planned ${planned} MiB per rank, peak ${measured} MiB "
               "(${off_permille} per mille)")
if(off_permille GREATER 100 OR off_permille LESS -100)
  message(FATAL_ERROR "the plan's ${planned} MiB per rank is more than 10 % from the peak "
                      "resident memory of ${measured} MiB a rank reached:\n${plan}\n${run}")
endif()
