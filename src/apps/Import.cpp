// `hybrid3d import nifti --images DIR --labels DIR --out DIR [--size S] [--classes N]`: medical
// volumes (NIfTI-1/2, as the Medical Segmentation Decathlon ships them) converted into the
// project's segmentation samples, files shared out over all ranks.
#include <cstdio>

#include <mpi.h>

#include <hybrid3d/generate/NiftiImport.hpp>

#include "Command.hpp"

namespace {

int runImport(const std::vector<std::string>& args) {
  using namespace hybrid3d::generate;
  const NiftiImportOptions options = parseNiftiImportOptions(args);
  int rank = 0, ranks = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &ranks);
  const double start = MPI_Wtime();
  const Manifest m = importNifti(MPI_COMM_WORLD, options, [](const NiftiSampleInfo& s) {
    std::printf("  %s\n", s.line.c_str());
  });
  const double total = MPI_Wtime() - start;
  if (rank == 0)
    std::printf(
        "import nifti: %zu image/label pairs of %s and %s -> %s (%lld^3 voxels, labels 0 to %d) "
        "on %d rank(s) in %.3f s; train on it with Data/train = %s\n",
        m.samples.size(), options.imagesDir.c_str(), options.labelsDir.c_str(),
        options.outDir.c_str(), static_cast<long long>(m.size), options.classes - 1, ranks, total,
        options.outDir.c_str());
  return 0;
}

const hybrid3d::app::Registration registration{
    "import",
    {hybrid3d::generate::niftiImportUsage(),
     "converts NIfTI-1/2 image/label pairs (.nii, .nii.gz; Medical Segmentation Decathlon "
     "layout) into a segmentation dataset",
     "  nifti                the format (the only one)\n"
     "  --images DIR         the images (MSD: imagesTr/); 4D ones give one channel per volume\n"
     "  --labels DIR         a label file of the same name per image (MSD: labelsTr/)\n"
     "  --out DIR            the dataset (created, must be empty): NAME.h5 per pair, manifest.txt\n"
     "  --size S             cubes of S^3, cropped or zero-padded, centred (default 128, as\n"
     "                       inputs/unet3d_128.xml; a multiple of 8)\n"
     "  --classes N          labels must be whole numbers 0 to N-1 (default 3, unet3d's)\n"
     "Each image channel is normalised over its whole volume to zero mean and unit standard\n"
     "deviation; [D,H,W] = NIfTI's (k,j,i), no reorientation; the voxel spacing is kept as the\n"
     "attribute spacing.\n",
     "mpirun -n 2 hybrid3d import nifti --images Task04_Hippocampus/imagesTr --labels "
     "Task04_Hippocampus/labelsTr --out hippocampus --size 64"},
    runImport};

}  // namespace
