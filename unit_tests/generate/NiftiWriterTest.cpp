// `hybrid3d predict`'s NIfTI outputs (generate/NiftiWriter.hpp): written on the grid of their
// input, every geometry field of the input's header is read back unchanged -- for an input with
// an sform only, a qform only, both, and a NIfTI-2 input -- and each label lands on its voxel of
// an odd-sized, asymmetric volume.
#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nifti2_io.h>

#include <hybrid3d/generate/NiftiVolume.hpp>
#include <hybrid3d/generate/NiftiWriter.hpp>

#include "NiftiTestFile.hpp"
#include "WorldRank.hpp"

namespace {

namespace fs = std::filesystem;
using hybrid3d::Index;

struct FreeImage {
  void operator()(nifti_image* p) const { nifti_image_free(p); }
};
using Image = std::unique_ptr<nifti_image, FreeImage>;

Image header(const std::string& path) {
  Image im(nifti_image_read(path.c_str(), 0));
  if (!im) throw std::runtime_error("cannot read " + path);
  return im;
}

// An input of 7x6x5 voxels (x, y, z: odd, all different) with the given codes and matrices.
std::string makeInput(const std::string& path, int version, int qform, int sform) {
  hybrid3d::test::NiftiSpec spec;
  spec.xyzt = {7, 6, 5, 1};
  spec.version = version;
  spec.pixdim = {0.75, 1.25, 2.5};
  std::vector<double> ramp(7 * 6 * 5);
  for (std::size_t i = 0; i < ramp.size(); ++i) ramp[i] = double(i);
  hybrid3d::test::writeNiftiFile(path, spec, ramp);
  // The geometry set through the library: a rotated qform with an offset and a flip, an
  // sform of its own (shear included), the time and space units.
  Image im(nifti_image_read(path.c_str(), 1));
  im->qform_code = qform;
  im->sform_code = sform;
  im->quatern_b = 0.1;
  im->quatern_c = -0.2;
  im->quatern_d = 0.3;
  im->qoffset_x = -12.5;
  im->qoffset_y = 7.25;
  im->qoffset_z = 3.0;
  im->qfac = -1;
  const double s[3][4] = {{0.7, 0.1, 0, -10}, {0, 1.2, 0.05, 20}, {0.02, 0, 2.4, -30.5}};
  for (int r = 0; r < 3; ++r)
    for (int c = 0; c < 4; ++c) im->sto_xyz.m[r][c] = s[r][c];
  im->xyz_units = NIFTI_UNITS_MM;
  im->time_units = NIFTI_UNITS_SEC;
  im->nifti_type = version == 2 ? NIFTI_FTYPE_NIFTI2_1 : NIFTI_FTYPE_NIFTI1_1;
  if (version == 2) {
    EXPECT_TRUE(hybrid3d::test::writeNifti2(path, *im));
  } else {
    nifti_image_write(im.get());
  }
  return path;
}

void expectSameGeometry(const nifti_image& a, const nifti_image& b) {
  for (int d = 1; d <= 3; ++d) {
    EXPECT_EQ(a.dim[d], b.dim[d]) << "dim[" << d << "]";
    EXPECT_EQ(a.pixdim[d], b.pixdim[d]) << "pixdim[" << d << "]";
  }
  EXPECT_EQ(a.qform_code, b.qform_code);
  EXPECT_EQ(a.sform_code, b.sform_code);
  EXPECT_EQ(a.xyz_units, b.xyz_units);
  EXPECT_EQ(a.time_units, b.time_units);
  EXPECT_EQ(a.quatern_b, b.quatern_b);
  EXPECT_EQ(a.quatern_c, b.quatern_c);
  EXPECT_EQ(a.quatern_d, b.quatern_d);
  EXPECT_EQ(a.qoffset_x, b.qoffset_x);
  EXPECT_EQ(a.qoffset_y, b.qoffset_y);
  EXPECT_EQ(a.qoffset_z, b.qoffset_z);
  EXPECT_EQ(a.qfac, b.qfac);
  for (int r = 0; r < 4; ++r)
    for (int c = 0; c < 4; ++c) {
      EXPECT_EQ(a.qto_xyz.m[r][c], b.qto_xyz.m[r][c]) << "qform row " << r << " column " << c;
      EXPECT_EQ(a.sto_xyz.m[r][c], b.sto_xyz.m[r][c]) << "sform row " << r << " column " << c;
    }
}

class NiftiWriter : public ::testing::TestWithParam<std::tuple<int, int, int>> {};

TEST_P(NiftiWriter, KeepsEveryGeometryFieldAndPutsEachLabelOnItsVoxel) {
  if (hybrid3d::test::worldRank() != 0) return;  // one rank's file work
  const auto [version, qform, sform] = GetParam();
  const fs::path dir = fs::temp_directory_path() /
                       ("hybrid3d_nifti_writer_" + std::to_string(::getpid()) + "_" +
                        std::to_string(version) + std::to_string(qform) + std::to_string(sform));
  fs::create_directories(dir);
  const std::string input = makeInput((dir / "scan.nii.gz").string(), version, qform, sform);
  // Labels that say where they are: (i + 2 j + 5 k) mod 7 differs between mirrored voxels.
  std::vector<std::uint8_t> labels(7 * 6 * 5);
  for (Index k = 0; k < 5; ++k)
    for (Index j = 0; j < 6; ++j)
      for (Index i = 0; i < 7; ++i)
        labels[std::size_t((k * 6 + j) * 7 + i)] = (i + 2 * j + 5 * k) % 7;
  const std::string out = (dir / "scan_labels.nii.gz").string();
  hybrid3d::generate::writeNiftiLabelsLike(input, out, labels.data());

  const Image in = header(input), back = header(out);
  expectSameGeometry(*in, *back);
  EXPECT_EQ(back->datatype, DT_UINT8);
  EXPECT_EQ(back->dim[0], 3);
  const hybrid3d::generate::NiftiVolume v = hybrid3d::generate::readNiftiVolume(out);
  EXPECT_EQ(v.version, version);
  ASSERT_EQ(v.values.size(), labels.size());
  for (Index k = 0; k < 5; ++k)
    for (Index j = 0; j < 6; ++j)
      for (Index i = 0; i < 7; ++i)
        ASSERT_EQ(v.values[std::size_t((k * 6 + j) * 7 + i)], double((i + 2 * j + 5 * k) % 7))
            << "voxel (i,j,k) = (" << i << "," << j << "," << k << ")";
  // Probabilities: a 4D float32 file on the same grid, channel c along t.
  std::vector<float> p(3 * labels.size());
  for (std::size_t n = 0; n < p.size(); ++n) p[n] = float(n) / float(p.size());
  const std::string probabilities = (dir / "scan_probabilities.nii.gz").string();
  hybrid3d::generate::writeNiftiChannelsLike(input, probabilities, 3, p.data());
  const Image pb = header(probabilities);
  expectSameGeometry(*in, *pb);
  EXPECT_EQ(pb->dim[0], 4);
  EXPECT_EQ(pb->dim[4], 3);
  const hybrid3d::generate::NiftiVolume pv = hybrid3d::generate::readNiftiVolume(probabilities);
  for (std::size_t n = 0; n < p.size(); ++n) ASSERT_EQ(pv.values[n], double(p[n])) << n;
  // Nothing but the three files: no temporary left behind.
  EXPECT_EQ(std::distance(fs::directory_iterator(dir), fs::directory_iterator()), 3);
  fs::remove_all(dir);
}

// (version, qform code, sform code): sform only, qform only, both, and NIfTI-2 with both.
INSTANTIATE_TEST_SUITE_P(Geometries, NiftiWriter,
                         ::testing::Values(std::make_tuple(1, 0, 2), std::make_tuple(1, 1, 0),
                                           std::make_tuple(1, 1, 4), std::make_tuple(2, 2, 1)));

}  // namespace
