#pragma once
// How `hybrid3d calibrate` turns every rank's timed runs of the FMA loop (core/FmaPeak.hpp) into
// the one peak of the machine file, and what it reports about it.
//
// A run can only be slowed (another process on the core, an interrupt, a clock not yet settled),
// never sped up: each rank takes the best of its runs, and the ranks agree on the highest of
// their bests (MPI_MAX over the world; MPI_MIN gives the lowest, to show the spread). The ranks
// measure at once, as they train: a rank whose best stays far below the others' shares its core
// (hyper-threads, an oversubscribed node), which the spread shows and a warning names. Two
// calibrations a minute apart on one quiet machine once measured peaks a factor of two apart
// (one short run per rank, the median of the ranks; docs/performance-notes.md, "Calibration"),
// and the second file's convolution efficiency
// came out above 1 and was clamped without a word: a clamp is reported now, and so is a peak
// more than 20 % from the --base file's.

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include <mpi.h>

namespace hybrid3d::app::calibrate {

struct AgreedPeak {
  double gflops = 0;    // the ranks' highest best: the file's peak
  double lowest = 0;    // the lowest rank's best
  int ranks = 0;        // that took part
  int runs = 0;         // timed runs per rank (the fewest any rank made)
  double worstRun = 0;  // the slowest single run of any rank
  // (highest - lowest) / highest of the ranks' bests
  double spread() const { return gflops > 0 ? (gflops - lowest) / gflops : 0; }
};

// Every rank's `runs` (GFLOP/s, each rank its own) -> the same AgreedPeak on every rank.
// Collective over `comm`.
inline AgreedPeak agreePeak(MPI_Comm comm, const std::vector<double>& runs) {
  double best = 0, worst = runs.empty() ? 0 : runs.front();
  for (double r : runs) {
    best = std::max(best, r);
    worst = std::min(worst, r);
  }
  AgreedPeak a;
  MPI_Comm_size(comm, &a.ranks);
  int count = int(runs.size());
  MPI_Allreduce(&best, &a.gflops, 1, MPI_DOUBLE, MPI_MAX, comm);
  MPI_Allreduce(&best, &a.lowest, 1, MPI_DOUBLE, MPI_MIN, comm);
  MPI_Allreduce(&worst, &a.worstRun, 1, MPI_DOUBLE, MPI_MIN, comm);
  MPI_Allreduce(&count, &a.runs, 1, MPI_INT, MPI_MIN, comm);
  return a;
}

inline std::string fixedText(double v, int digits) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", digits, v);
  return buf;
}

// One line: how the peak was agreed and how far the ranks' bests and the runs lay apart.
inline std::string describePeak(const AgreedPeak& a) {
  return "best of " + std::to_string(a.runs) + " timed runs on each of " + std::to_string(a.ranks) +
         " rank(s) measuring at once, the highest best over the ranks " +
         "(MPI_MAX); the ranks' bests " + fixedText(a.lowest, 1) + " to " + fixedText(a.gflops, 1) +
         " GFLOP/s (spread " + fixedText(100 * a.spread(), 1) + " %), the slowest run " +
         fixedText(a.worstRun, 1);
}

// Above this share the ranks' bests, or the new peak and the --base file's, are reported.
constexpr double peakTolerance = 0.2;

// A warning when the ranks' bests lie more than peakTolerance apart; "" otherwise.
inline std::string spreadWarning(const AgreedPeak& a) {
  if (a.spread() <= peakTolerance) return "";
  return "the ranks' best FMA runs lie " + fixedText(100 * a.spread(), 1) + " % apart (" +
         fixedText(a.lowest, 1) + " to " + fixedText(a.gflops, 1) +
         " GFLOP/s): some ranks share a core or were busy throughout; the highest is written";
}

// A warning naming `file` when `peak` differs from its `basePeak` by more than peakTolerance of
// the base's; "" otherwise (or when the base has no peak).
inline std::string baseDifferenceWarning(const std::string& file, double basePeak, double peak,
                                         const std::string& what = "FP32 FMA peak") {
  if (!(basePeak > 0)) return "";
  const double change = (peak - basePeak) / basePeak;
  if (std::fabs(change) <= peakTolerance) return "";
  return "the " + what + " measured, " + fixedText(peak, 1) + " GFLOP/s per rank, differs by " +
         (change > 0 ? "+" : "") + fixedText(100 * change, 1) + " % from the " +
         fixedText(basePeak, 1) + " of --base " + file + " (more than " +
         fixedText(100 * peakTolerance, 0) + " %): one of the two was measured on a busy or " +
         "different machine";
}

// A convolution efficiency for the file: at most 1. `warning` is "" unless it had to be clamped.
struct FileEfficiency {
  double value = 0;
  std::string warning;
};
inline FileEfficiency fileEfficiency(double measured) {
  if (measured <= 1) return {measured, ""};
  return {1.0, "the convolutions ran at " + fixedText(measured, 3) +
                   " of the peak measured, above 1: the peak was measured low; the file holds 1 "
                   "(a clamp), recalibrate on a quiet machine"};
}

}  // namespace hybrid3d::app::calibrate
