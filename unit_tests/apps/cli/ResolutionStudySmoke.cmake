# The resolution study (perf_tests/resolution/study.sh) in its smoke form: a 32^3 dataset, the
# same samples downsampled by 2, CosmoFlow trained on each for 3 epochs on 2 ranks. Passes when
# the whole pipeline runs (generate, downsample, channel statistics, decks, training, table,
# plots) and study.sh's own check finds every run's training loss falling; with -DPRECISION
# every run in that Model/precision.
include(${CMAKE_CURRENT_LIST_DIR}/Common.cmake)
if(NOT DEFINED PRECISION)
  set(PRECISION float)
endif()
file(REMOVE_RECURSE "${WORK}")
get_filename_component(bin "${HYBRID3D}" DIRECTORY)
h3d_run(TRUE out ${CMAKE_COMMAND} -E env BIN=${bin} PYTHON=${PYTHON}
        "LAUNCH=${MPIEXEC} --oversubscribe -n {ranks}"
        bash ${SOURCE_DIR}/perf_tests/resolution/study.sh --smoke --out ${WORK}
        --precision ${PRECISION})
h3d_expect("${out}" "| 32^3 (full) | 1 |")
h3d_expect("${out}" "| 16^3 (/2) | 1 |")
h3d_expect("${out}" "| predicting the mean |")
foreach(f resolution.csv resolution.md resolution.png runs/f1_seed1/metrics.png
          runs/f2_seed1/metrics.png data/s16/manifest.txt)
  if(NOT EXISTS "${WORK}/${f}")
    message(FATAL_ERROR "the smoke study wrote no ${f}:\n${out}")
  endif()
endforeach()
# The table says each run's training loss fell; the study exits non-zero otherwise.
h3d_expect("${out}" "f1_seed1: training loss")
