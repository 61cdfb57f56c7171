# `hybrid3d calibrate` on a tiny deck (CosmoFlow at 16^3, one timed step) on 2 ranks writes a
# machine file that reads back (deck::readMachineDeck) with a timing for every layer of the model
# and every rate positive (check_machine_file, a checker of its own), begins with the comment
# saying how it was made, and leaves no scratch file behind; its FMA peak says how the ranks
# agreed on it, and it holds both 16-bit rates. On 1 rank the network cannot be measured:
# without --base it stops with one line, with --base it keeps that file's network figures, and
# a --base whose FMA peak differs from the one measured by more than 20 % is named in a warning. A bad option or an input width the model cannot take stops it before measuring.
include(${CMAKE_CURRENT_LIST_DIR}/Common.cmake)
h3d_deck(${WORK}/deck.xml ${WORK}/data/train "" "")
set(calibrate ${HYBRID3D} calibrate --steps 1 --file-mib 8)

h3d_run(TRUE out ${MPIEXEC} -n 2 --oversubscribe ${calibrate} --out ${WORK}/machine.xml
        --name tiny ${WORK}/deck.xml)
message(STATUS "${out}")
h3d_expect("${out}" "wrote ${WORK}/machine.xml: ")
file(READ ${WORK}/machine.xml text)
string(FIND "${text}" "<!-- hybrid3d machine file written by `hybrid3d calibrate` on " at)
if(NOT at EQUAL 0)
  message(FATAL_ERROR "the machine file does not begin with its comment:\n${text}")
endif()
# The command as given ("--" written "- -": XML comments cannot hold two hyphens in a row), its
# paths relative to the directory it ran in (the test's, WORK's parent): the file may be committed,
# so no absolute path of this machine (RecordedPath.hpp).
get_filename_component(work_name ${WORK} NAME)
h3d_expect("${text}" "mpirun -n 2 hybrid3d calibrate - -steps 1 - -file-mib 8 - -out ${work_name}/machine.xml - -name tiny ${work_name}/deck.xml")
string(FIND "${text}" "${WORK}" at)
if(NOT at EQUAL -1)
  message(FATAL_ERROR "the machine file holds the absolute path ${WORK}:\n${text}")
endif()
h3d_expect("${text}" "CPU: ")
h3d_expect("${text}" "Kokkos execution space ")
h3d_expect("${text}" "<Parameter name=\"name\" type=\"string\" value=\"tiny\"/>")
h3d_expect("${text}" "<ParameterList name=\"Layer timings\">")
h3d_expect("${text}" "timed runs on each of 2 rank(s) measuring at once, the highest best")
h3d_expect("${text}" "<Parameter name=\"bfloat16 GFLOP/s\" type=\"double\" value=\"")
h3d_expect("${text}" "<Parameter name=\"half GFLOP/s\" type=\"double\" value=\"")
h3d_run(TRUE check ${CHECK_MACHINE_FILE} ${WORK}/machine.xml ${WORK}/deck.xml 16)
h3d_expect("${check}" "ok: ")
message(STATUS "${check}")
file(GLOB left "${WORK}/hybrid3d_calibrate_*")
if(left)
  message(FATAL_ERROR "scratch files left behind: ${left}")
endif()

# One rank: the network comes from --base or nowhere.
h3d_run(FALSE out ${MPIEXEC} -n 1 ${calibrate} --out ${WORK}/one.xml ${WORK}/deck.xml)
h3d_expect("${out}" "hybrid3d calibrate: error: calibrate: the network is measured between two ranks")
# The base's FMA peak made far higher than any core's: the warning names the file.
string(REGEX REPLACE "name=\"float GFLOP/s\" type=\"double\" value=\"[^\"]*\""
       "name=\"float GFLOP/s\" type=\"double\" value=\"99999\"" base "${text}")
file(WRITE ${WORK}/base.xml "${base}")
h3d_run(TRUE out ${MPIEXEC} -n 1 ${calibrate} --out ${WORK}/one.xml --base ${WORK}/base.xml
        ${WORK}/deck.xml)
h3d_expect("${out}" "WARNING: the FP32 FMA peak measured, ")
h3d_expect("${out}" " from the 99999.0 of --base ${work_name}/base.xml (more than 20 %)")
h3d_run(TRUE check ${CHECK_MACHINE_FILE} ${WORK}/one.xml ${WORK}/deck.xml 16)
file(READ ${WORK}/one.xml one)
string(FIND "${one}" "${WORK}" at)
if(NOT at EQUAL -1)
  message(FATAL_ERROR "the machine file holds the absolute path ${WORK}:\n${one}")
endif()
foreach(key "intra-node latency us" "intra-node GB/s" "inter-node latency us" "inter-node GB/s")
  foreach(file text one)
    if(NOT "${${file}}" MATCHES "name=\"${key}\" type=\"double\" value=\"([^\"]*)\"")
      message(FATAL_ERROR "no '${key}' in the ${file} file")
    endif()
    set(${file}_value "${CMAKE_MATCH_1}")
  endforeach()
  if(NOT one_value STREQUAL text_value)
    message(FATAL_ERROR "1 rank with --base: '${key}' is ${one_value}, the base's ${text_value}")
  endif()
endforeach()
h3d_expect("${one}" "from - -base ${work_name}/base.xml")
h3d_expect("${one}" "of - -base ${work_name}/base.xml (more than 20 %)")  # the peak's note

# Mistakes stop every rank with one line, before anything is measured.
foreach(case "--stepz 1|calibrate: unknown option --stepz"
             "--sizes 16,0|calibrate: --sizes must be a positive integer, not 0"
             "--sizes 20|at input width 20: "
             "--out ${WORK}/no/such/dir/m.xml|the directory ${WORK}/no/such/dir does not exist")
  string(REPLACE "|" ";" case "${case}")
  list(GET case 0 option)
  list(GET case 1 expect)
  separate_arguments(option)
  h3d_run(FALSE out ${MPIEXEC} -n 2 --oversubscribe ${calibrate} --out ${WORK}/bad.xml
          ${WORK}/deck.xml ${option})
  h3d_expect("${out}" "${expect}")
  string(REGEX MATCHALL "hybrid3d calibrate: error" errors "${out}")
  list(LENGTH errors n)
  if(NOT n EQUAL 1)
    message(FATAL_ERROR "not one error line for ${option}:\n${out}")
  endif()
endforeach()
if(EXISTS ${WORK}/bad.xml)
  message(FATAL_ERROR "a failed calibration wrote its file")
endif()
message(STATUS "calibrate writes a machine file that reads back with every layer timed")
