// Test tool for the bad-input table (bad_inputs.table): writes one small NIfTI file with the
// NIfTI library (NiftiTestFile.hpp), good or spoilt one way.
//   make_nifti_file PATH [--dims X,Y,Z[,T]] [--type T] [--version 1|2] [--labels]
//                        [--set INDEX VALUE] [--claim-slices N] [--header FIELD VALUE]
//                        [--gzip-members N] [--empty-member]
//   --dims          voxels along x, y, z (and t: channels); default 12,10,8
//   --type          uint8, int16, int32, float32, float64, complex64, rgb24; default int16
//   --labels        values i % 3 (class labels) instead of an image's ramp
//   --set           stored value INDEX (row-major, i fastest) becomes VALUE
//   --claim-slices  the header then claims N slices (dim[3]): it lies about the size
//                   (NIfTI-1 .nii only)
//   --header        header field FIELD (dim0..dim7, datatype, bitpix, vox_offset, scl_slope,
//                   scl_inter) becomes VALUE, written into the finished file (nan allowed)
//   --gzip-members  a .nii.gz is written as N gzip members (valid: gzip -t accepts it)
//   --empty-member  a .nii.gz ends with an empty gzip member (as bgzip writes)
#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <string>
#include <vector>

#include "NiftiTestFile.hpp"

namespace {

[[noreturn]] void die(const std::string& what) {
  std::fprintf(stderr, "make_nifti_file: %s\n", what.c_str());
  std::exit(2);
}

int typeCode(const std::string& name) {
  if (name == "uint8") return NIFTI_TYPE_UINT8;
  if (name == "int16") return NIFTI_TYPE_INT16;
  if (name == "int32") return NIFTI_TYPE_INT32;
  if (name == "float32") return NIFTI_TYPE_FLOAT32;
  if (name == "float64") return NIFTI_TYPE_FLOAT64;
  if (name == "complex64") return NIFTI_TYPE_COMPLEX64;
  if (name == "rgb24") return NIFTI_TYPE_RGB24;
  die("unknown type " + name);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) die("usage: make_nifti_file PATH [--dims X,Y,Z[,T]] [--type T] ...");
  const std::string path = argv[1];
  hybrid3d::test::NiftiSpec spec;
  spec.xyzt = {12, 10, 8, 1};
  spec.datatype = NIFTI_TYPE_INT16;
  bool labels = false;
  std::vector<std::pair<std::size_t, double>> sets;
  int claimSlices = 0, members = 1, emptyMembers = 0;
  std::vector<std::pair<std::string, double>> fields;
  for (int i = 2; i < argc; ++i) {
    const std::string flag = argv[i];
    auto arg = [&]() -> std::string {
      if (i + 1 >= argc) die(flag + " needs a value");
      return argv[++i];
    };
    if (flag == "--dims") {
      std::istringstream in(arg());
      std::string item;
      for (std::size_t a = 0; a < 4 && std::getline(in, item, ','); ++a)
        spec.xyzt[a] = std::stoll(item);
    } else if (flag == "--type") {
      spec.datatype = typeCode(arg());
    } else if (flag == "--version") {
      spec.version = std::stoi(arg());
    } else if (flag == "--labels") {
      labels = true;
    } else if (flag == "--set") {
      const std::size_t index = std::stoul(arg());
      sets.emplace_back(index, std::strtod(arg().c_str(), nullptr));
    } else if (flag == "--claim-slices") {
      claimSlices = std::stoi(arg());
    } else if (flag == "--header") {
      const std::string field = arg();
      fields.emplace_back(field, std::strtod(arg().c_str(), nullptr));
    } else if (flag == "--gzip-members") {
      members = std::stoi(arg());
    } else if (flag == "--empty-member") {
      emptyMembers = 1;
    } else {
      die("unknown option " + flag);
    }
  }
  std::vector<double> stored(
      std::size_t(spec.xyzt[0] * spec.xyzt[1] * spec.xyzt[2] * spec.xyzt[3]));
  for (std::size_t v = 0; v < stored.size(); ++v)
    stored[v] = labels ? double(v % 3) : double(v % 97) * 3 - 100;
  for (const auto& [index, value] : sets) {
    if (index >= stored.size()) die("--set: index outside the volume");
    stored[index] = value;
  }
  try {
    hybrid3d::test::writeNiftiFile(path, spec, stored);
    if (claimSlices > 0) hybrid3d::test::claimSlices(path, static_cast<std::int16_t>(claimSlices));
    if (!fields.empty() || members != 1 || emptyMembers != 0) {
      std::string bytes = hybrid3d::test::niftiFileBytes(path);
      for (const auto& [field, value] : fields)
        hybrid3d::test::setNiftiHeaderField(bytes, spec.version, field, value);
      hybrid3d::test::writeNiftiBytes(path, bytes, members, emptyMembers);
    }
  } catch (const std::exception& e) {
    die(e.what());
  }
  return 0;
}
