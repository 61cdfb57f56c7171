#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include <hybrid3d/core/Error.hpp>
#include <hybrid3d/deck/MachineDeck.hpp>

namespace hybrid3d::test {
namespace {

// Every field set, no two equal, with values whose shortest text is long (0.1 + 0.2) so that a
// writer losing digits shows.
Machine sample() {
  Machine m;
  m.name = "test-box";
  m.about = "two \"cores\" & a <disk>";
  m.rank = {151.5, 75.75, 0.1 + 0.2, 12.25, 0.875, 3.5, 7.75, 1212.5, 606.25};
  m.rank.fixedMemoryMiB = 42.25;
  m.network.ranksPerNode = 2;
  m.network.intraLatencyUs = 0.5;
  m.network.intraGBs = 9.5;
  m.network.interLatencyUs = 1.5;
  m.network.interGBs = 12.5;
  m.network.allreduce = AllreduceAlgorithm::RecursiveHalving;
  m.fileSystem = {1.25, 2.5};
  m.timings = {{"Conv3d 4>16 k3 s1 onednn float", {4096, 32768, 262144}, {1e-4, 7e-4, 1.0 / 3}},
               {"LeakyReLU 16 float", {32768}, {2.5e-5}}};
  return m;
}

void expectSame(const Machine& a, const Machine& b) {
  EXPECT_EQ(a.name, b.name);
  EXPECT_EQ(a.about, b.about);
  const RankRates &r = a.rank, &s = b.rank;
  EXPECT_EQ(r.floatGflops, s.floatGflops);
  EXPECT_EQ(r.doubleGflops, s.doubleGflops);
  EXPECT_EQ(r.convolutionEfficiency, s.convolutionEfficiency);
  EXPECT_EQ(r.memoryGBs, s.memoryGBs);
  EXPECT_EQ(r.memoryEfficiency, s.memoryEfficiency);
  EXPECT_EQ(r.layerOverheadUs, s.layerOverheadUs);
  EXPECT_EQ(r.memoryGiB, s.memoryGiB);
  EXPECT_EQ(r.bfloat16Gflops, s.bfloat16Gflops);
  EXPECT_EQ(r.halfGflops, s.halfGflops);
  EXPECT_EQ(r.fixedMemoryMiB, s.fixedMemoryMiB);
  EXPECT_EQ(a.network.ranksPerNode, b.network.ranksPerNode);
  EXPECT_EQ(a.network.intraLatencyUs, b.network.intraLatencyUs);
  EXPECT_EQ(a.network.intraGBs, b.network.intraGBs);
  EXPECT_EQ(a.network.interLatencyUs, b.network.interLatencyUs);
  EXPECT_EQ(a.network.interGBs, b.network.interGBs);
  EXPECT_EQ(a.network.allreduce, b.network.allreduce);
  EXPECT_EQ(a.fileSystem.readGBsPerRank, b.fileSystem.readGBsPerRank);
  EXPECT_EQ(a.fileSystem.aggregateReadGBs, b.fileSystem.aggregateReadGBs);
  ASSERT_EQ(a.timings.size(), b.timings.size());
  for (std::size_t i = 0; i < a.timings.size(); ++i) {
    EXPECT_EQ(a.timings[i].layer, b.timings[i].layer);
    EXPECT_EQ(a.timings[i].voxels, b.timings[i].voxels);
    EXPECT_EQ(a.timings[i].seconds, b.timings[i].seconds);
  }
}

std::string temporaryPath(const std::string& name) {
  return (std::filesystem::temp_directory_path() / name).string();
}

TEST(MachineDeck, WrittenFileReadsBackTheSameMachine) {
  const std::string path = temporaryPath("hybrid3d_machine_round_trip.xml");
  const Machine m = sample();
  // The command line in the comment holds "--" (not allowed in an XML comment), notes too.
  deck::writeMachineDeck(m, path, "measured by\n  mpirun -n 2 hybrid3d calibrate --out x.xml",
                         {{"Network/inter-node GB/s", "equal to intra-node -- no --base"},
                          {"Layer timings/0/seconds", "median of 2 ranks"}});
  EXPECT_FALSE(std::filesystem::exists(path + ".tmp"));
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  EXPECT_EQ(text.str().rfind("<!-- measured by\n", 0), 0u) << text.str();
  EXPECT_NE(text.str().find("calibrate - -out x.xml -->"), std::string::npos) << text.str();
  EXPECT_NE(text.str().find("<!-- equal to intra-node - - no - -base -->"), std::string::npos);
  expectSame(deck::readMachineDeck(path), m);

  // Without timings the section is left out, and the defaults fill what may be left out.
  Machine plain = m;
  plain.timings.clear();
  deck::writeMachineDeck(plain, path, "");
  expectSame(deck::readMachineDeck(path), plain);
  std::filesystem::remove(path);
}

TEST(MachineDeck, AboutAndAllreduceHaveDefaults) {
  std::string text = deck::machineDeckText(sample(), "");
  for (const char* line : {"  <Parameter name=\"about\"", "    <Parameter name=\"allreduce\""}) {
    const std::size_t at = text.find(line);
    ASSERT_NE(at, std::string::npos);
    text.erase(at, text.find('\n', at) + 1 - at);
  }
  const Machine m = deck::readMachineDeckString(text, "m.xml");
  EXPECT_EQ(m.about, "");
  EXPECT_EQ(m.network.allreduce, AllreduceAlgorithm::Ring);
}

// `text` with the first occurrence of `from` replaced by `to`.
std::string replaced(std::string text, const std::string& from, const std::string& to) {
  const std::size_t at = text.find(from);
  if (at == std::string::npos) ADD_FAILURE() << "no '" << from << "' in the sample file";
  return at == std::string::npos ? text : text.replace(at, from.size(), to);
}

std::string errorOf(const std::string& xml) {
  try {
    deck::readMachineDeckString(xml, "m.xml");
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

// The 16-bit rates may be left out (a file from before them, a machine that converts to float):
// absent, the float rate is the rate of every precision but double; given, bfloat16 and half
// runs compute at them. Not positive is refused like any rate.
TEST(MachineDeck, SixteenBitRatesAreOptionalAndDefaultToTheFloatRate) {
  Machine m = sample();
  m.rank.halfGflops = 0;  // written without it
  const std::string text = deck::machineDeckText(m, "");
  EXPECT_NE(text.find("<Parameter name=\"bfloat16 GFLOP/s\" type=\"double\" value=\"1212.5\"/>"),
            std::string::npos)
      << text;
  EXPECT_EQ(text.find("half GFLOP/s"), std::string::npos) << text;
  const Machine r = deck::readMachineDeckString(text, "m.xml");
  EXPECT_EQ(r.rank.bfloat16Gflops, 1212.5);
  EXPECT_EQ(r.rank.halfGflops, 0.0);
  EXPECT_EQ(peakGflops(r.rank, Precision::BFloat16), 1212.5);
  EXPECT_EQ(peakGflops(r.rank, Precision::Half), r.rank.floatGflops);
  EXPECT_EQ(peakGflops(r.rank, Precision::Float), 151.5);
  EXPECT_EQ(peakGflops(r.rank, Precision::Double), 75.75);
  const std::string bad = replaced(text, "value=\"1212.5\"", "value=\"-3\"");
  EXPECT_EQ(errorOf(bad), "m.xml: key 'Rank/bfloat16 GFLOP/s' = -3 must be positive");
}

// The fixed memory of a process (calibrate measures it) is optional: absent, it stays 0 and the
// plan says it is unknown; given, it must be positive.
TEST(MachineDeck, FixedMemoryIsOptional) {
  Machine m = sample();
  const std::string text = deck::machineDeckText(m, "");
  EXPECT_NE(text.find("<Parameter name=\"fixed memory MiB\" type=\"double\" value=\"42.25\"/>"),
            std::string::npos)
      << text;
  m.rank.fixedMemoryMiB = 0;  // written without it
  const std::string without = deck::machineDeckText(m, "");
  EXPECT_EQ(without.find("fixed memory MiB"), std::string::npos) << without;
  EXPECT_EQ(deck::readMachineDeckString(without, "m.xml").rank.fixedMemoryMiB, 0.0);
  EXPECT_EQ(errorOf(replaced(text, "value=\"42.25\"", "value=\"-1\"")),
            "m.xml: key 'Rank/fixed memory MiB' = -1 must be positive");
}

// The shipped GPU files carry the published 16-bit rates (their comments name the sources).
TEST(MachineDeck, ShippedGpuFilesGiveTheirSixteenBitRates) {
  const Machine v100 = deck::readMachineDeck(HYBRID3D_INPUTS_DIR "/machines/lassen-v100.xml");
  EXPECT_EQ(v100.rank.halfGflops, 125000);                     // FP16 tensor cores
  EXPECT_EQ(v100.rank.bfloat16Gflops, v100.rank.floatGflops);  // none for bfloat16
  const Machine h100 = deck::readMachineDeck(HYBRID3D_INPUTS_DIR "/machines/h100-cluster.xml");
  EXPECT_EQ(h100.rank.bfloat16Gflops, 989400);  // dense tensor cores
  EXPECT_EQ(h100.rank.halfGflops, 989400);
}

TEST(MachineDeck, EveryBadValueNamesTheFileAndTheKey) {
  const std::string good = deck::machineDeckText(sample(), "a comment");
  ASSERT_EQ(errorOf(good), "");
  const std::string flops = "name=\"float GFLOP/s\" type=\"double\" value=\"151.5\"";
  const std::string voxels =
      "name=\"voxels\" type=\"Array(double)\" value=\"{4096, 32768, 262144}\"";
  struct Case {
    std::string from, to, expect;
  } cases[] = {
      {"name=\"memory GiB\"", "name=\"memory GB\"", "m.xml: unknown key 'Rank/memory GB'"},
      {"<ParameterList name=\"File system\">", "<ParameterList name=\"Filesystem\">",
       "m.xml: unknown section 'Filesystem'"},
      {flops, "name=\"float GFLOP/s\" type=\"string\" value=\"fast\"",
       "m.xml: key 'Rank/float GFLOP/s' must be of type double"},
      {"name=\"ranks per node\" type=\"int\" value=\"2\"",
       "name=\"ranks per node\" type=\"int\" value=\"two\"",
       "m.xml: key 'Network/ranks per node' = \"two\" is not a number of type int"},
      {flops, "name=\"floatGFLOP/s\" type=\"double\" value=\"151.5\"",
       "m.xml: unknown key 'Rank/floatGFLOP/s'"},
      {"<Parameter name=\"name\" type=\"string\" value=\"test-box\"/>", "",
       "m.xml: missing key 'name'"},
      {"<Parameter " + flops + "/>", "", "m.xml: missing key 'Rank/float GFLOP/s'"},
      {flops, "name=\"float GFLOP/s\" type=\"double\" value=\"0\"",
       "m.xml: key 'Rank/float GFLOP/s' = 0 must be positive"},
      {"name=\"intra-node GB/s\" type=\"double\" value=\"9.5\"",
       "name=\"intra-node GB/s\" type=\"double\" value=\"-9.5\"",
       "m.xml: key 'Network/intra-node GB/s' = -9.5 must be positive"},
      {"name=\"intra-node latency us\" type=\"double\" value=\"0.5\"",
       "name=\"intra-node latency us\" type=\"double\" value=\"-1\"",
       "m.xml: key 'Network/intra-node latency us' = -1 must be zero or positive"},
      {"name=\"aggregate read GB/s\" type=\"double\" value=\"2.5\"",
       "name=\"aggregate read GB/s\" type=\"double\" value=\"0\"",
       "m.xml: key 'File system/aggregate read GB/s' = 0 must be positive"},
      {"name=\"memory efficiency\" type=\"double\" value=\"0.875\"",
       "name=\"memory efficiency\" type=\"double\" value=\"1.5\"",
       "m.xml: key 'Rank/memory efficiency' = 1.5 is outside [0, 1]"},
      {"name=\"ranks per node\" type=\"int\" value=\"2\"",
       "name=\"ranks per node\" type=\"int\" value=\"0\"",
       "m.xml: key 'Network/ranks per node' = 0 is outside [1, 1000000]"},
      {"value=\"recursive-halving\"", "value=\"tree\"",
       "m.xml: key 'Network/allreduce' = \"tree\" is not one of: ring, recursive-halving"},
      {voxels, "name=\"voxels\" type=\"Array(double)\" value=\"{4096, 32768}\"",
       "m.xml: key 'Layer timings/0/seconds' has 3 values but 'Layer timings/0/voxels' has 2"},
      {voxels, "name=\"voxels\" type=\"Array(double)\" value=\"{4096, 4096, 262144}\"",
       "m.xml: key 'Layer timings/0/voxels' must increase (4096 after 4096)"},
      {voxels, "name=\"voxels\" type=\"Array(double)\" value=\"{4096, 0, 262144}\"",
       "m.xml: key 'Layer timings/0/voxels' holds 0: values must be positive"},
      {"value=\"{2.5e-05}\"", "value=\"{}\"", "m.xml: key 'Layer timings/1/seconds' has no values"},
      {"<Parameter name=\"seconds\" type=\"Array(double)\" value=\"{2.5e-05}\"/>", "",
       "m.xml: missing key 'Layer timings/1/seconds'"},
      {"value=\"LeakyReLU 16 float\"", "value=\"Conv3d 4&gt;16 k3 s1 onednn float\"",
       "m.xml: key 'Layer timings/1/layer' = \"Conv3d 4>16 k3 s1 onednn float\" repeats 'Layer "
       "timings/0/layer'"},
      {"name=\"layer\" type=\"string\" value=\"LeakyReLU 16 float\"",
       "name=\"layers\" type=\"string\" value=\"LeakyReLU 16 float\"",
       "m.xml: unknown key 'Layer timings/1/layers'"},
      {"<ParameterList name=\"1\">", "<ParameterList name=\"0\">",
       "m.xml: section 'Layer timings/0' is given twice"},
      {"</ParameterList>\n</ParameterList>", "</ParameterList>", "m.xml: not a valid XML"},
  };
  for (const Case& c : cases) {
    const std::string m = errorOf(replaced(good, c.from, c.to));
    EXPECT_EQ(m.rfind(c.expect, 0), 0u) << "got: " << m;
    EXPECT_EQ(m.find('\n'), std::string::npos) << "not one line: " << m;
  }
}

TEST(MachineDeck, FilesThatCannotBeReadOrWrittenAreNamed) {
  try {
    deck::readMachineDeck("/no/such/machine.xml");
    ADD_FAILURE();
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()), "/no/such/machine.xml: cannot open the machine file");
  }
  try {
    deck::writeMachineDeck(sample(), "/no/such/dir/machine.xml", "");
    ADD_FAILURE();
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()).rfind("/no/such/dir/machine.xml: cannot create", 0), 0u)
        << e.what();
  }
}

}  // namespace
}  // namespace hybrid3d::test
