#pragma once
/// \file
/// The manifest of a generated dataset: which generator, box size, seed, splits, and for every
/// sample its file, sample number (which keys its random streams) and physical parameters (and
/// /unitPar targets for cosmology), so a dataset can be audited or regenerated sample by sample.
///
/// Format: DIR/manifest.txt, plain text, one record per line, words separated by spaces,
/// '#' starts a comment line:
///   generator cosmology
///   size 128
///   seed 42
///   source data512                        (downsample, split: the dataset it was made from, as
///                                         given to --in; the rest of the line)
///   split train 64                        (one line per split, in generation order)
///   setting mean_count 8                  (generator settings, name value)
///   parameter amplitude 0.6 1.2           (name lo hi, in the order of the sample values)
///   targets unitPar                       (present when samples list unitPar after parameters)
///   statistics log1p|plain N C M1..MC S1..SC  (hybrid3d stats: per-channel mean and standard
///                                         deviation of the N train samples, after log1p or not)
///   sample train train/cosmo_000000.h5 0 P1..Pn [U1..Un]
/// Numbers are written with enough digits to read back exactly.

#include <cstdint>
#include <istream>
#include <string>
#include <utility>
#include <vector>

#include <hybrid3d/core/Types.hpp>

namespace hybrid3d::generate {

struct ManifestParameter {
  std::string name;
  double lo = 0;
  double hi = 0;
};

struct ManifestSample {
  std::string split;               // train, validation or test
  std::string file;                // relative to the dataset directory
  std::uint64_t index = 0;         // sample number within the dataset
  std::vector<double> parameters;  // one per Manifest::parameters
  std::vector<float> unitPar;      // training targets; empty when the generator has none
};

/// The channel statistics `hybrid3d stats` recorded for the train split.
struct ManifestStatistics {
  bool log1p = false;
  Index samples = 0;
  std::vector<double> mean, std;
};

struct Manifest {
  std::string generator;
  Index size = 0;
  std::uint64_t seed = 0;
  std::string source;  // the dataset this one was made from; empty for a generated one
  std::vector<std::pair<std::string, Index>> splits;
  std::vector<std::pair<std::string, double>> settings;
  std::vector<ManifestParameter> parameters;
  bool hasTargets = false;
  std::vector<ManifestStatistics> statistics;  // at most one per log1p flag
  std::vector<ManifestSample> samples;
};

/// The manifest as its file holds it.
std::string manifestText(const Manifest& m);

/// Writes `path` atomically (temporary file, then rename). Throws naming the path on failure.
void writeManifest(const Manifest& m, const std::string& path);

/// Reads a manifest's text from `in`, `path` naming it in errors (as readManifest).
Manifest parseManifest(std::istream& in, const std::string& path);

/// Reads a manifest; throws naming the path and line when it is malformed, when a sample's file
/// leaves the dataset's directory (absolute, or through "..": a transform would read and write
/// there) or when a file is listed twice (a dataset of more samples than files).
Manifest readManifest(const std::string& path);

/// Whether the relative path `relative` names something inside the directory it is relative
/// to: not absolute, not empty, not reaching out through "..".
bool staysInside(const std::string& relative);

}  // namespace hybrid3d::generate
