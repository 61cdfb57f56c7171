#include <algorithm>
#include <cmath>

#include <hybrid3d/core/Error.hpp>
#include <hybrid3d/model/Recompute.hpp>
#include <hybrid3d/plan/RankMemory.hpp>
#include <hybrid3d/plan/RecomputeChoice.hpp>

namespace hybrid3d {

namespace {

Int3 coordsOf(int rank, const Int3& grid) {
  return {rank / (grid[1] * grid[2]), rank / grid[2] % grid[1], rank % grid[2]};
}
int rankOf(const Int3& c, const Int3& grid) { return (c[0] * grid[1] + c[1]) * grid[2] + c[2]; }

// The activations of `model` on the rank at `coords` in precision `p`, placed by its option.
GraphMemory activationsIn(Precision p, const ModelPlan& model, const Int3& coords) {
  return withPrecision(p, [&](auto tag) {
    return predictMemoryBeforeEngines<typename decltype(tag)::type, DefaultMemorySpace>(model,
                                                                                        coords);
  });
}

// Weighs sets of segments on `base` (planned without recomputation).
struct Weigher {
  Weigher(const RunPlan& base, const Machine& machine, double limit, const IoModel& io,
          MemoryCounted counted)
      : base(base), limit(limit) {
    const Int3& g = base.grid;
    ranks = {{0, 0, 0},
             {g[0] / 2, g[1] / 2, g[2] / 2},
             {g[0] - 1, g[1] - 1, g[2] - 1},
             coordsOf(base.largestRank(), g)};
    for (const Int3& c : ranks) {
      const RankMemory held = rankMemory(base, c);
      const std::size_t hostOnly =
          counted == MemoryCounted::Planner ? held.cache + held.checkpoint : 0;
      heldBesides.push_back(held.total() - hostOnly -
                            base.memory.at(std::size_t(rankOf(c, g))).activations);
    }
    segments = allSegments(base.model.stepGraph());
    baseSeconds = predictSlowestRank(base, machine, io).phases.step();
    // What each segment's recomputation costs: the same whichever others are recomputed.
    const StepCost all =
        predictSlowestRank(withRecompute(base, rangesOf(base.model, segments)), machine, io);
    for (const RecomputeSegment& s : segments) {
      double t = 0;
      for (int k = s.first; k <= s.last; ++k) t += all.layers.at(std::size_t(k)).recomputeSeconds;
      seconds.push_back(t);
    }
  }

  // The set of segments by their indices in `segments`.
  RecomputeCandidate weigh(const std::vector<int>& chosen) const {
    RecomputeCandidate c;
    c.seconds = baseSeconds;
    for (int i : chosen) {
      c.segments.push_back(segments[std::size_t(i)]);
      c.seconds += seconds[std::size_t(i)];
    }
    std::sort(
        c.segments.begin(), c.segments.end(),
        [](const RecomputeSegment& a, const RecomputeSegment& b) { return a.first < b.first; });
    ModelPlan model = base.model;
    model.options.recompute = rangesOf(model, c.segments);
    for (std::size_t r = 0; r < ranks.size(); ++r)
      c.memoryBytes =
          std::max(c.memoryBytes,
                   heldBesides[r] + activationsIn(base.precision, model, ranks[r]).activations);
    c.fits = limit <= 0 || double(c.memoryBytes) <= limit;
    return c;
  }

