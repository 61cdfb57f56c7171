# A user's work is never lost or mixed (docs/checkpoints.md, "The output directory", "Restarts"),
# end to end on RANKS ranks:
#  - a second run into a directory another run is writing is refused naming the first, whose
#    metrics stay its own (no foreign header, no NUL bytes);
#  - a run without --restart into a directory holding a run is refused, saying how to resume;
#    --overwrite keeps the old files under a dated name;
#  - a run killed (SIGKILL) after its last checkpoint leaves a lock a restart takes over, and
#    the restart's metrics hold every step once;
#  - SIGINT and SIGHUP to one rank checkpoint and exit 75, as SIGTERM;
#  - a rank that stops (SIGSTOP) ends the job within the collective timeout, named;
#  - a full disk is named, with the bytes, and leaves no temporary file;
#  - a bad validation sample stops the run after the epoch's checkpoint, not before it.
include(${CMAKE_CURRENT_LIST_DIR}/Common.cmake)
set(launch ${MPIEXEC} -n ${RANKS} --oversubscribe)
set(last_rank 0)
if(RANKS GREATER 1)
  set(last_rank 1)
endif()

# A deck writing ${WORK}/NAME, 100 epochs of 2 steps unless --max-steps says otherwise.
function(run_deck name extra_training)
  h3d_named_deck(${name} "<Parameter name=\"epochs\" type=\"int\" value=\"100\"/>${extra_training}")
endfunction()

# The steps of the train rows of a metrics file, in order, as a list.
function(train_steps path out_var)
  file(STRINGS ${path} lines)
  set(steps "")
  foreach(line IN LISTS lines)
    if(line MATCHES "^train,([0-9]+),")
      list(APPEND steps ${CMAKE_MATCH_1})
    endif()
  endforeach()
  set(${out_var} "${steps}" PARENT_SCOPE)
endfunction()

function(expect_steps path first last)
  train_steps(${path} steps)
  set(want "")
  foreach(s RANGE ${first} ${last})
    list(APPEND want ${s})
  endforeach()
  if(NOT steps STREQUAL want)
    message(FATAL_ERROR "${path}: train steps ${steps}, not ${want}")
  endif()
endfunction()

# (1) Two runs at once into one directory.
run_deck(two "")
execute_process(COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/second_run_while_first.sh ${WORK}
                        "step 2/200" -- ${launch} ${HYBRID3D} train ${WORK}/two.xml
                        -- ${launch} ${HYBRID3D} train ${WORK}/two.xml
                RESULT_VARIABLE rc TIMEOUT 240)
file(READ ${WORK}/second.log second)
file(READ ${WORK}/first.log first)
file(READ ${WORK}/second.status second_rc)
if(NOT rc EQUAL 0 OR second_rc EQUAL 0)
  message(FATAL_ERROR "two runs: script ${rc}, second run ${second_rc}:\n${second}\n${first}")
endif()
h3d_expect("${second}" "another run is writing this output directory (host ")
h3d_expect("${first}" "SIGUSR1 received")
file(READ ${WORK}/two/metrics.csv metrics HEX)
if(metrics MATCHES "^(..)*00")
  message(FATAL_ERROR "two runs: metrics.csv holds a NUL byte")
endif()
file(STRINGS ${WORK}/two/metrics.csv rows)
list(GET rows 0 header)
list(FILTER rows INCLUDE REGEX "^kind,")
list(LENGTH rows header_count)
if(NOT header MATCHES "^kind,step" OR NOT header_count EQUAL 1)
  message(FATAL_ERROR "two runs: metrics.csv's header is not once, first")
endif()
train_steps(${WORK}/two/metrics.csv two_steps)
list(GET two_steps -1 two_last)
expect_steps(${WORK}/two/metrics.csv 1 ${two_last})
message(STATUS "two runs: the second was refused naming the first; metrics hold steps 1..${two_last} once")

# (2) No --restart into a directory holding a run: refused; --overwrite keeps the old files.
h3d_run(FALSE refused ${launch} ${HYBRID3D} train ${WORK}/two.xml)
h3d_expect("${refused}" "holds an earlier run's checkpoint.h5 and metrics.csv: resume it with --restart ${WORK}/two/checkpoint.h5")
h3d_run(TRUE over ${launch} ${HYBRID3D} train ${WORK}/two.xml --overwrite --max-steps 2)
h3d_expect("${over}" "--overwrite: the earlier checkpoint.h5 is kept as ${WORK}/two/checkpoint.")
file(GLOB kept ${WORK}/two/checkpoint.*.h5 ${WORK}/two/metrics.*.csv)
list(LENGTH kept kept_count)
if(NOT kept_count EQUAL 2)
  message(FATAL_ERROR "--overwrite: kept ${kept}")
endif()
expect_steps(${WORK}/two/metrics.csv 1 2)

# (3) Killed after its checkpoint of step 4 at step 5; the restart takes the lock over and
# continues the metrics from step 4.
run_deck(crash "<Parameter name=\"checkpoint every\" type=\"int\" value=\"2\"/>")
h3d_run(FALSE killed ${launch} ${HYBRID3D} train ${WORK}/crash.xml --test-signal-at 5:0:KILL)
expect_steps(${WORK}/crash/metrics.csv 1 5)
h3d_run(TRUE resumed ${launch} ${HYBRID3D} train ${WORK}/crash.xml --restart
        ${WORK}/crash/checkpoint.h5 --max-steps 8)
