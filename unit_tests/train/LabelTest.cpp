// Every Kokkos label hybrid3d makes starts with "hybrid3d::" (as ArborX checks its own): the
// labels of Views, of kernels and of profiling regions are what a user sees in a Kokkos tool
// (Nsight, the space-time stack, the memory high-water mark), next to those of Kokkos itself and
// Kokkos-Kernels, and the prefix is how they tell ours apart.
//
// Recorded through the Kokkos Tools callbacks over what a run does: building CosmoFlow and the
// U-Net with their trainers, optimizers and loaders, training steps (halos on 2 ranks,
// gradient sums), a validation pass, a checkpoint written and read back.
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include <hybrid3d/train/Trainer.hpp>

#include "GridCases.hpp"
#include "TrainingSamples.hpp"

namespace hybrid3d::test {
namespace {

constexpr int S = 16;

std::set<std::string>& foreignLabels() {
  static std::set<std::string> labels;
  return labels;
}
int labelsSeen = 0;

// Labels of the libraries under us, not ours to name.
bool fromALibrary(const std::string& label) {
  for (const char* prefix : {"Kokkos::", "KokkosBlas", "KokkosKernels", "KokkosSparse"})
    if (label.rfind(prefix, 0) == 0) return true;
  return false;
}

void record(const char* kind, const char* name) {
  ++labelsSeen;
  const std::string label(name);
  if (label.rfind("hybrid3d::", 0) != 0 && !fromALibrary(label))
    foreignLabels().insert(std::string(kind) + " \"" + label + "\"");
}
void onKernel(const char* name, std::uint32_t, std::uint64_t*) { record("kernel", name); }
void onAllocate(const Kokkos_Profiling_SpaceHandle, const char* name, const void*, std::uint64_t) {
  record("view", name);
}
void onRegion(const char* name) { record("region", name); }

void recordLabels(bool on) {
  namespace tools = Kokkos::Tools::Experimental;
  tools::set_begin_parallel_for_callback(on ? onKernel : nullptr);
  tools::set_begin_parallel_reduce_callback(on ? onKernel : nullptr);
  tools::set_begin_parallel_scan_callback(on ? onKernel : nullptr);
  tools::set_allocate_data_callback(on ? onAllocate : nullptr);
  tools::set_push_region_callback(on ? onRegion : nullptr);
}

void runATrainer(const std::string& architecture, const std::string& optimizer) {
  const bool segmentation = architecture == "unet3d";
  const std::string dir = scratchDirectory("label_test", architecture);
  TrainConfig c;
  c.model.architecture = architecture;
  c.model.inputWidth = S;
  c.data.trainFiles = writeNoiseSamples(dir, segmentation, 4, S);
  c.data.train = "unused";
  c.data.validation = scratchDirectory("label_test", architecture + "_validation");
  writeNoiseSamples(c.data.validation, segmentation, 3, S, 6);
  c.globalBatch = 2;
  c.epochs = 1;
  c.optimizer = optimizer;
  c.outputDir = dir;
  c.printEvery = 1000000;
  ProcessGrid grid(MPI_COMM_WORLD, autoSpatialGrid(worldSize(), {S, S, S}));
  Trainer<float> trainer(grid, c);
  trainer.step();
  trainer.step();
  trainer.evaluate();
  trainer.saveCheckpoint(dir + "/checkpoint.h5");
  trainer.loadWeights(dir + "/checkpoint.h5");
}

TEST(Labels, EveryViewKernelAndRegionOfARunStartsWithTheProjectsName) {
  foreignLabels().clear();
  labelsSeen = 0;
  recordLabels(true);
  runATrainer("cosmoflow", "sgd");
  runATrainer("unet3d", "adam");
  recordLabels(false);
  EXPECT_GT(labelsSeen, 100) << "the callbacks saw too little: is the recording on?";
  std::string list;
  for (const std::string& l : foreignLabels()) list += "\n  " + l;
  EXPECT_TRUE(foreignLabels().empty())
      << foreignLabels().size() << " labels without the hybrid3d:: prefix:" << list;
}

}  // namespace
}  // namespace hybrid3d::test