  const RunPlan& base;
  double limit;
  std::vector<Int3> ranks;
  std::vector<std::size_t> heldBesides;  // each weighed rank's memory but its activations
  std::vector<RecomputeSegment> segments;
  std::vector<double> seconds;  // per segment
  double baseSeconds = 0;
};

// From nothing, a segment per round: the fastest addition that fits, else the one saving the
// most memory per second; returns the chosen indices (all of them fit: the caller checked).
std::vector<int> grow(const Weigher& w, RecomputeChoice& choice, RecomputeCandidate& current) {
  std::vector<int> chosen;
  while (!current.fits && chosen.size() < w.segments.size()) {
    int fastest = -1, thriftiest = -1;
    RecomputeCandidate fastestSet, thriftiestSet;
    double bestRatio = -1;
    for (int i = 0; i < int(w.segments.size()); ++i) {
      if (std::find(chosen.begin(), chosen.end(), i) != chosen.end()) continue;
      std::vector<int> with = chosen;
      with.push_back(i);
      RecomputeCandidate c = w.weigh(with);
      choice.considered.push_back(c);
      if (c.fits && (fastest < 0 || c.seconds < fastestSet.seconds)) {
        fastest = i;
        fastestSet = c;
      }
      const double saved = double(current.memoryBytes) - double(c.memoryBytes);
      const double ratio = std::max(saved, 0.0) / (w.seconds[std::size_t(i)] + 1e-12);
      if (ratio > bestRatio) {
        bestRatio = ratio;
        thriftiest = i;
        thriftiestSet = c;
      }
    }
    chosen.push_back(fastest >= 0 ? fastest : thriftiest);
    current = fastest >= 0 ? fastestSet : thriftiestSet;
  }
  return chosen;
}

// Drops each chosen segment, the costliest first, whose removal still fits.
void prune(const Weigher& w, RecomputeChoice& choice, std::vector<int>& chosen,
           RecomputeCandidate& current) {
  std::vector<int> order = chosen;
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
    return w.seconds[std::size_t(a)] > w.seconds[std::size_t(b)];
  });
  for (int drop : order) {
    std::vector<int> without;
    for (int i : chosen)
      if (i != drop) without.push_back(i);
    RecomputeCandidate c = w.weigh(without);
    choice.considered.push_back(c);
    if (!c.fits) continue;
    chosen = without;
    current = c;
  }
}

}  // namespace

RecomputeOption rangesOf(const ModelPlan& model, const std::vector<RecomputeSegment>& segments) {
  RecomputeOption o;
  o.mode = RecomputeOption::Mode::Ranges;
  for (const RecomputeSegment& s : segments)
    o.ranges.push_back(
        {model.layers.at(std::size_t(s.first)).name, model.layers.at(std::size_t(s.last)).name});
  return o;
}

RunPlan withRecompute(const RunPlan& run, const RecomputeOption& option) {
  RunPlan r = run;
  r.model.options.recompute = option;
  for (std::size_t i = 0; i < r.memory.size(); ++i) {
    const GraphMemory placed = activationsIn(r.precision, r.model, coordsOf(int(i), r.grid));
    r.memory[i].activations = placed.activations;
    r.memory[i].activationBuffers = placed.activationBuffers;
  }
  return r;
}

RecomputeChoice chooseRecompute(const RunPlan& run, const Machine& machine, double memoryLimit,
                                const IoModel& io, MemoryCounted counted) {
  RecomputeChoice choice;
  choice.limitBytes = memoryLimit > 0 ? memoryLimit : machine.rank.memoryGiB * double(1 << 30);
  const Weigher w(run, machine, choice.limitBytes, io, counted);
  std::vector<int> every(w.segments.size());
  for (std::size_t i = 0; i < every.size(); ++i) every[i] = int(i);
  const RecomputeCandidate all = w.weigh(every);
  RecomputeCandidate current = w.weigh({});
  choice.considered = {all, current};
  if (current.fits || !all.fits) {
    choice.chosen = current.fits ? current : all;
  } else {
    std::vector<int> chosen = grow(w, choice, current);
    prune(w, choice, chosen, current);
    choice.chosen = current;
  }
  choice.fits = choice.chosen.fits;
  choice.option = rangesOf(run.model, choice.chosen.segments);
  return choice;
}

RecomputeOption resolveRecompute(const RunPlan& run, const Machine& machine, double memoryLimit,
                                 const IoModel& io, MemoryCounted counted) {
  const RecomputeChoice c = chooseRecompute(run, machine, memoryLimit, io, counted);
  if (!c.fits)
    fail("Model/recompute = auto: the largest rank needs ",
         std::round(double(c.chosen.memoryBytes) / double(1 << 20)),
         " MiB even with every segment recomputed (all), more than the ",
         std::round(c.limitBytes / double(1 << 20)), " MiB per rank it may use");
  return c.option;
}

}  // namespace hybrid3d
