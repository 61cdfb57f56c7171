#include <hybrid3d/core/Error.hpp>
#include <hybrid3d/data/Hdf5.hpp>
#include <hybrid3d/generate/SampleWriter.hpp>

#include <cstdio>

namespace hybrid3d::generate {

// The HDF5 wrappers of the data part (Hdf5.hpp).
using data::Handle;
using data::nativeType;
using data::QuietErrors;

SampleWriter::SampleWriter(MPI_Comm comm, const std::string& path)
    : comm_(comm), path_(path), temporary_(path + ".tmp") {
  MPI_Comm_rank(comm, &rank_);
  QuietErrors quiet;
  Handle fapl(H5Pcreate(H5P_FILE_ACCESS), H5Pclose);
  H5Pset_fapl_mpio(fapl, comm, MPI_INFO_NULL);
  file_ = H5Fcreate(temporary_.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, fapl);
  // Creation is collective, so every rank sees the same outcome.
  if (file_ < 0) fail(temporary_, ": cannot create the HDF5 file");
}

void SampleWriter::agree(bool ok, const char* what, const std::string& name) const {
  int mine = ok ? 1 : 0, all = 0;
  MPI_Allreduce(&mine, &all, 1, MPI_INT, MPI_MIN, comm_);
  if (!all) fail(temporary_, ": ", what, name.empty() ? "" : " '", name, name.empty() ? "" : "'");
}

// Every failure inside the writer is agreed over the communicator (agree()), so when a writer
// is destroyed by an error every rank is here and the collective close cannot hang.
SampleWriter::~SampleWriter() {
  if (committed_) return;
  if (file_ >= 0) {
    QuietErrors quiet;
    H5Fclose(file_);
  }
  if (rank_ == 0) std::remove(temporary_.c_str());
}

void SampleWriter::write(const std::string& name, const std::vector<Index>& dims, int splitDim,
                         Index first, Index count, hid_t type, const void* data) {
  QuietErrors quiet;
  const int rank = static_cast<int>(dims.size());
  std::vector<hsize_t> global(dims.begin(), dims.end());
  Handle fileSpace(H5Screate_simple(rank, global.data(), nullptr), H5Sclose);
  // No modification times in the object headers: the same seed then gives byte-identical
  // files (checksums can verify a regenerated dataset), not just identical data.
  Handle dcpl(H5Pcreate(H5P_DATASET_CREATE), H5Pclose);
  H5Pset_obj_track_times(dcpl, 0);
  Handle dset(H5Dcreate2(file_, name.c_str(), type, fileSpace, H5P_DEFAULT, dcpl, H5P_DEFAULT),
              H5Dclose);
  agree(dset.valid(), "cannot create dataset", name);

  std::vector<hsize_t> start(rank, 0), local(global);
  start[splitDim] = static_cast<hsize_t>(first);
  local[splitDim] = static_cast<hsize_t>(count);
  Handle memSpace(H5Screate_simple(rank, local.data(), nullptr), H5Sclose);
  if (count > 0) {
    H5Sselect_hyperslab(fileSpace, H5S_SELECT_SET, start.data(), nullptr, local.data(), nullptr);
  } else {
    // A rank without planes still joins the collective write, selecting nothing.
    H5Sselect_none(fileSpace);
    H5Sselect_none(memSpace);
  }
  Handle dxpl(H5Pcreate(H5P_DATASET_XFER), H5Pclose);
  H5Pset_dxpl_mpio(dxpl, H5FD_MPIO_COLLECTIVE);
  agree(H5Dwrite(dset, type, memSpace, fileSpace, dxpl, data) >= 0,
        "cannot write (disk full?) dataset", name);
}

template <class T>
void SampleWriter::writeSlab(const std::string& name, const std::vector<Index>& dims, int splitDim,
                             Index first, Index count, const T* data) {
  write(name, dims, splitDim, first, count, data::nativeType<T>(), data);
}

template <class T>
void SampleWriter::writeWhole(const std::string& name, const std::vector<Index>& dims,
                              const T* data) {
  write(name, dims, 0, 0, rank_ == 0 ? dims[0] : 0, data::nativeType<T>(), data);
}

#define HYBRID3D_SAMPLE_WRITER(T)                                                              \
  template void SampleWriter::writeSlab<T>(const std::string&, const std::vector<Index>&, int, \
                                           Index, Index, const T*);                            \
  template void SampleWriter::writeWhole<T>(const std::string&, const std::vector<Index>&,     \
                                            const T*);
HYBRID3D_SAMPLE_WRITER(float)
HYBRID3D_SAMPLE_WRITER(double)
HYBRID3D_SAMPLE_WRITER(std::int16_t)
HYBRID3D_SAMPLE_WRITER(std::uint8_t)
HYBRID3D_SAMPLE_WRITER(std::int32_t)
#undef HYBRID3D_SAMPLE_WRITER

void SampleWriter::attribute(const std::string& name, const std::string& value) {
  QuietErrors quiet;
  Handle type(H5Tcopy(H5T_C_S1), H5Tclose);
  H5Tset_size(type, value.empty() ? 1 : value.size());
  H5Tset_strpad(type, H5T_STR_NULLTERM);
  Handle space(H5Screate(H5S_SCALAR), H5Sclose);
  Handle a(H5Acreate2(file_, name.c_str(), type, space, H5P_DEFAULT, H5P_DEFAULT), H5Aclose);
  agree(a.valid() && H5Awrite(a, type, value.c_str()) >= 0, "cannot write attribute", name);
}

void SampleWriter::attribute(const std::string& name, double value) {
  QuietErrors quiet;
  Handle space(H5Screate(H5S_SCALAR), H5Sclose);
  Handle a(H5Acreate2(file_, name.c_str(), H5T_NATIVE_DOUBLE, space, H5P_DEFAULT, H5P_DEFAULT),
           H5Aclose);
  agree(a.valid() && H5Awrite(a, H5T_NATIVE_DOUBLE, &value) >= 0, "cannot write attribute", name);
}

void SampleWriter::attribute(const std::string& name, const std::vector<double>& values) {
  QuietErrors quiet;
  const hsize_t n = values.size();
  Handle space(H5Screate_simple(1, &n, nullptr), H5Sclose);
  Handle a(H5Acreate2(file_, name.c_str(), H5T_NATIVE_DOUBLE, space, H5P_DEFAULT, H5P_DEFAULT),
           H5Aclose);
  agree(a.valid() && H5Awrite(a, H5T_NATIVE_DOUBLE, values.data()) >= 0, "cannot write attribute",
        name);
}

void SampleWriter::commit() {
  {
    QuietErrors quiet;
    const herr_t closed = H5Fclose(file_);
    file_ = H5I_INVALID_HID;  // closed now, successfully or not
    agree(closed >= 0, "cannot close (disk full?) the file", "");
  }
  int renamed = 1;
  if (rank_ == 0) renamed = std::rename(temporary_.c_str(), path_.c_str()) == 0 ? 1 : 0;
  MPI_Bcast(&renamed, 1, MPI_INT, 0, comm_);
  if (!renamed) fail(path_, ": cannot rename '", temporary_, "' into place");
  committed_ = true;
}

}  // namespace hybrid3d::generate
