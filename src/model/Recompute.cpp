#include <algorithm>

#include <hybrid3d/core/Error.hpp>
#include <hybrid3d/core/ItemList.hpp>
#include <hybrid3d/model/Recompute.hpp>

namespace hybrid3d {

namespace {

int nodeNamed(const StepGraph& graph, const std::string& name) {
  for (std::size_t i = 0; i < graph.names.size(); ++i)
    if (graph.names[i] == name) return static_cast<int>(i);
  fail("Model/recompute: no layer is named '", name, "' (`hybrid3d check` lists the layers)");
}

// Per node, the nodes reading its output.
std::vector<std::vector<int>> readersOf(const StepGraph& graph) {
  std::vector<std::vector<int>> readers(graph.inputs.size());
  for (std::size_t c = 0; c < graph.inputs.size(); ++c)
    for (int p : graph.inputs[c])
      if (p >= 0) readers.at(p).push_back(static_cast<int>(c));
  return readers;
}

}  // namespace

RecomputeOption parseRecompute(const std::string& text) {
  RecomputeOption o;
  const std::string t = trimBlanks(text);
  if (t.empty() || t == "none") return o;
  if (t == "all" || t == "auto") {
    o.mode = t == "all" ? RecomputeOption::Mode::All : RecomputeOption::Mode::Auto;
    return o;
  }
  o.mode = RecomputeOption::Mode::Ranges;
  for (const std::string& item : splitItems(t, ',')) {
    const std::size_t dots = item.find("..");
    RecomputeRange r{trimBlanks(item.substr(0, dots)), dots == std::string::npos
                                                           ? trimBlanks(item)
                                                           : trimBlanks(item.substr(dots + 2))};
    if (r.first.empty() || r.last.empty())
      fail("Model/recompute: entry \"", item, "\" of \"", text,
           "\" names no layer (none, all, auto, or FIRST..LAST ranges separated by commas)");
    o.ranges.push_back(r);
  }
  return o;
}

std::string toString(const RecomputeOption& option) {
  switch (option.mode) {
    case RecomputeOption::Mode::None:
      return "none";
    case RecomputeOption::Mode::All:
      return "all";
    case RecomputeOption::Mode::Auto:
      return "auto";
    case RecomputeOption::Mode::Ranges:
      break;
  }
  std::string s;
  for (const RecomputeRange& r : option.ranges)
    s += (s.empty() ? "" : ", ") + (r.first == r.last ? r.first : r.first + ".." + r.last);
  return s;
}

std::vector<RecomputeSegment> allSegments(const StepGraph& graph) {
  std::vector<RecomputeSegment> segments;
  const int n = static_cast<int>(graph.startsSegment.size());
  for (int i = 0; i < n; ++i) {
    if (!graph.startsSegment[i]) continue;
    if (!segments.empty()) segments.back().last = i - 1;
    segments.push_back({i, n - 1});
  }
  return segments;
}

std::vector<RecomputeSegment> resolveSegments(const RecomputeOption& option,
                                              const StepGraph& graph) {
  switch (option.mode) {
    case RecomputeOption::Mode::None:
      return {};
    case RecomputeOption::Mode::All:
      return allSegments(graph);
    case RecomputeOption::Mode::Auto:
      fail("Model/recompute: 'auto' is chosen by the planner before the model is built");
    case RecomputeOption::Mode::Ranges:
      break;
  }
  std::vector<RecomputeSegment> segments;
  for (const RecomputeRange& r : option.ranges) {
    const RecomputeSegment s{nodeNamed(graph, r.first), nodeNamed(graph, r.last)};
    if (s.first > s.last)
      fail("Model/recompute: range ", r.first, "..", r.last, ": '", r.first, "' comes after '",
           r.last, "'");
    segments.push_back(s);
  }
  std::sort(segments.begin(), segments.end(),
            [](const RecomputeSegment& a, const RecomputeSegment& b) { return a.first < b.first; });
  for (std::size_t k = 1; k < segments.size(); ++k)
    if (segments[k].first <= segments[k - 1].last)
      fail("Model/recompute: ranges ", graph.names[segments[k - 1].first], "..",
           graph.names[segments[k - 1].last], " and ", graph.names[segments[k].first], "..",
           graph.names[segments[k].last], " overlap");
  return segments;
}

std::vector<bool> recomputedOutputs(const StepGraph& graph,
                                    const std::vector<RecomputeSegment>& segments) {
  const std::vector<std::vector<int>> readers = readersOf(graph);
  std::vector<bool> recomputed(graph.inputs.size(), false);
  for (const RecomputeSegment& s : segments)
    for (int i = s.first; i < s.last; ++i)
      recomputed.at(i) =
          !readers[i].empty() && std::all_of(readers[i].begin(), readers[i].end(),
                                             [&](int c) { return c >= s.first && c <= s.last; });
  return recomputed;
}

std::string describeRecompute(const StepGraph& graph,
                              const std::vector<RecomputeSegment>& segments) {
  if (segments.empty()) return "none";
  std::string names;
  for (const RecomputeSegment& s : segments) {
    const std::string& first = graph.names.at(s.first);
    names += (names.empty() ? "" : ", ") +
             (s.first == s.last ? first : first + ".." + graph.names.at(s.last));
  }
  const std::vector<bool> recomputed = recomputedOutputs(graph, segments);
  const auto count = std::count(recomputed.begin(), recomputed.end(), true);
  return std::to_string(segments.size()) + (segments.size() == 1 ? " segment (" : " segments (") +
         names + "), " + std::to_string(count) + " of " + std::to_string(recomputed.size()) +
         " layer outputs recomputed";
}

std::vector<StepEvent> stepSchedule(const StepGraph& graph,
                                    const std::vector<RecomputeSegment>& segments) {
  const int n = static_cast<int>(graph.inputs.size());
  const std::vector<bool> recomputed = recomputedOutputs(graph, segments);
  std::vector<const RecomputeSegment*> endingAt(n, nullptr);
  for (const RecomputeSegment& s : segments) endingAt.at(s.last) = &s;
  std::vector<StepEvent> events;
  for (int i = 0; i < n; ++i) events.push_back({StepPass::Forward, i});
  for (int i = n - 1; i >= 0; --i) {
    if (const RecomputeSegment* s = endingAt[i])
      for (int r = s->first; r < s->last; ++r)
        if (recomputed[r]) events.push_back({StepPass::Recompute, r});
    events.push_back({StepPass::Backward, i});
  }
  return events;
}

ActivationPlacement placeTrainingActivations(const std::vector<std::size_t>& bytes,
                                             const StepGraph& graph,
                                             const std::vector<StepEvent>& schedule) {
  const std::size_t n = graph.inputs.size();
  if (bytes.size() != n + 1)
    fail("memory placement: ", bytes.size(), " activation sizes for ", n, " nodes");
  // Activation a's lives: [first, last] from its forward, [again, againLast] from its
  // recomputation; each reading extends the range it falls in.
  std::vector<BufferLife> lives(n + 1);
  for (BufferLife& l : lives) l.first = l.last = -1;
  lives[0].first = lives[0].last = 0;
  auto read = [&](int a, int t) {
    BufferLife& l = lives[a];
    if (l.again >= 0 && t >= l.again)
      l.againLast = std::max(l.againLast, t);
    else
      l.last = std::max(l.last, t);
  };
  for (std::size_t k = 0; k < schedule.size(); ++k) {
    const int t = static_cast<int>(k) + 1, node = schedule[k].node;
    for (int p : graph.inputs.at(node)) read(p + 1, t);
    BufferLife& out = lives[node + 1];
    switch (schedule[k].pass) {
      case StepPass::Forward:
        out.first = out.last = t;
        break;
      case StepPass::Recompute:
        out.again = out.againLast = t;
        break;
      case StepPass::Backward:  // reads the inputs only
        break;
    }
  }
  // The model output (read by no node) lives to the end of the step: the loss and the metrics
  // read it after the backward pass too.
  const std::vector<std::vector<int>> readers = readersOf(graph);
  for (std::size_t i = 0; i < n; ++i)
    if (readers[i].empty()) lives[i + 1].last = static_cast<int>(schedule.size());
  ActivationPlacement placed;
  for (std::size_t a = 0; a <= n; ++a) {
    if (lives[a].first < 0) fail("memory placement: activation ", a, " is never written");
    lives[a].bytes = bytes[a];
    placed.separateBytes += bytes[a];
  }
  placed.offsets = placeByLifetime(lives, gradientAlignment, placed.arenaBytes);
  placed.arenaBytes = std::max(placed.arenaBytes, gradientAlignment);
  return placed;
}

}  // namespace hybrid3d
