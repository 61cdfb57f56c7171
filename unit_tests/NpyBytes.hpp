#pragma once
// The bytes numpy.save writes for an array, for the tests that make .npy files (the data tests'
// samples, make_bad_file's spoilt ones): the magic, the version, the header dict padded with
// spaces and a newline to a multiple of 64 bytes, then the data as given. The lies the bad-file
// tests need are arguments: a shape text other than the data's, a header length other than the
// header's, a file cut short.

#include <cstdint>
#include <string>
#include <vector>

namespace hybrid3d::test {

// numpy's shape tuple text: (4,) for one dimension, (7, 6, 5, 3) for more.
template <class Int>
std::string npyShapeText(const std::vector<Int>& shape) {
  std::string text;
  for (Int n : shape) text += std::to_string(n) + ", ";
  text.resize(text.size() - (shape.size() == 1 ? 1 : 2));
  return text;
}

struct NpyLayout {
  std::string descr = "<i2";         // as written into the header
  int version = 1;                   // 1: a 2-byte header length; 2 or 3: a 4-byte one
  bool fortran = false;              // the header's fortran_order
  std::string shapeText;             // inside the parentheses
  long long claimedHeader = -1;      // -1: the true header length
  long long cut = -1;                // -1: the whole file, else its first `cut` bytes
  std::string secondShapeText = {};  // not empty: the dict gives 'shape' again, this one last
};

inline std::string npyFileBytes(const NpyLayout& o, const std::string& data) {
  std::string dict =
      "{'descr': '" + o.descr + "', 'fortran_order': " + (o.fortran ? "True" : "False") +
      ", 'shape': (" + o.shapeText + "), " +
      (o.secondShapeText.empty() ? "" : "'shape': (" + o.secondShapeText + "), ") + "}";
  const std::size_t prefix = o.version == 1 ? 10 : 12;
  while ((prefix + dict.size() + 1) % 64 != 0) dict += ' ';
  dict += '\n';
  std::string file = "\x93NUMPY";
  file += char(o.version);
  file += char(0);
  const std::uint64_t header = o.claimedHeader >= 0 ? std::uint64_t(o.claimedHeader) : dict.size();
  for (std::size_t i = 0; i < prefix - 8; ++i) file += char((header >> (8 * i)) & 0xff);
  file += dict + data;
  if (o.cut >= 0) file.resize(std::size_t(o.cut));
  return file;
}

}  // namespace hybrid3d::test
