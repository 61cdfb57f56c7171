#pragma once
/// \file
/// `hybrid3d split`: every sample of a cosmology dataset cut into (N/S)^3 sub-volumes of width S,
/// each a sample of its own with the source's targets (MLPerf HPC's preprocessing of CosmoFlow's
/// 512^3 universes into 128^3 inputs; `downsample` is the paper's other route to 128^3).
///
/// The source is any dataset DatasetTransform.hpp takes (one written by hybrid3d, the published
/// CosmoFlow *.hdf5, MLPerf HPC's numpy pairs). Sub-volume (i, j, k) (its offset (i S, j S, k S)
/// in (D, H, W)) is piece p = (i n + j) n + k, n = N/S, of source NAME.h5 (or NAME.hdf5,
/// NAME.data.npy), written as NAME_sPPP.h5 (p zero-padded to at least three digits, more when
/// n^3 > 1000) beside where NAME.h5 would be in the new directory. /full keeps the source's type
/// (float32 or int16) and channel order ([C,S,S,S], or [S,S,S,C] with the root attribute layout =
/// "DHWC", which the published files lack); the targets (/unitPar, or NAME.label.npy's) and the
/// root attributes are copied, and the attributes
/// source_file (the source's name relative to its dataset), source_size N, split_size S,
/// split_piece p and split_offset_d, split_offset_h, split_offset_w added. The manifest lists
/// every sub-volume under its source's split with the source's parameters and targets (sample
/// number: source number x n^3 + p) and the settings split_size and source_size. Files are shared
/// out over the ranks, one rank per source file.

#include <string>
#include <vector>

#include <mpi.h>

#include <hybrid3d/core/Types.hpp>
#include <hybrid3d/generate/Manifest.hpp>

namespace hybrid3d::generate {

struct SplitOptions {
  std::string inDir, outDir;
  Index size = 0;  // S, the sub-volumes' width
};

std::string splitUsage();

/// Parses --in DIR --out DIR --size S; one-line errors naming the flag.
SplitOptions parseSplitOptions(const std::vector<std::string>& args);

/// The name of piece `piece` of `pieces` cut from sample file `file` (a relative path):
/// train/cosmo_000003.h5, 5 of 64 -> train/cosmo_000003_s005.h5.
std::string subvolumeName(const std::string& file, Index piece, Index pieces);

/// The S^3 box at `offset` of a row-major volume of width N with C channels, channels first
/// ([C,N,N,N] -> [C,S,S,S]) or last ([N,N,N,C] -> [S,S,S,C]).
template <class T>
std::vector<T> cutSubvolume(const std::vector<T>& volume, Index channels, Index width,
                            bool channelsLast, Index size, const Index3& offset);

/// Writes the split dataset collectively over `comm` and returns its manifest on every rank.
/// Throws on every rank alike, naming the file or flag: no dataset in inDir, a size that does
/// not divide the dataset's width, a file whose /full is not a cube of the dataset's width or
/// of another type than float32 and int16, outDir equal to inDir or not writable.
Manifest splitDataset(MPI_Comm comm, const SplitOptions& options);

}  // namespace hybrid3d::generate
