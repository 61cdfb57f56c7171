// `hybrid3d train DECK.xml [--restart CHECKPOINT] [--max-steps N]`: trains the deck's model,
// generating its synthetic dataset first when the deck has a Data/Generate section and the
// dataset's manifest is not there yet.
#include <cstdio>
#include <filesystem>

#include <hybrid3d/core/Error.hpp>
#include <hybrid3d/train/Trainer.hpp>

#include "../Command.hpp"
#include <hybrid3d/io/deck/TrainDeck.hpp>

namespace hybrid3d::app {
using io::DeckRun;
using io::readTrainDeck;
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
    std::printf("hybrid3d: generating %lld training and %lld validation %s samples of %lld^3 in %s\n",
                static_cast<long long>(r.generation.train),
                static_cast<long long>(r.generation.validation), r.generation.generator.c_str(),
                static_cast<long long>(r.generation.size), r.generation.outDir.c_str());
  io::generate::generateDataset(MPI_COMM_WORLD, r.generation);
}

template <class T>
void train(const DeckRun& r) {
  ProcessGrid grid(MPI_COMM_WORLD, r.spatialGrid);
  Trainer<T> trainer(grid, r.config);
  trainer.run();
}

int run(const std::vector<std::string>& args) {
  std::string deck, restart;
  long long maxSteps = -2;
  for (std::size_t i = 0; i < args.size(); ++i) {
    auto value = [&]() -> const std::string& {
      if (i + 1 >= args.size()) fail("train: ", args[i], " needs a value");
      return args[++i];
    };
    if (args[i] == "--restart")
      restart = value();
    else if (args[i] == "--max-steps")
      maxSteps = std::stoll(value());
    else if (!args[i].empty() && args[i][0] == '-')
      fail("train: unknown option ", args[i]);
    else if (deck.empty())
      deck = args[i];
    else
      fail("train: more than one deck given");
  }
  if (deck.empty()) fail("train: no deck given (hybrid3d train DECK.xml)");
  int world;
  MPI_Comm_size(MPI_COMM_WORLD, &world);
  DeckRun r = readTrainDeck(deck, world);
  if (!restart.empty()) r.config.restartFrom = restart;
  if (maxSteps >= -1) r.config.maxSteps = maxSteps;
  ensureGenerated(r);
  if (r.precision == "double")
    train<double>(r);
  else
    train<float>(r);
  return 0;
}

const Registration reg{
    "train",
    {"DECK.xml [--restart CHECKPOINT] [--max-steps N]",
     "trains the deck's model; writes checkpoint.h5 and metrics.csv in its output directory",
     "  --restart CHECKPOINT   continue from this checkpoint's step\n"
     "  --max-steps N          stop after N steps (overrides Training/max steps)\n",
     "mpirun -n 2 hybrid3d train inputs/cosmoflow_demo.xml"},
    run};

}  // namespace
}  // namespace hybrid3d::app
