#include "PlanText.hpp"

#include <algorithm>
#include <sstream>

#include <hybrid3d/data/BatchLoader.hpp>
#include <hybrid3d/plan/RankMemory.hpp>
#include <hybrid3d/plan/StepCost.hpp>

#include "TextFormat.hpp"

namespace hybrid3d::app {

namespace {

std::string extents(const Index3& e) {
  return std::to_string(e[0]) + "x" + std::to_string(e[1]) + "x" + std::to_string(e[2]);
}

std::string shapeText(const LayerPlan& l) {
  return l.volume ? std::to_string(l.output.channels) + "x" + extents(l.output.extents)
                  : std::to_string(l.output.channels);
}

std::string boxText(const LayerPlan& l) {
  if (!l.volume) return "(replicated)";
  const BoxRange r = ownedBoxRange(l.output.extents, l.grid);
  return r.smallest == r.largest ? extents(r.smallest)
                                 : extents(r.smallest) + ".." + extents(r.largest);
}

// One side's widths along d, h, w: "1x1x1", or "1-2x1x1" where ranks along d need 1 or 2
// (widths are per rank: a strided window overhangs uneven blocks by different amounts).
std::string sideText(const GhostMap& g, bool low) {
  std::string out;
  for (int i = 0; i < 3; ++i) {
    int least = 0, most = 0;
    for (int k = 0; k < g.dims()[i]; ++k) {
      const int w = low ? g.lo(i, k) : g.hi(i, k);
      least = k == 0 ? w : std::min(least, w);
      most = std::max(most, w);
    }
    if (i > 0) out += "x";
    out +=
        least == most ? std::to_string(most) : std::to_string(least) + "-" + std::to_string(most);
  }
  return out;
}

std::string ghostText(const LayerPlan& l) {
  std::string out;
  for (const GhostMap& g : l.inputGhosts) {
    if (!out.empty()) out += ", ";
    out += g.none() ? "-" : sideText(g, true) + " / " + sideText(g, false);
  }
  return out;
}

double mib(std::size_t bytes) { return double(bytes) / double(1 << 20); }

// `buffers`: a column for the redistributions' buffers (a model on layer grids).
std::string memoryRow(const std::string& which, const GraphMemory& m, bool buffers) {
  return line("  %-18s %12.1f %12.1f %11.1f %10.1f", which.c_str(), mib(m.activations),
              mib(m.activationGradients), mib(m.parameters), mib(m.workspace)) +
         (buffers ? line(" %10.1f", mib(m.buffers)) : "") + line(" %11.1f\n", mib(m.total()));
}

// The layer-grid rule the model was planned with, as a deck gives it.
std::string ruleText(const LayerGridRule& r) {
  std::string t = toString(r.entries);
  if (r.minimumBoxWidth > 0)
    t += (t.empty() ? "" : "; the others ") +
         line("minimum box width %d (the finest coarsening with input boxes >= %d wide)",
              r.minimumBoxWidth, r.minimumBoxWidth);
  return t;
}

// Bytes a redistribution sends per step, forward and adjoint: on the group rank sending the
// most, and over the group (the groups repeat it).
struct MovedBytes {
  std::size_t most = 0, total = 0;
};
MovedBytes movedBytes(const RunPlan& p, int id) {
  MovedBytes m;
  const Int3& g = p.grid;
  for (int d = 0; d < g[0]; ++d)
    for (int h = 0; h < g[1]; ++h)
      for (int w = 0; w < g[2]; ++w) {
        const std::size_t b = redistributionTraffic(p, id, {d, h, w}, false).bytes +
                              redistributionTraffic(p, id, {d, h, w}, true).bytes;
        m.most = std::max(m.most, b);
        m.total += b;
      }
  return m;
}

std::string setText(const char* what, const SetPlan& s, int groups) {
  std::string t = line("  %-11s%s samples in %s: mini-batch %d", what,
                       thousands(s.listing.samples).c_str(), s.listing.source.c_str(), s.batch);
  if (groups > 1) t += line(" (%d per group)", s.localBatch);
  t += line(", %s steps per epoch", thousands(s.steps).c_str());
  if (s.keepsPartialBatch)
    t += s.listing.samples % s.batch ? " (every sample once, the last mini-batch partial)"
                                     : " (every sample once)";
  return t;
}

// What spatial rank `rank` holds besides its model, row by row, and its total: the plan's rows
// (RankMemory.hpp) and the fixed cost of a process, or that it is unknown.
std::string rankRows(const RunPlan& p, int rank) {
  const Int3 coords{rank / (p.grid[1] * p.grid[2]), (rank / p.grid[2]) % p.grid[1],
                    rank % p.grid[2]};
  const RankMemory m = rankMemory(p, coords);
  std::string t = line("  rank %d besides its model (MiB)\n", rank);
  auto row = [&](const char* what, double bytes, const std::string& note) {
    t += line("    %-22s %9.1f  %s\n", what, mib(std::size_t(bytes)), note.c_str());
  };
  row("optimizer state", double(m.state.optimizer),
      line("%d value(s) per parameter value", p.optimizerStates));
  row("gradient reduction", double(m.state.reduction),
      p.stateSharding == StateSharding::Gradients ? "the reduce-scatter's parts of the sums"
                                                  : "MPI's copy of the gradients summed");
  row("data buffers", double(m.data),
      line("%d staging batches per set", data::BatchLoader::stagingBatches));
  if (m.cache > 0) row("data cache", double(m.cache), "each set's, at most the deck's budget");
  row("checkpoint staging", double(m.checkpoint), "each rank writes its own parts; device copy");
  if (m.fixedKnown())
    row("fixed per process", m.fixedBytes, "measured: the machine file's Rank/fixed memory MiB");
  else
    t += line("    %-22s %9s  %s\n", "fixed per process", "unknown",
              "no machine file giving Rank/fixed memory MiB (hybrid3d calibrate measures it)");
  t += line("  %-24s %9.1f  %s\n", "total per rank", mib(m.total()),
            m.fixedKnown() ? "what the rank's peak resident memory reaches"
                           : "without the fixed cost of a process: more in fact");
  return t;
}

}  // namespace

std::string planText(const RunPlan& p) {
  std::ostringstream o;
  const ModelPlan& m = p.model;
  o << line("  layout     %d rank(s) = %d data-parallel group(s) x spatial grid %s, %s\n", p.world,
            p.groups, extents({p.grid[0], p.grid[1], p.grid[2]}).c_str(), toString(p.precision));
  o << line("  model      %s, input %dx%d^3, %s parameters\n", m.options.architecture.c_str(),
            m.input.channels, m.options.inputWidth, thousands(m.parameterCount()).c_str());
  o << setText("training", p.train, p.groups)
    << line(", %d epoch(s): %s steps\n", p.epochs, thousands(p.totalSteps).c_str());
  if (p.validation.listing.samples > 0)
    o << setText("validation", p.validation, p.groups) << "\n";
  else
    o << "  validation none\n";

  // On layer grids: each layer's grid (x its sub-grids), and under each redistribution what it
  // sends per step.
  const bool staged = m.staged();
  const int P = p.grid[0] * p.grid[1] * p.grid[2];
  if (staged) o << line("  layer grids %s\n", ruleText(m.options.layerGrids).c_str());
  // The names of redistributions ("pool3->conv4") may be longer than a layer's.
  int width = 14;
  for (const LayerPlan& l : m.layers) width = std::max(width, int(l.name.size()));
  o << line("\n  %-*s %-16s ", width, "layer", "kind") + (staged ? line("%-12s ", "grid") : "") +
           line("%-18s %-24s %-27s %12s\n", "output C x DxHxW", "owned box per rank",
                "input ghosts (low / high)", "parameters");
  for (int id = 0; id < int(m.layers.size()); ++id) {
    const LayerPlan& l = m.layers[id];
    o << line("  %-*s %-16s ", width, l.name.c_str(), l.kind.c_str()) +
             (staged ? line("%-12s ", LayerLayout(l.grid, P).describe().c_str()) : "") +
             line("%-18s %-24s %-27s %12s\n", shapeText(l).c_str(), boxText(l).c_str(),
                  ghostText(l).c_str(), thousands(l.parameters).c_str());
    if (l.kind != "Redistribute") continue;
    const MovedBytes b = movedBytes(p, id);
    o << line(
        "  %-*s %s -> %s: sends %.1f MiB per step in a group (forward + adjoint), at "
        "most %.1f MiB from one rank\n",
        width, "", m.layout(l.inputs.at(0)).describe().c_str(), m.layout(id).describe().c_str(),
        mib(b.total), mib(b.most));
  }

  o << line("\n  memory per rank (MiB, batch %d per group)\n", m.input.batch);
  o << line("  %-18s %12s %12s %11s %10s", "", "activations", "gradients", "parameters",
            "workspace") +
           (staged ? line(" %10s", "buffers") : "") + line(" %11s\n", "model");
  const int most = p.largestRank(), least = p.smallestRank();
  const GraphMemory &a = p.memory.at(most), &b = p.memory.at(least);
  if (a.total() == b.total()) {
    o << memoryRow(p.memory.size() > 1 ? "every rank" : "rank 0", a, staged);
  } else {
    o << memoryRow("largest: rank " + std::to_string(most), a, staged);
    o << memoryRow("smallest: rank " + std::to_string(least), b, staged);
  }
  o << line("  activation gradients: %.1f MiB placed in %.1f MiB by their lives (rank %d)\n",
            mib(a.activationGradientBuffers), mib(a.activationGradients), most);
  o << rankRows(p, most);
  return o.str();
}

}  // namespace hybrid3d::app
