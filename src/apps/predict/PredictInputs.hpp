#pragma once
// What `hybrid3d predict --in PATH...` names, as a list of volumes: sample files (HDF5 in either
// layout, MLPerf .data.npy), NIfTI-1/2 files, and directories of either (a directory holding
// .nii/.nii.gz files is a NIfTI directory; any other is a dataset as `train` reads it).
#include <string>
#include <vector>

#include <mpi.h>

namespace hybrid3d::app {

struct VolumeFile {
  std::string path;
  std::string name;  // the base name outputs are named by: NAME.h5, NAME.nii.gz, NAME.data.npy
  bool nifti = false;
};

/// Whether `path` names a NIfTI file (.nii or .nii.gz).
bool isNiftiPath(const std::string& path);

/// Collective over `comm`: listed on rank 0, the same list on every rank; throws on every rank
/// naming a path that is missing or yields no volume, or two volumes of the same name.
std::vector<VolumeFile> listPredictInputs(MPI_Comm comm, const std::vector<std::string>& inputs);

}  // namespace hybrid3d::app
