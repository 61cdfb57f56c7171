# `hybrid3d predict` against PyTorch's eval-mode forward with the checkpoint's weights
# (unit_tests/reference/predict/make_predict_reference.py, float64, run here as the fixture
# with Debian's python3-torch): CosmoFlow's targets to 1e-9 relative; the U-Net's probabilities
# to 1e-6 (float32 storage) and its labels equal to PyTorch's argmax except at near-ties, for a
# 16^3 HDF5 volume and a 12x10x8 NIfTI scan whose sides are not multiples of 8 (PyTorch is given
# the scan normalised as `import nifti` does and zero-padded at the far end to 16x16x8, as
# hybrid3d pads it; its output is cropped back). Two ranks, so the volumes are decomposed.
include(${CMAKE_CURRENT_LIST_DIR}/Common.cmake)
file(REMOVE_RECURSE ${WORK})
set(check ${PYTHON} ${CMAKE_CURRENT_LIST_DIR}/predict_check.py)
set(reference ${PYTHON} ${REFERENCE})

# A deck of ARCH on DIR in double precision, trained for one step into RUN.
function(h3d_one_step arch dir log1p run)
  file(WRITE ${WORK}/${run}.xml "<ParameterList name=\"hybrid3d\">
  <ParameterList name=\"Model\">
    <Parameter name=\"architecture\" type=\"string\" value=\"${arch}\"/>
    <Parameter name=\"input width\" type=\"int\" value=\"16\"/>
    <Parameter name=\"precision\" type=\"string\" value=\"double\"/>
  </ParameterList>
  <ParameterList name=\"Data\">
    <Parameter name=\"train\" type=\"string\" value=\"${dir}\"/>
    <Parameter name=\"log1p\" type=\"bool\" value=\"${log1p}\"/>
  </ParameterList>
  <ParameterList name=\"Training\">
    <Parameter name=\"mini-batch\" type=\"int\" value=\"2\"/>
    <Parameter name=\"max steps\" type=\"int\" value=\"1\"/>
    <Parameter name=\"output directory\" type=\"string\" value=\"${WORK}/${run}\"/>
  </ParameterList>
</ParameterList>
")
  h3d_run(TRUE out ${MPIEXEC} -n 1 ${HYBRID3D} train ${WORK}/${run}.xml)
endfunction()

# CosmoFlow.
h3d_run(TRUE out ${MPIEXEC} -n 1 ${HYBRID3D} generate cosmology --out ${WORK}/cosmo --size 16
        --train 2 --validation 0 --test 0 --seed 4)
h3d_one_step(cosmoflow ${WORK}/cosmo/train true cosmo_run)
set(sample ${WORK}/cosmo/train/cosmo_000001.h5)
h3d_run(TRUE out ${MPIEXEC} -n 2 --oversubscribe ${HYBRID3D} predict
        --checkpoint ${WORK}/cosmo_run/checkpoint.h5 --in ${sample} --out ${WORK}/cosmo_out)
h3d_run(TRUE out ${check} input ${sample} ${WORK}/cosmo_input.h5 1)
h3d_run(TRUE out ${reference} ${WORK}/cosmo_run/checkpoint.h5 ${WORK}/cosmo_input.h5
        ${WORK}/cosmo_torch.h5)
h3d_run(TRUE out ${check} torch-regression ${WORK}/cosmo_torch.h5
        ${WORK}/cosmo_out/predictions.csv cosmo_000001 1e-9)
message(STATUS "${out}")

# The U-Net: a 16^3 sample and a 12x10x8 scan.
h3d_run(TRUE out ${MPIEXEC} -n 1 ${HYBRID3D} generate segmentation --out ${WORK}/seg --size 16
        --train 2 --validation 0 --test 0 --seed 4)
h3d_one_step(unet3d ${WORK}/seg/train false seg_run)
file(MAKE_DIRECTORY ${WORK}/scans)
h3d_run(TRUE out ${MAKE_NIFTI_FILE} ${WORK}/scans/scan.nii.gz --type int16)
set(sample ${WORK}/seg/train/seg_000000.h5)
h3d_run(TRUE out ${MPIEXEC} -n 2 --oversubscribe ${HYBRID3D} predict --probabilities
        --checkpoint ${WORK}/seg_run/checkpoint.h5 --in ${sample} ${WORK}/scans/scan.nii.gz
        --out ${WORK}/seg_out)
foreach(case "${sample};seg_000000.h5;16x16x16;16x16x16" "${WORK}/scans/scan.nii.gz;scan.nii.gz;8x10x12;8x16x16")
  list(GET case 0 in)
  list(GET case 1 ours)
  list(GET case 2 dhw)
  list(GET case 3 padded)
  h3d_run(TRUE out ${check} input ${in} ${WORK}/seg_input.h5 0 ${padded})
  h3d_run(TRUE out ${reference} ${WORK}/seg_run/checkpoint.h5 ${WORK}/seg_input.h5
          ${WORK}/seg_torch.h5)
  h3d_run(TRUE out ${check} torch-segmentation ${WORK}/seg_torch.h5 ${WORK}/seg_out/${ours} ${dhw}
          1e-6)
  message(STATUS "${out}")
endforeach()
