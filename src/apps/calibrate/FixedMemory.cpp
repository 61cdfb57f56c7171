#include "FixedMemory.hpp"

#include <algorithm>

#include <hdf5.h>

#include <hybrid3d/core/Error.hpp>
#include <hybrid3d/plan/RankMemory.hpp>
#include <hybrid3d/train/PeakMemory.hpp>

#include "TrainingSetup.hpp"

namespace hybrid3d::app::calibrate {

namespace {

template <class T>
FixedMemory measureAs(MPI_Comm world, const deck::DeckRun& deck, int size) {
  int rank;
  MPI_Comm_rank(world, &rank);
  const TrainConfig config = configFor(deck, size);
  const RunPlan run = planRun<T, M>(config, {1, 1, 1}, 1, {"calibration", 1}, {});
  const RankMemory plan = rankMemory(run, {0, 0, 0});
  double planned = 0, peak = 0;
  {
    Setup<T> s(config, rank, ioModelFor(config));
    H5open();                      // HDF5 initialised, as a run's readers and checkpoints have it
    for (int i = 0; i < 2; ++i) {  // the second step as every later one: engines set up
      s.load();
      s.step(i, config.schedule.baseRate);
    }
    // What the plan counts of what Setup holds: the model, the parameters' state and the
    // preprocessing's staging; the stored sample stands for the loader's buffers.
    planned =
        double(plan.model.total() + plan.state.optimizer + plan.state.reduction +
               data::Preprocess<T, M>::stagingBytes(
                   s.model.inputChannels, data::Subvolume::of(s.model.graph->input().volume)) +
               s.stored.size());
    peak = peakResidentBytes();
  }
  FixedMemory f;
  f.planned = planned;
  const double mine = peak - planned;
  MPI_Allreduce(&mine, &f.largest, 1, MPI_DOUBLE, MPI_MAX, world);
  MPI_Allreduce(&mine, &f.smallest, 1, MPI_DOUBLE, MPI_MIN, world);
  if (!(f.largest > 0))
    fail("calibrate: the fixed memory of a process came out ", f.largest / double(1 << 20),
         " MiB (peak resident memory below the plan of the model measured)");
  return f;
}

}  // namespace

FixedMemory measureFixedMemory(MPI_Comm world, const deck::DeckRun& deck, int size) {
  switch (deck.precision) {
    case Precision::Double:
      return measureAs<double>(world, deck, size);
    case Precision::Float:
      return measureAs<float>(world, deck, size);
    case Precision::BFloat16:
    case Precision::Half:
      break;  // checkSize refused it
  }
  fail("calibrate: internal error, fixed memory measured in ", toString(deck.precision));
}

}  // namespace hybrid3d::app::calibrate
