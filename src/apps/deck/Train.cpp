// `hybrid3d train DECK.xml [--restart CHECKPOINT] [--max-steps N] [--dry-run]`: trains the deck's
// model, generating its synthetic dataset first when the deck has a Data/Generate section and the
// dataset's manifest is not there yet. Preempted (SIGTERM or SIGUSR1), it writes its
// checkpoint, prints the command that resumes it and exits with PreemptedExitStatus (75).
// Hidden option for tests: --test-signal-at STEPS[:RANK] raises SIGTERM in-process on world
// rank RANK (default 0; -1: every rank) once STEPS steps are done. --dry-run: `hybrid3d check`
// (DryRun.hpp) instead of training.
#include <cctype>
#include <cstdio>
#include <filesystem>

#include <hybrid3d/core/Error.hpp>
#include <hybrid3d/data/CollectiveVerdict.hpp>
#include <hybrid3d/train/Preemption.hpp>
#include <hybrid3d/train/Trainer.hpp>

#include "../Command.hpp"
#include "../Options.hpp"
#include "DryRun.hpp"
#include <hybrid3d/deck/TrainDeck.hpp>

namespace hybrid3d::app {
using deck::DeckRun;
using deck::readTrainDeck;
namespace {

// Generates the deck's dataset unless a complete one is there (rank 0 looks, all agree).
void ensureGenerated(const DeckRun& r) {
  if (!r.generate) return;
  int rank, have = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  if (rank == 0) have = std::filesystem::exists(r.generation.outDir + "/manifest.txt");
  MPI_Bcast(&have, 1, MPI_INT, 0, MPI_COMM_WORLD);
  if (have) return;
  if (rank == 0)
    std::printf(
        "hybrid3d: generating %lld training and %lld validation %s samples of %lld^3 in %s\n",
        static_cast<long long>(r.generation.train), static_cast<long long>(r.generation.validation),
        r.generation.generator.c_str(), static_cast<long long>(r.generation.size),
        r.generation.outDir.c_str());
  generate::generateDataset(MPI_COMM_WORLD, r.generation);
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
// --restart replaced (and the test hook dropped).
std::string resumeCommand(const std::vector<std::string>& args, const std::string& checkpoint) {
  int world;
  MPI_Comm_size(MPI_COMM_WORLD, &world);
  std::error_code ec;
  std::string program = std::filesystem::read_symlink("/proc/self/exe", ec).string();
  if (ec || program.empty()) program = "hybrid3d";
  std::string cmd = "mpirun -n " + std::to_string(world) + " " + shellWord(program) + " train";
  for (std::size_t i = 0; i < args.size(); ++i) {
    if (args[i] == "--restart" || args[i] == "--test-signal-at") {
      ++i;
      continue;
    }
    cmd += " " + shellWord(args[i]);
  }
  return cmd + " --restart " + shellWord(checkpoint);
}

template <class T>
int train(const DeckRun& r, const std::vector<std::string>& args) {
  ProcessGrid grid(MPI_COMM_WORLD, r.spatialGrid);
  Trainer<T> trainer(grid, r.config);
  if (trainer.run().stoppedBySignal == 0) return 0;
  if (grid.worldRank() == 0) {
    std::printf("hybrid3d: resume with: %s\n",
                resumeCommand(args, trainer.checkpointPath()).c_str());
    std::fflush(stdout);
  }
  return PreemptedExitStatus;
}

// The run the options and the deck describe (every rank reads them alike).
DeckRun readRun(const std::vector<std::string>& args, std::string& deck, bool& dryRun) {
  std::string restart, signalAt;
  long long maxSteps = -1;
  bool maxStepsGiven = false;
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
    else if (args[i] == "--dry-run")
      dryRun = true;
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
  if (maxSteps < -1) fail("train: --max-steps ", maxSteps, " (give N >= 0, or -1: no limit)");
  int world;
  MPI_Comm_size(MPI_COMM_WORLD, &world);
  DeckRun r = readTrainDeck(deck, world);
  if (!restart.empty()) r.config.restartFrom = restart;
  if (maxStepsGiven) r.config.maxSteps = maxSteps;
  if (!signalAt.empty()) {  // STEPS[:RANK]
    const std::size_t colon = signalAt.find(':');
    r.config.testSignalStep = integerOption("train", "--test-signal-at", signalAt.substr(0, colon));
    r.config.testSignalRank =
        colon == std::string::npos
            ? 0
            : int(integerOption("train", "--test-signal-at", signalAt.substr(colon + 1)));
  }
  return r;
}

int run(const std::vector<std::string>& args) {
  DeckRun r;
  std::string deck;
  bool dry = false;
  // Agreed, so a mistake in them ends the run with one line on every rank (a WorldError).
  data::collectively(MPI_COMM_WORLD, [&] { r = readRun(args, deck, dry); });
  if (dry) return dryRun(deck, r);
  ensureGenerated(r);
  return r.precision == "double" ? train<double>(r, args) : train<float>(r, args);
}

const Registration reg{
    "train",
    {"DECK.xml [--restart CHECKPOINT] [--max-steps N] [--dry-run]",
     "trains the deck's model; writes checkpoint.h5 and metrics.csv in its output directory",
     "  --restart CHECKPOINT   continue from this checkpoint's step\n"
     "  --max-steps N          stop after N steps (overrides Training/max steps)\n"
     "  --dry-run              check the deck, grid and data and print the plan, without\n"
     "                         training (the same as `hybrid3d check DECK.xml`)\n"
     "On SIGTERM or SIGUSR1 every rank stops after the current step, writes the checkpoint, the\n"
     "command that resumes the run is printed, and the exit status is 75 (requeue on it).\n",
     "mpirun -n 2 hybrid3d train inputs/cosmoflow_demo.xml"},
    run};

}  // namespace
}  // namespace hybrid3d::app
