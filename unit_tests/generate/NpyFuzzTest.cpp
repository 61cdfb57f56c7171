// The .npy reader (data::NpyFile) against random header dicts, descrs, shapes, version bytes,
// header lengths, byte flips and truncations of the files numpy.save writes (NpyBytes.hpp):
// every case must end in one line refusing the file, or in exactly the shape and bytes that
// numpy would read from it (npyReference below, written from numpy's rules with std::regex),
// never in a signal or a hang.
#include <cstdio>
#include <random>
#include <regex>
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include <hybrid3d/data/NpyFile.hpp>

#include "FuzzCase.hpp"
#include "GenerateTestUtils.hpp"
#include "NpyBytes.hpp"

namespace {

using namespace hybrid3d;
using test::Expected;

// "D0,D1,...|" and the array's bytes, as both the reference and the reader report a read.
std::string readText(const std::vector<long long>& shape, const std::string& bytes) {
  std::string text;
  for (long long n : shape) text += std::to_string(n) + ",";
  return text + "|" + bytes;
}

// numpy's item size of a descr it reads as a number; 0 for anything else.
std::size_t numpyItemSize(const std::string& descr) {
  static const std::regex number("^[<>|=]([biufc])([0-9]+)$");
  static const std::set<std::string> known{"b1", "i1", "i2", "i4", "i8", "u1", "u2",
                                           "u4", "u8", "f2", "f4", "f8", "c8", "c16"};
  std::smatch m;
  if (!std::regex_match(descr, m, number) || !known.count(m[1].str() + m[2].str())) return 0;
  return std::size_t(std::stoul(m[2].str()));
}

// What numpy.load reads from `file`: the header must be a dict literal holding exactly descr
// (a number type), fortran_order (False here: the reader refuses True anyway) and shape (a
// tuple of whole numbers); the data must hold the shape's bytes.
Expected npyReference(const std::string& file) {
  if (file.size() < 10 || file.compare(0, 6, "\x93NUMPY") != 0) return std::nullopt;
  const int major = static_cast<unsigned char>(file[6]), minor = file[7];
  if (major < 1 || major > 3 || minor != 0) return std::nullopt;
  const std::size_t prefix = major == 1 ? 10 : 12;
  if (file.size() < prefix) return std::nullopt;
  std::size_t length = 0;
  for (std::size_t i = 8; i < prefix; ++i)
    length |= std::size_t(static_cast<unsigned char>(file[i])) << (8 * (i - 8));
  if (prefix + length > file.size()) return std::nullopt;
  const std::string header = file.substr(prefix, length);
  static const std::regex dict(R"(^[ \t\r\n]*\{([\s\S]*)\}[ \t\r\n]*$)");
  static const std::regex entry(
      R"(^[ \t\r\n]*(['"])([a-z_]+)\1[ \t\r\n]*:[ \t\r\n]*('[^'\\\r\n]*'|"[^"\\\r\n]*"|True|False|\([ \t\r\n0-9,]*\))[ \t\r\n]*(,|$))");
  std::smatch m;
  if (!std::regex_match(header, m, dict)) return std::nullopt;
  std::string rest = m[1].str(), descr, shape, order;
  std::set<std::string> keys;
  while (rest.find_first_not_of(" \t\r\n") != std::string::npos) {
    if (!std::regex_search(rest, m, entry) || !keys.insert(m[2].str()).second) return std::nullopt;
    (m[2] == "descr" ? descr : m[2] == "shape" ? shape : order) = m[3].str();
    rest = m.suffix().str();
  }
  if (keys != std::set<std::string>{"descr", "fortran_order", "shape"} || order != "False" ||
      descr.size() < 2 || (descr[0] != '\'' && descr[0] != '"'))
    return std::nullopt;
  const std::size_t item = numpyItemSize(descr.substr(1, descr.size() - 2));
  // A tuple: () or (n,) or (n, m, ...) with an optional trailing comma; no leading zeros.
  static const std::regex tuple(
      R"(^\([ \t\r\n]*((0|[1-9][0-9]{0,14})[ \t\r\n]*,[ \t\r\n]*((0|[1-9][0-9]{0,14})[ \t\r\n]*(,[ \t\r\n]*(0|[1-9][0-9]{0,14})[ \t\r\n]*)*,?[ \t\r\n]*)?)?\)$)");
  if (item == 0 || !std::regex_match(shape, tuple)) return std::nullopt;
  std::vector<long long> dims;
  static const std::regex digits("[0-9]+");
  for (auto it = std::sregex_iterator(shape.begin(), shape.end(), digits);
       it != std::sregex_iterator(); ++it)
    dims.push_back(std::stoll(it->str()));
  long double bytes = item;
  for (long long n : dims) bytes *= n;
  if (bytes > file.size() - prefix - length) return std::nullopt;
  return readText(dims, file.substr(prefix + length, std::size_t(bytes)));
}

