# The published CosmoFlow HDF5 layout (channels-last, no layout attribute, *.hdf5; int16, and
# float32 chunked and deflate-compressed) and the MLPerf HPC numpy release (NAME.data.npy int16
# [D,H,W,C] beside NAME.label.npy) give `hybrid3d gradients` exactly the /loss, /output and
# /grads of the project's own [C,D,H,W] files, on 1 and 2 ranks; `check` takes their
# directories, and `stats` prints the same channel statistics for them. The files are made here from the generated samples (make_bad_file's conversions).
include(${CMAKE_CURRENT_LIST_DIR}/Common.cmake)
h3d_deck(${WORK}/deck.xml ${WORK}/data/train
  "<Parameter name=\"precision\" type=\"string\" value=\"double\"/><Parameter name=\"dropout keep probability\" type=\"double\" value=\"1\"/>"
  "<Parameter name=\"max steps\" type=\"int\" value=\"1\"/>")
h3d_run(TRUE out ${MPIEXEC} -n 1 ${HYBRID3D} train ${WORK}/deck.xml)

# Each form: a directory of every training sample converted.
set(forms hdf5_int16 hdf5_float32_deflate numpy_int16)
set(ops_hdf5_int16 channels-last /full)
set(ops_hdf5_float32_deflate retype /full float32 channels-last /full chunked /full)
set(ops_numpy_int16 npy int16)
set(ext_hdf5_int16 .hdf5)
set(ext_hdf5_float32_deflate .hdf5)
set(ext_numpy_int16 .data.npy)
file(GLOB sources ${WORK}/data/train/*.h5)
foreach(form IN LISTS forms)
  file(MAKE_DIRECTORY ${WORK}/${form})
  foreach(src IN LISTS sources)
    get_filename_component(name ${src} NAME_WE)
    h3d_run(TRUE out ${MAKE_BAD_FILE} ${src} ${WORK}/${form}/${name}${ext_${form}} ${ops_${form}})
  endforeach()
endforeach()

set(names cosmo_000000 cosmo_000003)
foreach(ranks 1 2)
  set(own "")
  foreach(name IN LISTS names)
    list(APPEND own ${WORK}/data/train/${name}.h5)
  endforeach()
  h3d_run(TRUE out ${MPIEXEC} -n ${ranks} --oversubscribe ${HYBRID3D} gradients ${WORK}/deck.xml
          --weights ${WORK}/run/checkpoint.h5 --out ${WORK}/own_np${ranks}.h5 ${own})
  foreach(form IN LISTS forms)
    set(samples "")
    foreach(name IN LISTS names)
      list(APPEND samples ${WORK}/${form}/${name}${ext_${form}})
    endforeach()
    h3d_run(TRUE out ${MPIEXEC} -n ${ranks} --oversubscribe ${HYBRID3D} gradients ${WORK}/deck.xml
            --weights ${WORK}/run/checkpoint.h5 --out ${WORK}/${form}_np${ranks}.h5 ${samples})
    h3d_run(TRUE out ${MPIEXEC} -n 1 ${HYBRID3D} compare ${WORK}/${form}_np${ranks}.h5
            ${WORK}/own_np${ranks}.h5 --tolerance 0)
    h3d_expect("${out}" "/grads/conv1/weight")
    h3d_expect("${out}" ", 0 differ")
    message(STATUS "${form} on ${ranks} rank(s): ${out}")
  endforeach()
endforeach()

# `check` on a directory of each form, on 2 ranks: the deck, the grid and the data check out.
foreach(form IN LISTS forms)
  file(READ ${WORK}/deck.xml deck)
  string(REPLACE "${WORK}/data/train" "${WORK}/${form}" deck "${deck}")
  string(REPLACE "${WORK}/run" "${WORK}/run_${form}" deck "${deck}")
  file(WRITE ${WORK}/${form}.xml "${deck}")
  h3d_run(TRUE out ${MPIEXEC} -n 2 --oversubscribe ${HYBRID3D} check ${WORK}/${form}.xml)
  h3d_expect("${out}" "the deck, the grid and the data check out")
  h3d_expect("${out}" "4 samples in ${WORK}/${form}")
endforeach()

# `stats` on each form prints the deck lines it prints for the project's own files (int16 read as
# int16 and float32 as float32 give the same values, summed alike), on 2 ranks.
function(h3d_deck_lines dir out_var)
  h3d_run(TRUE out ${MPIEXEC} -n 2 --oversubscribe ${HYBRID3D} stats ${dir} --log1p)
  string(REGEX MATCHALL "<Parameter name=\"channel (offset|scale)\"[^\n]*" lines "${out}")
  list(LENGTH lines n)
  if(NOT n EQUAL 2)
    message(FATAL_ERROR "stats ${dir} printed ${n} deck lines, not 2:\n${out}")
  endif()
  set(${out_var} "${lines}" PARENT_SCOPE)
endfunction()
h3d_deck_lines(${WORK}/data/train own_lines)
foreach(form IN LISTS forms)
  h3d_deck_lines(${WORK}/${form} form_lines)
  if(NOT form_lines STREQUAL own_lines)
    message(FATAL_ERROR "stats on ${form}:\n${form_lines}\nown files:\n${own_lines}")
  endif()
endforeach()
