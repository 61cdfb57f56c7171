#include <gtest/gtest.h>

#include <hybrid3d/core/Error.hpp>
#include <hybrid3d/deck/Deck.hpp>

namespace hybrid3d::test {
namespace {

using deck::Deck;
using deck::DeckKey;
using Type = DeckKey::Type;

std::vector<DeckKey> schema() {
  return {{"Parallel/spatial grid", Type::String, "auto", false, -1e300, 1e300, {}, "grid"},
          {"Model/architecture",
           Type::String,
           "",
           true,
           -1e300,
           1e300,
           {"cosmoflow", "cosmoflow_mlperf", "unet3d"},
           "model"},
          {"Model/input width", Type::Int, "128", false, 16, 512, {}, "S"},
          {"Training/learning rate", Type::Double, "0.001", false, 0, 10, {}, "lr"},
          {"Training/decay epochs", Type::DoubleList, "", false, 0, 1e6, {}, "epochs"},
          {"Training/prefetch", Type::Bool, "1", false, -1e300, 1e300, {}, "prefetch"}};
}

std::string deck(const std::string& body) {
  return "<ParameterList name=\"hybrid3d\">" + body + "</ParameterList>";
}

std::string errorOf(const std::string& xml) {
  try {
    Deck::fromString(xml, schema(), "run.xml");
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(Deck, ReadsValuesAndFillsDefaults) {
  const Deck d = Deck::fromString(
      deck(
          R"x(<ParameterList name="Model"><Parameter name="architecture" type="string" value="unet3d"/>
              <Parameter name="input width" type="int" value="64"/></ParameterList>
              <ParameterList name="Training"><Parameter name="learning rate" type="int" value="1"/>
              <Parameter name="decay epochs" type="Array(double)" value="{30, 60.5}"/></ParameterList>)x"),
      schema(), "run.xml");
  EXPECT_EQ(d.getString("Model/architecture"), "unet3d");
  EXPECT_EQ(d.getInt("Model/input width"), 64);
  EXPECT_EQ(d.getDouble("Training/learning rate"), 1.0);  // an int where a double is wanted
  EXPECT_EQ(d.getDoubleList("Training/decay epochs"), (std::vector<double>{30, 60.5}));
  EXPECT_EQ(d.getString("Parallel/spatial grid"), "auto");
  EXPECT_TRUE(d.getBool("Training/prefetch"));
}

TEST(Deck, EveryBadInputNamesTheFileAndTheKey) {
  const std::string model =
      R"x(<ParameterList name="Model"><Parameter name="architecture" type="string" value="unet3d"/>)x";
  struct Case {
    std::string xml, expect;
  } cases[] = {
      {deck(model + R"x(<Parameter name="input wdth" type="int" value="64"/></ParameterList>)x"),
       "run.xml: unknown key 'Model/input wdth'"},
      {deck(model +
            R"x(<Parameter name="input width" type="string" value="64"/></ParameterList>)x"),
       "run.xml: key 'Model/input width' must be of type int"},
      {deck(model + R"x(<Parameter name="input width" type="int" value="8"/></ParameterList>)x"),
       "run.xml: key 'Model/input width' = 8 is outside [16, 512]"},
      {deck(
           R"x(<ParameterList name="Model"><Parameter name="architecture" type="string" value="resnet"/></ParameterList>)x"),
       "run.xml: key 'Model/architecture' = \"resnet\" is not one of: cosmoflow, cosmoflow_mlperf, "
       "unet3d"},
      {deck(""), "run.xml: missing key 'Model/architecture'"},
      {deck(model + R"x(</ParameterList><ParameterList name="Trainig"/>)x"),
       "run.xml: unknown section 'Trainig'"},
      {"<ParameterList name=\"x\"><Parameter name=", "run.xml: not a valid XML parameter list"},
      // Teuchos would keep one of two same-named entries, and read "sixty" as 0.
      {deck(model + R"x(<Parameter name="input width" type="int" value="64"/>
                        <Parameter name="input width" type="int" value="32"/></ParameterList>)x"),
       "run.xml: key 'Model/input width' is given twice"},
      {deck(model + R"x(</ParameterList><ParameterList name="Model"></ParameterList>)x"),
       "run.xml: section 'Model' is given twice"},
      {deck(model +
            R"x(<Parameter name="input width" type="int" value="sixty"/></ParameterList>)x"),
       "run.xml: key 'Model/input width' = \"sixty\" is not a number of type int"},
      {deck(
           model +
           R"x(</ParameterList><ParameterList name="Training"><Parameter name="learning rate" type="double" value="1e-3x"/></ParameterList>)x"),
       "run.xml: key 'Training/learning rate' = \"1e-3x\" is not a number of type double"},
  };
  for (const Case& c : cases) {
    const std::string m = errorOf(c.xml);
    EXPECT_EQ(m.rfind(c.expect, 0), 0u) << "got: " << m;
    EXPECT_EQ(m.find('\n'), std::string::npos) << "not one line: " << m;
  }
  try {
    Deck::fromFile("/no/such/deck.xml", schema());
    ADD_FAILURE();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("/no/such/deck.xml"), std::string::npos);
  }
}

}  // namespace
}  // namespace hybrid3d::test

#include <filesystem>
#include <fstream>

#include <hybrid3d/deck/TrainDeck.hpp>
#include <hybrid3d/model/Architecture.hpp>

namespace hybrid3d::test {
namespace {

TEST(Deck, EveryShippedInputDeckIsValid) {
  // A typo in a production deck must fail here, not after hours in a queue. 64 ranks suit
  // every deck's grid.
  int count = 0;
  for (const auto& e : std::filesystem::directory_iterator(HYBRID3D_INPUTS_DIR)) {
    if (e.path().extension() != ".xml") continue;
    ++count;
    SCOPED_TRACE(e.path().string());
    const deck::DeckRun r = deck::readTrainDeck(e.path().string(), 64);
    EXPECT_EQ(64 % (r.spatialGrid[0] * r.spatialGrid[1] * r.spatialGrid[2]), 0);
    EXPECT_FALSE(r.config.data.train.empty());
  }
  EXPECT_GE(count, 6);
}

TEST(Deck, HaloOverlapReachesTheModelOptionsOffByDefault) {
  const std::string path =
      (std::filesystem::temp_directory_path() / "hybrid3d_deck_halo_overlap.xml").string();
  auto read = [&](const std::string& extra) {
    {
      std::ofstream f(path);
      f << R"x(<ParameterList name="hybrid3d"><ParameterList name="Model">
               <Parameter name="architecture" type="string" value="cosmoflow"/>)x"
        << extra << R"x(</ParameterList><ParameterList name="Data">
               <Parameter name="train" type="string" value="/data/train"/></ParameterList>
               </ParameterList>)x";
    }
    const deck::DeckRun r = deck::readTrainDeck(path, 1);
    std::filesystem::remove(path);
    return r.config.model.convOverlap;
  };
  EXPECT_EQ(read(""), convOverlapByDefault);
  EXPECT_FALSE(convOverlapByDefault);  // docs/layouts.md and the key's help say so
  EXPECT_TRUE(read(R"x(<Parameter name="halo overlap" type="bool" value="true"/>)x"));
  EXPECT_FALSE(read(R"x(<Parameter name="halo overlap" type="bool" value="false"/>)x"));
}

// Data/channel offset and scale: a list, or the word auto (given as type string) for the
// training set's statistics; another word or type is refused naming the key.
TEST(Deck, ChannelStatisticsAreAListOrAuto) {
  const std::string path =
      (std::filesystem::temp_directory_path() / "hybrid3d_deck_channel_auto.xml").string();
  auto read = [&](const std::string& data) {
    {
      std::ofstream f(path);
      f << R"x(<ParameterList name="hybrid3d"><ParameterList name="Model">
               <Parameter name="architecture" type="string" value="cosmoflow"/></ParameterList>
               <ParameterList name="Data"><Parameter name="train" type="string" value="/d"/>)x"
        << data << "</ParameterList></ParameterList>";
    }
    struct Cleanup {
      std::string p;
      ~Cleanup() { std::filesystem::remove(p); }
    } cleanup{path};
    return deck::readTrainDeck(path, 1).config.data;
  };
  const DataConfig automatic =
      read(R"x(<Parameter name="channel offset" type="string" value="auto"/>
               <Parameter name="channel scale" type="string" value="auto"/>)x");
  EXPECT_TRUE(automatic.channelOffsetAuto);
  EXPECT_TRUE(automatic.channelScaleAuto);
  EXPECT_TRUE(automatic.channelOffset.empty());
  const DataConfig mixed = read(R"x(<Parameter name="channel offset" type="string" value="auto"/>
               <Parameter name="channel scale" type="Array(double)" value="{2, 0.5}"/>)x");
  EXPECT_TRUE(mixed.channelOffsetAuto);
  EXPECT_FALSE(mixed.channelScaleAuto);
  EXPECT_EQ(mixed.channelScale, (std::vector<double>{2, 0.5}));
  const DataConfig none = read("");
  EXPECT_FALSE(none.channelOffsetAuto || none.channelScaleAuto);
  auto error = [&](const std::string& data) {
    try {
      read(data);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  EXPECT_NE(error(R"x(<Parameter name="channel offset" type="string" value="mean"/>)x")
                .find("key 'Data/channel offset' = \"mean\" is not one of: auto"),
            std::string::npos);
  EXPECT_NE(error(R"x(<Parameter name="channel scale" type="double" value="2"/>)x")
                .find("key 'Data/channel scale' must be of type Array(double) or string (auto)"),
            std::string::npos);
}

}  // namespace
}  // namespace hybrid3d::test