const std::vector<std::string> kDescrs{"<i2", "<f4", "|u1",  "<f8",  "<i8",  "|b1", "<c8",
                                       "=f4", "|i2", "<u4",  ">i2",  "<U3",  "<i3", "x",
                                       "<i",  "i2",  "<f16", "<i2'", "<c16", "<V8", "<i99999999"};
const std::vector<std::string> kShapes{
    "",    "4,", "4",  "2, 3", "2, 3,", "-1, 2",   "1_0,",          "007,", "99999999999999999999,",
    "2,,", " ",  "a,", "0,",   "0, 5",  "3,4,5,6", "1, 2, 3) + (4", "2,\n3"};

// One random case written to `path`: numpy.save's bytes of a random array, then damaged.
std::string makeCase(const std::string& path, std::mt19937& rng, bool& valid) {
  auto pick = [&](std::size_t n) { return std::size_t(rng() % n); };
  test::NpyLayout layout;
  layout.descr = kDescrs[pick(7)];
  std::vector<long long> dims(1 + pick(4));
  std::size_t n = numpyItemSize(layout.descr);
  for (long long& d : dims)
    n *= std::size_t(d = static_cast<long long>(pick(8) == 0 ? 0 : 1 + pick(4)));
  layout.shapeText = test::npyShapeText(dims);
  std::string data(n, '\0');
  for (char& c : data) c = char(rng());
  std::string what;
  valid = true;
  for (std::size_t m = pick(3); m > 0; --m, valid = false) {
    switch (pick(8)) {
      case 0:
        layout.descr = kDescrs[pick(kDescrs.size())];
        what += " descr " + layout.descr;
        break;
      case 1:
        layout.shapeText = kShapes[pick(kShapes.size())];
        what += " shape (" + layout.shapeText + ")";
        break;
      case 2:
        layout.fortran = true;
        what += " fortran";
        break;
      case 3:
        layout.secondShapeText = kShapes[pick(kShapes.size())];
        what += " shape again";
        break;
      case 4:
        layout.version = 1 + int(pick(3));
        what += " version " + std::to_string(layout.version);
        break;
      case 5:
        layout.claimedHeader = (long long)(pick(200));
        what += " header length " + std::to_string(layout.claimedHeader);
        break;
      case 6:
        layout.cut = (long long)(pick(140 + n));
        what += " cut at " + std::to_string(layout.cut);
        break;
      default:
        what += " flip";
        break;
    }
  }
  std::string file = test::npyFileBytes(layout, data);
  if (what.find("flip") != std::string::npos && !file.empty()) {
    const std::size_t at = pick(std::min<std::size_t>(file.size(), 140));
    file[at] = char(rng());
    what += " of byte " + std::to_string(at);
  }
  std::FILE* f = std::fopen(path.c_str(), "wb");
  std::fwrite(file.data(), 1, file.size(), f);
  std::fclose(f);
  return layout.descr + " (" + test::npyShapeText(dims) + ")" + (what.empty() ? " as saved" : what);
}

TEST(ReaderFuzz, NpyRefusesOrReadsExactlyTheArray) {
  test::ScratchDir dir(MPI_COMM_SELF);
  std::mt19937 rng(41);
  int read = 0, refused = 0;
  const int cases = 500;
  for (int c = 0; c < cases; ++c) {
    const std::string path = dir / ("case" + std::to_string(c) + ".data.npy");
    bool valid = true;
    const std::string what = makeCase(path, rng, valid);
    std::FILE* f = std::fopen(path.c_str(), "rb");
    std::string file;
    char buffer[4096];
    for (std::size_t k; (k = std::fread(buffer, 1, sizeof buffer, f)) > 0;) file.append(buffer, k);
    std::fclose(f);
    const test::Outcome o = test::runIsolated(
        [&] {
          const data::NpyFile npy(path);
          const data::NpyHeader& h = npy.header();
          std::string bytes(std::size_t(h.elements() * h.itemSize), '\0');
          npy.readAll(bytes.data());
          return readText(std::vector<long long>(h.shape.begin(), h.shape.end()), bytes);
        },
        20);
    EXPECT_EQ(test::verdict(o, npyReference(file)), "") << "case " << c << ": " << what;
    if (valid) {
      EXPECT_EQ(o.kind, test::Outcome::Read) << "case " << c << ": " << what << ": " << o.text;
    }
    (o.kind == test::Outcome::Read ? read : refused) += 1;
  }
  std::printf("npy fuzz: %d cases, %d read, %d refused\n", cases, read, refused);
  EXPECT_GT(read, cases / 10);
  EXPECT_GT(refused, cases / 10);
}

}  // namespace
