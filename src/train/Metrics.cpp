#include <hybrid3d/core/Error.hpp>
#include <hybrid3d/train/Metrics.hpp>

#include <filesystem>

namespace hybrid3d {

MetricsCsv::MetricsCsv(const std::string& path, bool append, MPI_Comm comm) : path_(path) {
  int rank;
  MPI_Comm_rank(comm, &rank);
  int ok = 1;
  if (rank == 0) {
    // A restart into another output directory starts a new file, header first.
    std::error_code ec;
    append = append && std::filesystem::file_size(path, ec) > 0 && !ec;
    // Opened for appending either way, which checks it can be written without emptying it: a
    // new run truncates the file only at its first row, so a run that fails before its first
    // step leaves the previous run's metrics as they were.
    file_ = std::fopen(path.c_str(), "a");
    ok = file_ != nullptr;
    truncatePending_ = !append;
  }
  MPI_Bcast(&ok, 1, MPI_INT, 0, comm);
  if (!ok) fail(path, ": cannot open the metrics file for writing");
}

MetricsCsv::~MetricsCsv() {
  if (file_) std::fclose(file_);
}

void MetricsCsv::startNewFile() {
  if (!truncatePending_) return;
  truncatePending_ = false;
  file_ = std::freopen(path_.c_str(), "w", file_);
  if (!file_) fail(path_, ": cannot open the metrics file for writing");
  std::fprintf(file_,
               "kind,step,epoch,loss,learning_rate,samples_per_second,compute_s,halo_s,"
               "allreduce_s,io_wait_s,mse,mae,accuracy,dice,halo_bytes,allreduce_bytes,target_mse,"
               "redistribute_s,redistribute_bytes\n");
}

void MetricsCsv::row(const StepRecord& r) {
  if (!file_) return;
  startNewFile();
  std::fprintf(file_, "train,%lld,%d,%.9g,%.6g,%.4g,%.6f,%.6f,%.6f,%.6f,,,,,%llu,%llu,,", r.step,
               r.epoch, r.loss, r.learningRate, r.samplesPerSecond, r.compute, r.halo, r.allreduce,
               r.io, r.haloBytes, r.allreduceBytes);
  if (r.staged)
    std::fprintf(file_, "%.6f,%llu\n", r.redistribute, r.redistributeBytes);
  else
    std::fprintf(file_, ",\n");
  std::fflush(file_);
}

void MetricsCsv::validation(long long step, int epoch, const EvalSummary& v) {
  if (!file_ || !v.present) return;
  startNewFile();
  std::fprintf(file_, "validation,%lld,%d,%.9g,,,,,,,%.9g,%.9g,%.9g,%s,,,%s,,\n", step, epoch,
               v.loss, v.mse, v.mae, v.accuracy, slashSeparated(v.dice, 9).c_str(),
               slashSeparated(v.targetMse, 9).c_str());
  std::fflush(file_);
}

}  // namespace hybrid3d
