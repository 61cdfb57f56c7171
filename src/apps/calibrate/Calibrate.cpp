// `hybrid3d calibrate --out FILE.xml DECK.xml...`: measures this machine with every rank busy
// at once, as training runs it, and writes a machine file (deck/MachineDeck.hpp) for the
// performance model (plan/StepCost.hpp): arithmetic peak, memory bandwidth, kernel launch
// cost, MPI latency and bandwidth between two ranks, file-system reads, and the time of every
// layer of the decks' models (Probes.hpp, LayerTimings.hpp). What one node cannot measure (the
// network between nodes; on a GPU build the device's peak and memory) comes from --base.
// Measured figures are written to 4 significant digits (Statistics.hpp, significant).
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <map>
#include <sstream>

#include <Kokkos_Core.hpp>

#include <hybrid3d/core/Error.hpp>
#include <hybrid3d/core/FmaPeak.hpp>
#include <hybrid3d/core/Types.hpp>
#include <hybrid3d/data/CollectiveVerdict.hpp>
#include <hybrid3d/deck/MachineDeck.hpp>
#include <hybrid3d/deck/TrainDeck.hpp>

#include "../Command.hpp"
#include "../RecordedPath.hpp"
#include "CalibrateOptions.hpp"
#include "FixedMemory.hpp"
#include "HostInfo.hpp"
#include "LayerTimings.hpp"
#include "PeakAgreement.hpp"
#include "Probes.hpp"
#include "Statistics.hpp"

