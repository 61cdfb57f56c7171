#pragma once
/// \file
/// A thin RAII layer over the HDF5 C API: handles that close themselves and reads that fail
/// with one line naming the file and the object. Used by the sample reader, checkpoints, the
/// reference checker and the tests; it hides no HDF5 concept (hyperslabs, property lists stay
/// visible where they matter).

#include <optional>
#include <string>
#include <vector>

#include <hdf5.h>
#include <mpi.h>

#include <hybrid3d/core/Types.hpp>

namespace hybrid3d::data {

/// Owns one hid_t and closes it with the matching H5*close.
class Handle {
public:
  using Closer = herr_t (*)(hid_t);
  Handle() = default;
  Handle(hid_t id, Closer close) : id_(id), close_(close) {}
  ~Handle() { reset(); }
  Handle(Handle&& o) noexcept : id_(o.id_), close_(o.close_) { o.id_ = H5I_INVALID_HID; }
  Handle& operator=(Handle&& o) noexcept {
    if (this != &o) {
      reset();
      id_ = o.id_;
      close_ = o.close_;
      o.id_ = H5I_INVALID_HID;
    }
    return *this;
  }
  Handle(const Handle&) = delete;
  Handle& operator=(const Handle&) = delete;
  hid_t get() const { return id_; }
  operator hid_t() const { return id_; }
  bool valid() const { return id_ >= 0; }
  void reset() {
    if (id_ >= 0 && close_) close_(id_);
    id_ = H5I_INVALID_HID;
  }

private:
  hid_t id_ = H5I_INVALID_HID;
  Closer close_ = nullptr;
};

/// An HDF5 file opened for reading, by one rank (comm == MPI_COMM_SELF, the default) or
/// collectively through MPI-IO by every rank of `comm`. Throws hybrid3d::Error naming the path
/// when the file is missing or not HDF5.
class File {
public:
  explicit File(const std::string& path, MPI_Comm comm = MPI_COMM_SELF);
  const std::string& path() const { return path_; }
  hid_t id() const { return file_.get(); }

  bool hasDataset(const std::string& name) const;
  bool hasAttribute(const std::string& name) const;  // on the root group
  /// Dimensions of dataset `name`; throws naming file and dataset when missing.
  std::vector<Index> shape(const std::string& name) const;
  /// Whole dataset converted to T (HDF5 converts the stored type), row-major.
  template <class T>
  std::vector<T> read(const std::string& name) const;
  /// Root-group attributes.
  double attributeNumber(const std::string& name) const;
  std::string attributeString(const std::string& name) const;
  /// Names of the root-group attributes, in creation order, and whether one holds a string (else
  /// a number or an array); for copying a file's attributes.
  std::vector<std::string> attributeNames() const;
  bool attributeIsString(const std::string& name) const;

  /// Open a dataset; throws naming file and dataset when missing or not stored (checkStored).
  Handle openDataset(const std::string& name) const;

private:
  std::string path_;
  Handle file_;
};

/// Silences HDF5's automatic error-stack printing for the lifetime of the object (our own
/// messages name the file and object instead).
class QuietErrors {
public:
  QuietErrors();
  ~QuietErrors();

private:
  H5E_auto2_t func_ = nullptr;
  void* data_ = nullptr;
};

/// The string attribute `name` of `object` (a file, group or dataset), fixed-length or
/// variable-length, read in the character set it was written in: h5py writes UTF-8 and HDF5
/// converts no character sets, so a read as plain ASCII fails. Empty when `object` has no such
/// attribute or it holds no string; throws naming `where` when it holds one that cannot be read.
/// The one string-attribute reader: File::attributeString and the sample reader's layout use it.
std::optional<std::string> stringAttribute(hid_t object, const std::string& name,
                                           const std::string& where);

/// Throws one line naming `path` and dataset `name` unless its values are stored where HDF5
/// will read them: every filter decodable here (h5py's LZF is not HDF5's), storage allocated (a
/// dataset created and never written, or written in part, reads as fill values), external files
/// holding the bytes they are declared to, the sources of a virtual dataset present (and stored,
/// `depth` levels down). File::openDataset checks every dataset it opens.
void checkStored(hid_t dataset, const std::string& path, const std::string& name, int depth = 0);

/// The HDF5 memory type of a C++ scalar.
template <class T>
hid_t nativeType();

}  // namespace hybrid3d::data
