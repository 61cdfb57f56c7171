// `hybrid3d generate cosmology|segmentation --out DIR --size S ...`: writes a synthetic dataset
// (train/validation/test sample files and a manifest) in parallel over all ranks.
#include <cstdio>

#include <mpi.h>

#include <hybrid3d/generate/GenerateDataset.hpp>

#include "Command.hpp"

namespace {

int runGenerate(const std::vector<std::string>& args) {
  using namespace hybrid3d::generate;
  const GenerateOptions options = parseGenerateOptions(args);
  int rank = 0, ranks = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &ranks);
  if (rank == 0)
    std::printf(
        "generate %s: %lld^3 voxels, %lld train + %lld validation + %lld test samples, "
        "seed %llu, %d ranks -> %s\n",
        options.generator.c_str(), static_cast<long long>(options.size),
        static_cast<long long>(options.train), static_cast<long long>(options.validation),
        static_cast<long long>(options.test), static_cast<unsigned long long>(options.seed), ranks,
        options.outDir.c_str());
  double total = 0;
  const Manifest m =
      generateDataset(MPI_COMM_WORLD, options, [&](const ManifestSample& s, double seconds) {
        total += seconds;
        if (rank == 0) {
          std::printf("  %s  %.3f s\n", s.file.c_str(), seconds);
          std::fflush(stdout);
        }
      });
  if (rank == 0)
    std::printf("wrote %zu samples and %s/manifest.txt in %.3f s (%.3f s per sample)\n",
                m.samples.size(), options.outDir.c_str(), total,
                total / static_cast<double>(m.samples.size()));
  return 0;
}

const hybrid3d::app::Registration registration{
    "generate",
    {hybrid3d::generate::generateUsage(),
     "writes a synthetic dataset (train/, validation/, test/, manifest.txt) over all ranks",
     "  --out DIR            the dataset directory (created)\n"
     "  --size S             volumes of S^3 voxels (S >= 8)\n"
     "  --train N            training samples (also --validation N, --test N)\n"
     "  --seed K             generator seed: the same seed gives the same files on any ranks\n"
     "  --params a,s,c,g     cosmology: amplitude, slope, cutoff, growth of every sample\n"
     "  --mean-count X       cosmology: mean particles per voxel\n"
     "  --replace            replace the dataset in a non-empty --out (refused without it);\n"
     "                       files the new manifest does not list are removed\n",
     "mpirun -n 2 hybrid3d generate cosmology --out data --size 32 --train 64 --validation 8"},
    runGenerate};

}  // namespace
