// `hybrid3d split --in DIR --out DIR --size S`: every cosmology sample cut into (N/S)^3
// sub-volumes with the sample's targets, files shared out over all ranks.
#include <cstdio>

#include <mpi.h>

#include <hybrid3d/generate/Split.hpp>

#include "Command.hpp"

namespace {

int runSplit(const std::vector<std::string>& args) {
  using namespace hybrid3d::generate;
  const SplitOptions options = parseSplitOptions(args);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  const double start = MPI_Wtime();
  const Manifest m = splitDataset(MPI_COMM_WORLD, options);
  const double total = MPI_Wtime() - start;
  if (rank == 0)
    std::printf("split: %s cut into %zu samples of %lld^3 voxels -> %s in %.3f s\n",
                options.inDir.c_str(), m.samples.size(), static_cast<long long>(m.size),
                options.outDir.c_str(), total);
  return 0;
}

const hybrid3d::app::Registration registration{
    "split",
    {hybrid3d::generate::splitUsage(),
     "cuts every sample of a cosmology dataset into (N/S)^3 sub-volumes of width S, each with "
     "the sample's targets (MLPerf HPC's 512^3 -> 128^3 preprocessing)",
     "  --in DIR             a dataset written by hybrid3d (manifest.txt), or a directory of\n"
     "                       samples train reads (published CosmoFlow *.hdf5, NAME.data.npy\n"
     "                       pairs) in train/, validation/, test/ or at its top\n"
     "  --out DIR            the split dataset: NAME_sPPP.h5 per piece, same type and layout\n"
     "  --size S             the sub-volumes' width (S divides the samples' width N)\n",
     "mpirun -n 2 hybrid3d split --in data512 --out data128 --size 128"},
    runSplit};

}  // namespace
