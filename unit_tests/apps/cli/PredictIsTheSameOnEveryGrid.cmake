# `hybrid3d predict` with a CosmoFlow checkpoint (double precision, so grids differ by rounding
# alone): predictions.csv on 2, 3 (3x1x1), 4 and 8 (2x2x2: the late layers' boxes empty on most
# ranks) ranks equals the 1-rank file to 1e-9 relative; the MSE over the validation set's rows
# equals the training run's last validation mse (the same checkpoint, the same samples) to 1e-8
# (metrics.csv prints 9 digits); a 32^3 volume's prediction (--cubes) equals the mean of its
# eight 16^3 cubes predicted as files of their own (`hybrid3d split`) to 1e-9; the last line has
# the form the benchmarks parse.
include(${CMAKE_CURRENT_LIST_DIR}/Common.cmake)
file(REMOVE_RECURSE ${WORK})
set(check ${PYTHON} ${CMAKE_CURRENT_LIST_DIR}/predict_check.py)
h3d_run(TRUE out ${MPIEXEC} -n 1 ${HYBRID3D} generate cosmology --out ${WORK}/data --size 16
        --train 4 --validation 3 --test 0 --seed 5)
file(WRITE ${WORK}/deck.xml "<ParameterList name=\"hybrid3d\">
  <ParameterList name=\"Model\">
    <Parameter name=\"architecture\" type=\"string\" value=\"cosmoflow\"/>
    <Parameter name=\"input width\" type=\"int\" value=\"16\"/>
    <Parameter name=\"precision\" type=\"string\" value=\"double\"/>
  </ParameterList>
  <ParameterList name=\"Data\">
    <Parameter name=\"train\" type=\"string\" value=\"${WORK}/data/train\"/>
    <Parameter name=\"validation\" type=\"string\" value=\"${WORK}/data/validation\"/>
    <Parameter name=\"log1p\" type=\"bool\" value=\"true\"/>
    <Parameter name=\"channel offset\" type=\"string\" value=\"auto\"/>
  </ParameterList>
  <ParameterList name=\"Training\">
    <Parameter name=\"mini-batch\" type=\"int\" value=\"2\"/>
    <Parameter name=\"epochs\" type=\"int\" value=\"1\"/>
    <Parameter name=\"output directory\" type=\"string\" value=\"${WORK}/run\"/>
  </ParameterList>
</ParameterList>
")
h3d_run(TRUE out ${MPIEXEC} -n 1 ${HYBRID3D} train ${WORK}/deck.xml)
set(ckpt ${WORK}/run/checkpoint.h5)

# The validation set on 1 rank, then on other grids.
h3d_run(TRUE out ${MPIEXEC} -n 1 ${HYBRID3D} predict --checkpoint ${ckpt}
        --in ${WORK}/data/validation --out ${WORK}/p1)
message(STATUS "${out}")
if(NOT out MATCHES "predict: 3 volume\\(s\\), 12288 voxels in [0-9.]+ s \\([0-9.]+ voxels/s\\), peak memory per rank [0-9.]+ MiB\n?$")
  message(FATAL_ERROR "the last line is not the documented one:\n${out}")
endif()
h3d_expect("${out}" "predict: MSE ")
# A second run into the same --out: refused (the bad-input table's row), done with --overwrite.
h3d_run(FALSE out ${MPIEXEC} -n 1 ${HYBRID3D} predict --checkpoint ${ckpt}
        --in ${WORK}/data/validation --out ${WORK}/p1)
h3d_expect("${out}" "--out is not empty")
h3d_run(TRUE out ${MPIEXEC} -n 1 ${HYBRID3D} predict --checkpoint ${ckpt}
        --in ${WORK}/data/validation --out ${WORK}/p1 --overwrite)
foreach(case "2;auto" "3;3x1x1" "4;auto" "8;2x2x2")
  list(GET case 0 ranks)
  list(GET case 1 grid)
  h3d_run(TRUE out ${MPIEXEC} -n ${ranks} --oversubscribe ${HYBRID3D} predict --checkpoint ${ckpt}
          --in ${WORK}/data/validation --out ${WORK}/p${ranks} --grid ${grid})
  h3d_run(TRUE out ${check} csv ${WORK}/p1/predictions.csv ${WORK}/p${ranks}/predictions.csv 1e-9)
  message(STATUS "${ranks} ranks (grid ${grid}): ${out}")
endforeach()
# metrics.csv prints 9 significant digits: equal to 1e-8 relative.
h3d_run(TRUE out ${check} mse ${WORK}/p1/predictions.csv ${WORK}/run/metrics.csv 1e-8)
message(STATUS "${out}")

# A 32^3 volume: the mean of its eight 16^3 cubes, each as if a file of its own.
h3d_run(TRUE out ${MPIEXEC} -n 1 ${HYBRID3D} generate cosmology --out ${WORK}/big --size 32
        --train 1 --validation 0 --test 0 --seed 9)
h3d_run(TRUE out ${MPIEXEC} -n 1 ${HYBRID3D} split --in ${WORK}/big --out ${WORK}/pieces
        --size 16)
h3d_run(TRUE out ${MPIEXEC} -n 2 --oversubscribe ${HYBRID3D} predict --checkpoint ${ckpt}
        --in ${WORK}/big/train --out ${WORK}/whole --cubes)
h3d_expect("${out}" "model input 16x16x16")
file(STRINGS ${WORK}/whole/predictions.csv lines)
list(LENGTH lines n)
if(NOT n EQUAL 10)
  message(FATAL_ERROR "--cubes: expected a header, the volume's row and 8 cube rows:\n${lines}")
endif()
h3d_run(TRUE out ${MPIEXEC} -n 2 --oversubscribe ${HYBRID3D} predict --checkpoint ${ckpt}
        --in ${WORK}/pieces/train --out ${WORK}/pieces_out)
h3d_run(TRUE out ${check} cubes ${WORK}/whole/predictions.csv ${WORK}/pieces_out/predictions.csv
        cosmo_000000 1e-9)
message(STATUS "${out}")

# A full disk (injected, as for checkpoints) on 1 and 2 ranks: one line naming the file, every
# rank stops, nothing under the final name and no temporary left.
set(ENV{HYBRID3D_TEST_NO_SPACE} 1)
foreach(ranks 1 2)
  execute_process(COMMAND ${MPIEXEC} -n ${ranks} --oversubscribe ${HYBRID3D} predict
                  --checkpoint ${ckpt} --in ${WORK}/data/validation --out ${WORK}/full${ranks}
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err TIMEOUT 120)
  if(rc EQUAL 0)
    message(FATAL_ERROR "a full disk went unnoticed on ${ranks} rank(s):\n${out}${err}")
  endif()
  h3d_expect("${err}" "${WORK}/full${ranks}/predictions.csv: cannot write its ")
  h3d_expect("${err}" "(no space left on device)")
  file(GLOB left ${WORK}/full${ranks}/predictions.csv*)
  if(left)
    message(FATAL_ERROR "a full disk left ${left}")
  endif()
endforeach()
unset(ENV{HYBRID3D_TEST_NO_SPACE})