namespace hybrid3d::test {
namespace {

// The deck offers exactly the registered architectures (src/model/architectures/), and a deck
// naming another is refused listing them.
TEST(Deck, ArchitectureChoicesAreTheRegisteredArchitectures) {
  const std::vector<std::string> registered = architectureNames();
  EXPECT_EQ(registered, (std::vector<std::string>{"cosmoflow", "cosmoflow_mlperf", "unet3d"}));
  int found = 0;
  for (const DeckKey& k : deck::trainDeckSchema())
    if (k.path == "Model/architecture") {
      ++found;
      EXPECT_EQ(k.choices, registered);
    }
  EXPECT_EQ(found, 1);
  const std::string path =
      (std::filesystem::temp_directory_path() / "hybrid3d_deck_architecture.xml").string();
  {
    std::ofstream f(path);
    f << R"x(<ParameterList name="hybrid3d"><ParameterList name="Model">
             <Parameter name="architecture" type="string" value="resnet"/></ParameterList>
             </ParameterList>)x";
  }
  std::string error;
  try {
    deck::readTrainDeck(path, 1, false);
  } catch (const Error& e) {
    error = e.what();
  }
  std::filesystem::remove(path);
  EXPECT_NE(error.find("\"resnet\" is not one of: cosmoflow, cosmoflow_mlperf, unet3d"),
            std::string::npos)
      << error;
}

}  // namespace
}  // namespace hybrid3d::test
