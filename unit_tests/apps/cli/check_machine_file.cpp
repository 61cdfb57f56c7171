// Test tool for `hybrid3d calibrate` (CalibrateWritesAMachineFile.cmake): checks a machine file
// against the model it was calibrated on, independently of the command.
//   check_machine_file MACHINE.xml DECK.xml SIZE
// The file must read back with deck::readMachineDeck; every rate must be positive; every layer of
// DECK's model at input width SIZE (local batch 1, one rank) must have a timing under its key
// (layerKey) holding a point at its size (countStep's work) with positive seconds. Prints one
// line per problem and exits 1, or prints "ok: ..." and exits 0.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>

#include <Kokkos_Core.hpp>
#include <mpi.h>

#include <hybrid3d/deck/MachineDeck.hpp>
#include <hybrid3d/deck/TrainDeck.hpp>
#include <hybrid3d/plan/LayoutSearch.hpp>
#include <hybrid3d/plan/RunPlan.hpp>
#include <hybrid3d/plan/StepCost.hpp>

namespace {

int problems = 0;

void problem(const std::string& what) {
  std::fprintf(stderr, "check_machine_file: %s\n", what.c_str());
  ++problems;
}

void positive(const char* key, double v) {
  if (!(v > 0)) problem(std::string(key) + " = " + std::to_string(v) + " is not positive");
}

int check(const std::string& machinePath, const std::string& deckPath, int size) {
  using namespace hybrid3d;
  const Machine m = deck::readMachineDeck(machinePath);
  const RankRates& r = m.rank;
  positive("Rank/float GFLOP/s", r.floatGflops);
  positive("Rank/double GFLOP/s", r.doubleGflops);
  positive("Rank/bfloat16 GFLOP/s", r.bfloat16Gflops);  // calibrate writes both 16-bit rates
  positive("Rank/half GFLOP/s", r.halfGflops);
  positive("Rank/convolution efficiency", r.convolutionEfficiency);
  positive("Rank/memory GB/s", r.memoryGBs);
  positive("Rank/memory efficiency", r.memoryEfficiency);
  positive("Rank/layer overhead us", r.layerOverheadUs);
  positive("Rank/memory GiB", r.memoryGiB);
  positive("Network/intra-node latency us", m.network.intraLatencyUs);
  positive("Network/intra-node GB/s", m.network.intraGBs);
  positive("Network/inter-node latency us", m.network.interLatencyUs);
  positive("Network/inter-node GB/s", m.network.interGBs);
  positive("File system/read GB/s per rank", m.fileSystem.readGBsPerRank);
  positive("File system/aggregate read GB/s", m.fileSystem.aggregateReadGBs);

  deck::DeckRun d = deck::readTrainDeck(deckPath, 1, false);
  d.config.model.inputWidth = size;
  d.config.globalBatch = 1;
  const RunPlan run = planRunIn(d.precision, d.config, {1, 1, 1}, 1, {"check", 1}, {});
  const StepCost counts = countStep(run, {0, 0, 0});
  for (std::size_t id = 0; id < run.model.layers.size(); ++id) {
    const std::string& name = run.model.layers[id].name;
    const std::string key = layerKey(run, int(id), {0, 0, 0});
    const LayerTiming* t = m.timing(key);
    if (!t) {
      problem("layer " + name + ": no timing for '" + key + "'");
      continue;
    }
    const auto at = std::find(t->voxels.begin(), t->voxels.end(), counts.layers[id].work);
    if (at == t->voxels.end())
      problem("layer " + name + ": '" + key + "' has no point at " +
              std::to_string(counts.layers[id].work) + " voxels");
    else if (!(t->seconds[std::size_t(at - t->voxels.begin())] > 0))
      problem("layer " + name + ": '" + key + "' has no positive time");
  }
  if (problems) return 1;
  std::printf("ok: %s reads back; %zu layers of %s at %d^3 timed under %zu keys\n",
              machinePath.c_str(), run.model.layers.size(), deckPath.c_str(), size,
              m.timings.size());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rc = 2;
  {
    Kokkos::ScopeGuard kokkos(argc, argv);  // planning asks the convolution engines
    if (argc != 4) {
      std::fprintf(stderr, "usage: check_machine_file MACHINE.xml DECK.xml SIZE\n");
    } else {
      try {
        rc = check(argv[1], argv[2], std::atoi(argv[3]));
      } catch (const std::exception& e) {
        std::fprintf(stderr, "check_machine_file: %s\n", e.what());
        rc = 1;
      }
    }
  }
  MPI_Finalize();
  return rc;
}
