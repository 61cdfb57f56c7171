# The inference reference (unit_tests/reference/predict/make_predict_reference.py) computes what
# hybrid3d computes, from a checkpoint `hybrid3d train` wrote: CosmoFlow's /output of
# `hybrid3d gradients` in eval mode (no batch norm, dropout off), the U-Net's in train mode
# (batch statistics), and the U-Net's validation loss, which hybrid3d computes in eval mode with
# the running statistics of the checkpoint. Small models on 1 rank (16^3 CosmoFlow, 8^3 U-Net,
# one step of plain SGD so the checkpoints stay small); the decks preprocess nothing.
include(${CLI_DIR}/Common.cmake)
file(REMOVE_RECURSE "${WORK}")
file(MAKE_DIRECTORY "${WORK}")

# A deck for ARCH at WIDTH on generated data (GENERATOR), with extra Model parameters.
function(reference_deck name arch width generator validation extra_model)
  file(WRITE "${WORK}/${name}.xml" "<ParameterList name=\"hybrid3d\">
  <ParameterList name=\"Model\">
    <Parameter name=\"architecture\" type=\"string\" value=\"${arch}\"/>
    <Parameter name=\"input width\" type=\"int\" value=\"${width}\"/>
    ${extra_model}
  </ParameterList>
  <ParameterList name=\"Data\">
    <ParameterList name=\"Generate\">
      <Parameter name=\"generator\" type=\"string\" value=\"${generator}\"/>
      <Parameter name=\"directory\" type=\"string\" value=\"${WORK}/${name}_data\"/>
      <Parameter name=\"train samples\" type=\"int\" value=\"2\"/>
      <Parameter name=\"validation samples\" type=\"int\" value=\"${validation}\"/>
    </ParameterList>
  </ParameterList>
  <ParameterList name=\"Training\">
    <Parameter name=\"mini-batch\" type=\"int\" value=\"2\"/>
    <Parameter name=\"momentum\" type=\"double\" value=\"0\"/>
    <Parameter name=\"learning rate\" type=\"double\" value=\"0.01\"/>
    <Parameter name=\"output directory\" type=\"string\" value=\"${WORK}/${name}_run\"/>
  </ParameterList>
</ParameterList>
")
endfunction()

set(double "<Parameter name=\"precision\" type=\"string\" value=\"double\"/>")
set(no_dropout "<Parameter name=\"dropout keep probability\" type=\"double\" value=\"1\"/>")
set(check ${PYTHON} ${CMAKE_CURRENT_LIST_DIR}/check_reference.py ${SOURCE_DIR})

foreach(model cosmoflow unet3d)
  if(model STREQUAL cosmoflow)
    reference_deck(${model} cosmoflow 16 cosmology 0 "${no_dropout}")
    set(mode eval)
    set(samples ${WORK}/${model}_data/train/cosmo_000000.h5 ${WORK}/${model}_data/train/cosmo_000001.h5)
  else()
    reference_deck(${model} unet3d 8 segmentation 1 "")
    set(mode train)
    set(samples ${WORK}/${model}_data/train/seg_000000.h5 ${WORK}/${model}_data/train/seg_000001.h5)
  endif()
  h3d_run(TRUE out ${MPIEXEC} -n 1 ${HYBRID3D} train ${WORK}/${model}.xml)
  # gradients in double from the float checkpoint: the same deck, Model/precision double.
  file(READ ${WORK}/${model}.xml deck)
  string(REPLACE "<ParameterList name=\"Model\">" "<ParameterList name=\"Model\">${double}" deck "${deck}")
  file(WRITE ${WORK}/${model}_double.xml "${deck}")
  h3d_run(TRUE out ${MPIEXEC} -n 1 ${HYBRID3D} gradients ${WORK}/${model}_double.xml
          --weights ${WORK}/${model}_run/checkpoint.h5 --out ${WORK}/${model}_gradients.h5 ${samples})
  file(MAKE_DIRECTORY ${WORK}/${model}_check)
  h3d_run(TRUE out ${check} ${WORK}/${model}_run/checkpoint.h5 ${WORK}/${model}_check gradients
          ${WORK}/${model}_gradients.h5 ${mode} ${samples})
  message(STATUS "${model}: ${out}")
endforeach()

file(MAKE_DIRECTORY ${WORK}/validation_check)
h3d_run(TRUE out ${check} ${WORK}/unet3d_run/checkpoint.h5 ${WORK}/validation_check validation
        ${WORK}/unet3d_run/metrics.csv ${WORK}/unet3d_data/validation/seg_000002.h5)
message(STATUS "unet3d validation: ${out}")
