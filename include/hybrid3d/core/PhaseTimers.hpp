#pragma once
// Wall-clock seconds spent in the communication phases of a step, accumulated by the halo
// engine and the gradient reducer, read and reset by the trainer for its time split
// (compute / halo / allreduce / I/O wait). Main thread only.

#include <mpi.h>

namespace hybrid3d {

struct PhaseTimers {
  double halo = 0;       // halo gathers and scatter-adds (packing, exchange, unpacking)
  double allreduce = 0;  // waiting for gradient reductions to finish

  static PhaseTimers& global() {
    static PhaseTimers t;
    return t;
  }
  void reset() { halo = allreduce = 0; }
};

// Adds the lifetime of the object to an accumulator.
class ScopedPhase {
public:
  explicit ScopedPhase(double& accumulator) : acc_(accumulator), start_(MPI_Wtime()) {}
  ~ScopedPhase() { acc_ += MPI_Wtime() - start_; }
  ScopedPhase(const ScopedPhase&) = delete;
  ScopedPhase& operator=(const ScopedPhase&) = delete;

private:
  double& acc_;
  double start_;
};

}  // namespace hybrid3d
