// Files the readers used to get wrong although they are valid (issue 41): a .nii.gz of several
// gzip members (gzip -t accepts it; its last four bytes give the last member's size only), a
// fixed-length layout attribute that fills its bytes (h5py's np.bytes_), and virtual and
// external storage whose bytes are all there. Each is read and checked value by value.
#include <filesystem>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <hdf5.h>

#include <hybrid3d/data/Hdf5.hpp>
#include <hybrid3d/generate/NiftiVolume.hpp>

#include "ErrorOf.hpp"
#include "GenerateTestUtils.hpp"
#include "NiftiTestFile.hpp"

namespace {

using namespace hybrid3d;

TEST(ReaderHardening, AGzipFileOfSeveralMembersIsReadVoxelByVoxel) {
  test::ScratchDir dir(MPI_COMM_SELF);
  test::NiftiSpec spec;
  spec.xyzt = {7, 5, 3, 2};
  spec.datatype = NIFTI_TYPE_INT16;
  spec.slope = 2;
  spec.inter = -5;
  std::vector<double> stored(7 * 5 * 3 * 2);
  for (std::size_t v = 0; v < stored.size(); ++v) stored[v] = double(v * 37 % 101) - 50;
  for (int version : {1, 2}) {
    spec.version = version;
    const std::string plain = dir / ("v" + std::to_string(version) + ".nii");
    test::writeNiftiFile(plain, spec, stored);
    const std::string bytes = test::niftiFileBytes(plain);
    for (const auto& [members, empty] : {std::pair{3, 0}, {1, 1}, {4, 1}}) {
      const std::string packed =
          dir / ("v" + std::to_string(version) + "_" + std::to_string(members) +
                 std::to_string(empty) + ".nii.gz");
      test::writeNiftiBytes(packed, bytes, members, empty);
      ASSERT_EQ(test::niftiFileBytes(packed), bytes) << packed;  // zlib reads it whole
      const generate::NiftiVolume v = generate::readNiftiVolume(packed);
      EXPECT_EQ(v.channels, 2);
      EXPECT_EQ(v.extent, (std::array<Index, 3>{3, 5, 7}));
      ASSERT_EQ(v.values.size(), stored.size()) << packed;
      for (std::size_t i = 0; i < stored.size(); ++i)
        ASSERT_EQ(v.values[i], 2 * stored[i] - 5) << packed << " voxel " << i;
    }
  }
}

// A scalar string attribute "layout" = value on `object`: fixed-length with `pad`, or variable.
void writeLayout(hid_t object, const std::string& value, H5T_str_t pad, bool variable) {
  const hid_t type = H5Tcopy(H5T_C_S1);
  H5Tset_size(type, variable ? H5T_VARIABLE : value.size());
  if (!variable) H5Tset_strpad(type, pad);
  const hid_t space = H5Screate(H5S_SCALAR);
  const hid_t a = H5Acreate2(object, "layout", type, space, H5P_DEFAULT, H5P_DEFAULT);
  const char* text = value.c_str();
  H5Awrite(a, type, variable ? static_cast<const void*>(&text) : text);
  H5Aclose(a);
  H5Sclose(space);
  H5Tclose(type);
}

TEST(ReaderHardening, EveryStringFormOfTheLayoutAttributeIsReadWhole) {
  test::ScratchDir dir(MPI_COMM_SELF);
  const std::vector<std::pair<H5T_str_t, bool>> forms{{H5T_STR_NULLPAD, false},
                                                      {H5T_STR_NULLTERM, false},
                                                      {H5T_STR_SPACEPAD, false},
                                                      {H5T_STR_NULLTERM, true}};
  for (std::size_t k = 0; k < forms.size(); ++k) {
    const std::string path = dir / ("layout" + std::to_string(k) + ".h5");
    const hid_t f = H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
    writeLayout(f, "DHWC", forms[k].first, forms[k].second);
    H5Fclose(f);
    const data::File file(path);
    EXPECT_EQ(data::stringAttribute(file.id(), "layout", path).value_or("none"), "DHWC")
        << "string form " << k;
  }
}

// Dataset /full of `values` in a new file `path`, stored through `dcpl` (virtual: not written).
void writeFull(const std::string& path, const std::vector<float>& values, hid_t dcpl,
               bool virtualDataset = false) {
  const hsize_t n = values.size();
  const hid_t f = H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
  const hid_t space = H5Screate_simple(1, &n, nullptr);
  const hid_t d = H5Dcreate2(f, "/full", H5T_IEEE_F32LE, space, H5P_DEFAULT, dcpl, H5P_DEFAULT);
  if (!virtualDataset) H5Dwrite(d, H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, values.data());
  H5Dclose(d);
  H5Sclose(space);
  H5Fclose(f);
}

TEST(ReaderHardening, VirtualAndExternalStorageWithAllTheirBytesIsRead) {
  test::ScratchDir dir(MPI_COMM_SELF);
  std::vector<float> values(60);
  for (std::size_t i = 0; i < values.size(); ++i) values[i] = float(i) * 0.5f - 7;
  writeFull(dir / "source.h5", values, H5P_DEFAULT);
  const hsize_t n = values.size();
  const hid_t space = H5Screate_simple(1, &n, nullptr);
  const hid_t vds = H5Pcreate(H5P_DATASET_CREATE);
  H5Pset_virtual(vds, space, "source.h5", "/full", space);  // beside the virtual file
  writeFull(dir / "virtual.h5", values, vds, true);
  const hid_t ext = H5Pcreate(H5P_DATASET_CREATE);
  H5Pset_external(ext, (dir / "external.raw").c_str(), 0, n * sizeof(float));
  writeFull(dir / "external.h5", values, ext);
  H5Pclose(ext);
  H5Pclose(vds);
  H5Sclose(space);
  EXPECT_EQ(data::File(dir / "virtual.h5").read<float>("/full"), values);
  EXPECT_EQ(data::File(dir / "external.h5").read<float>("/full"), values);

  std::filesystem::remove(dir / "source.h5");
  std::filesystem::resize_file(dir / "external.raw", 100);
  const std::string gone =
      test::errorOf([&] { data::File(dir / "virtual.h5").read<float>("/full"); });
  EXPECT_NE(gone.find("virtual.h5: dataset '/full' is virtual, and its source dataset '/full' in "
                      "source.h5 is missing"),
            std::string::npos)
      << gone;
  const std::string shortRaw =
      test::errorOf([&] { data::File(dir / "external.h5").read<float>("/full"); });
  EXPECT_NE(shortRaw.find("external.h5: dataset '/full' keeps 240 bytes in external file"),
            std::string::npos)
      << shortRaw;
}

}  // namespace
