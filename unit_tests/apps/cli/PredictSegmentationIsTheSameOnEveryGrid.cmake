# `hybrid3d predict` with a U-Net checkpoint (double precision): labels on 2 (2x1x1), 3 (3x1x1)
# and 6 (1x3x2) ranks identical to the 1-rank ones (exact ties of two logits, which would let
# rounding pick either class, do not occur in these volumes: the test would say so), and the
# probabilities equal to 1e-6 (float32 storage of double softmax values); for HDF5 samples
# (16^3) and for NIfTI scans of 12x10x8 voxels (padded to 16x16x8 and cropped back), whose
# outputs keep the scan's name; metrics.csv where labels are known.
include(${CMAKE_CURRENT_LIST_DIR}/Common.cmake)
file(REMOVE_RECURSE ${WORK})
set(check ${PYTHON} ${CMAKE_CURRENT_LIST_DIR}/predict_check.py)
h3d_run(TRUE out ${MPIEXEC} -n 1 ${HYBRID3D} generate segmentation --out ${WORK}/seg --size 16
        --train 2 --validation 1 --test 0 --seed 3)
file(MAKE_DIRECTORY ${WORK}/scans ${WORK}/labels)
foreach(name a.nii.gz b.nii.gz)
  h3d_run(TRUE out ${MAKE_NIFTI_FILE} ${WORK}/scans/${name} --type int16)
  h3d_run(TRUE out ${MAKE_NIFTI_FILE} ${WORK}/labels/${name} --type uint8 --labels)
endforeach()
file(WRITE ${WORK}/deck.xml "<ParameterList name=\"hybrid3d\">
  <ParameterList name=\"Model\">
    <Parameter name=\"architecture\" type=\"string\" value=\"unet3d\"/>
    <Parameter name=\"input width\" type=\"int\" value=\"16\"/>
    <Parameter name=\"precision\" type=\"string\" value=\"double\"/>
  </ParameterList>
  <ParameterList name=\"Data\">
    <Parameter name=\"train\" type=\"string\" value=\"${WORK}/seg/train\"/>
  </ParameterList>
  <ParameterList name=\"Training\">
    <Parameter name=\"mini-batch\" type=\"int\" value=\"2\"/>
    <Parameter name=\"max steps\" type=\"int\" value=\"1\"/>
    <Parameter name=\"output directory\" type=\"string\" value=\"${WORK}/run\"/>
  </ParameterList>
</ParameterList>
")
h3d_run(TRUE out ${MPIEXEC} -n 1 ${HYBRID3D} train ${WORK}/deck.xml)
set(ckpt ${WORK}/run/checkpoint.h5)

foreach(case "1;auto" "2;2x1x1" "3;3x1x1" "6;1x3x2")
  list(GET case 0 ranks)
  list(GET case 1 grid)
  h3d_run(TRUE out ${MPIEXEC} -n ${ranks} --oversubscribe ${HYBRID3D} predict --checkpoint ${ckpt}
          --in ${WORK}/seg/validation ${WORK}/scans --labels ${WORK}/labels --probabilities
          --grid ${grid} --out ${WORK}/p${ranks})
  message(STATUS "${ranks} ranks (grid ${grid}):\n${out}")
  h3d_expect("${out}" "a: 8x10x12 voxels, model input 8x16x16")
  h3d_expect("${out}" "predict: mean Dice ")
  if(ranks EQUAL 1)
    continue()
  endif()
  h3d_run(TRUE out ${check} h5 ${WORK}/p1/seg_000002.h5 ${WORK}/p${ranks}/seg_000002.h5 1e-6)
  message(STATUS "${out}")
  foreach(f a.nii.gz a_probabilities.nii.gz b.nii.gz)
    h3d_run(TRUE out ${check} nifti ${WORK}/p1/${f} ${WORK}/p${ranks}/${f} 1e-6)
    message(STATUS "${out}")
  endforeach()
  h3d_run(TRUE out ${check} csv ${WORK}/p1/metrics.csv ${WORK}/p${ranks}/metrics.csv 0)
endforeach()
file(STRINGS ${WORK}/p1/metrics.csv metrics)
list(GET metrics 0 header)
if(NOT header STREQUAL "file,dice_0,dice_1,dice_2,mean_foreground_dice,voxels_0,voxels_1,voxels_2,true_voxels_0,true_voxels_1,true_voxels_2")
  message(FATAL_ERROR "metrics.csv's header: ${header}")
endif()
list(LENGTH metrics n)
if(NOT n EQUAL 4)  # seg_000002 (its /segmentation) and the two scans (--labels)
  message(FATAL_ERROR "metrics.csv: expected 3 rows:\n${metrics}")
endif()

# A labels directory missing a scan's file, on 1 and 2 ranks: one line naming it, every rank
# stops, and no output of that scan.
file(REMOVE ${WORK}/labels/b.nii.gz)
foreach(ranks 1 2)
  execute_process(COMMAND ${MPIEXEC} -n ${ranks} --oversubscribe ${HYBRID3D} predict
                  --checkpoint ${ckpt} --in ${WORK}/scans --labels ${WORK}/labels
                  --out ${WORK}/missing${ranks}
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err TIMEOUT 120)
  if(rc EQUAL 0)
    message(FATAL_ERROR "a missing label file went unnoticed on ${ranks} rank(s):\n${out}${err}")
  endif()
  h3d_expect("${err}" "${WORK}/labels/b.nii.gz: no label file for ${WORK}/scans/b.nii.gz")
  if(EXISTS ${WORK}/missing${ranks}/b.nii.gz)
    message(FATAL_ERROR "an output was written for a scan without its labels")
  endif()
endforeach()
