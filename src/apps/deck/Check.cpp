// `hybrid3d check DECK.xml`: the dry run (DryRun.hpp), the same as `hybrid3d train DECK.xml
// --dry-run`.
#include <hybrid3d/core/Error.hpp>
#include <hybrid3d/data/CollectiveVerdict.hpp>
#include <hybrid3d/deck/MachineDeck.hpp>

#include "../Command.hpp"
#include "../Options.hpp"
#include "AutoRecompute.hpp"
#include "DryRun.hpp"

namespace hybrid3d::app {
namespace {

int run(const std::vector<std::string>& args) {
  std::string deck;
  deck::DeckRun r;
  double memoryLimit = 0;
  std::string machineFile;  // empty: the fixed cost of a process is unknown
  Machine machine;
  // Agreed, so a mistake in them ends the run with one line on every rank (a WorldError).
  data::collectively(MPI_COMM_WORLD, [&] {
    for (std::size_t i = 0; i < args.size(); ++i) {
      const std::string& a = args[i];
      if (a == "--machine") {
        if (i + 1 >= args.size()) fail("check: --machine needs a value");
        machineFile = args[++i];
        continue;
      }
      if (a == "--memory-limit") {
        if (i + 1 >= args.size()) fail("check: --memory-limit needs a value");
        memoryLimit = memoryLimitOption("check", args[++i]);
        continue;
      }
      if (!a.empty() && a[0] == '-') fail("check: unknown option ", a);
      if (!deck.empty()) fail("check: more than one deck given");
      deck = a;
    }
    if (deck.empty()) fail("check: no deck given (hybrid3d check DECK.xml)");
    int world;
    MPI_Comm_size(MPI_COMM_WORLD, &world);
    r = deck::readTrainDeck(deck, world);
    if (!machineFile.empty()) machine = deck::readMachineDeck(machineFile);
  });
  const Machine* m = machineFile.empty() ? nullptr : &machine;
  resolveAutoRecompute(r, m, memoryLimit, "check");
  return dryRun(deck, r, memoryLimit, m);
}

const Registration reg{
    "check",
    {"DECK.xml [--machine FILE] [--memory-limit GiB]",
     "checks a training deck on these ranks without training and prints the plan",
     "Checks what `train` would refuse: the deck's keys and values, the spatial grid against\n"
     "every layer, the datasets' listings and each sample file's datasets, shapes and types\n"
     "(no sample contents are read, so NaN values and bad labels are found only by training).\n"
     "Prints per layer the output shape, the owned box per rank and the input ghost widths,\n"
     "then the memory of the ranks holding the most and the least (activations, their\n"
     "gradients, parameters, convolution workspace) and the steps per epoch, and what the\n"
     "largest rank holds besides (optimizer state, gradient reduction, data buffers, checkpoint\n"
     "staging, the fixed cost of a process) with its total: --machine FILE gives that fixed\n"
     "cost (Rank/fixed memory MiB, measured by `hybrid3d calibrate`); without it the total\n"
     "leaves it out and says so. Checks that every\n"
     "rank can create and write the output directory, and that the largest rank's memory times\n"
     "the ranks on each node fits the node's memory (--memory-limit GiB: per rank, instead).\n"
     "Writes nothing. With Model/recompute = auto, --machine FILE is needed: the recomputation\n"
     "that fits --memory-limit (default: the machine's memory per rank) at the least predicted\n"
     "step time is chosen first and printed.\n"
     "The same as `hybrid3d train DECK.xml --dry-run`.\n",
     "mpirun -n 2 hybrid3d check inputs/cosmoflow_demo.xml"},
    run};

}  // namespace
}  // namespace hybrid3d::app
