# Runs every case of bad_inputs.table on RANKS ranks. Each case starts from a good setup in a
# directory of its own (a 16^3 cosmology dataset, a segmentation dataset, NIfTI image/label
# pairs, a deck that trains, the checkpoint of a finished run), spoils one thing as the table
# says, runs the command and checks what a user must see:
#  - a non-zero exit status on every rank, each rank ending by itself (no MPI_Abort);
#  - exactly one line on stderr, holding the table's fragment (the culprit: file, key, option);
#  - within 30 s (a hang would be caught by the test's timeout anyway);
#  - every file that was there before unchanged (nothing written over a good checkpoint).
# What each case printed goes to ${WORK}/report.txt (and the test log).
#
# Table rows: NAME | RANKS | SETUP | COMMAND | EXPECTED. RANKS: the rank counts the case
# applies to ("1,2"). SETUP: actions joined by " && " (see h3d_setup below), or "-". In SETUP,
# COMMAND and EXPECTED, {case} is the case's directory.
cmake_policy(SET CMP0057 NEW)  # if(... IN_LIST ...)
include(${CMAKE_CURRENT_LIST_DIR}/Common.cmake)
include(${CMAKE_CURRENT_LIST_DIR}/../../../cmake/TakeUntil.cmake)
set(status_wrapper ${CMAKE_CURRENT_LIST_DIR}/record_exit_status.sh)
# Open MPI's mpirun kills the other ranks once one exits non-zero, which can race a rank that
# is about to exit by itself (and record it): let every rank end on its own. (mpirun then
# exits 0 itself: the ranks' recorded statuses are what is checked.)
set(ENV{OMPI_MCA_orte_abort_on_non_zero_status} 0)

# The good setup, made once and copied into every case.
set(good ${WORK}/good)
file(MAKE_DIRECTORY ${good})
h3d_run(TRUE out ${MPIEXEC} -n 1 ${HYBRID3D} generate cosmology --out ${good}/data --size 16
        --train 4 --validation 0 --test 0 --seed 3)
h3d_run(TRUE out ${MPIEXEC} -n 1 ${HYBRID3D} generate segmentation --out ${good}/seg --size 16
        --train 2 --validation 0 --test 0 --seed 3)
# NIfTI image/label pairs for `import nifti` (12x10x8 voxels): NIfTI-1 int16 .nii.gz, NIfTI-2
# float32 .nii, and one more .nii.gz, which the rows spoil; imported once here to show they are good.
file(MAKE_DIRECTORY ${good}/nifti/images ${good}/nifti/labels)
foreach(pair "a.nii.gz;--type;int16" "b.nii;--type;float32;--version;2" "c.nii.gz;--type;int16")
  list(POP_FRONT pair name)
  h3d_run(TRUE out ${MAKE_NIFTI_FILE} ${good}/nifti/images/${name} ${pair})
  h3d_run(TRUE out ${MAKE_NIFTI_FILE} ${good}/nifti/labels/${name} --type uint8 --labels)
endforeach()
h3d_run(TRUE out ${MPIEXEC} -n 1 ${HYBRID3D} import nifti --images ${good}/nifti/images
        --labels ${good}/nifti/labels --out ${WORK}/imported_good --size 16)
