#pragma once
/// \file
/// Wall-clock seconds spent in the communication phases of a step, accumulated by the halo
/// engine, the redistributions between layer grids and the gradient reducer, read and reset by the
/// trainer for its time split (compute / halo / allreduce / I/O wait), and the bytes this rank
/// handed to them: what the performance model (plan/StepCost.hpp) predicts exactly. Main thread
/// only.

#include <cstdint>

#include <mpi.h>

#include <hybrid3d/core/CollectiveWait.hpp>

namespace hybrid3d {

struct PhaseTimers {
  double halo = 0;                   // halo gathers and scatter-adds (packing, exchange, unpacking)
  double allreduce = 0;              // waiting for gradient reductions to finish
  double redistribute = 0;           // moving activations between layer grids, both ways
  std::uint64_t haloBytes = 0;       // sent by halo exchanges (gathers and scatter-adds)
  std::uint64_t allreduceBytes = 0;  // gradient bytes handed to the reductions
  std::uint64_t redistributeBytes = 0;  // sent to other ranks by redistributions

  static PhaseTimers& global() {
    static PhaseTimers t;
    return t;
  }
  void reset() { *this = PhaseTimers{}; }
};

/// Adds the lifetime of the object to an accumulator, and marks it as a wait of the main thread
/// for the collective watchdog (CollectiveWait.hpp), named by the phase.
class ScopedPhase {
public:
  explicit ScopedPhase(double& accumulator)
      : acc_(accumulator), start_(MPI_Wtime()), wait_(nameOf(accumulator)) {}
  ~ScopedPhase() { acc_ += MPI_Wtime() - start_; }
  ScopedPhase(const ScopedPhase&) = delete;
  ScopedPhase& operator=(const ScopedPhase&) = delete;

private:
  static const char* nameOf(const double& accumulator) {
    const PhaseTimers& t = PhaseTimers::global();
    return &accumulator == &t.halo           ? "a halo exchange"
           : &accumulator == &t.redistribute ? "a redistribution between layer grids"
                                             : "a gradient reduction";
  }

  double& acc_;
  double start_;
  ScopedWait wait_;
};

}  // namespace hybrid3d
