// `hybrid3d train DECK.xml [--restart CHECKPOINT [--allow-change KEY]...] [--overwrite]
// [--max-steps N] [--dry-run]`: trains the deck's model, generating its synthetic dataset first
// when the deck has a Data/Generate section and the dataset's manifest is not there yet (one
// made with other settings is refused). Preempted (SIGTERM, SIGUSR1, SIGINT or SIGHUP), it
// writes its checkpoint, prints the command that resumes it and exits with
// PreemptedExitStatus (75). A restart whose deck changes what the run computes is refused
// (deck/RestartChanges.hpp).
// Hidden option for tests: --test-signal-at STEPS[:RANK[:SIGNAL]] raises SIGNAL (default TERM)
// in-process on world rank RANK (default 0; -1: every rank) once STEPS steps are done. --dry-run:
// `hybrid3d check` (DryRun.hpp) instead of training.
#include <algorithm>
#include <cctype>
#include <csignal>
#include <cstdio>
#include <filesystem>

#include <hybrid3d/core/Error.hpp>
#include <hybrid3d/data/CollectiveVerdict.hpp>
#include <hybrid3d/train/PeakMemory.hpp>
#include <hybrid3d/train/Preemption.hpp>
#include <hybrid3d/train/Trainer.hpp>

#include "../Command.hpp"
#include "../Options.hpp"
#include "AutoRecompute.hpp"
#include "DryRun.hpp"
#include <hybrid3d/deck/MachineDeck.hpp>
#include <hybrid3d/deck/RestartChanges.hpp>
#include <hybrid3d/deck/TrainDeck.hpp>
#include <hybrid3d/generate/GenerateDataset.hpp>
#include <hybrid3d/train/Checkpoint.hpp>

