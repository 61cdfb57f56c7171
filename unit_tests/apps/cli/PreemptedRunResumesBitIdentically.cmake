# Preemption end to end on 2 ranks: a SIGTERM (to one rank only, or to the mpirun launcher) or a
# SIGUSR1 (to the launcher) during training makes every rank stop after the same step, write the
# checkpoint and exit with status 75 (docs/checkpoints.md, "Preemption"); the printed resume command then
# finishes the run with parameters, optimizer state and per-step losses bit-identical to a run
# that was never interrupted.
include(${CMAKE_CURRENT_LIST_DIR}/Common.cmake)
set(launch ${MPIEXEC} -n 2 --oversubscribe)

# A deck per run (the output directory is in the deck): 100 epochs of 2 steps (4 samples,
# mini-batch 2), a run that a signal always interrupts.
function(preempt_deck name)
  h3d_named_deck(${name} "<Parameter name=\"epochs\" type=\"int\" value=\"100\"/>")
endfunction()

# Checks a preempted run's status and output, runs the resume command it printed up to two
# steps past the stop, and compares checkpoint and metrics with an uninterrupted run of as many
# steps.
function(resume_and_compare name signal out rc)
  if(NOT "${rc}" STREQUAL "75")
    message(FATAL_ERROR "${name}: exit status ${rc}, not 75:\n${out}")
  endif()
  string(REGEX MATCH "hybrid3d: ${signal} received: stopped after step ([0-9]+) of 200" stopped "${out}")
  if(NOT stopped)
    message(FATAL_ERROR "${name}: no '${signal} received: stopped after step' line:\n${out}")
  endif()
  set(stop ${CMAKE_MATCH_1})
  math(EXPR steps "${stop} + 2")
  if(NOT EXISTS ${WORK}/${name}/checkpoint.h5)
    message(FATAL_ERROR "${name}: no checkpoint written:\n${out}")
  endif()
  string(REGEX MATCH "resume with: mpirun -n 2 ([^\n]*)" resume "${out}")
  if(NOT resume)
    message(FATAL_ERROR "${name}: no resume command printed:\n${out}")
  endif()
  separate_arguments(resume_args UNIX_COMMAND "${CMAKE_MATCH_1}")
  h3d_run(TRUE resumed ${launch} ${resume_args} --max-steps ${steps})
  h3d_expect("${resumed}" "finished ${steps} steps")

  preempt_deck(straight_${name})
  h3d_run(TRUE straight ${launch} ${HYBRID3D} train ${WORK}/straight_${name}.xml --max-steps ${steps})
  h3d_run(TRUE cmp ${MPIEXEC} -n 1 ${HYBRID3D} compare ${WORK}/${name}/checkpoint.h5
          ${WORK}/straight_${name}/checkpoint.h5 --tolerance 0)
  h3d_expect("${cmp}" ", 0 differ")
  h3d_metrics_columns(${WORK}/${name}/metrics.csv 5 metrics)  # to learning_rate
  h3d_metrics_columns(${WORK}/straight_${name}/metrics.csv 5 straight_metrics)
  if(NOT metrics STREQUAL straight_metrics)
    message(FATAL_ERROR "${name}: metrics differ from the uninterrupted run's:\n${metrics}\n"
                        "uninterrupted:\n${straight_metrics}")
  endif()
  message(STATUS "${name}: ${signal} stopped it after step ${stop}; resumed to step "
                 "${steps} bit-identically")
endfunction()

# (a) SIGTERM to world rank 1 only, raised in-process once 3 steps are done: mid-epoch 2.
preempt_deck(one_rank)
execute_process(COMMAND ${launch} ${HYBRID3D} train ${WORK}/one_rank.xml --test-signal-at 3:1
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err TIMEOUT 240)
h3d_expect("${out}" "stopped after step 3 of 200 (epoch 2/100, 1 of its 2 steps done)")
resume_and_compare(one_rank SIGTERM "${out}${err}" "${rc}")

# (b) A real signal to the launcher once a progress line is out. Open MPI's mpirun forwards
# SIGUSR1 at once and passes the ranks' status 75 through.
set(signal_after ${CMAKE_CURRENT_LIST_DIR}/signal_after_output.sh)
preempt_deck(launcher_usr1)
execute_process(COMMAND bash ${signal_after} USR1 "step 1/200" ${WORK}/launcher_usr1.log
                        ${launch} ${HYBRID3D} train ${WORK}/launcher_usr1.xml
                RESULT_VARIABLE rc TIMEOUT 240)
file(READ ${WORK}/launcher_usr1.log out)
resume_and_compare(launcher_usr1 SIGUSR1 "${out}" "${rc}")

# SIGTERM to mpirun (Open MPI 4.1): it passes SIGTERM on to the ranks about
# odls_base_sigkill_timeout seconds later (default 1), SIGKILLs them as long again after that,
# and exits 1 whatever they returned: the status is mpirun's, not 75. The timeout is raised here
# so that a loaded machine finishes the step and the checkpoint in time.
preempt_deck(launcher_term)
execute_process(COMMAND bash ${signal_after} TERM "step 1/200" ${WORK}/launcher_term.log
                        ${launch} --mca odls_base_sigkill_timeout 3 ${HYBRID3D} train
                        ${WORK}/launcher_term.xml
                RESULT_VARIABLE rc TIMEOUT 240)
file(READ ${WORK}/launcher_term.log out)
if(rc EQUAL 0)
  message(FATAL_ERROR "launcher_term: exit status 0 after SIGTERM:\n${out}")
endif()
resume_and_compare(launcher_term SIGTERM "${out}" 75)
