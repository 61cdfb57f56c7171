#pragma once
/// \file
/// NumPy's .npy format, read without numpy (the MLPerf HPC CosmoFlow release ships each sample as
/// NAME.data.npy int16 [128,128,128,4] beside NAME.label.npy float32 [4]). Only what hybrid3d
/// reads: versions 1.0, 2.0 and 3.0, little-endian int16 and float32, C order. The header is
/// checked against the file's size before anything is read, so a header that lies or a file cut
/// short is one line naming the file instead of a read past its end or garbage in the sample.
/// A rank reads its box by file offsets (readBox), never the whole array.

#include <cstdint>
#include <string>
#include <vector>

#include <hybrid3d/core/Types.hpp>

namespace hybrid3d::data {

struct NpyHeader {
  std::string descr;  // as written: "<i2", "<f4"
  char kind = 0;      // 'i' signed integer, 'f' float, ... (descr[1])
  std::size_t itemSize = 0;
  std::vector<Index> shape;
  std::uint64_t dataOffset = 0;  // bytes before the first element
  std::uint64_t elements() const;
};

/// An .npy file opened for reading by this process alone (POSIX), closed by the destructor.
class NpyFile {
public:
  /// Opens `path` and checks its header: magic, version, a dict with 'descr', 'fortran_order'
  /// and 'shape', a little-endian or single-byte type, C order, and a file size of exactly the
  /// header plus shape x item size. Throws one line naming the file otherwise.
  explicit NpyFile(const std::string& path);
  ~NpyFile();
  NpyFile(const NpyFile&) = delete;
  NpyFile& operator=(const NpyFile&) = delete;

  const std::string& path() const { return path_; }
  const NpyHeader& header() const { return header_; }

  /// Reads elements [start, start + count) of the row-major array (count.size() == the array's
  /// rank) into `out`, row-major, with one pread per contiguous run of the file (a whole slab
  /// when the box spans the inner dimensions). Throws naming the file on a short read.
  void readBox(const std::vector<Index>& start, const std::vector<Index>& count, void* out) const;
  /// The whole array (for tiny ones: the targets).
  void readAll(void* out) const;

private:
  std::string path_;
  int fd_ = -1;
  NpyHeader header_;
};

/// Whether `path` names a numpy sample (NAME.data.npy), and the targets file beside it
/// (NAME.label.npy).
bool isNpySample(const std::string& path);
std::string npyLabelPath(const std::string& dataPath);

}  // namespace hybrid3d::data
