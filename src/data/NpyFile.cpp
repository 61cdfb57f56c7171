#include <hybrid3d/core/Error.hpp>
#include <hybrid3d/data/InputLayout.hpp>
#include <hybrid3d/data/NpyFile.hpp>

#include <algorithm>
#include <cerrno>
#include <iterator>
#include <cstring>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "impl/NpyDict.hpp"

namespace hybrid3d::data {
namespace {

constexpr char kMagic[] = "\x93NUMPY";
constexpr std::size_t kMagicSize = 6;

bool hostIsLittleEndian() {
  const std::uint16_t one = 1;
  unsigned char first;
  std::memcpy(&first, &one, 1);
  return first == 1;
}

// Reads exactly `bytes` at `offset`; false when the file ends first.
bool readAt(int fd, void* out, std::size_t bytes, std::uint64_t offset) {
  auto* p = static_cast<char*>(out);
  while (bytes > 0) {
    const ssize_t n = ::pread(fd, p, bytes, off_t(offset));
    if (n < 0 && errno == EINTR) continue;
    if (n == 0) errno = 0;  // the end of the file, not an error
    if (n <= 0) return false;
    p += n;
    bytes -= std::size_t(n);
    offset += std::uint64_t(n);
  }
  return true;
}

// strerror of a failed readAt, or what its early end means.
std::string whyShort() {
  return errno == 0 ? std::string("the file is shorter than its header says")
                    : std::string("an I/O error: ") + std::strerror(errno);
}

// Checks the descr: a byte order this host reads and an item size; fills kind and itemSize.
void checkDescr(const std::string& path, NpyHeader& h) {
  const std::string& d = h.descr;
  if (d.size() < 3 || d.size() > 6 || d.find_first_not_of("0123456789", 2) != std::string::npos)
    fail(path, ": .npy array has dtype '", d, "'; expected '<i2' (int16) or '<f4' (float32)");
  const char order = d[0];
  if (order != '<' && order != '>' && order != '|' && order != '=')
    fail(path, ": .npy array has dtype '", d, "'; expected '<i2' (int16) or '<f4' (float32)");
  const bool little = order == '<' || order == '|' || (order == '=' && hostIsLittleEndian());
  if (!little)
    fail(path, ": .npy array is big-endian ('", d,
         "'); hybrid3d reads little-endian data "
         "(numpy: a.astype(a.dtype.newbyteorder('<')))");
  if (!hostIsLittleEndian()) fail(path, ": .npy files are read on little-endian hosts only");
  h.kind = d[1];
  h.itemSize = std::size_t(std::stoul(d.substr(2)));
  // The numbers numpy has (its item sizes are bytes; 'U3' would be 12): anything else is read
  // as bytes of another size than numpy's, so it is refused.
  const std::string number = d.substr(1);
  static const char* const kNumbers[] = {"b1", "i1", "i2", "i4", "i8", "u1", "u2",
                                         "u4", "u8", "f2", "f4", "f8", "c8", "c16"};
  if (std::none_of(std::begin(kNumbers), std::end(kNumbers),
                   [&](const char* n) { return number == n; }))
    fail(path, ": .npy array has dtype '", d, "'; expected '<i2' (int16) or '<f4' (float32)");
}

}  // namespace

std::uint64_t NpyHeader::elements() const {
  std::uint64_t n = 1;
  for (Index s : shape) n *= std::uint64_t(s);
  return n;
}

bool isNpySample(const std::string& path) {
  const std::string suffix = ".data.npy";
  return path.size() > suffix.size() &&
         path.compare(path.size() - suffix.size(), suffix.size(), suffix) == 0;
}

std::string npyLabelPath(const std::string& dataPath) {
  return dataPath.substr(0, dataPath.size() - std::string(".data.npy").size()) + ".label.npy";
}

NpyFile::NpyFile(const std::string& path) : path_(path) {
  fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd_ < 0) fail(path, ": cannot open file (", std::strerror(errno), ")");
  struct stat st {};
  if (::fstat(fd_, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd_);
    fd_ = -1;
    fail(path, ": not a regular file");
  }
  const std::uint64_t size = std::uint64_t(st.st_size);
  // Magic (6), version (2), header length (2 bytes in 1.0, 4 in 2.0 and 3.0), then the dict.
  unsigned char prefix[12] = {};
  if (!readAt(fd_, prefix, 10, 0) || std::memcmp(prefix, kMagic, kMagicSize) != 0)
    fail(path, ": not a numpy .npy file (no \\x93NUMPY magic at its start)");
  const int major = prefix[6], minor = prefix[7];
  if ((major != 1 && major != 2 && major != 3) || minor != 0)
    fail(path, ": .npy format version ", major, ".", minor, "; hybrid3d reads 1.0, 2.0 and 3.0");
  std::uint64_t headerBytes = 0, prefixBytes = 10;
  if (major == 1) {
    headerBytes = std::uint64_t(prefix[8]) | std::uint64_t(prefix[9]) << 8;
  } else {
    prefixBytes = 12;
    if (!readAt(fd_, prefix + 10, 2, 10)) fail(path, ": .npy file ends inside its prefix");
    for (int i = 0; i < 4; ++i) headerBytes |= std::uint64_t(prefix[8 + i]) << (8 * i);
  }
  if (prefixBytes + headerBytes > size)
    fail(path, ": .npy header claims ", headerBytes, " bytes but the file holds ",
         size - prefixBytes, " after its prefix (truncated, or a header that lies about its size)");
  std::string dict(std::size_t(headerBytes), '\0');
  if (!readAt(fd_, dict.data(), dict.size(), prefixBytes))
    fail(path, ": cannot read the .npy header (", whyShort(), ")");
  header_ = Impl::parseNpyDict(path, dict);
  checkDescr(path, header_);
  header_.dataOffset = prefixBytes + headerBytes;
  // The shape's byte count, refused before it can wrap (a wrapped one could match the file).
  std::uint64_t bytes = header_.itemSize;
  for (Index n : header_.shape) {
    if (n > 0 && bytes > (std::uint64_t(1) << 62) / std::uint64_t(n))
      fail(path, ": .npy header's shape ", shapeText(header_.shape), " of '", header_.descr,
           "' is more than 2^62 bytes");
    bytes *= std::uint64_t(n);
  }
  const std::uint64_t need = header_.elements() * header_.itemSize,
                      have = size - header_.dataOffset;
  if (have != need)
    fail(path, ": .npy file holds ", have, " data bytes but its header's shape ",
         shapeText(header_.shape), " of '", header_.descr, "' needs ", need,
         " (truncated, or a header that lies about its size)");
}

