# `hybrid3d compare` misses nothing the old one-way, max-scaled check let through: a dataset
# only in the second file is MISSING, and an error in a small entry is caught although it is
# tiny next to the dataset's largest; equal files compare SAME both ways, and NaN against a
# number differs. Files: a generated sample spoilt by make_bad_file.
include(${CMAKE_CURRENT_LIST_DIR}/Common.cmake)
set(compare ${MPIEXEC} -n 1 ${HYBRID3D} compare)
set(sample ${WORK}/data/train/cosmo_000000.h5)

# Equal files: SAME, whichever comes first.
h3d_run(TRUE out ${compare} ${sample} ${sample} --tolerance 0)
h3d_expect("${out}" "compare: 2 datasets, 0 differ")

# A dataset only in B (B = the sample, A = it without /unitPar): missing, both orders.
h3d_run(TRUE out ${MAKE_BAD_FILE} ${sample} ${WORK}/notargets.h5 drop /unitPar)
foreach(order "${WORK}/notargets.h5;${sample}" "${sample};${WORK}/notargets.h5")
  h3d_run(FALSE out ${compare} ${order})
  h3d_expect("${out}" "MISSING /unitPar (only in ${sample})")
endforeach()

# A small entry wrong by half its value, in /full as float32 (counts up to tens): 1e-3 against
# 1.5e-3 is 5e-4 / max ~ 1e-5 of the largest, which max|a-b|/max|b| passed at 1e-4.
h3d_run(TRUE out ${MAKE_BAD_FILE} ${sample} ${WORK}/small_a.h5 retype /full float32 set /full 7 1e-3)
h3d_run(TRUE out ${MAKE_BAD_FILE} ${sample} ${WORK}/small_b.h5 retype /full float32 set /full 7 1.5e-3)
h3d_run(FALSE out ${compare} ${WORK}/small_a.h5 ${WORK}/small_b.h5 --tolerance 1e-4)
string(REGEX MATCH "DIFFER  /full +max\\|a-b\\| [^ ]+  of max ([^ ]+)  elementwise ([^ ]+) \\(entry 7\\)"
       line "${out}")
if(NOT line)
  message(FATAL_ERROR "no DIFFER line for /full naming entry 7:\n${out}")
endif()
if(CMAKE_MATCH_1 GREATER_EQUAL 1e-4 OR NOT CMAKE_MATCH_2 STREQUAL "3.33e-01")
  message(FATAL_ERROR "expected 'of max' < 1e-4 and elementwise 3.33e-01:\n${out}")
endif()

# NaN against a number always differs, whatever the tolerance.
h3d_run(TRUE out ${MAKE_BAD_FILE} ${sample} ${WORK}/nan.h5 retype /full float32 set /full 7 nan)
h3d_run(FALSE out ${compare} ${WORK}/nan.h5 ${WORK}/small_a.h5 --tolerance 1e300)
h3d_expect("${out}" "DIFFER  /full")
message(STATUS "compare reports missing datasets both ways and errors in small entries")
