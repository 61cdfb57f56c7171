// The command line of `hybrid3d import nifti`.
#include <hybrid3d/core/Error.hpp>
#include <hybrid3d/generate/NiftiImport.hpp>

#include <cerrno>
#include <cstdlib>

namespace hybrid3d::generate {

namespace {

long long wholeNumber(const std::string& flag, const std::string& text, long long lo,
                      long long hi) {
  char* end = nullptr;
  errno = 0;
  const long long v = std::strtoll(text.c_str(), &end, 10);
  if (text.empty() || *end != '\0' || errno == ERANGE || v < lo || v > hi)
    fail(flag, ": '", text, "' is not a whole number in [", lo, ", ", hi, "]");
  return v;
}

}  // namespace

std::string niftiImportUsage() {
  return "nifti --images DIR --labels DIR --out DIR [--size S] [--classes N]";
}

NiftiImportOptions parseNiftiImportOptions(const std::vector<std::string>& args) {
  if (args.empty() || args[0] != "nifti")
    fail("import: the first word names the format: nifti (", niftiImportUsage(), ")");
  NiftiImportOptions o;
  for (std::size_t i = 1; i < args.size(); ++i) {
    const std::string& flag = args[i];
    if (flag != "--images" && flag != "--labels" && flag != "--out" && flag != "--size" &&
        flag != "--classes")
      fail("import nifti: unknown argument '", flag, "' (", niftiImportUsage(), ")");
    if (i + 1 >= args.size()) fail(flag, ": missing value");
    const std::string& value = args[++i];
    if (flag == "--images") o.imagesDir = value;
    if (flag == "--labels") o.labelsDir = value;
    if (flag == "--out") o.outDir = value;
    if (flag == "--size") o.size = wholeNumber(flag, value, 8, 4096);
    if (flag == "--classes") o.classes = static_cast<int>(wholeNumber(flag, value, 1, 256));
  }
  if (o.imagesDir.empty()) fail("--images: missing (the folder of images, as MSD's imagesTr)");
  if (o.labelsDir.empty()) fail("--labels: missing (the folder of labels, as MSD's labelsTr)");
  if (o.outDir.empty()) fail("--out: missing (the folder of the new dataset)");
  if (o.size % 8 != 0)
    fail("--size: ", o.size, " is not a multiple of 8 (unet3d pools three times)");
  return o;
}

}  // namespace hybrid3d::generate
