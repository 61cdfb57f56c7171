# Helpers for the command-line tests: run a command, check its exit status and output.
function(h3d_run expect_success out_var)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err
                  TIMEOUT 240)
  set(all "${out}${err}")
  if(expect_success AND NOT rc EQUAL 0)
    message(FATAL_ERROR "failed (${rc}): ${ARGN}\n${all}")
  elseif(NOT expect_success AND rc EQUAL 0)
    message(FATAL_ERROR "succeeded but should have failed: ${ARGN}\n${all}")
  endif()
  set(${out_var} "${all}" PARENT_SCOPE)
endfunction()

function(h3d_expect text pattern)
  string(FIND "${text}" "${pattern}" at)
  if(at EQUAL -1)
    message(FATAL_ERROR "expected \"${pattern}\" in:\n${text}")
  endif()
endfunction()

# The field of column `name` of a CSV `row` under `header` (an empty field as "": a script's
# lists drop empty elements, so they are filled before the split).
function(h3d_csv_field header row name out_var)
  string(REPLACE "," ";" names "${header}")
  list(FIND names "${name}" at)
  if(at EQUAL -1)
    message(FATAL_ERROR "no column ${name} in: ${header}")
  endif()
  set(filled ",${row},")
  while(filled MATCHES ",,")
    string(REPLACE ",," ",-," filled "${filled}")
  endwhile()
  string(REGEX REPLACE "^,(.*),$" "\\1" filled "${filled}")
  string(REPLACE "," ";" fields "${filled}")
  list(GET fields ${at} value)
  if(value STREQUAL "-")
    set(value "")
  endif()
  set(${out_var} "${value}" PARENT_SCOPE)
endfunction()

# A small deck: cosmoflow at 16^3 on the samples in DIR, with extra <Parameter> lines.
function(h3d_deck path dir extra_model extra_training)
  file(WRITE "${path}" "<ParameterList name=\"hybrid3d\">
  <ParameterList name=\"Model\">
    <Parameter name=\"architecture\" type=\"string\" value=\"cosmoflow\"/>
    <Parameter name=\"input width\" type=\"int\" value=\"16\"/>
    ${extra_model}
  </ParameterList>
  <ParameterList name=\"Data\">
    <Parameter name=\"train\" type=\"string\" value=\"${dir}\"/>
    <Parameter name=\"log1p\" type=\"bool\" value=\"true\"/>
  </ParameterList>
  <ParameterList name=\"Training\">
    <Parameter name=\"mini-batch\" type=\"int\" value=\"2\"/>
    <Parameter name=\"output directory\" type=\"string\" value=\"${WORK}/run\"/>
    ${extra_training}
  </ParameterList>
</ParameterList>
")
endfunction()

# h3d_deck on WORK/data/train written to WORK/NAME.xml, with WORK/NAME its output directory.
function(h3d_named_deck name extra_training)
  h3d_deck(${WORK}/${name}.xml ${WORK}/data/train "" "${extra_training}")
  file(READ ${WORK}/${name}.xml deck)
  string(REPLACE "${WORK}/run" "${WORK}/${name}" deck "${deck}")
  file(WRITE ${WORK}/${name}.xml "${deck}")
endfunction()

# The first COLUMNS columns of every row of a metrics.csv (kind,step,epoch,loss,...: the ones a
# rerun must repeat; the later ones are timings).
function(h3d_metrics_columns path columns out_var)
  file(STRINGS ${path} lines)
  string(REPEAT ",[^,]*" ${columns} pattern)
  string(SUBSTRING "${pattern}" 1 -1 pattern)
  set(kept "")
  foreach(line IN LISTS lines)
    string(REGEX MATCH "^${pattern}" row "${line}")
    string(APPEND kept "${row}\n")
  endforeach()
  set(${out_var} "${kept}" PARENT_SCOPE)
endfunction()

file(REMOVE_RECURSE "${WORK}")
file(MAKE_DIRECTORY "${WORK}")
h3d_run(TRUE out ${MPIEXEC} -n 1 ${HYBRID3D} generate cosmology --out ${WORK}/data --size 16
        --train 4 --validation 0 --test 0 --seed 3)
