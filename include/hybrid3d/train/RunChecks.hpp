#pragma once
/// \file
/// What a training run checks and lists before it builds anything, shared by the Trainer and
/// the dry run (RunPlan.hpp), so that `hybrid3d check` refuses a deck with the very line a real
/// run would print.

#include <mpi.h>

#include <hybrid3d/data/Dataset.hpp>
#include <hybrid3d/data/SampleReader.hpp>
#include <hybrid3d/train/TrainConfig.hpp>

namespace hybrid3d {

/// The configuration's values a run refuses on `groups` data-parallel groups before any layer is
/// built: the mini-batch split, epochs, schedule, architecture and input width (modelTraits),
/// log1p applied twice, the optimizer's name, the validation mini-batch. Throws one line naming
/// the value.
void checkTrainConfig(const TrainConfig& config, int groups);

/// The training (`training`) or validation set as a run lists it: the command line's files or
/// the configured directory or list file, listed on one rank of `world` and broadcast.
data::Dataset listDataset(MPI_Comm world, const TrainConfig& config, bool training);

/// What every sample file must hold for this architecture at this input width: its input
/// channels and the fields its task reads.
data::SampleSpec sampleSpec(const ModelTraits& traits, const Index3& extents);
/// The same, as the deck's data keys adjust it: the files' layout ('Data/layout') and where the
/// targets are ('Data/targets dataset'; refused naming the key for a model that reads none).
data::SampleSpec sampleSpec(const ModelTraits& traits, const Index3& extents,
                            const DataConfig& data);

}  // namespace hybrid3d
