// Uses the installed library: a grid, a ghosted tensor and one halo exchange; and the model
// registry, whose built-in architectures must reach a program linking the static archive.
#include <cstdio>
#include <vector>

#include <hybrid3d/comm/Halo.hpp>
#include <hybrid3d/model/ModelPlan.hpp>

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int ok = 0;
  {
    Kokkos::ScopeGuard kokkos(argc, argv);
    hybrid3d::ProcessGrid grid(MPI_COMM_WORLD, {1, 1, 1});
    const hybrid3d::BlockDecomposition dec({4, 4, 4}, grid.dims());
    auto t = hybrid3d::createDistTensor<double>("x", 1, 1, dec, grid.coords(),
                                                hybrid3d::GhostWidths::uniform(1));
    Kokkos::deep_copy(t.view(), 3.0);
    hybrid3d::createHalo(grid, t)->gather(hybrid3d::DefaultExecutionSpace(), t);
    auto h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), t.view());
    ok = h(0, 0, 0, 1, 1) == 0.0 && h(0, 0, 1, 1, 1) == 3.0;  // padding zero, owned kept
    const std::vector<std::string> expected = {"cosmoflow", "cosmoflow_mlperf", "unet3d"};
    hybrid3d::ModelOptions o;
    o.architecture = "unet3d";
    o.inputWidth = 16;
    const bool registry = hybrid3d::architectureNames() == expected &&
                          hybrid3d::planModel(o, {1, 1, 1}).layers.back().name == "head";
    std::printf("consumer: %s, registry %s\n", ok ? "ok" : "wrong", registry ? "ok" : "wrong");
    ok = ok && registry;
  }
  MPI_Finalize();
  return ok ? 0 : 1;
}
