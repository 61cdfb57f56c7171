// What `hybrid3d plan --csv` and `hybrid3d calibrate` write for a path: below the run directory
// the path relative to it, however it was given; anywhere else only the file's name, so that a
// committed result never holds the directories of the machine it was made on.
#include <gtest/gtest.h>

#include "RecordedPath.hpp"

namespace hybrid3d::test {
namespace {

using hybrid3d::app::recordedPath;

const std::filesystem::path run = "/checkout/of/hybrid3d";

TEST(RecordedPath, BelowTheRunDirectoryRelativeToIt) {
  EXPECT_EQ(recordedPath("/checkout/of/hybrid3d/inputs/deck.xml", run), "inputs/deck.xml");
  EXPECT_EQ(recordedPath("inputs/deck.xml", run), "inputs/deck.xml");
  EXPECT_EQ(recordedPath("./out/../inputs/deck.xml", run), "inputs/deck.xml");
  EXPECT_EQ(recordedPath("/checkout/of/hybrid3d", run), ".");
  EXPECT_EQ(recordedPath(".", run), ".");
}

TEST(RecordedPath, ElsewhereOnlyTheFileName) {
  EXPECT_EQ(recordedPath("/elsewhere/projection/deck.xml", run), "deck.xml");
  EXPECT_EQ(recordedPath("../../elsewhere/M.xml", run), "M.xml");
  EXPECT_EQ(recordedPath("/lustre/user/", run), "user");
  EXPECT_EQ(recordedPath("/checkout/of/other/deck.xml", run), "deck.xml");
}

TEST(RecordedPath, NeverAbsoluteNeverAbove) {
  for (const char* p : {"/a/b.xml", "/", "..", "../x", "/checkout/of/hybrid3d/../x.xml", "y.xml"}) {
    const std::string r = recordedPath(p, run);
    EXPECT_FALSE(r.empty()) << p;
    EXPECT_NE(r.front(), '/') << p << " -> " << r;
    EXPECT_NE(r.rfind("..", 0), 0u) << p << " -> " << r;
  }
}

}  // namespace
}  // namespace hybrid3d::test