namespace hybrid3d::app::calibrate {
namespace {

// Ranks compute on host cores (Serial, OpenMP): the FMA peak and the node's memory are theirs.
// On a GPU build they are the device's, which this command does not measure.
constexpr bool hostRanks =
    Kokkos::SpaceAccessibility<Kokkos::HostSpace, DefaultMemorySpace>::accessible;

std::string utcNow() {
  const std::time_t t = std::time(nullptr);
  char buf[64];
  std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M:%S UTC", std::gmtime(&t));
  return buf;
}

std::string hostName() {
  char buf[256] = {};
  return ::gethostname(buf, sizeof buf - 1) == 0 && buf[0] ? buf : "this-machine";
}

std::string env(const char* name) {
  const char* v = std::getenv(name);
  return std::string(name) + "=" + (v ? v : "(unset)");
}

std::string fixed(double v, int digits) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", digits, v);
  return buf;
}

// Progress on world rank 0, with the seconds since the start.
struct Progress {
  int rank = 0;
  double start = MPI_Wtime();
  template <class... Args>
  void say(const Args&... args) const {
    if (rank != 0) return;
    std::printf("hybrid3d calibrate [%6.1f s]: %s\n", MPI_Wtime() - start,
                Impl::concat(args...).c_str());
    std::fflush(stdout);
  }
  // A warning ("" says nothing): on stdout with the progress and on stderr.
  void warn(const std::string& warning) const {
    if (rank != 0 || warning.empty()) return;
    say("WARNING: ", warning);
    std::fprintf(stderr, "hybrid3d calibrate: warning: %s\n", warning.c_str());
    std::fflush(stderr);
  }
};

// `note`, and the warning after it when there is one.
std::string withWarning(const std::string& note, const std::string& warning) {
  return warning.empty() ? note : note + "; WARNING: " + warning;
}

// Timed runs of the FMA loops per rank, about 50 ms each: a second in all, so that a busy moment
// of the node (another process on a core, or on its hardware sibling, which thread CPU time does
// not see) leaves some runs clean. With 7 runs (a third of a second) on a small machine busy
// compiling, both ranks' bests once came out well below the core's peak
// (docs/performance-notes.md, "Calibration").
constexpr int peakRuns = 20;

// The convolutions' median FLOP rate over the calibrated points, as a share of the peak of
// their precision (peakGflops: a 16-bit deck's against the 16-bit rate); 0 when none was timed.
double convolutionEfficiency(const std::vector<LayerPoint>& points, const RankRates& rank,
                             int& count) {
  std::vector<double> shares;
  for (const LayerPoint& p : points)
    if ((p.kind == "Conv3d" || p.kind == "ConvTranspose3d") && p.flops > 0)
      shares.push_back(1e-9 * p.flops / p.seconds / peakGflops(rank, p.precision));
  count = static_cast<int>(shares.size());
  return median(shares);
}

// One calibration: what the command line and the decks ask, the machine file being filled
// (its figures, and beside each the comment saying where it comes from), the progress lines.
struct Calibration {
  MPI_Comm world = MPI_COMM_WORLD;
  int rank = 0, ranks = 1;
  Progress progress;
  CalibrateOptions o;
  Machine m;
  std::vector<deck::DeckRun> decks;
  std::vector<std::vector<int>> sizes;       // per deck
  std::map<std::string, std::string> notes;  // per key of the machine file
  std::string baseNote;                      // "from --base FILE"
  std::string peakUnit;                      // the FMA unit measured ("": none, a GPU build)
  std::vector<LayerPoint> points;            // the layer timings this run measured
};

// Everything that can be wrong with the command line, the base file and the decks is found
// before anything is measured, on every rank with one line.
void readInputs(Calibration& c, const std::vector<std::string>& args) {
  data::collectively(c.world, [&] {
    c.o = parseCalibrateOptions(args, c.ranks);
    if (!c.o.base.empty()) c.m = deck::readMachineDeck(c.o.base);
    if (c.ranks == 1 && c.o.base.empty())
      fail(
          "calibrate: the network is measured between two ranks: run on 2 or more "
          "(mpirun -n 2 hybrid3d calibrate ...), or give --base MACHINE.xml to keep its "
          "network figures");
    if (!hostRanks && c.o.base.empty())
      fail("calibrate: ranks compute on a ", DefaultExecutionSpace::name(),
           " device, whose peak and memory this command does not measure: give --base "
           "MACHINE.xml with them");
    for (const std::string& path : c.o.decks) {
      c.decks.push_back(deck::readTrainDeck(path, c.ranks, /*needTrainData=*/false));
      c.sizes.push_back(c.o.sizes.empty()
                            ? std::vector<int>{int(c.decks.back().config.model.inputWidth)}
                            : c.o.sizes);
      for (int S : c.sizes.back()) {
        try {
          checkSize(c.decks.back(), S);
        } catch (const Error& e) {
          fail("calibrate: ", path, " at input width ", S, ": ", e.what());
        }
      }
    }
  });
}

// A 16-bit rate: measured where the core has such arithmetic, else the float rate.
void probe16BitRate(Calibration& c, const Peak16& p, const char* name, double& field) {
  std::string note = p.how;
  if (p.native) {
    const AgreedPeak a = agreePeak(c.world, p.peak.runs);
    field = significant(a.gflops);
    note += "; " + describePeak(a);
  } else {
    field = c.m.rank.floatGflops;
  }
  c.notes[std::string("Rank/") + name + " GFLOP/s"] = note;
  c.progress.say(name, " peak ", fixed(field, 1), " GFLOP/s per rank: ", p.how);
}

// The arithmetic peaks: every rank measures its core at once (thread CPU time), several
// runs each, the ranks agreeing on the highest best (PeakAgreement.hpp). A GPU build keeps
// --base's.
void probePeaks(Calibration& c) {
  if (!hostRanks) {
    c.notes["Rank/float GFLOP/s"] = c.notes["Rank/double GFLOP/s"] = c.baseNote;
    c.notes["Rank/bfloat16 GFLOP/s"] = c.notes["Rank/half GFLOP/s"] = c.baseNote;
    return;
  }
  RankRates& r = c.m.rank;
  const double basePeak = r.floatGflops;  // --base's (0: none)
  MPI_Barrier(c.world);                   // the ranks measure at once
  const FmaPeak peak = measureFmaPeak(peakRuns);
  const AgreedPeak agreed = agreePeak(c.world, peak.runs);
  r.floatGflops = significant(agreed.gflops);
  // x86 vector units run as many FP64 FMAs per cycle as FP32 ones, on half the lanes.
  r.doubleGflops = r.floatGflops / 2;
  c.peakUnit = peak.unit;
  const std::string spread = spreadWarning(agreed),
                    changed = c.o.base.empty() ? ""
                                               : baseDifferenceWarning(recordedPath(c.o.base),
                                                                       basePeak, r.floatGflops);
  c.notes["Rank/float GFLOP/s"] = withWarning(
      withWarning("FP32 FMA peak of one core (" + peak.unit + "), " + describePeak(agreed), spread),
      changed);
  c.notes["Rank/double GFLOP/s"] = "half the FP32 peak: FP64 vectors hold half the lanes";
  c.progress.say("FMA peak ", fixed(r.floatGflops, 1), " GFLOP/s per rank (", peak.unit,
                 "): ", describePeak(agreed));
  c.progress.warn(spread);
  c.progress.warn(changed);
  MPI_Barrier(c.world);
  probe16BitRate(c, measureBf16Peak(peak, peakRuns), "bfloat16", r.bfloat16Gflops);
  MPI_Barrier(c.world);
  probe16BitRate(c, measureHalfPeak(peak, peakRuns), "half", r.halfGflops);
}

// First, before anything larger is allocated: the process's peak is what it measures. A GPU
// build's plan counts device memory, which a host process's peak does not say: --base's.
void probeFixedMemory(Calibration& c) {
  if (!hostRanks) {
    c.notes["Rank/fixed memory MiB"] = c.baseNote;
    return;
  }
  const std::vector<int>& sizes = c.sizes.front();
  const int size = *std::min_element(sizes.begin(), sizes.end());
  const FixedMemory f = measureFixedMemory(c.world, c.decks.front(), size);
  c.m.rank.fixedMemoryMiB = significant(f.largest / double(1 << 20));
  c.notes["Rank/fixed memory MiB"] =
      "peak resident memory of a process after MPI, Kokkos, HDF5 and two training steps of " +
      recordedPath(c.o.decks.front()) + "'s model at " + std::to_string(size) +
      "^3 (batch 1, alone on each of " + std::to_string(c.ranks) +
      " ranks at once), less the plan's " + fixed(f.planned / double(1 << 20), 1) +
      " MiB of that model; the largest over the ranks (smallest " +
      fixed(f.smallest / double(1 << 20), 1) + ")";
  c.progress.say("fixed memory per process ", fixed(c.m.rank.fixedMemoryMiB, 1),
                 " MiB (ranks from ", fixed(f.smallest / double(1 << 20), 1), ")");
}

void probeMemoryBandwidth(Calibration& c) {
  const Bandwidth triad = triadBandwidth(c.world);
  c.m.rank.memoryGBs = significant(triad.GBs);
  c.m.rank.memoryEfficiency = 1;
  c.notes["Rank/memory GB/s"] = "STREAM triad, 3 arrays of " +
                                std::to_string(triad.arrayBytes >> 20) + " MiB per rank, " +
                                std::to_string(c.ranks) + " ranks at once, median";
  c.notes["Rank/memory efficiency"] = "1: the triad measured is what kernels reach";
  c.progress.say("triad ", fixed(triad.GBs, 2), " GB/s per rank");
}

void probeLaunch(Calibration& c) {
  c.m.rank.layerOverheadUs = significant(launchOverheadUs(c.world));
  c.notes["Rank/layer overhead us"] = "a one-element kernel launched and fenced, median";
  c.progress.say("kernel launch + fence ", fixed(c.m.rank.layerOverheadUs, 2), " us");
}

void noteMemoryCapacity(Calibration& c) {
  if (hostRanks) {
    c.m.rank.memoryGiB = significant(double(memTotalBytes()) / double(1 << 30) / c.ranks);
    c.notes["Rank/memory GiB"] = "MemTotal of the node / " + std::to_string(c.ranks) + " ranks";
  } else {
    c.notes["Rank/memory GiB"] = c.baseNote;
  }
}

// Inside the node: a ping-pong between world ranks 0 and 1. Between nodes: --base's, else the
// node's own figures.
void probeNetwork(Calibration& c) {
  Network& n = c.m.network;
  n.ranksPerNode = c.ranks;
  c.notes["Network/ranks per node"] = "the calibration's ranks, all on this node";
  if (c.ranks >= 2) {
    const PingPong p = pingPong(c.world);
    n.intraLatencyUs = significant(p.latencyUs);
    n.intraGBs = significant(p.GBs);
    c.notes["Network/intra-node latency us"] =
        "ping-pong of 8-byte messages, world ranks 0 and 1, median round trip / 2";
    c.notes["Network/intra-node GB/s"] =
        "ping-pong of 16 MiB messages, world ranks 0 and 1, median round trip / 2";
    c.progress.say("MPI ranks 0-1: ", fixed(p.latencyUs, 2), " us, ", fixed(p.GBs, 2), " GB/s");
  } else {
    c.notes["Network/intra-node latency us"] = c.notes["Network/intra-node GB/s"] =
        c.baseNote + " (one rank: nothing to measure)";
  }
  if (c.o.base.empty()) {
    n.interLatencyUs = n.intraLatencyUs;
    n.interGBs = n.intraGBs;
    c.notes["Network/inter-node latency us"] = c.notes["Network/inter-node GB/s"] =
        "equal to intra-node: one node measured and no --base given";
    c.notes["Network/allreduce"] = "not measured: the default";
  } else {
    c.notes["Network/inter-node latency us"] = c.notes["Network/inter-node GB/s"] =
        c.notes["Network/allreduce"] = c.baseNote;
  }
  // On a host rank MPI's non-blocking reductions progress only inside the rank's own MPI calls,
  // on its own core: they hide behind nothing. A GPU build keeps the base file's (default:
  // they overlap, as NCCL's do).
  if (hostRanks) {
    n.reductionsOverlap = false;
    c.notes["Network/reductions overlap"] =
        "host ranks: the rank's core moves and sums the gradients inside its MPI calls";
  } else {
    c.notes["Network/reductions overlap"] =
        c.o.base.empty() ? "not measured: the default" : c.baseNote;
  }
}

void probeFileSystem(Calibration& c) {
  const FileRead reads = fileSystemRead(c.world, c.o.scratch, std::size_t(c.o.fileMiB) << 20);
  c.m.fileSystem.readGBsPerRank = significant(reads.perRankGBs);
  c.m.fileSystem.aggregateReadGBs = significant(reads.aggregateGBs);
  const std::string readHow =
      std::to_string(c.o.fileMiB) + " MiB per rank under " + recordedPath(c.o.scratch) + ", " +
      (reads.pagesDropped ? "pages dropped" : "pages NOT dropped (page cache: too fast)");
  c.notes["File system/read GB/s per rank"] = "world rank 0 reading alone: " + readHow;
  c.notes["File system/aggregate read GB/s"] = "all bytes / the slowest rank's time, " +
                                               std::to_string(c.ranks) +
                                               " ranks reading at once: " + readHow;
  c.progress.say("file reads ", fixed(reads.perRankGBs, 2), " GB/s per rank, ",
                 fixed(reads.aggregateGBs, 2), " GB/s together",
                 reads.pagesDropped ? "" : " (pages not dropped)");
}

// Every layer of each deck's model at each size (LayerTimings.hpp), merged with the base file's
// timings where this run measured no point of the same layer and size: one file can be built
// up model by model (`--base` the file itself).
void timeDeckLayers(Calibration& c) {
  for (std::size_t d = 0; d < c.decks.size(); ++d)
    for (int S : c.sizes[d]) {
      const double t0 = MPI_Wtime();
      const std::vector<LayerPoint> p = timeLayers(c.world, c.decks[d], S, c.o.steps);
      double step = 0;
      for (const LayerPoint& l : p) step += l.seconds;
      c.points.insert(c.points.end(), p.begin(), p.end());
      c.progress.say(c.o.decks[d], " (", c.decks[d].config.model.architecture, ") at ", S,
                     "^3: ", p.size(), " layers, ", fixed(step, 3), " s per step in layers, ",
                     fixed(MPI_Wtime() - t0, 1), " s");
    }
  std::vector<LayerPoint> all = c.points;
  for (const LayerTiming& t : c.m.timings)
    for (std::size_t i = 0; i < t.voxels.size(); ++i) {
      bool measured = false;
      for (const LayerPoint& p : c.points) measured |= p.key == t.layer && p.voxels == t.voxels[i];
      if (!measured) {
        LayerPoint kept;
        kept.key = t.layer;
        kept.voxels = t.voxels[i];
        kept.seconds = t.seconds[i];
        all.push_back(kept);
      }
    }
  c.m.timings = mergeTimings(all);
}

// The convolution efficiency from the layers timed, else --base's; refused with neither.
// Returns the share measured (above 1 where the peak was measured low; the file holds at most 1).
double deriveConvolutionEfficiency(Calibration& c) {
  int convolutions = 0;
  const double efficiency = convolutionEfficiency(c.points, c.m.rank, convolutions);
  if (convolutions > 0) {
    const FileEfficiency e = fileEfficiency(significant(efficiency));
    c.m.rank.convolutionEfficiency = e.value;
    c.notes["Rank/convolution efficiency"] =
        withWarning("median FLOP rate of the " + std::to_string(convolutions) +
                        " convolutions timed below / the peak of their precision",
                    e.warning);
    c.progress.warn(e.warning);
  } else if (!c.o.base.empty()) {
    c.notes["Rank/convolution efficiency"] = c.baseNote + " (no convolution timed)";
  } else {
    fail(
        "calibrate: the decks' models have no convolution to derive the convolution "
        "efficiency from; give --base MACHINE.xml");  // every rank: the same points
  }
  return efficiency;
}

// The file's header comment: when, how, on what, and how the layers were timed.
std::string headerComment(const Calibration& c, const std::string& when) {
  std::ostringstream header;
  header
      << "hybrid3d machine file written by `hybrid3d calibrate` on " << when << " in "
      << fixed(MPI_Wtime() - c.progress.start, 0) << " s:\n"
      << "  " << c.o.commandLine << "\n"
      << "CPU: " << cpuModel() << ", " << cpuCount() << " logical CPUs; Kokkos execution space "
      << DefaultExecutionSpace::name() << "; " << c.ranks << " rank(s) on this node"
      << (c.peakUnit.empty() ? "" : ", FMA unit " + c.peakUnit) << "\n"
      << "environment: " << env("OPENBLAS_NUM_THREADS") << ", " << env("OPENBLAS_CORETYPE") << ", "
      << env("OMP_NUM_THREADS") << "\n"
      << "Layer timings: every layer of the decks' models at each input width, local batch 1,\n"
      << "each rank training its own copy at once (1x1x1 grid), forward + backward of one step,\n"
      << "the median over " << c.o.steps << " timed step(s) after one warm-up and over the "
      << c.ranks << " ranks.";
  return header.str();
}

// Rank 0 writes the machine file and reads it back.
void writeMachineFile(Calibration& c, double efficiency) {
  for (LayerTiming& t : c.m.timings)
    for (double& seconds : t.seconds) seconds = significant(seconds);
  c.m.name = !c.o.name.empty() ? c.o.name : !c.m.name.empty() ? c.m.name : hostName();
  const std::string when = utcNow();
  c.m.about = cpuModel() + ", " + std::to_string(c.ranks) + " ranks per node, calibrated " + when;
  const std::string header = headerComment(c, when);
  data::collectively(c.world, [&] {
    if (c.rank != 0) return;
    deck::writeMachineDeck(c.m, c.o.out, header, c.notes);
    deck::readMachineDeck(c.o.out);  // what was written reads back
  });
  c.progress.say("wrote ", c.o.out, ": ", c.m.timings.size(), " layer timings from ",
                 c.points.size(), " measurements, convolution efficiency ",
                 fixed(c.m.rank.convolutionEfficiency, 3),
                 efficiency > 1 ? " (clamped: see the warning above)" : "");
}

int run(const std::vector<std::string>& args) {
  Calibration c;
  MPI_Comm_rank(c.world, &c.rank);
  MPI_Comm_size(c.world, &c.ranks);
  c.progress.rank = c.rank;
  readInputs(c, args);
  c.baseNote = "from --base " + recordedPath(c.o.base);
  c.progress.say(c.ranks, " rank(s), execution space ", DefaultExecutionSpace::name(), ", writing ",
                 c.o.out);
  probeFixedMemory(c);
  probePeaks(c);
  probeMemoryBandwidth(c);
  probeLaunch(c);
  noteMemoryCapacity(c);
  probeNetwork(c);
  probeFileSystem(c);
  timeDeckLayers(c);
  const double efficiency = deriveConvolutionEfficiency(c);
  writeMachineFile(c, efficiency);
  return 0;
}

const Registration reg{
    "calibrate",
    {"--out FILE.xml [--name NAME] [--base MACHINE.xml] DECK.xml [DECK.xml ...] [--sizes "
     "S,S...] [--steps N]",
     "measures this machine with every rank busy and writes a machine file for the "
     "performance model",
     "  --out FILE.xml      the machine file to write (atomically; read back before exit)\n"
     "  --name NAME         the machine's name in it (default: --base's, else the host name)\n"
     "  --base MACHINE.xml  figures one node cannot measure: the inter-node network and\n"
     "                      allreduce; on 1 rank the network; on a GPU build the device's\n"
     "                      peak and memory; its layer timings are kept where this run\n"
     "                      times no point of the same layer and size\n"
     "  DECK.xml ...        training decks: every layer of each model is timed (its options\n"
     "                      and precision, local batch 1, each rank alone at once)\n"
     "  --sizes S,S...      the input widths timed (default: each deck's own)\n"
     "  --steps N           timed training steps per model and size, after one warm-up (3)\n"
     "  --scratch DIR       where each rank writes its file-system probe file (default: the\n"
     "                      output file's directory)\n"
     "  --file-mib N        the probe file's size per rank in MiB (256)\n"
     "Also measured, every rank at once: the FMA peak of a core (the best of 20 runs on each\n"
     "rank, the highest best over the ranks; a warning when the ranks' bests lie more than\n"
     "20 % apart or the peak is more than 20 % from --base's), the bfloat16 and half rates\n"
     "(a vdpbf16ps / vfmadd-ph loop where the CPU has AVX512-BF16 / AVX512-FP16, else the\n"
     "float rate: 16-bit convolutions then compute in float), a STREAM triad, a kernel\n"
     "launch, MPI ping-pong between ranks 0 and 1 (latency, bandwidth), and first of all the\n"
     "fixed memory of a process (the peak resident memory after two steps of the first\n"
     "deck's model at its smallest size, less what the plan counts of it: what `check\n"
     "--machine` and `plan` add to every rank). Each number of the file has a comment saying\n"
     "where it comes from.\n",
     "mpirun -n 2 hybrid3d calibrate --out machine.xml inputs/cosmoflow_demo.xml --sizes "
     "32,64 --steps 2"},
    run};

}  // namespace
}  // namespace hybrid3d::app::calibrate
