#pragma once
// Time per Kokkos profiling region (wall clock, and the CPU time of the calling thread, which
// other processes on a busy machine distort far less; MPI waits poll, so they count as CPU
// time too), measured in-process through the Kokkos Tools region callbacks: where a training
// step spends its time, node by node (model/Graph pushes "hybrid3d::node::forward NAME" and
// "...backward NAME" around every node) and inside a node (Conv3d passes, halo gathers and
// scatters push their own). Times are inclusive (a node's time contains its halo). Recording
// allocates (a map keyed by name), so it stays off while allocations are being counted; turn
// it on for the steps to be profiled only.

#include <time.h>

#include <algorithm>
#include <cstdio>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include <Kokkos_Core.hpp>
#include <mpi.h>

namespace hybrid3d::bench {

class RegionProfile {
public:
  // Registers the callbacks (once per process; they do nothing while recording is off).
  static void install() {
    Kokkos::Tools::Experimental::set_push_region_callback(onPush);
    Kokkos::Tools::Experimental::set_pop_region_callback(onPop);
  }
  static void record(bool on) {
    state().on = on;
    state().stack.clear();
  }
  static void clear() { state().seconds.clear(); }

  // Prints the regions of this rank, slowest first, as ms per step and share of `stepMs`,
  // down to `minShare` of the step.
  static void print(int steps, double stepMs, double minShare = 0.005) {
    std::vector<std::pair<double, std::string>> rows;
    for (const auto& [name, s] : state().seconds) rows.push_back({1e3 * s.wall / steps, name});
    std::sort(rows.rbegin(), rows.rend());
    std::printf(
        "  time per region (rank 0, inclusive, ms per step, %% of the step, thread CPU "
        "ms per step):\n");
    for (const auto& [ms, name] : rows) {
      if (ms < minShare * stepMs) break;
      std::printf("    %9.2f  %5.1f%%  %9.2f  %s\n", ms, 100.0 * ms / stepMs,
                  1e3 * state().seconds[name].cpu / steps, name.c_str());
    }
  }

private:
  struct Times {
    double wall = 0, cpu = 0;
  };
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
    if (state().on) state().stack.push_back({name, now()});
  }
  static void onPop() {
    State& s = state();
    if (!s.on || s.stack.empty()) return;
    const Times t = now(), &t0 = s.stack.back().start;
    Times& acc = s.seconds[s.stack.back().name];
    acc.wall += t.wall - t0.wall;
    acc.cpu += t.cpu - t0.cpu;
    s.stack.pop_back();
  }
};

}  // namespace hybrid3d::bench
