#pragma once
/// \file
/// What a run reports: per-step progress, per-epoch summaries with their validation
/// (EvalSummary, filled by the model's task), and the metrics CSV (one row per step, header
/// first), written by world rank 0.

#include <cstdio>
#include <string>
#include <vector>

#include <mpi.h>

#include <hybrid3d/model/EvalSummary.hpp>

namespace hybrid3d {

struct EpochSummary {
  int epoch = 0;
  long long steps = 0;
  double trainLoss = 0;  // mean over the epoch's steps
  double seconds = 0, samplesPerSecond = 0;
  EvalSummary validation;
  int stoppedBySignal = 0;  // non-zero: preempted by this signal, checkpoint written
};

/// One training step as the metrics CSV records it: seconds by phase on world rank 0 (compute is
/// what the others leave of the step), and the bytes rank 0 handed to the halo exchanges, the
/// gradient reduction and the redistributions between layer grids (core/PhaseTimers.hpp; the
/// performance model predicts them exactly).
struct StepRecord {
  long long step = 0;
  int epoch = 0;
  double loss = 0, learningRate = 0, samplesPerSecond = 0;
  double compute = 0, halo = 0, allreduce = 0, io = 0;
  unsigned long long haloBytes = 0, allreduceBytes = 0;
  /// A model with layer grids only (the columns stay empty otherwise, as target_mse in a
  /// training row).
  bool staged = false;
  double redistribute = 0;
  unsigned long long redistributeBytes = 0;
};

/// The metrics CSV: opened (appending to a non-empty file when restarting, else new with its
/// header, replacing an old file only when the first row is written) by rank 0 only.
class MetricsCsv {
public:
  MetricsCsv(const std::string& path, bool append, MPI_Comm comm);
  ~MetricsCsv();
  void row(const StepRecord& r);
  void validation(long long step, int epoch, const EvalSummary& v);

private:
  void startNewFile();  // a new run's first row: truncate, header

  std::string path_;
  std::FILE* file_ = nullptr;
  bool truncatePending_ = false;
};

}  // namespace hybrid3d
