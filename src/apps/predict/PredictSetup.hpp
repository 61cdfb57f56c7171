#pragma once
// What `hybrid3d predict` takes from the checkpoint alone (docs/predict.md): the model (its
// architecture, width and options from the stored deck), the precision, the sample fields and
// the preprocessing training applied, `auto` channel statistics included; and the output
// directory, refused when it holds anything unless --overwrite.
#include <string>

#include <mpi.h>

#include <hybrid3d/core/Precision.hpp>
#include <hybrid3d/data/Preprocess.hpp>
#include <hybrid3d/data/SampleReader.hpp>
#include <hybrid3d/model/ModelOptions.hpp>

#include "PredictOptions.hpp"

namespace hybrid3d::app {

struct PredictSetup {
  ModelOptions model;  // the deck's, layer grids cleared (the command's grid runs every layer)
  Precision precision = Precision::Float;
  bool segmentation = false;
  int outputs = 0;        // regression targets or segmentation classes
  data::SampleSpec spec;  // the fields of a sample; extents unset (each volume has its own)
  data::PreprocessOptions preprocessing;
};

/// Collective over `world`: reads the checkpoint's run state and deck (throws on every rank
/// naming the checkpoint when it is damaged or holds no deck) and the channel statistics an
/// `auto` deck computed from its training set (cached beside it).
PredictSetup readPredictSetup(MPI_Comm world, const PredictOptions& options);

/// Collective: creates `dir`, or refuses one that holds files unless `overwrite`; refuses
/// --labels and inputs that are inside it.
void prepareOutputDirectory(MPI_Comm world, const PredictOptions& options);

}  // namespace hybrid3d::app
