#include "CostText.hpp"

#include <algorithm>
#include <sstream>

#include "TextFormat.hpp"

namespace hybrid3d::app {

namespace {

double mib(double bytes) { return bytes / double(1 << 20); }
double ms(double seconds) { return 1e3 * seconds; }

// "12.3 KiB x 6": one exchange's bytes and neighbours ("-": none).
std::string exchangeText(double bytes, int ranks) {
  if (bytes == 0 && ranks == 0) return "-";
  return line("%.1f KiB x %d", bytes / 1024, ranks);
}
std::string exchangeText(const HaloTraffic& h) {
  return exchangeText(double(h.bytes), h.neighbours);
}
// A redistribution: the bytes sent (the more of sent and received where it gathers) and peers.
std::string exchangeText(const RedistributeTraffic& t) {
  return exchangeText(double(std::max(t.bytes, t.receivedBytes)), t.peers);
}

bool moves(const LayerCost& l) { return l.kind == "Redistribute"; }

// Model/recompute as resolved: "none", "all" or the ranges, ';' between them (a CSV cell).
std::string recomputeColumn(const RunPlan& r) {
  const RecomputeOption& o = r.model.options.recompute;
  if (o.mode == RecomputeOption::Mode::Ranges && o.ranges.empty()) return "none";
  std::string s = toString(o);
  std::replace(s.begin(), s.end(), ',', ';');
  return s;
}

}  // namespace

std::string costText(const RunPlan& run, const StepCost& c, bool timed) {
  std::ostringstream o;
  const Int3& k = c.coords;
  o << line("\n  cost per step of spatial rank (%d,%d,%d)%s\n", k[0], k[1], k[2],
            timed ? ", the slowest" : "");
  // Staged: a redistribution's two directions in the exchange columns, its time in its own.
  const bool staged = run.model.staged();
  // The names of redistributions ("pool3->conv4") may be longer than a layer's.
  int width = 14;
  // Keys too ("Conv3d 4>16 k3 s1 onednn first bfloat16").
  int keyWidth = 36;
  for (const LayerCost& l : c.layers) {
    width = std::max(width, int(l.name.size()));
    keyWidth = std::max(keyWidth, int(l.key.size()));
  }
  o << line("  %-*s %-*s %10s %12s %9s %9s %-18s %-18s", width, "layer", keyWidth, "key", "GFLOP",
            "work", "act MiB", "wksp MiB", staged ? "halo gather / fwd" : "halo gather",
            staged ? "halo scatter / adj" : "halo scatter");
  if (timed)
    o << line(" %11s %9s%s  %s", "compute ms", "halo ms", staged ? "  redist ms" : "", "from");
  o << "\n";
  auto row = [&](const LayerCost& l) {
    o << line("  %-*s %-*s %10.3f %12s %9.1f %9.1f %-18s %-18s", width, l.name.c_str(), keyWidth,
              l.key.c_str(), 1e-9 * l.flops, thousands((long long)l.work).c_str(),
              mib(double(l.memory.activations + l.memory.activationGradients)),
              mib(double(l.memory.workspace)),
              (moves(l) ? exchangeText(l.forward) : exchangeText(l.gather)).c_str(),
              (moves(l) ? exchangeText(l.adjoint) : exchangeText(l.scatter)).c_str());
    if (timed) {
      o << line(" %11.2f %9.2f", ms(l.computeSeconds), ms(l.haloSeconds));
      if (staged) o << line(" %10.2f", ms(l.redistributeSeconds));
      o << line("  %s", moves(l) ? "exchange" : l.calibrated ? "calibrated" : "peak rates");
    }
    o << "\n";
  };
  row(c.input);
  if (c.labels.forward.peers > 0 || c.labels.forward.touchedBytes > 0) row(c.labels);
  for (const LayerCost& l : c.layers) row(l);
  row(c.update);
  double flops = 0;
  for (const LayerCost& l : c.layers) flops += l.flops;
  o << line(
      "\n  per step on this rank: %.2f GFLOP; halo %s bytes sent; gradient reduction %s bytes "
      "in %d allreduce(s); reads %s bytes; memory %.1f MiB (the plan's total per rank "
      "but the host-side data cache and checkpoint staging)\n",
      1e-9 * flops, thousands((long long)c.haloBytes).c_str(),
      thousands((long long)c.allreduceBytes).c_str(), c.reductions,
      thousands((long long)c.ioBytes).c_str(), mib(double(c.memoryBytes)));
  if (staged)
    o << line(
        "  redistributions between layer grids: %s bytes sent per step (forward and adjoint)\n",
        thousands((long long)c.redistributeBytes).c_str());
  if (timed)
    o << line(
        "  predicted step %.1f ms = compute %.1f + halo %.1f + allreduce %.1f + exposed I/O "
        "%.1f (reading %.1f ms%s)%s; %.2f samples/s over %d rank(s)\n",
        ms(c.phases.step()), ms(c.phases.compute), ms(c.phases.halo), ms(c.phases.allreduce),
        ms(c.phases.io), ms(c.ioSeconds),
        c.cached       ? ", cached after the first epoch"
        : run.prefetch ? ", prefetched"
                       : "",
        staged ? line(" + redistribute %.1f", ms(c.phases.redistribute)).c_str() : "",
        c.samplesPerSecond, run.world);
  return o.str();
}

std::string recomputeText(const RunPlan& run, const StepCost& c, bool timed,
                          const LayoutChoice* chosen, double limitBytes) {
  if (c.recompute.empty() && !chosen) return "";
  std::ostringstream o;
  const std::string ranges = c.recompute.empty() ? "none" : toString(run.model.options.recompute);
  if (chosen)
    o << line("\n  recomputation (Model/recompute auto, for %.1f MiB per rank): %s%s\n",
              mib(limitBytes), ranges.c_str(),
              chosen->fits ? "" : " -- does not fit even with every segment recomputed");
  else
    o << line("\n  recomputation (Model/recompute %s)\n",
              toString(run.model.options.recompute).c_str());
  std::string again, gathered;
  double flops = 0, seconds = 0;
  std::size_t bytes = 0;
  for (const LayerCost& l : c.layers) {
    if (l.recomputed) again += (again.empty() ? "" : ", ") + l.name;
    if (l.regather.neighbours > 0) gathered += (gathered.empty() ? "" : ", ") + l.name;
    flops += l.recomputeFlops;
    bytes += l.regather.bytes;
    seconds += l.recomputeSeconds;
  }
  o << line("    forward again in the backward pass: %s (%.3f GFLOP on this rank)\n",
            again.empty() ? "none" : again.c_str(), 1e-9 * flops);
  o << line("    halos gathered again: %s (%s bytes sent)\n",
            gathered.empty() ? "none" : gathered.c_str(), thousands((long long)bytes).c_str());
  if (timed)
    o << line("    adds %.1f ms to the step of this rank (in its compute and halo times above)\n",
              ms(seconds));
  return o.str();
}

std::string layoutText(const std::vector<LayoutChoice>& layouts, std::size_t top,
                       double reference) {
  std::ostringstream o;
  o << line("  %-17s %10s %10s %8s %10s %8s %8s %10s %6s %9s %11s %8s\n", "layout G:DxHxW/K",
            "step ms", "compute", "halo", "allreduce", "redist", "I/O", "MiB/rank", "fits",
            "recompute", "samples/s", reference > 0 ? "speedup" : "");
  for (std::size_t i = 0; i < layouts.size() && i < top; ++i) {
    const LayoutChoice& c = layouts[i];
    const PhaseSeconds& p = c.cost.phases;
    // Recomputed segments: how many of `all`'s.
    const std::string recomputed =
        c.cost.recompute.empty()
            ? "-"
            : line("%zu/%zu", c.cost.recompute.size(), allSegments(c.run.model.stepGraph()).size());
    o << line("  %-17s %10.1f %10.1f %8.1f %10.1f %8.1f %8.1f %10.1f %6s %9s %11.2f",
              toString(c.layout).c_str(), ms(p.step()), ms(p.compute), ms(p.halo), ms(p.allreduce),
              ms(p.redistribute), ms(p.io), mib(double(c.memoryBytes)), c.fits ? "yes" : "no",
              recomputed.c_str(), c.cost.samplesPerSecond);
    if (reference > 0) o << line(" %7.2fx", reference / p.step());
    o << "\n";
  }
  return o.str();
}

std::string csvHeader() {
  return "deck,machine,architecture,size,batch,ranks,groups,grid,step_s,compute_s,halo_s,"
         "allreduce_s,io_s,memory_mib,samples_per_s,halo_bytes,allreduce_bytes,io_bytes,fits,"
         "layout,redistribute_s,redistribute_bytes,precision,recompute\n";
}

std::string csvRow(const std::string& deck, const std::string& machine, const LayoutChoice& c) {
  const RunPlan& r = c.run;
  const StepCost& s = c.cost;
  // Bytes of world rank 0, the rank whose step metrics.csv records; times of the slowest rank.
  const StepCost& first = c.firstRank;
  // New columns go last: scripts read them by name, older rows keep their places.
  return line(
      "%s,%s,%s,%d,%d,%d,%d,%dx%dx%d,%.6g,%.6g,%.6g,%.6g,%.6g,%.1f,%.6g,%llu,%llu,%llu,%d,%s,%.6g,"
      "%llu,%s,%s\n",
      deck.c_str(), machine.c_str(), r.model.options.architecture.c_str(),
      r.model.options.inputWidth, r.train.batch, r.world, r.groups, r.grid[0], r.grid[1], r.grid[2],
      s.phases.step(), s.phases.compute, s.phases.halo, s.phases.allreduce, s.phases.io,
      mib(double(c.memoryBytes)), s.samplesPerSecond, (unsigned long long)first.haloBytes,
      (unsigned long long)first.allreduceBytes, (unsigned long long)first.ioBytes, c.fits ? 1 : 0,
      toString(c.layout).c_str(), s.phases.redistribute,
      (unsigned long long)first.redistributeBytes, toString(r.precision),
      recomputeColumn(r).c_str());
}

}  // namespace hybrid3d::app