NpyFile::~NpyFile() {
  if (fd_ >= 0) ::close(fd_);
}

void NpyFile::readBox(const std::vector<Index>& start, const std::vector<Index>& count,
                      void* out) const {
  const std::vector<Index>& shape = header_.shape;
  const int n = int(shape.size());
  if (int(start.size()) != n || int(count.size()) != n)
    fail(path_, ": a box of rank ", start.size(), " read from an array of rank ", n);
  for (int k = 0; k < n; ++k)
    if (count[k] <= 0) return;  // an empty box reads nothing
  if (n == 0) {                 // a 0-d array: one element
    if (!readAt(fd_, out, header_.itemSize, header_.dataOffset))
      fail(path_, ": cannot read the array's bytes (", whyShort(), ")");
    return;
  }
  // The run: dimension k and every full dimension inside it are contiguous in the file.
  int k = n - 1;
  while (k > 0 && count[k] == shape[k]) --k;
  std::vector<std::uint64_t> stride(std::size_t(n), 1);
  for (int j = n - 2; j >= 0; --j) stride[j] = stride[j + 1] * std::uint64_t(shape[j + 1]);
  const std::uint64_t runBytes = std::uint64_t(count[k]) * stride[k] * header_.itemSize;
  std::vector<Index> at(std::size_t(k), 0);  // the odometer over the dimensions outside the run
  auto* dst = static_cast<char*>(out);
  for (;;) {
    std::uint64_t element = std::uint64_t(start[k]) * stride[k];
    for (int j = 0; j < k; ++j) element += std::uint64_t(start[j] + at[j]) * stride[j];
    if (!readAt(fd_, dst, runBytes, header_.dataOffset + element * header_.itemSize))
      fail(path_, ": cannot read the array's bytes (", whyShort(), ")");
    dst += runBytes;
    int j = k - 1;
    while (j >= 0 && ++at[j] == count[j]) at[j--] = 0;
    if (j < 0) break;
  }
}

void NpyFile::readAll(void* out) const {
  readBox(std::vector<Index>(header_.shape.size(), 0), header_.shape, out);
}

}  // namespace hybrid3d::data
