#pragma once
/// \file
/// What a performance model needs to know of a machine, per rank (one GPU, or one core of a
/// CPU-only machine): arithmetic and memory rates, the network between ranks as latency and
/// bandwidth (alpha-beta), the file system's read bandwidth, and optionally layer timings
/// measured on the machine itself (`hybrid3d calibrate`), which replace the peak-rate estimate
/// of every layer they match. Read from a small deck (deck/MachineDeck.hpp; the files in
/// inputs/machines/ say where each number comes from).

#include <string>
#include <vector>

#include <hybrid3d/core/Precision.hpp>

namespace hybrid3d {

struct RankRates {
  double floatGflops = 0;            // peak arithmetic per rank, single precision
  double doubleGflops = 0;           // and double
  double convolutionEfficiency = 0;  // share of peak convolutions reach (uncalibrated layers)
  double memoryGBs = 0;              // memory bandwidth per rank
  double memoryEfficiency = 0;       // share of it memory-bound layers reach
  double layerOverheadUs = 0;        // fixed cost of one layer pass (kernel launches)
  double memoryGiB = 0;              // memory per rank
  /// What convolutions with 16-bit operands can do per rank (tensor cores, AVX512-BF16); 0: the
  /// machine file has no such key, the float rate holds (peakGflops).
  double bfloat16Gflops = 0;
  double halfGflops = 0;
  /// What a process holds besides what the plan counts (plan/RankMemory.hpp): the program, MPI,
  /// Kokkos, oneDNN, HDF5, the allocator's overhead; measured by `hybrid3d calibrate`. 0: the
  /// machine file does not say (the plan then says the fixed cost is unknown).
  double fixedMemoryMiB = 0;
};

/// The peak a rank's convolutions compute at in precision `p`, GFLOP/s: the 16-bit rates where
/// the machine gives them, else the float rate (a machine without 16-bit arithmetic converts to
/// float and computes in float).
inline double peakGflops(const RankRates& r, Precision p) {
  switch (p) {
    case Precision::Double:
      return r.doubleGflops;
    case Precision::BFloat16:
      return r.bfloat16Gflops > 0 ? r.bfloat16Gflops : r.floatGflops;
    case Precision::Half:
      return r.halfGflops > 0 ? r.halfGflops : r.floatGflops;
    case Precision::Float:
      break;
  }
  return r.floatGflops;
}

enum class AllreduceAlgorithm { Ring, RecursiveHalving };

struct Network {
  int ranksPerNode = 1;
  double intraLatencyUs = 0, intraGBs = 0;  // between two ranks of a node, one direction
  double interLatencyUs = 0, interGBs = 0;  // between nodes: per node, one direction, all rails
  AllreduceAlgorithm allreduce = AllreduceAlgorithm::Ring;
  /// Gradient reductions progress beside the backward pass (NCCL, a NIC that moves the data);
  /// false where the rank's own core moves and sums them inside its MPI calls (host MPI
  /// without a progress thread): then they add to the step.
  bool reductionsOverlap = true;
};

struct FileSystem {
  double readGBsPerRank = 0;    // what one rank's reads reach
  double aggregateReadGBs = 0;  // what all ranks' reads together reach
};

/// One layer shape's measured time for one training step (forward and backward) at a few
/// sizes: `voxels` = mini-batch per group x owned output voxels of the rank (LayerCost::work).
/// Between two sizes the time per voxel is interpolated in log(voxels); outside, the nearest.
struct LayerTiming {
  std::string layer;  // layerKey(): kind, channels, window, engine, precision
  std::vector<double> voxels, seconds;
};

struct Machine {
  std::string name, about;
  RankRates rank;
  Network network;
  FileSystem fileSystem;
  std::vector<LayerTiming> timings;

  /// The timing of `key`, or nullptr.
  const LayerTiming* timing(const std::string& key) const {
    for (const LayerTiming& t : timings)
      if (t.layer == key) return &t;
    return nullptr;
  }
};

}  // namespace hybrid3d
