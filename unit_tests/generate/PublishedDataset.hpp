#pragma once
// A dataset written by hybrid3d generate, written again in the forms others publish, without a
// manifest (for downsample and split, which take them): the published CosmoFlow HDF5 files
// (NAME.hdf5: /full int16 [D,H,W,C], no layout attribute, /unitPar) or MLPerf HPC's numpy pairs
// (NAME.data.npy int16 [D,H,W,C] beside NAME.label.npy float32), in the source's split folders
// or, Hdf5Flat, every file at the top of one directory (as a download holds them).
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <mpi.h>

#include <hybrid3d/data/Hdf5.hpp>
#include <hybrid3d/generate/Manifest.hpp>
#include <hybrid3d/generate/SampleWriter.hpp>

#include "NpyBytes.hpp"

namespace hybrid3d::test {

enum class PublishedForm { Hdf5, Hdf5Flat, Numpy };

// [C,D,H,W] values as [D,H,W,C].
template <class T>
std::vector<T> toChannelsLast(const std::vector<T>& x, Index channels) {
  const std::size_t C = std::size_t(channels), voxels = x.size() / C;
  std::vector<T> y(x.size());
  for (std::size_t c = 0; c < C; ++c)
    for (std::size_t v = 0; v < voxels; ++v) y[v * C + c] = x[c * voxels + v];
  return y;
}

template <class T>
std::string bytesOf(const std::vector<T>& v) {
  return std::string(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(T));
}

// Every int16 sample of the cosmology dataset `from` (4 channels), written by rank 0 into `to`
// in `form`; the other ranks wait.
inline void writePublished(const std::string& from, const std::string& to, PublishedForm form) {
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  if (rank == 0) {
    const generate::Manifest m = generate::readManifest(from + "/manifest.txt");
    const Index S = m.size;
    for (const generate::ManifestSample& s : m.samples) {
      const data::File source(from + "/" + s.file);
      const std::vector<std::int16_t> full = toChannelsLast(source.read<std::int16_t>("/full"), 4);
      const std::vector<float> targets = source.read<float>("/unitPar");
      const std::filesystem::path file(s.file);
      const std::filesystem::path at =
          std::filesystem::path(to) / (form == PublishedForm::Hdf5Flat ? file.filename() : file);
      std::filesystem::create_directories(at.parent_path());
      const std::string name = (at.parent_path() / at.stem()).string();
      if (form != PublishedForm::Numpy) {
        generate::SampleWriter file(MPI_COMM_SELF, name + ".hdf5");
        file.writeSlab("full", {S, S, S, 4}, 0, 0, S, full.data());
        file.writeWhole("unitPar", {Index(targets.size())}, targets.data());
        file.commit();
      } else {
        const std::string shape = npyShapeText(std::vector<Index>{S, S, S, 4});
        std::ofstream(name + ".data.npy", std::ios::binary)
            << npyFileBytes({"<i2", 1, false, shape}, bytesOf(full));
        std::ofstream(name + ".label.npy", std::ios::binary) << npyFileBytes(
            {"<f4", 1, false, npyShapeText(std::vector<std::size_t>{targets.size()})},
            bytesOf(targets));
      }
    }
  }
  MPI_Barrier(MPI_COMM_WORLD);
}

}  // namespace hybrid3d::test