h3d_expect("${resumed}" "taking over the lock of ${WORK}/crash from a run that is gone (host ")
h3d_expect("${resumed}" "restart: dropped 1 row(s) of ${WORK}/crash/metrics.csv after the checkpoint's step 4")
expect_steps(${WORK}/crash/metrics.csv 1 8)
message(STATUS "SIGKILL at step 5, restart from step 4: metrics hold steps 1..8 once")

# (4) SIGINT and SIGHUP, to one rank, as SIGTERM: checkpoint and 75.
foreach(sig INT HUP)
  run_deck(sig${sig} "")
  execute_process(COMMAND ${launch} ${HYBRID3D} train ${WORK}/sig${sig}.xml --test-signal-at
                          3:${last_rank}:${sig}
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err TIMEOUT 240)
  if(NOT rc EQUAL 75)
    message(FATAL_ERROR "SIG${sig}: exit status ${rc}, not 75:\n${out}${err}")
  endif()
  h3d_expect("${out}" "SIG${sig} received: stopped after step 3 of 200")
  if(NOT EXISTS ${WORK}/sig${sig}/checkpoint.h5)
    message(FATAL_ERROR "SIG${sig}: no checkpoint")
  endif()
endforeach()

# (5) A stopped rank: the others name it within the collective timeout (3 s here).
if(RANKS GREATER 1)
  run_deck(stopped "<Parameter name=\"collective timeout\" type=\"double\" value=\"3\"/>")
  string(TIMESTAMP t0 "%s")
  execute_process(COMMAND ${launch} ${HYBRID3D} train ${WORK}/stopped.xml --test-signal-at
                          2:1:STOP
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err TIMEOUT 120)
  string(TIMESTAMP t1 "%s")
  math(EXPR seconds "${t1} - ${t0}")
  if(rc EQUAL 0)
    message(FATAL_ERROR "stopped rank: exit status 0:\n${out}${err}")
  endif()
  h3d_expect("${err}" "collective timeout: rank(s) 1 did not reach the step agreement after step 2 within 3 s")
  message(STATUS "a stopped rank ended the job in ${seconds} s, named")
endif()

# (6) A full disk: the write fails (injected), named with the bytes; no temporary file stays.
# Where a small file system can be mounted (root, and allowed), the real thing too.
run_deck(full "")
set(ENV{HYBRID3D_TEST_NO_SPACE} 1)
h3d_run(FALSE full ${launch} ${HYBRID3D} train ${WORK}/full.xml --max-steps 1)
unset(ENV{HYBRID3D_TEST_NO_SPACE})
h3d_expect("${full}" "no space left on device: ${WORK}/full/checkpoint.h5 needs about ")
if(EXISTS ${WORK}/full/checkpoint.h5.tmp OR EXISTS ${WORK}/full/checkpoint.h5)
  message(FATAL_ERROR "full disk: a checkpoint file stayed behind")
endif()
file(MAKE_DIRECTORY ${WORK}/tmpfs)
execute_process(COMMAND mount -t tmpfs -o size=2m tmpfs ${WORK}/tmpfs RESULT_VARIABLE mounted
                OUTPUT_QUIET ERROR_QUIET)
if(mounted EQUAL 0)
  h3d_deck(${WORK}/tmpfs.xml ${WORK}/data/train "" "")
  file(READ ${WORK}/tmpfs.xml deck)
  string(REPLACE "${WORK}/run" "${WORK}/tmpfs/run" deck "${deck}")
  file(WRITE ${WORK}/tmpfs.xml "${deck}")
  execute_process(COMMAND ${launch} ${HYBRID3D} train ${WORK}/tmpfs.xml --max-steps 1
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err TIMEOUT 240)
  file(GLOB left ${WORK}/tmpfs/run/checkpoint*)
  execute_process(COMMAND umount ${WORK}/tmpfs)
  if(rc EQUAL 0 OR left)
    message(FATAL_ERROR "2 MiB file system: status ${rc}, left ${left}:\n${out}${err}")
  endif()
  h3d_expect("${err}" "no space left on device: ${WORK}/tmpfs/run/checkpoint.h5 needs about ")
  message(STATUS "a 2 MiB tmpfs: the checkpoint was refused for lack of space, named")
else()
  message(STATUS "no tmpfs could be mounted here: the injected write error stands for it")
endif()

# (7) A bad validation sample: the epoch is checkpointed before validation finds it.
file(MAKE_DIRECTORY ${WORK}/validation)
h3d_run(TRUE bad ${MAKE_BAD_FILE} ${WORK}/data/train/cosmo_000000.h5
        ${WORK}/validation/cosmo_000009.h5 retype /full float32 set /full 7 nan)
run_deck(validate "")
file(READ ${WORK}/validate.xml deck)
string(REPLACE "<Parameter name=\"log1p\"" "<Parameter name=\"validation\" type=\"string\" value=\"${WORK}/validation\"/><Parameter name=\"log1p\"" deck "${deck}")
file(WRITE ${WORK}/validate.xml "${deck}")
h3d_run(FALSE validated ${launch} ${HYBRID3D} train ${WORK}/validate.xml)
h3d_expect("${validated}" "cosmo_000009.h5: dataset '/full' holds NaN or Inf")
if(NOT EXISTS ${WORK}/validate/checkpoint.h5)
  message(FATAL_ERROR "bad validation sample: the epoch was not checkpointed first")
endif()
message(STATUS "bad validation sample: named, and the epoch's checkpoint is there")
