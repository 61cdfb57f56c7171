# A crash while a checkpoint is written (SIGKILL of the writing rank, at a random point of the
# write: after any dataset, the flush, the fsync, the rename or the directory's fsync) always
# leaves a checkpoint that loads, and resuming from it finishes bit-identical to a run that was
# never killed: every checkpoint on disk is a whole, consistent state. The points come from the
# hidden HYBRID3D_TEST_CHECKPOINT_KILL_AT hook (io/Checkpoint.cpp), drawn with a fixed seed so
# a failure reproduces; each trial's point is printed.
include(${CMAKE_CURRENT_LIST_DIR}/Common.cmake)
set(launch ${MPIEXEC} -n 2 --oversubscribe)
set(steps 4)
# A checkpoint after every step; 4 samples, mini-batch 2: 2 steps per epoch.
h3d_deck(${WORK}/deck.xml ${WORK}/data/train ""
         "<Parameter name=\"epochs\" type=\"int\" value=\"10\"/><Parameter name=\"checkpoint every\" type=\"int\" value=\"1\"/>")
file(READ ${WORK}/deck.xml deck)
string(REPLACE "${WORK}/run" "${WORK}/straight" deck "${deck}")
file(WRITE ${WORK}/straight.xml "${deck}")
h3d_run(TRUE out ${launch} ${HYBRID3D} train ${WORK}/straight.xml --max-steps ${steps})

# The state after step 1, which every trial resumes from.
h3d_run(TRUE out ${launch} ${HYBRID3D} train ${WORK}/deck.xml --max-steps 1)
file(RENAME ${WORK}/run ${WORK}/step1)

# A checkpoint of SGD's state has 34 write points: 30 datasets (13 parameters, 13 momentum
# buffers, 4 scalars; `compare` counts them), then flush, fsync, rename, directory fsync. In a
# run resumed at step 1, points 1..34 fall in the checkpoint of step 2 and 35..68 in step 3's.
# Points 32 and 33 (just before and just after the rename) always run, then random ones.
string(RANDOM LENGTH 4 ALPHABET 0123456789 RANDOM_SEED 9 unused)
set(points 32 33)
foreach(i RANGE 1 3)
  string(RANDOM LENGTH 4 ALPHABET 0123456789 draw)
  math(EXPR point "${draw} % 68 + 1")
  list(APPEND points ${point})
endforeach()
foreach(point IN LISTS points)
  file(REMOVE_RECURSE ${WORK}/run)
  file(COPY ${WORK}/step1/ DESTINATION ${WORK}/run)
  execute_process(COMMAND ${CMAKE_COMMAND} -E env HYBRID3D_TEST_CHECKPOINT_KILL_AT=${point}
                          ${launch} ${HYBRID3D} train ${WORK}/deck.xml --max-steps ${steps}
                          --restart ${WORK}/run/checkpoint.h5
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err TIMEOUT 240)
  if(rc EQUAL 0)
    message(FATAL_ERROR "the write was not killed at point ${point}:\n${out}${err}")
  endif()
  h3d_run(TRUE out ${launch} ${HYBRID3D} train ${WORK}/deck.xml --max-steps ${steps}
          --restart ${WORK}/run/checkpoint.h5)
  h3d_expect("${out}" "finished ${steps} steps")
  # The last checkpoint whose rename happened (point 33: step 2's, 67: step 3's) is the one left.
  set(left 1)
  if(point GREATER_EQUAL 33)
    set(left 2)
  endif()
  if(point GREATER_EQUAL 67)
    set(left 3)
  endif()
  math(EXPR first "${left} + 1")
  string(REGEX MATCH "step [0-9]+/${steps}" resumed_at "${out}")
  if(NOT resumed_at STREQUAL "step ${first}/${steps}")
    message(FATAL_ERROR "killed at point ${point}: the run resumed at '${resumed_at}', not after "
                        "step ${left}'s checkpoint:\n${out}")
  endif()
  h3d_run(TRUE cmp ${MPIEXEC} -n 1 ${HYBRID3D} compare ${WORK}/run/checkpoint.h5
          ${WORK}/straight/checkpoint.h5 --tolerance 0)
  h3d_expect("${cmp}" "compare: 30 datasets, 0 differ")
  message(STATUS "killed at write point ${point}: step ${left}'s checkpoint loaded and the run "
                 "finished bit-identically")
endforeach()
