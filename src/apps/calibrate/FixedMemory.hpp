#pragma once
// The fixed memory of a process for a machine file (plan/Machine.hpp's fixedMemoryMiB): what a
// rank holds besides what the plan counts (plan/RankMemory.hpp) -- the program's code, MPI with
// the world's ranks on this node, Kokkos, the convolution engines' code and caches, HDF5, the
// allocator's overhead. Measured as the peak resident memory of a process that has done all of
// that (every rank at once, as a run's ranks share the node), minus what the plan says of the
// model it trained.

#include <mpi.h>

#include <hybrid3d/deck/TrainDeck.hpp>

namespace hybrid3d::app::calibrate {

struct FixedMemory {
  double largest = 0, smallest = 0;  // bytes per process, over the ranks
  double planned = 0;                // bytes the plan counts of the model measured
};

// The deck's model (its options and precision) alone on each rank at input width `size`, local
// batch 1, two training steps, HDF5 initialised: its peak resident memory less its plan.
// Collective over `world`; run it before anything larger is allocated (the peak is the
// process's).
FixedMemory measureFixedMemory(MPI_Comm world, const deck::DeckRun& deck, int size);

}  // namespace hybrid3d::app::calibrate
