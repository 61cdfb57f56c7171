// Uses the installed library: a grid, a ghosted tensor and one halo exchange.
#include <cstdio>

#include <hybrid3d/comm/Halo.hpp>

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
    std::printf("consumer: %s\n", ok ? "ok" : "wrong");
  }
  MPI_Finalize();
  return ok ? 0 : 1;
}
