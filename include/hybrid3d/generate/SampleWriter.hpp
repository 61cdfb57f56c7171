#pragma once
/// \file
/// Writes one sample file collectively through parallel HDF5 (MPI-IO): every rank writes its own
/// slab of each volume with a collective hyperslab write; nobody gathers the volume.
///
/// Atomic: the file is written under a temporary name (`path` + ".tmp", which no reader globs as
/// a sample) and renamed to `path` by commit(). A run interrupted before commit() leaves at most
/// the temporary file, never a half-written file under the final name; a writer destroyed
/// without commit() removes its temporary file.

#include <cstdint>
#include <string>
#include <vector>

#include <hdf5.h>
#include <mpi.h>

#include <hybrid3d/core/Types.hpp>
#include <hybrid3d/data/Hdf5.hpp>

namespace hybrid3d::generate {

class SampleWriter {
public:
  /// Creates the temporary file, collectively over `comm`. Throws naming the path on failure.
  SampleWriter(MPI_Comm comm, const std::string& path);
  ~SampleWriter();
  SampleWriter(const SampleWriter&) = delete;
  SampleWriter& operator=(const SampleWriter&) = delete;

  /// Dataset `name` of row-major shape `dims`; this rank holds the index range
  /// [first, first + count) of dimension `splitDim` (all of the other dimensions), contiguous
  /// and row-major in `data`. count may be 0. Collective.
  template <class T>
  void writeSlab(const std::string& name, const std::vector<Index>& dims, int splitDim, Index first,
                 Index count, const T* data);

  /// A small dataset written from rank 0's `data` (every rank calls; the others' data is unused).
  template <class T>
  void writeWhole(const std::string& name, const std::vector<Index>& dims, const T* data);

  /// Root-group attributes (collective; every rank passes the same value).
  void attribute(const std::string& name, const std::string& value);
  void attribute(const std::string& name, double value);
  void attribute(const std::string& name, const std::vector<double>& values);  // a 1D array

  /// Closes the file and renames it to its final name (collective).
  void commit();

  const std::string& path() const { return path_; }

private:
  void write(const std::string& name, const std::vector<Index>& dims, int splitDim, Index first,
             Index count, hid_t type, const void* data);
  // Throws on every rank, naming the file and `what name`, unless `ok` on every rank.
  void agree(bool ok, const char* what, const std::string& name) const;

  MPI_Comm comm_;
  int rank_ = 0;
  std::string path_;
  std::string temporary_;
  hid_t file_ = H5I_INVALID_HID;  // closed by commit() or the destructor
  bool committed_ = false;
};

}  // namespace hybrid3d::generate