namespace hybrid3d::app {
using deck::DeckRun;
using deck::readTrainDeck;
namespace {

// Generates the deck's dataset unless a complete one made with the deck's settings is there
// (rank 0 looks, all agree); one made with other settings is refused, naming the setting.
void ensureGenerated(const DeckRun& r) {
  if (!r.generate) return;
  int rank, have = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  data::collectively(MPI_COMM_WORLD, [&] {
    if (rank == 0) have = generate::existingDatasetMatches(r.generation);
  });
  MPI_Bcast(&have, 1, MPI_INT, 0, MPI_COMM_WORLD);
  if (have) return;
  if (rank == 0)
    std::printf(
        "hybrid3d: generating %lld training and %lld validation %s samples of %lld^3 in %s\n",
        static_cast<long long>(r.generation.train), static_cast<long long>(r.generation.validation),
        r.generation.generator.c_str(), static_cast<long long>(r.generation.size),
        r.generation.outDir.c_str());
  // No manifest: what is there is an interrupted generation (anything else is refused).
  generate::GenerateOptions o = r.generation;
  o.replace = true;
  generate::generateDataset(MPI_COMM_WORLD, o);
}

// Quoted for a POSIX shell when it holds anything but plain path characters.
std::string shellWord(const std::string& w) {
  bool plain = !w.empty();
  for (char c : w)
    plain = plain && (std::isalnum(static_cast<unsigned char>(c)) ||
                      std::string("_./=:,+-").find(c) != std::string::npos);
  if (plain) return w;
  std::string q = "'";
  for (char c : w) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

// The command line that resumes this run from `checkpoint`: the same arguments with
// --restart replaced (and --overwrite, --allow-change and the test hook dropped: the
// checkpoint holds this deck).
std::string resumeCommand(const std::vector<std::string>& args, const std::string& checkpoint) {
  int world;
  MPI_Comm_size(MPI_COMM_WORLD, &world);
  std::error_code ec;
  std::string program = std::filesystem::read_symlink("/proc/self/exe", ec).string();
  if (ec || program.empty()) program = "hybrid3d";
  std::string cmd = "mpirun -n " + std::to_string(world) + " " + shellWord(program) + " train";
  for (std::size_t i = 0; i < args.size(); ++i) {
    if (args[i] == "--restart" || args[i] == "--test-signal-at" || args[i] == "--allow-change") {
      ++i;
      continue;
    }
    if (args[i] == "--overwrite") continue;  // the resumed run continues this one
    cmd += " " + shellWord(args[i]);
  }
  return cmd + " --restart " + shellWord(checkpoint);
}

// A restart's deck against the checkpoint's: refused changes stop here, the others are
// reported and go into the checkpoint's history.
void checkRestartChanges(DeckRun& r, const std::string& deckPath,
                         const std::vector<std::string>& allowed) {
  if (r.config.restartFrom.empty()) {
    if (!allowed.empty()) fail("train: --allow-change applies to a --restart only");
    return;
  }
  const RunState saved = readRunState(r.config.restartFrom, MPI_COMM_WORLD);
  const deck::RestartChanges changes =
      deck::checkRestartDeck(r.config.restartFrom, saved, deckPath, r.config.deckText, allowed);
  r.config.history = changes.history;
  int rank;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  if (rank == 0)
    for (const std::string& n : changes.notes) std::printf("hybrid3d: restart: %s\n", n.c_str());
}

template <class T>
int train(const DeckRun& r, const std::vector<std::string>& args) {
  ProcessGrid grid(MPI_COMM_WORLD, r.spatialGrid);
  Trainer<T> trainer(grid, r.config);
  const int stoppedBy = trainer.run().stoppedBySignal;
  // What each rank's memory reached, to set beside the plan's total (`hybrid3d check`).
  const PeakOverRanks peak = peakResidentOverRanks(grid.worldComm());
  if (grid.worldRank() == 0) {
    std::printf(
        "hybrid3d: peak resident memory per rank: largest %.1f MiB (world rank %d), smallest "
        "%.1f MiB\n",
        peak.largest / double(1 << 20), peak.largestRank, peak.smallest / double(1 << 20));
    std::fflush(stdout);
  }
  if (stoppedBy == 0) return 0;
  if (grid.worldRank() == 0) {
    std::printf("hybrid3d: resume with: %s\n",
                resumeCommand(args, trainer.checkpointPath()).c_str());
    std::fflush(stdout);
  }
  return PreemptedExitStatus;
}

// --test-signal-at STEPS[:RANK[:SIGNAL]] (SIGNAL: TERM, INT, HUP, USR1, KILL or STOP).
void parseTestSignal(const std::string& text, TrainConfig& c) {
  std::vector<std::string> parts;
  for (std::size_t at = 0; at <= text.size();) {
    const std::size_t colon = std::min(text.find(':', at), text.size());
    parts.push_back(text.substr(at, colon - at));
    at = colon + 1;
  }
  c.testSignalStep = integerOption("train", "--test-signal-at", parts[0]);
  if (parts.size() > 1)
    c.testSignalRank = int(integerOption("train", "--test-signal-at", parts[1]));
  if (parts.size() < 3) return;
  const std::pair<const char*, int> names[] = {{"TERM", SIGTERM}, {"INT", SIGINT},
                                               {"HUP", SIGHUP},   {"USR1", SIGUSR1},
                                               {"KILL", SIGKILL}, {"STOP", SIGSTOP}};
  c.testSignal = 0;
  for (const auto& n : names)
    if (parts[2] == n.first) c.testSignal = n.second;
  if (c.testSignal == 0) fail("train: --test-signal-at: unknown signal ", parts[2]);
}

// The run the options and the deck describe (every rank reads them alike).
DeckRun readRun(const std::vector<std::string>& args, std::string& deck, bool& dryRun,
                double& memoryLimit, std::string& machineFile) {
  std::string restart, signalAt;
  std::vector<std::string> allowed;
  long long maxSteps = -1;
  bool maxStepsGiven = false, overwrite = false;
  for (std::size_t i = 0; i < args.size(); ++i) {
    auto value = [&]() -> const std::string& {
      if (i + 1 >= args.size()) fail("train: ", args[i], " needs a value");
      return args[++i];
    };
    if (args[i] == "--restart")
      restart = value();
    else if (args[i] == "--max-steps")
      maxSteps = integerOption("train", "--max-steps", value()), maxStepsGiven = true;
    else if (args[i] == "--test-signal-at")
      signalAt = value();
    else if (args[i] == "--allow-change")
      allowed.push_back(value());
    else if (args[i] == "--overwrite")
      overwrite = true;
    else if (args[i] == "--memory-limit")
      memoryLimit = memoryLimitOption("train", value());
    else if (args[i] == "--dry-run")
      dryRun = true;
    else if (args[i] == "--machine")
      machineFile = value();
    else if (!args[i].empty() && args[i][0] == '-')
      fail("train: unknown option ", args[i]);
    else if (deck.empty())
      deck = args[i];
    else
      fail("train: more than one deck given");
  }
  if (deck.empty()) fail("train: no deck given (hybrid3d train DECK.xml)");
  if (dryRun && !restart.empty())
    fail("train: --dry-run checks a deck, not a --restart checkpoint; give one of them");
  if (memoryLimit > 0 && !dryRun && machineFile.empty())
    fail("train: --memory-limit goes with --dry-run or --machine");
  if (overwrite && !restart.empty())
    fail("train: --overwrite starts over, --restart continues; give one of them");
  if (maxSteps < -1) fail("train: --max-steps ", maxSteps, " (give N >= 0, or -1: no limit)");
  int world;
  MPI_Comm_size(MPI_COMM_WORLD, &world);
  DeckRun r = readTrainDeck(deck, world);
  if (!restart.empty()) r.config.restartFrom = restart;
  r.config.overwrite = overwrite;
  if (maxStepsGiven) r.config.maxSteps = maxSteps;
  checkRestartChanges(r, deck, allowed);
  if (!signalAt.empty()) parseTestSignal(signalAt, r.config);
  return r;
}

int run(const std::vector<std::string>& args) {
  DeckRun r;
  std::string deck;
  bool dry = false;
  double memoryLimit = 0;
  std::string machineFile;  // Model/recompute auto chooses by it
  Machine machine;
  // Agreed, so a mistake in them ends the run with one line on every rank (a WorldError).
  data::collectively(MPI_COMM_WORLD, [&] {
    r = readRun(args, deck, dry, memoryLimit, machineFile);
    if (!machineFile.empty()) machine = deck::readMachineDeck(machineFile);
  });
  const Machine* m = machineFile.empty() ? nullptr : &machine;
  if (dry) {
    resolveAutoRecompute(r, m, memoryLimit, "train");
    return dryRun(deck, r, memoryLimit, m);
  }
  ensureGenerated(r);
  resolveAutoRecompute(r, m, memoryLimit, "train");
  return withPrecision(r.precision,
                       [&](auto tag) { return train<typename decltype(tag)::type>(r, args); });
}

const Registration reg{
    "train",
    {"DECK.xml [--restart CHECKPOINT [--allow-change KEY]...] [--overwrite] [--max-steps N] "
     "[--dry-run] [--machine FILE [--memory-limit GiB]]",
     "trains the deck's model; writes checkpoint.h5 and metrics.csv in its output directory",
     "  --restart CHECKPOINT   continue from this checkpoint's step; metrics.csv rows after it\n"
     "                         are dropped. The deck may change only the keys that do not\n"
     "                         change what the run computes (Training/epochs, max steps, print\n"
     "                         every, checkpoint every/minutes, collective timeout, output\n"
     "                         directory; Parallel/*; Data/read mode, prefetch, cache MiB;\n"
     "                         Model/convolution workspace MiB, engine, halo overlap,\n"
     "                         recompute)\n"
     "  --allow-change KEY     allow a restart to change this other deck key (once per key;\n"
     "                         recorded in the checkpoint's history)\n"
     "  --overwrite            start afresh in an output directory holding an earlier run's\n"
     "                         checkpoint or metrics (they are kept under a dated name)\n"
     "  --max-steps N          stop after N steps (overrides Training/max steps)\n"
     "  --dry-run              check the deck, grid and data and print the plan, without\n"
     "                         training (the same as `hybrid3d check DECK.xml`)\n"
     "  --memory-limit GiB     with --dry-run: memory per rank allowed (default: the node's\n"
     "                         memory shared by its ranks); with Model/recompute auto, what\n"
     "                         the recomputation chosen must fit (default: the machine's)\n"
     "  --machine FILE         a machine file (`hybrid3d calibrate` writes one): with\n"
     "                         Model/recompute auto, the segments that fit at the least\n"
     "                         predicted step time are chosen by it before the model is built\n"
     "The output directory is locked while a run writes it; a second run into it is refused.\n"
     "On SIGTERM, SIGUSR1, SIGINT or SIGHUP every rank stops after the current step, writes the\n"
     "checkpoint, the command that resumes the run is printed, and the exit status is 75\n"
     "(requeue on it).\n",
     "mpirun -n 2 hybrid3d train inputs/cosmoflow_demo.xml"},
    run};

}  // namespace
}  // namespace hybrid3d::app
