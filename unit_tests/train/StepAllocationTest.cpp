// No allocation inside the training loop (docs/design.md sections 9 and 10: first touch of fresh
// pages costs more than the arithmetic on these machines). Trainer::step() on small CosmoFlow
// and U-Net runs, read from sample files as in training: every step after the first must make
// no Kokkos allocation and no C++ heap allocation of ours.
//
// What is not ours is counted apart (perf_tests/step/AllocationCounter.hpp) and printed:
// operator new inside oneDNN's own primitive execute (it builds its own argument map every
// call; we pass it a plain array) and the kernel-label strings Kokkos builds from literals at
// each launch in layer code (tiny, freed at once; removed where a label is made once).
// The data loader's prefetch thread, which opens and reads the next batch's files while the
// step computes, is counted apart and printed too. Aligned operator new and C malloc (HDF5,
// MPI) are not counted.
// Nor may the step touch fresh memory: minor page faults of the thread that runs it, from the
// third step on (the C heap settles during the second). A non-blocking allreduce set up per
// call mallocs its scratch buffer each time, megabytes that glibc maps afresh whenever it gave
// them back: before the gradient sums became persistent requests (comm/PersistentSum.hpp),
// about 5,500 pages per CosmoFlow step on 2x1x1 and 2x2x1 x 2 groups, and in other runs 1,334
// per U-Net step on 1x1x1 x 2 (it depends on timing). What is left is MPI's transport growing
// its shared-memory fragment lists when more messages are in flight than before: 0-3 pages on
// 2 and 4 ranks, up to 70 on 8 oversubscribed ranks.
#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <sys/resource.h>

#include <hybrid3d/train/Trainer.hpp>

#include "AllocationCounter.hpp"
#include "GridCases.hpp"
#include "TrainingSamples.hpp"

namespace hybrid3d::test {
namespace {

constexpr int S = 16;

// Pages the calling thread touched for the first time so far (the loader's thread is not it).
long long minorFaultsOfThisThread() {
  rusage u{};
  getrusage(RUSAGE_THREAD, &u);
  return u.ru_minflt;
}
// Stray first touches a step may make (MPI's fragment lists, a deeper stack frame): up to 70
// pages measured; one buffer mapped afresh is hundreds to thousands.
constexpr long long kStrayPagesPerStep = 256;

long long kokkosAllocations = 0;
void onAllocate(const Kokkos_Profiling_SpaceHandle, const char*, const void*, const std::uint64_t) {
  ++kokkosAllocations;
}

// Runs `steps` training steps and checks every one after the first on every rank; with
// `layerGrids`, on a staged layout (its redistributions' buffers set up once too); with
// `recompute` (Model/recompute), recomputing in the backward pass.
void expectNoAllocationAfterTheFirstStep(const std::string& architecture,
                                         const std::string& optimizer,
                                         const std::string& layerGrids = "",
                                         const std::string& recompute = "none") {
  const bool segmentation = architecture == "unet3d";
  const std::string dir =
      scratchDirectory("step_allocation_test",
                       architecture + "_" + optimizer + (layerGrids.empty() ? "" : "_staged") +
                           "_recompute_" + (recompute == "none" ? "none" : "some"));
  TrainConfig c;
  c.model.architecture = architecture;
  c.model.inputWidth = S;
  c.model.seed = 2;
  c.data.trainFiles = writeNoiseSamples(dir, segmentation, 8, S);
  c.data.train = "unused";
  c.globalBatch = 2;
  c.epochs = 100;
  c.optimizer = optimizer;
  c.outputDir = dir;
  c.printEvery = 1000000;
  c.model.layerGrids.entries = parseLayerGridEntries(layerGrids);
  c.model.recompute = parseRecompute(recompute);
  // One sample per group where the world splits into two groups, the rest spatial; a staged
  // layout keeps two ranks or more per group, so that it has something to redistribute.
  const bool staged = !layerGrids.empty();
  const int groups = worldSize() % 2 == 0 && (!staged || worldSize() >= 4) ? 2 : 1;
  if (staged && worldSize() / groups < 2) GTEST_SKIP() << "a staged layout needs 2 ranks or more";
  ProcessGrid grid(MPI_COMM_WORLD, autoSpatialGrid(worldSize() / groups, {S, S, S}));
  Trainer<float> trainer(grid, c);

  Kokkos::Tools::Experimental::set_allocate_data_callback(onAllocate);
  trainer.step();  // the first step may allocate (lazy set-up in libraries)
  constexpr int steps = 4;
  // Not ours, printed: kernel-label strings, inside oneDNN, on the loader's thread; and the
  // pages first touched per step.
  long long worst[4] = {0, 0, 0, 0};
  for (int s = 0; s < steps; ++s) {
    const long long k0 = kokkosAllocations, f0 = minorFaultsOfThisThread();
    const bench::AllocationCounts n0 = bench::allocationCounts();
    trainer.step();
    const bench::AllocationCounts n = bench::allocationCounts() - n0;
    long long got[6] = {
        kokkosAllocations - k0,        n.unexplained(), n.labels, n.vendor, n.otherThreads,
        minorFaultsOfThisThread() - f0};
    MPI_Allreduce(MPI_IN_PLACE, got, 6, MPI_LONG_LONG, MPI_MAX, MPI_COMM_WORLD);
    EXPECT_EQ(got[0], 0) << architecture << ": Kokkos allocations in step " << s + 2;
    EXPECT_EQ(got[1], 0) << architecture << ": operator new calls of ours in step " << s + 2
                         << " (beside " << got[2] << " kernel-label strings and " << got[3]
                         << " inside oneDNN)";
    if (s > 0) {
      EXPECT_LE(got[5], kStrayPagesPerStep)
          << architecture << ": pages touched for the first time in step " << s + 2;
      worst[3] = std::max(worst[3], got[5]);
    }
    for (int i = 0; i < 3; ++i) worst[i] = std::max(worst[i], got[2 + i]);
  }
  Kokkos::Tools::Experimental::set_allocate_data_callback(nullptr);
  if (worldRank() == 0)
    std::printf(
        "%s, %s, grid %s x %d groups: per step, not counted against the step: %lld "
        "kernel-label strings, %lld operator new inside oneDNN, %lld on the loader's "
        "thread; at most %lld pages first touched in a step from the third on\n",
        architecture.c_str(), optimizer.c_str(), toString(grid.dims()).c_str(), grid.numGroups(),
        worst[0], worst[1], worst[2], worst[3]);
}

TEST(StepAllocation, CosmoFlowStepAllocatesNothingAfterTheFirst) {
  expectNoAllocationAfterTheFirstStep("cosmoflow", "sgd");
}

TEST(StepAllocation, UNetStepWithAdamAllocatesNothingAfterTheFirst) {
  expectNoAllocationAfterTheFirstStep("unet3d", "adam");
}

TEST(StepAllocation, StagedCosmoFlowStepAllocatesNothingAfterTheFirst) {
  // The deep layers and the dense head on one rank per sub-grid: redistributions both ways.
  expectNoAllocationAfterTheFirstStep("cosmoflow", "adam", "conv3..fc3=1x1x1");
}

TEST(StepAllocation, StagedCosmoFlowStepWithRecomputationAllocatesNothingAfterTheFirst) {
  // Every segment recomputed inside the backward pass, the redistributions in the segments too.
  expectNoAllocationAfterTheFirstStep("cosmoflow", "sgd", "conv3..fc3=1x1x1", "all");
}

}  // namespace
}  // namespace hybrid3d::test
