// Recomputation's bookkeeping (model/Recompute.hpp): the deck value's parsing, `all`'s segments
// on a CosmoFlow-shaped chain, which outputs a skip connection keeps, the step's order of work,
// and the training activations' placement checked by running the schedule over a simulated
// arena: every reading finds the value its producer last wrote there.
#include <algorithm>
#include <string>

#include <gtest/gtest.h>

#include <hybrid3d/core/Error.hpp>
#include <hybrid3d/model/Recompute.hpp>

#include "../ErrorOf.hpp"

namespace hybrid3d::test {
namespace {

// input -> pre -> conv1 act1 pool1 -> conv2 act2 pool2 -> fc1 act3 -> fc2 (CosmoFlow's shape).
StepGraph chain() {
  StepGraph g;
  g.names = {"pre", "conv1", "act1", "pool1", "conv2", "act2", "pool2", "fc1", "act3", "fc2"};
  for (int i = 0; i < int(g.names.size()); ++i) {
    g.inputs.push_back({i - 1});
    const std::string& n = g.names[i];
    g.startsSegment.push_back(n.rfind("conv", 0) == 0 || n.rfind("fc", 0) == 0);
  }
  return g;
}

std::size_t roundUp(std::size_t bytes) {
  return (bytes + gradientAlignment - 1) / gradientAlignment * gradientAlignment;
}

// conv1 act1 (read by pool and by the concat: a skip) pool conv2 up concat conv3 (U-Net's shape).
StepGraph skip() {
  StepGraph g;
  g.names = {"conv1", "act1", "pool", "conv2", "up", "concat", "conv3"};
  g.inputs = {{-1}, {0}, {1}, {2}, {3}, {4, 1}, {5}};
  g.startsSegment = {true, false, false, true, true, false, true};
  return g;
}

// Runs `schedule` over an arena of owner stamps, one per byte: a node's forward, recomputation
// and backward read their inputs and must find them intact, and the loss reads the model output
// after the step; the forward and recomputation stamp the output's bytes. Counts the readings.
int readingsChecked(const StepGraph& g, const std::vector<std::size_t>& bytes,
                    const std::vector<StepEvent>& schedule, const ActivationPlacement& placed) {
  std::vector<int> owner(placed.arenaBytes, -1);
  auto write = [&](int a) { std::fill_n(owner.begin() + placed.offsets[a], bytes[a], a); };
  int checked = 0;
  auto expectIntact = [&](int a, const StepEvent& e) {
    const auto first = owner.begin() + placed.offsets[a];
    EXPECT_TRUE(std::all_of(first, first + bytes[a], [a](int o) { return o == a; }))
        << "activation " << a << " overwritten before node " << e.node << " reads it (pass "
        << int(e.pass) << ")";
    ++checked;
  };
  write(0);
  for (const StepEvent& e : schedule) {
    for (int p : g.inputs[e.node]) expectIntact(p + 1, e);
    if (e.pass != StepPass::Backward) write(e.node + 1);
  }
  expectIntact(int(g.inputs.size()), schedule.back());
  return checked;
}

TEST(Recompute, TheDeckValueParsesAndPrintsBack) {
  EXPECT_EQ(parseRecompute("").mode, RecomputeOption::Mode::None);
  EXPECT_EQ(parseRecompute(" none ").mode, RecomputeOption::Mode::None);
  EXPECT_EQ(parseRecompute("all").mode, RecomputeOption::Mode::All);
  EXPECT_EQ(parseRecompute("auto").mode, RecomputeOption::Mode::Auto);
  const RecomputeOption r = parseRecompute(" conv1 .. pool1 ,act2");
  ASSERT_EQ(r.mode, RecomputeOption::Mode::Ranges);
  ASSERT_EQ(r.ranges.size(), 2u);
  EXPECT_EQ(r.ranges[0].first, "conv1");
  EXPECT_EQ(r.ranges[0].last, "pool1");
  EXPECT_EQ(r.ranges[1].first, "act2");
  EXPECT_EQ(r.ranges[1].last, "act2");
  EXPECT_EQ(toString(r), "conv1..pool1, act2");
  EXPECT_EQ(toString(parseRecompute(toString(r))), toString(r));
  EXPECT_NE(errorOf([] { parseRecompute("conv1..,pool2"); }).find("names no layer"),
            std::string::npos);
  EXPECT_NE(errorOf([] { parseRecompute("conv1,,pool2"); }).find("names no layer"),
            std::string::npos);
}

TEST(Recompute, RangesAreRefusedByName) {
  const StepGraph g = chain();
  EXPECT_NE(errorOf([&] { resolveSegments(parseRecompute("conv1..pool9"), g); }).find("'pool9'"),
            std::string::npos);
  EXPECT_NE(errorOf([&] {
              resolveSegments(parseRecompute("pool1..conv1"), g);
            }).find("'pool1' comes after 'conv1'"),
            std::string::npos);
  EXPECT_NE(errorOf([&] {
              resolveSegments(parseRecompute("conv2..pool2, conv1..conv2"), g);
            }).find("overlap"),
            std::string::npos);
  EXPECT_NE(errorOf([&] { resolveSegments(parseRecompute("auto"), g); }).find("planner"),
            std::string::npos);
  const auto s = resolveSegments(parseRecompute("conv2..pool2, conv1..pool1"), g);
  EXPECT_EQ(s, (std::vector<RecomputeSegment>{{1, 3}, {4, 6}}));
}

TEST(Recompute, AllCutsAtEveryWeightedLayerAndRecomputesTheInterior) {
  const StepGraph g = chain();
  const auto s = allSegments(g);
  EXPECT_EQ(s, (std::vector<RecomputeSegment>{{1, 3}, {4, 6}, {7, 8}, {9, 9}}));
  EXPECT_EQ(resolveSegments(parseRecompute("all"), g), s);
  EXPECT_EQ(recomputedOutputs(g, s),
            (std::vector<bool>{false, true, true, false, true, true, false, true, false, false}));
  // Forward 0..9, then the backward pass with each segment's interior recomputed before it.
  const std::vector<StepEvent> order = stepSchedule(g, s);
  std::string text;
  for (const StepEvent& e : order)
    text += std::string(e.pass == StepPass::Forward     ? "F"
                        : e.pass == StepPass::Recompute ? "R"
                                                        : "B") +
            std::to_string(e.node) + " ";
  EXPECT_EQ(text, "F0 F1 F2 F3 F4 F5 F6 F7 F8 F9 B9 R7 B8 B7 R4 R5 B6 B5 B4 R1 R2 B3 B2 B1 B0 ");
}

TEST(Recompute, AnOutputReadBeyondItsSegmentIsKept) {
  const StepGraph g = skip();
  const auto s = allSegments(g);
  EXPECT_EQ(s, (std::vector<RecomputeSegment>{{0, 2}, {3, 3}, {4, 5}, {6, 6}}));
  // act1 feeds the concat (a skip): kept; conv1 and up are recomputed.
  EXPECT_EQ(recomputedOutputs(g, s),
            (std::vector<bool>{true, false, false, false, true, false, false}));
}

TEST(Recompute, TheTrainingActivationsPlacementKeepsEveryValueUntilItsLastReading) {
  for (const StepGraph& g : {chain(), skip()}) {
    const std::size_t n = g.inputs.size();
    std::vector<std::size_t> bytes;
    for (std::size_t a = 0; a <= n; ++a) bytes.push_back(1000 + 3000 * ((a * 7) % 5));
    std::size_t sum = 0;
    for (std::size_t b : bytes) sum += b;
    for (const auto& segments : {std::vector<RecomputeSegment>{}, allSegments(g)}) {
      const auto schedule = stepSchedule(g, segments);
      const ActivationPlacement placed = placeTrainingActivations(bytes, g, schedule);
      EXPECT_EQ(placed.separateBytes, sum);
      EXPECT_GT(readingsChecked(g, bytes, schedule, placed), int(2 * n));
    }
  }
}

TEST(Recompute, RecomputingAChainHoldsLessThanKeepingIt) {
  const StepGraph g = chain();
  // The input, then each node's output: conv1's and act1's dominate, as at CosmoFlow's full
  // resolution.
  const std::vector<std::size_t> bytes = {1000, 1000, 8000, 8000, 1000, 2000,
                                          2000, 250,  250,  100,  10};
  std::size_t sum = 0;
  for (std::size_t b : bytes) sum += roundUp(b);
  const auto keep = placeTrainingActivations(bytes, g, stepSchedule(g, {}));
  const auto all = placeTrainingActivations(bytes, g, stepSchedule(g, allSegments(g)));
  // Kept, every activation is alive when the backward pass starts.
  EXPECT_EQ(keep.arenaBytes, sum);
  // Recomputed, the most alive at once is during conv1's segment's backward: the input, pre's
  // output, conv1's, act1's and the model output.
  EXPECT_EQ(all.arenaBytes, roundUp(bytes[0]) + roundUp(bytes[1]) + roundUp(bytes[2]) +
                                roundUp(bytes[3]) + roundUp(bytes[10]));
}

// What `check` prints: the segments by name and the recomputed outputs counted over the layers.
TEST(Recompute, DescribesTheSegmentsByName) {
  const StepGraph g = chain();
  EXPECT_EQ(describeRecompute(g, {}), "none");
  EXPECT_EQ(describeRecompute(g, allSegments(g)),
            "4 segments (conv1..pool1, conv2..pool2, fc1..act3, fc2), 5 of 10 layer outputs "
            "recomputed");
  EXPECT_EQ(describeRecompute(g, resolveSegments(parseRecompute("act1..pool1"), g)),
            "1 segment (act1..pool1), 1 of 10 layer outputs recomputed");
}

}  // namespace
}  // namespace hybrid3d::test
