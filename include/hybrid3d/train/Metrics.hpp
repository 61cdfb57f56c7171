#pragma once
// What a run reports: per-step progress, per-epoch summaries, validation metrics (MSE and MAE
// for regression; loss, per-class Dice and voxel accuracy for segmentation), and the metrics
// CSV (one row per step, header first), written by world rank 0.

#include <cstdio>
#include <string>
#include <vector>

#include <mpi.h>

namespace hybrid3d {

// Sums over a validation pass, weighted by the true number of samples (a partial last
// mini-batch counts what it holds, padding nothing); reduce() makes them global.
struct EvalAccumulator {
  // Samples evaluated (counted once per data-parallel group, like the regression sums).
  double samples = 0;
  // Regression (per target value, counted once per data-parallel group).
  double squaredError = 0, absoluteError = 0, values = 0;
  // Segmentation (per class over every voxel of the evaluated samples), and the summed
  // per-voxel cross-entropy.
  std::vector<double> intersection, predicted, labelled;
  double correct = 0, voxels = 0, crossEntropy = 0;

  void reduce(MPI_Comm dataComm, MPI_Comm worldComm);
};

struct EvalSummary {
  bool present = false;
  long long samples = 0;  // samples evaluated: the whole validation set
  // loss: the training loss's definition over every sample (MSE over samples and targets;
  // cross-entropy over samples and voxels).
  double loss = 0, mse = 0, mae = 0, accuracy = 0;
  std::vector<double> dice;  // per class
  static EvalSummary from(const EvalAccumulator& a);
  std::string describe() const;  // "loss 0.12 mse 0.12 mae 0.28" / "... dice 0.9/0.7/0.2 ..."
};

struct EpochSummary {
  int epoch = 0;
  long long steps = 0;
  double trainLoss = 0;  // mean over the epoch's steps
  double seconds = 0, samplesPerSecond = 0;
  EvalSummary validation;
  int stoppedBySignal = 0;  // non-zero: preempted by this signal, checkpoint written
};

// The metrics CSV: opened (appending to a non-empty file when restarting, else new with its
// header, replacing an old file only when the first row is written) by rank 0 only.
class MetricsCsv {
public:
  MetricsCsv(const std::string& path, bool append, MPI_Comm comm);
  ~MetricsCsv();
  void row(long long step, int epoch, double loss, double rate, double samplesPerSecond,
           double compute, double halo, double allreduce, double io);
  void validation(long long step, int epoch, const EvalSummary& v);

private:
  void startNewFile();  // a new run's first row: truncate, header

  std::string path_;
  std::FILE* file_ = nullptr;
  bool truncatePending_ = false;
};

}  // namespace hybrid3d