file(REMOVE_RECURSE ${WORK}/imported_good)
# The deck refers to the case directory through @CASE@ (made per case below).
file(WRITE ${good}/deck.xml.in "<ParameterList name=\"hybrid3d\">
  <ParameterList name=\"Model\">
    <Parameter name=\"architecture\" type=\"string\" value=\"cosmoflow\"/>
    <Parameter name=\"input width\" type=\"int\" value=\"16\"/>
  </ParameterList>
  <ParameterList name=\"Data\">
    <Parameter name=\"train\" type=\"string\" value=\"@CASE@/data/train\"/>
    <Parameter name=\"log1p\" type=\"bool\" value=\"true\"/>
  </ParameterList>
  <ParameterList name=\"Training\">
    <Parameter name=\"mini-batch\" type=\"int\" value=\"2\"/>
    <Parameter name=\"epochs\" type=\"int\" value=\"1\"/>
    <Parameter name=\"output directory\" type=\"string\" value=\"@CASE@/@OUT@\"/>
  </ParameterList>
</ParameterList>
")
# The good run writes run/; a case's deck writes out/ (empty: a run into run/, which holds the
# good run's files, would be refused for that).
set(CASE ${good})
set(OUT run)
configure_file(${good}/deck.xml.in ${good}/deck.xml @ONLY)
set(OUT out)
h3d_run(TRUE out ${MPIEXEC} -n 1 ${HYBRID3D} train ${good}/deck.xml)

# One setup action, in the case directory `dir`:
#   deck OLD => NEW            replace text in deck.xml (it must be there)
#   edit PATH OLD => NEW       the same in PATH (a manifest, a list file)
#   spoil SRC DST OP...        DST = SRC spoilt by make_bad_file (OP: drop, set, retype, reshape,
#                              channels-last, attribute, npy ...)
#   convert SRCDIR DSTDIR EXT OP...  every SRCDIR/NAME.h5 as DSTDIR/NAME+EXT by make_bad_file OP
#                              (the published CosmoFlow or the MLPerf numpy form of the samples)
#   truncate SRC DST BYTES     DST = the first BYTES bytes of SRC
#   text PATH WORDS...         PATH holds WORDS, one a line (not HDF5; or a list file)
#   nifti PATH OPTIONS...      PATH is a NIfTI file written by make_nifti_file with OPTIONS
#   remove PATH | mkdir PATH | link PATH TARGET (a symbolic link, TARGET need not exist)
#   fifo PATH                  a FIFO (named pipe); PATH must end in .fifo, which the
#                              fingerprint does not read (a read would wait for a writer)
function(h3d_setup dir action)
  string(REGEX MATCH "^([a-z]+) (.*)$" m "${action}")
  set(verb ${CMAKE_MATCH_1})
  set(rest "${CMAKE_MATCH_2}")
  if(verb STREQUAL "deck" OR verb STREQUAL "edit")
    set(target deck.xml)
    if(verb STREQUAL "edit")
      string(REGEX MATCH "^([^ ]+) (.*)$" m "${rest}")
      set(target ${CMAKE_MATCH_1})
      set(rest "${CMAKE_MATCH_2}")
    endif()
    string(FIND "${rest}" " =>" at)
    string(SUBSTRING "${rest}" 0 ${at} old)
    math(EXPR from "${at} + 3")
    string(SUBSTRING "${rest}" ${from} -1 new)
    string(STRIP "${new}" new)
    file(READ ${dir}/${target} text)
    string(FIND "${text}" "${old}" found)
    if(found EQUAL -1)
      message(FATAL_ERROR "table: '${old}' is not in ${target}")
    endif()
    string(REPLACE "${old}" "${new}" text "${text}")
    file(WRITE ${dir}/${target} "${text}")
    return()
  endif()
  separate_arguments(args UNIX_COMMAND "${rest}")
  list(POP_FRONT args first)
  if(verb STREQUAL "spoil")
    list(POP_FRONT args second)
    file(REMOVE ${dir}/${second})
    h3d_run(TRUE out ${MAKE_BAD_FILE} ${dir}/${first} ${dir}/${second} ${args})
  elseif(verb STREQUAL "convert")
    list(POP_FRONT args second ext)
    file(MAKE_DIRECTORY ${dir}/${second})
    file(GLOB sources ${dir}/${first}/*.h5)
    foreach(src IN LISTS sources)
      get_filename_component(name ${src} NAME_WE)
      h3d_run(TRUE out ${MAKE_BAD_FILE} ${src} ${dir}/${second}/${name}${ext} ${args})
    endforeach()
  elseif(verb STREQUAL "truncate")
    list(GET args 0 second)
    list(GET args 1 n)
    file(REMOVE ${dir}/${second})
    execute_process(COMMAND head -c ${n} ${dir}/${first} OUTPUT_FILE ${dir}/${second})
  elseif(verb STREQUAL "nifti")
    file(REMOVE ${dir}/${first})
    h3d_run(TRUE out ${MAKE_NIFTI_FILE} ${dir}/${first} ${args})
  elseif(verb STREQUAL "text")
    file(REMOVE ${dir}/${first})
    string(JOIN "\n" words ${args})
    file(WRITE ${dir}/${first} "${words}\n")
  elseif(verb STREQUAL "remove")
    file(REMOVE_RECURSE ${dir}/${first})
  elseif(verb STREQUAL "mkdir")
    file(MAKE_DIRECTORY ${dir}/${first})
  elseif(verb STREQUAL "fifo")
    if(NOT first MATCHES "\\.fifo$")
      message(FATAL_ERROR "table: a FIFO's name ends in .fifo: ${first}")
    endif()
    file(REMOVE ${dir}/${first})
    h3d_run(TRUE out mkfifo ${dir}/${first})
  elseif(verb STREQUAL "link")
    file(REMOVE ${dir}/${first})
    file(CREATE_LINK ${args} ${dir}/${first} SYMBOLIC)
  else()
    message(FATAL_ERROR "table: unknown setup action '${action}'")
  endif()
endfunction()

# Every file under `dir` with its SHA-256, as a list of "path=hash".
function(h3d_fingerprint dir out_var)
  file(GLOB_RECURSE files LIST_DIRECTORIES false ${dir}/*)
  set(prints "")
  foreach(f IN LISTS files)
    if(NOT IS_SYMLINK ${f} AND EXISTS ${f} AND NOT f MATCHES "/status/|\\.fifo$")
      file(SHA256 ${f} hash)
      list(APPEND prints "${f}=${hash}")
    endif()
  endforeach()
  set(${out_var} "${prints}" PARENT_SCOPE)
endfunction()

function(h3d_case name setup command expected)
  set(dir ${WORK}/${name})
  file(REMOVE_RECURSE ${dir})
  file(MAKE_DIRECTORY ${dir}/status)
  file(COPY ${good}/data ${good}/seg ${good}/nifti DESTINATION ${dir})
  file(COPY ${good}/run/metrics.csv DESTINATION ${dir}/run)
  # The checkpoint (46 MB) is a hard link: a program that replaced it (write and rename) would
  # change what the case's path holds, which the fingerprint catches.
  file(CREATE_LINK ${good}/run/checkpoint.h5 ${dir}/run/checkpoint.h5)
  set(CASE ${dir})
  configure_file(${good}/deck.xml.in ${dir}/deck.xml @ONLY)
  string(REPLACE "{case}" "${dir}" setup "${setup}")
  string(REPLACE "{case}" "${dir}" command "${command}")
  string(REPLACE "{case}" "${dir}" expected "${expected}")
  if(NOT setup STREQUAL "-")
    string(REPLACE " && " "\n" actions "${setup}")
    string(REPLACE ";" "\\;" actions "${actions}")
    string(REPLACE "\n" ";" actions "${actions}")
    foreach(action IN LISTS actions)
      h3d_setup(${dir} "${action}")
    endforeach()
  endif()
  h3d_fingerprint(${dir} before)

  separate_arguments(args UNIX_COMMAND "${command}")
  string(TIMESTAMP t0 "%s")
  execute_process(COMMAND ${MPIEXEC} -q -n ${RANKS} --oversubscribe bash ${status_wrapper}
                          ${dir}/status ${HYBRID3D} ${args}
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err TIMEOUT 120)
  string(TIMESTAMP t1 "%s")
  math(EXPR seconds "${t1} - ${t0}")

  set(problems "")
  foreach(r RANGE 1 ${RANKS})
    math(EXPR rank "${r} - 1")
    if(NOT EXISTS ${dir}/status/rank${rank})
      string(APPEND problems "rank ${rank} did not exit by itself; ")
    else()
      file(READ ${dir}/status/rank${rank} s)
      string(STRIP "${s}" s)
      if(s STREQUAL "0")
        string(APPEND problems "rank ${rank} exited 0; ")
      endif()
    endif()
  endforeach()
  string(STRIP "${err}" line)
  string(FIND "${line}" "\n" nl)
  if(line STREQUAL "" OR NOT nl EQUAL -1)
    string(APPEND problems "not exactly one line on stderr; ")
  endif()
  string(FIND "${line}" "${expected}" at)
  if(at EQUAL -1)
    string(APPEND problems "no '${expected}' in it; ")
  endif()
  if(seconds GREATER 30)
    string(APPEND problems "took ${seconds} s; ")
  endif()
  h3d_fingerprint(${dir} after)
  foreach(print IN LISTS before)
    if(NOT print IN_LIST after)
      string(REGEX REPLACE "=.*" "" changed "${print}")
      string(APPEND problems "${changed} changed or went; ")
    endif()
  endforeach()
  string(REPLACE "${dir}/" "" shown "${line}")
  file(APPEND ${WORK}/report.txt "${name} (${RANKS} ranks, ${seconds} s): ${shown}\n")
  if(problems STREQUAL "")
    message(STATUS "ok   ${name}: ${shown}")
  else()
    message(STATUS "FAIL ${name}: ${problems}\n  status ${rc}, stderr:\n${err}\n  stdout:\n${out}")
    set(failures "${failures} ${name}" PARENT_SCOPE)
  endif()
endfunction()

file(REMOVE ${WORK}/report.txt)
set(failures "")
set(count 0)
file(READ ${TABLE} table)
while(NOT table STREQUAL "")
  hybrid3d_take_until(table "\n" line)
  if(line MATCHES "^[ \t]*(#|$)")
    continue()
  endif()
  if(NOT line MATCHES "^([^|]*)\\|([^|]*)\\|([^|]*)\\|([^|]*)\\|(.*)$")
    message(FATAL_ERROR "table: not NAME | RANKS | SETUP | COMMAND | EXPECTED: ${line}")
  endif()
  foreach(i 1 2 3 4 5)
    string(STRIP "${CMAKE_MATCH_${i}}" field${i})
  endforeach()
  string(REPLACE "," ";" ranks "${field2}")
  if(NOT RANKS IN_LIST ranks OR (DEFINED ONLY AND NOT field1 MATCHES "${ONLY}"))
    continue()  # ONLY: a regular expression, to run some rows by hand
  endif()
  math(EXPR count "${count} + 1")
  h3d_case("${field1}" "${field3}" "${field4}" "${field5}")
endwhile()
if(NOT failures STREQUAL "")
  message(FATAL_ERROR "${count} bad inputs on ${RANKS} ranks; misbehaved:${failures}")
endif()
message(STATUS "${count} bad inputs on ${RANKS} ranks: each stopped every rank with its one line")
