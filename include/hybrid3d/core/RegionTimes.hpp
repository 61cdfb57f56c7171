#pragma once
/// \file
/// Time per Kokkos profiling region (wall clock, and the CPU time of the calling thread, which
/// other processes on a busy machine distort far less; MPI waits poll, so they count as CPU
/// time too), measured in-process through the Kokkos Tools region callbacks: where a training
/// step spends its time, node by node (model/Graph pushes "hybrid3d::node::forward NAME" and
/// "...backward NAME" around every node) and inside a node (Conv3d passes, halo gathers and
/// scatters push their own). Times are inclusive (a node's time contains its halo).
/// bench_train_step --regions prints them; `hybrid3d calibrate` turns them into layer timings.
///
/// While recording, every push and pop fences (Kokkos::fence()): kernels run asynchronously on a
/// GPU, and without the fence a region's time would be its launches', its kernels landing in
/// whichever region fences next. The fences cost little on a host backend and serialise a GPU
/// step, which is what timing it layer by layer needs. Recording allocates (a map keyed by
/// name), so it stays off while allocations are being counted; turn it on for the steps to be
/// timed only. Regions pushed by the main thread only (the callbacks keep one stack).

#include <time.h>

#include <map>
#include <string>
#include <vector>

#include <Kokkos_Core.hpp>
#include <mpi.h>

namespace hybrid3d {

class RegionTimes {
public:
  struct Times {
    double wall = 0, cpu = 0;  // seconds, summed over the region's passes
  };

  /// Registers the callbacks (once per process; they do nothing while recording is off).
  static void install() {
    Kokkos::Tools::Experimental::set_push_region_callback(onPush);
    Kokkos::Tools::Experimental::set_pop_region_callback(onPop);
  }
  static void record(bool on) {
    state().on = on;
    state().stack.clear();
  }
  static void clear() { state().seconds.clear(); }
  /// The regions recorded since the last clear(), by name.
  static const std::map<std::string, Times>& seconds() { return state().seconds; }

private:
  struct Open {
    std::string name;
    Times start;
  };
  struct State {
    bool on = false;
    std::vector<Open> stack;
    std::map<std::string, Times> seconds;
  };
  static Times now() {
    timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return {MPI_Wtime(), double(t.tv_sec) + 1e-9 * double(t.tv_nsec)};
  }
  static State& state() {
    static State s;
    return s;
  }
  static void onPush(const char* name) {
    if (!state().on) return;
    Kokkos::fence();  // what came before is not this region's
    state().stack.push_back({name, now()});
  }
  static void onPop() {
    State& s = state();
    if (!s.on || s.stack.empty()) return;
    Kokkos::fence();  // this region's kernels are done
    const Times t = now(), &t0 = s.stack.back().start;
    Times& acc = s.seconds[s.stack.back().name];
    acc.wall += t.wall - t0.wall;
    acc.cpu += t.cpu - t0.cpu;
    s.stack.pop_back();
  }
};

}  // namespace hybrid3d
