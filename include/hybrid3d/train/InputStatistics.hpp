#pragma once
/// \file
/// The preprocessing a run applies to its inputs: the deck's channel offsets and scales, or for
/// `auto` the training set's per-channel mean and 1 / standard deviation (after log1p where the
/// deck asks), computed once before step 1 over every rank and cached beside the training data
/// (data/ChannelStatisticsCache.hpp). World rank 0 says in the log which values it uses and where
/// they came from.

#include <mpi.h>

#include <hybrid3d/data/Dataset.hpp>
#include <hybrid3d/data/Preprocess.hpp>
#include <hybrid3d/data/SampleReader.hpp>
#include <hybrid3d/train/TrainConfig.hpp>

namespace hybrid3d {

/// Collective over `world` when an entry is auto (else local). `train` is the training set as
/// listed for the run, `spec` what the model reads of each file.
data::PreprocessOptions preprocessOptions(MPI_Comm world, const DataConfig& config,
                                          const data::Dataset& train, const data::SampleSpec& spec);

}  // namespace hybrid3d
