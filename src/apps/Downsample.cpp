// `hybrid3d downsample --in DIR --out DIR --factor F`: the same cosmology dataset at 1/F the
// resolution (mean over F^3 blocks), files shared out over all ranks.
#include <cstdio>

#include <mpi.h>

#include <hybrid3d/generate/Downsample.hpp>

#include "Command.hpp"

namespace {

int runDownsample(const std::vector<std::string>& args) {
  using namespace hybrid3d::generate;
  const DownsampleOptions options = parseDownsampleOptions(args);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  const double start = MPI_Wtime();
  const hybrid3d::generate::Manifest m = downsampleDataset(MPI_COMM_WORLD, options);
  const double total = MPI_Wtime() - start;
  if (rank == 0)
    std::printf("downsample: %zu samples of %s by %lld -> %s (%lld^3 voxels) in %.3f s\n",
                m.samples.size(), options.inDir.c_str(), static_cast<long long>(options.factor),
                options.outDir.c_str(), static_cast<long long>(m.size), total);
  return 0;
}

const hybrid3d::app::Registration registration{
    "downsample",
    {hybrid3d::generate::downsampleUsage(),
     "writes a cosmology dataset again at 1/F the resolution, each voxel the mean of an F^3 "
     "block (as the CosmoFlow paper's downsampled inputs)",
     "  --in DIR             a dataset written by hybrid3d (manifest.txt), or a directory of\n"
     "                       samples train reads (published CosmoFlow *.hdf5, NAME.data.npy\n"
     "                       pairs) in train/, validation/, test/ or at its top\n"
     "  --out DIR            the downsampled dataset: same file names, /full float32\n"
     "  --factor F           2 halves the resolution, 4 quarters it (F divides the size)\n",
     "mpirun -n 2 hybrid3d downsample --in data64 --out data16 --factor 4"},
    runDownsample};

}  // namespace
