// `hybrid3d plan DECK.xml`: the dry run's checks and plan (DryRun.hpp) for any rank count, with
// the performance model (plan/StepCost.hpp) on a machine file: per layer FLOPs, halo traffic
// and time, the step's phases, bytes and memory per rank, and the best layouts of each rank
// count (plan/LayoutSearch.hpp).
#include <cstdio>
#include <filesystem>
#include <fstream>

#include <hybrid3d/core/Error.hpp>
#include <hybrid3d/data/CollectiveVerdict.hpp>
#include <hybrid3d/deck/MachineDeck.hpp>
#include <hybrid3d/plan/LayoutSearch.hpp>

#include "../Command.hpp"
#include "../CostText.hpp"
#include "../Options.hpp"
#include "../PlanText.hpp"
#include "../RecordedPath.hpp"
#include "../TextFormat.hpp"
#include "DryRun.hpp"

namespace hybrid3d::app {
namespace {

struct PlanArgs {
  std::string deck, machineFile, csv;
  std::vector<int> ranks;  // empty: the ranks at hand
  bool haveLayout = false;
  Layout layout;
  double memoryLimit = 0;  // bytes per rank; 0: the machine's
  int top = 5;
  bool havePrecision = false;  // --precision: in place of the deck's Model/precision
  Precision precision = Precision::Float;
  bool haveRecompute = false;  // --recompute: in place of the deck's Model/recompute
  RecomputeOption recompute;
};

PlanArgs parse(const std::vector<std::string>& args) {
  PlanArgs a;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& s = args[i];
    auto value = [&]() -> const std::string& {
      if (i + 1 >= args.size()) fail("plan: ", s, " needs a value");
      return args[++i];
    };
    if (s == "--ranks") {
      std::string list = value();
      for (std::size_t at = 0; at <= list.size();) {
        const std::size_t comma = std::min(list.find(',', at), list.size());
        const long long n = integerOption("plan", "--ranks", list.substr(at, comma - at));
        if (n < 1 || n > (1 << 24)) fail("plan: --ranks ", n, " is not a rank count");
        a.ranks.push_back(int(n));
        at = comma + 1;
      }
    } else if (s == "--layout") {
      a.layout = parseLayout(value());
      a.haveLayout = true;
    } else if (s == "--machine") {
      a.machineFile = value();
    } else if (s == "--memory-limit") {
      a.memoryLimit = memoryLimitOption("plan", value());
    } else if (s == "--precision") {
      try {
        a.precision = parsePrecision(value());
      } catch (const Error& e) {
        fail("plan: --precision: ", e.what());
      }
      a.havePrecision = true;
    } else if (s == "--recompute") {
      try {
        a.recompute = parseRecompute(value());
      } catch (const Error& e) {
        fail("plan: --recompute: ", e.what());
      }
      a.haveRecompute = true;
    } else if (s == "--csv") {
      a.csv = value();
    } else if (s == "--top") {
      a.top = int(integerOption("plan", "--top", value()));
      if (a.top < 0) fail("plan: --top ", a.top, " is not a count of layouts");
    } else if (!s.empty() && s[0] == '-') {
      fail("plan: unknown option ", s);
    } else {
      if (!a.deck.empty()) fail("plan: more than one deck given");
      a.deck = s;
    }
  }
  if (a.deck.empty()) fail("plan: no deck given (hybrid3d plan DECK.xml)");
  if (a.haveLayout) {
    if (!a.ranks.empty() && (a.ranks.size() != 1 || a.ranks[0] != a.layout.ranks()))
      fail("plan: --layout ", toString(a.layout), " holds ", a.layout.ranks(),
           " ranks, not what --ranks asks for");
    a.ranks = {a.layout.ranks()};
  }
  return a;
}

// Ranges of layers (Model/recompute, --recompute) name the model's layers: checked on the layout
// planned (the deck's or --layout) first, so that a wrong name is an error, not a layout that
// cannot run.
void checkRecomputeNames(const PlanArgs& a, const deck::DeckRun& r, int ranks) {
  if (r.config.model.recompute.mode != RecomputeOption::Mode::Ranges) return;
  const Int3& g = r.spatialGrid;
  const Layout l = a.haveLayout ? a.layout : Layout{ranks / (g[0] * g[1] * g[2]), g};
  ModelPlan model;
  try {
    model = planModel(groupModelOptions(configFor(r.config, l), l.groups), l.grid);
  } catch (const Error&) {
    return;  // the layout is refused for its own reason below
  }
  resolveSegments(r.config.model.recompute, model.stepGraph());
}

// Where the machine's rate for `p` comes from (peakGflops).
const char* rateSource(const RankRates& r, Precision p) {
  if (p == Precision::BFloat16 && !(r.bfloat16Gflops > 0))
    return " (the float rate: the machine file gives no 'Rank/bfloat16 GFLOP/s')";
  if (p == Precision::Half && !(r.halfGflops > 0))
    return " (the float rate: the machine file gives no 'Rank/half GFLOP/s')";
  return "";
}

// The deck's layout of one rank count (or --layout), costed on the machine, or counted only
// without one.
struct DeckLayout {
  Layout layout;
  LayoutChoice chosen;
  std::string refused;  // why the model refuses it ("": it does not)
};

// One the model refuses is an error for --layout, as a run on it would be; for the deck's own
// layout of a rank count the search may still find others.
template <class T>
DeckLayout deckLayout(const PlanArgs& a, const deck::DeckRun& r, int ranks, const Machine* machine,
                      const std::pair<SetListing, SetListing>& sets, const IoModel& io) {
  DeckLayout d;
  d.layout = a.haveLayout ? a.layout
                          : Layout{ranks / (r.spatialGrid[0] * r.spatialGrid[1] * r.spatialGrid[2]),
                                   r.spatialGrid};
  const Layout& layout = d.layout;
  LayoutChoice& chosen = d.chosen;
  try {
    if (machine) {
      chosen =
          costLayout<T>(r.config, layout, *machine, a.memoryLimit, sets.first, sets.second, io);
    } else {
      chosen.layout = layout;
      chosen.run = planRunIn(precisionOf<T>(), configFor(r.config, layout), layout.grid,
                             layout.groups, sets.first, sets.second);
      chosen.cost = chosen.firstRank = countStep(chosen.run, {0, 0, 0}, io);
      chosen.memoryBytes = chosen.cost.memoryBytes;
    }
  } catch (const Error& e) {
    if (a.haveLayout) throw;
    d.refused = e.what();
  }
  return d;
}

// Rank 0: the deck layout's plan and cost, or why it cannot run.
template <class T>
void printDeckLayout(const PlanArgs& a, int ranks, const Machine* machine, const DeckLayout& d) {
  std::printf("hybrid3d: plan of %s on %d rank(s)%s in %s%s\n", a.deck.c_str(), ranks,
              machine ? (" of machine " + machine->name).c_str() : " (no --machine: counts only)",
              toString(precisionOf<T>()), a.havePrecision ? " (--precision)" : "");
  if (machine)
    std::printf("  %s convolutions at %.6g GFLOP/s per rank%s\n", toString(precisionOf<T>()),
                peakGflops(machine->rank, precisionOf<T>()),
                rateSource(machine->rank, precisionOf<T>()));
  const double limit = a.memoryLimit > 0 ? a.memoryLimit
                       : machine         ? machine->rank.memoryGiB * double(1 << 30)
                                         : 0;
  if (d.refused.empty())
    std::printf("%s%s%s", planText(d.chosen.run).c_str(),
                costText(d.chosen.run, d.chosen.cost, machine).c_str(),
                recomputeText(d.chosen.run, d.chosen.cost, machine,
                              d.chosen.recomputeChosen ? &d.chosen : nullptr, limit)
                    .c_str());
  else
    std::printf("  the deck's layout %s cannot run: %s\n", toString(d.layout).c_str(),
                d.refused.c_str());
}

// Rank 0: the best layouts of `ranks` ranks on machine `m`, with their speedup against
// `reference` (the best step of the first rank count, set by it). Returns the rank count's line
// of the strong-scaling summary.
template <class T>
std::string printBestLayouts(const PlanArgs& a, const deck::DeckRun& r, int ranks, const Machine& m,
                             const std::pair<SetListing, SetListing>& sets, const IoModel& io,
                             const DeckLayout& d, double& reference) {
  const std::vector<LayoutChoice> best =
      searchLayouts<T>(r.config, ranks, m, a.memoryLimit, sets.first, sets.second, io);
  if (best.empty()) {
    std::printf(
        "\n  no layout of %d rank(s) is accepted by the model (mini-batch %d: at most "
        "%d data-parallel groups, the rest spatial)\n\n",
        ranks, r.config.globalBatch, r.config.globalBatch);
    return line("  %6d ranks: no layout the model accepts\n", ranks);
  }
  if (reference == 0) reference = best.front().cost.phases.step();
  std::printf(
      "\n  best layouts of %d rank(s) (%zu accepted by the model; memory limit %.1f GiB "
      "per rank; speedup against the best of %d rank(s))\n%s\n",
      ranks, best.size(),
      (a.memoryLimit > 0 ? a.memoryLimit : m.rank.memoryGiB * double(1 << 30)) / double(1 << 30),
      a.ranks.front(), layoutText(best, std::size_t(a.top), reference).c_str());
  const std::string deckLayoutName = toString(d.layout);
  return line("  %6d ranks: best %-14s %9.1f ms per step, %8.2f samples/s, %5.2fx", ranks,
              toString(best.front().layout).c_str(), 1e3 * best.front().cost.phases.step(),
              best.front().cost.samplesPerSecond, reference / best.front().cost.phases.step()) +
         (d.refused.empty() ? line("; the deck's layout %s %.1f ms\n", deckLayoutName.c_str(),
                                   1e3 * d.chosen.cost.phases.step())
                            : line("; the deck's layout %s cannot run\n", deckLayoutName.c_str()));
}

template <class T>
void plan(const PlanArgs& a, const std::vector<deck::DeckRun>& runs, const Machine* machine,
          const std::pair<SetListing, SetListing>& sets, int worldRank) {
  std::string csv = csvHeader();
  // The CSV may be committed: the deck as recordedPath gives it, never this machine's path.
  const std::string deckInCsv = recordedPath(a.deck);
  double reference = 0;
  std::string summary;
  for (std::size_t i = 0; i < runs.size(); ++i) {
    const deck::DeckRun& r = runs[i];
    const int ranks = a.ranks[i];
    const IoModel io = ioModelFor(r.config);
    const DeckLayout d = deckLayout<T>(a, r, ranks, machine, sets, io);
    if (d.refused.empty()) csv += csvRow(deckInCsv, machine ? machine->name : "", d.chosen);
    if (worldRank != 0) continue;
    printDeckLayout<T>(a, ranks, machine, d);
    if (!machine || a.top == 0) continue;  // --top 0: this layout alone, no search
    summary += printBestLayouts<T>(a, r, ranks, *machine, sets, io, d, reference);
  }
  if (worldRank == 0 && runs.size() > 1 && !summary.empty())
    std::printf("hybrid3d: strong scaling predicted on %s\n%s",
                machine ? machine->name.c_str() : "", summary.c_str());
  if (worldRank == 0 && !a.csv.empty()) {
    std::ofstream out(a.csv);
    out << csv;
    if (!out) fail(a.csv, ": cannot write the plan's CSV");
  }
}

int run(const std::vector<std::string>& args) {
  PlanArgs a;
  std::vector<deck::DeckRun> runs;
  Machine machine;
  int world, rank;
  MPI_Comm_size(MPI_COMM_WORLD, &world);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  // Agreed, so a mistake in them ends the run with one line on every rank (a WorldError).
  data::collectively(MPI_COMM_WORLD, [&] {
    a = parse(args);
    if (a.ranks.empty()) a.ranks = {world};
    for (int n : a.ranks) {
      runs.push_back(deck::readTrainDeck(a.deck, n));
      const Int3& g = runs.back().spatialGrid;
      if (!a.haveLayout && n % (g[0] * g[1] * g[2]) != 0)
        fail("plan: --ranks ", n, " is not a multiple of the deck's spatial grid ", toString(g),
             " (", g[0] * g[1] * g[2], " ranks per sample)");
    }
    if (!a.machineFile.empty()) machine = deck::readMachineDeck(a.machineFile);
    for (std::size_t i = 0; i < runs.size(); ++i) {
      deck::DeckRun& r = runs[i];
      if (a.haveRecompute) r.config.model.recompute = a.recompute;
      checkRecomputeNames(a, r, a.ranks[i]);
      if (r.config.model.recompute.mode == RecomputeOption::Mode::Auto && a.machineFile.empty())
        fail(
            "plan: Model/recompute auto needs --machine (the memory limit and the step times "
            "it chooses by)");
    }
  });
  const deck::DeckRun& first = runs.front();
  const int groups =
      a.haveLayout
          ? a.layout.groups
          : a.ranks.front() / (first.spatialGrid[0] * first.spatialGrid[1] * first.spatialGrid[2]);
  const auto sets = checkDeckData(first, groups, MPI_COMM_WORLD);
  const Machine* m = a.machineFile.empty() ? nullptr : &machine;
  const Precision precision = a.havePrecision ? a.precision : first.precision;
  data::collectively(MPI_COMM_WORLD, [&] {
    withPrecision(precision,
                  [&](auto tag) { plan<typename decltype(tag)::type>(a, runs, m, sets, rank); });
  });
  std::fflush(stdout);
  return 0;
}

const Registration reg{
    "plan",
    {"DECK.xml [--ranks N[,N...]] [--layout G:DxHxW[/K]] [--machine FILE] [--memory-limit GiB] "
     "[--csv FILE] [--top K] [--precision P] [--recompute R]",
     "the dry run for any rank count, with per-layer costs, predicted step time and best layouts",
     "  --ranks N,...     rank counts to plan for (default: the ranks at hand); the deck's grid,\n"
     "                    or auto, is resolved for each\n"
     "  --layout G:DxHxW[/K]  plan this layout: G data-parallel groups x spatial grid DxHxW;\n"
     "                    /K: every layer on the finest coarsening of it whose input boxes are\n"
     "                    at least K wide (in place of the deck's layer grids)\n"
     "  --machine FILE    a machine file (inputs/machines/, or written by `hybrid3d calibrate`):\n"
     "                    adds predicted times, the phase split and the best layouts\n"
     "  --memory-limit G  GiB per rank a layout may use (default: the machine's memory)\n"
     "  --csv FILE        one row per planned layout (perf_tests/scaling/ reads it)\n"
     "  --top K           how many of the best layouts to list (default 5; 0: no search)\n"
     "  --precision P     float, double, bfloat16 or half in place of the deck's Model/precision\n"
     "                    (16-bit: activations, halos and their traffic in 2 bytes, parameters\n"
     "                    and reductions in float, convolutions at the machine's 16-bit rate)\n"
     "  --recompute R     none, all, auto or ranges FIRST..LAST,... in place of the deck's\n"
     "                    Model/recompute (auto, with --machine: per layout the segments that fit\n"
     "                    the memory limit at the least predicted time)\n"
     "Checks what `hybrid3d check` checks (the deck, the grid, the datasets' metadata) and\n"
     "prints its plan, then per layer of the slowest rank: FLOPs, the work a calibrated timing\n"
     "scales with, bytes and neighbours of each halo exchange, and with a machine the predicted\n"
     "compute and halo time; the bytes the rank sends in halos, hands to the gradient\n"
     "reduction and reads per step; its memory; the predicted step split into compute, halo,\n"
     "allreduce, redistribution and exposed I/O; the best layouts of each rank count (groups,\n"
     "spatial grid and layer grids: the deck's, and each minimum box width K). Trains nothing.\n",
     "mpirun -n 1 hybrid3d plan perf_tests/scaling/paper/cosmoflow_512_mb64.xml --ranks 512,2048 "
     "--machine "
     "inputs/machines/lassen-v100.xml"},
    run};

}  // namespace
}  // namespace hybrid3d::app
