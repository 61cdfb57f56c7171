#pragma once
/// \file
/// One sample file read whole by this rank alone, for the commands that write a dataset again
/// (downsample, split): through SampleReader, so they take every form `train` reads (HDF5
/// [C,D,H,W] or [D,H,W,C], float32 or int16, *.h5 or the published *.hdf5; MLPerf HPC's numpy
/// pairs NAME.data.npy and NAME.label.npy), and write the project's own (HDF5 NAME.h5).

#include <cstdint>
#include <string>
#include <vector>

#include <hybrid3d/core/Types.hpp>
#include <hybrid3d/data/SampleReader.hpp>
#include <hybrid3d/generate/SampleWriter.hpp>

namespace hybrid3d::generate {

struct WholeSample {
  std::string path;
  int channels = 0;
  Index width = 0;                  // the input is a cube of this width
  data::SampleFormat format;        // stored type and channel order
  std::vector<std::int16_t> int16;  // the input as stored, when format.type is Int16
  std::vector<float> float32;       // ... when it is Float32
  std::vector<float> numpyTargets;  // a numpy sample's targets (NAME.label.npy)
};

/// Reads `path` whole: its input must be a cube of `width` voxels (any channel count), in either
/// channel order. Throws naming the file (and the width it should have).
WholeSample readWholeSample(const std::string& path, Index width);

/// The input as float32 [C, N, N, N] (values converted, channels moved first).
std::vector<float> floatChannelsFirst(const WholeSample& sample);

/// The source's targets (/unitPar of an HDF5 file, NAME.label.npy of a numpy sample) and, of an
/// HDF5 file, its root attributes but for those in `rewritten`, written into `file`.
void copyTargetsAndAttributes(const WholeSample& source, SampleWriter& file,
                              const std::vector<std::string>& rewritten);

/// Where sample `file` (relative to its dataset, of split `split`) goes in a dataset written by
/// downsample or split: the same relative name as HDF5 (NAME.hdf5 and NAME.data.npy become
/// NAME.h5), under the split's folder when the source held it at its top level.
std::string ownSampleName(const std::string& file, const std::string& split);

}  // namespace hybrid3d::generate
