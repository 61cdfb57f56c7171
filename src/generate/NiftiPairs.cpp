// Which image/label pairs `hybrid3d import nifti` converts, and its empty output folder.
#include <hybrid3d/core/Error.hpp>
#include <hybrid3d/generate/NiftiImport.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>

namespace hybrid3d::generate {

namespace {

namespace fs = std::filesystem;

bool endsWith(const std::string& s, const std::string& tail) {
  return s.size() > tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

void prepareOutDir(const std::string& dir) {
  std::error_code ec;
  if (fs::exists(dir, ec) && !fs::is_directory(dir, ec))
    fail("--out: ", dir, " exists and is not a directory");
  fs::create_directories(dir, ec);
  if (ec) fail("--out: cannot create directory '", dir, "': ", ec.message());
  std::vector<std::string> held;
  for (const auto& e : fs::directory_iterator(dir, ec)) held.push_back(e.path().filename());
  std::sort(held.begin(), held.end());
  if (!held.empty())
    fail("--out: ", dir, " is not empty (it holds ", held.front(),
         held.size() > 1 ? " and " + std::to_string(held.size() - 1) + " more" : "",
         "); import writes a new dataset into an empty directory");
  const fs::path probe = fs::path(dir) / ".hybrid3d_write_probe";
  if (!std::ofstream(probe).good()) fail("--out: directory '", dir, "' is not writable");
  fs::remove(probe, ec);
}

}  // namespace

std::string niftiSampleName(const std::string& image) {
  const std::size_t suffix = endsWith(image, ".nii.gz") ? 7 : endsWith(image, ".nii") ? 4 : 0;
  return image.substr(0, image.size() - suffix) + ".h5";
}

std::vector<std::string> listNiftiPairs(const NiftiImportOptions& o) {
  std::error_code ec;
  if (!fs::is_directory(o.imagesDir, ec)) fail("--images: ", o.imagesDir, " is not a directory");
  if (!fs::is_directory(o.labelsDir, ec)) fail("--labels: ", o.labelsDir, " is not a directory");
  std::vector<std::string> images;
  for (const auto& e : fs::directory_iterator(o.imagesDir, ec)) {
    const std::string name = e.path().filename();
    if (name[0] != '.' && (endsWith(name, ".nii") || endsWith(name, ".nii.gz")) &&
        !e.is_directory(ec))
      images.push_back(name);
  }
  if (ec) fail("--images: cannot list ", o.imagesDir, ": ", ec.message());
  if (images.empty()) fail("--images: ", o.imagesDir, " holds no .nii or .nii.gz file");
  std::sort(images.begin(), images.end());
  std::map<std::string, std::string> bySample;
  for (const std::string& image : images) {
    const fs::path label = fs::path(o.labelsDir) / image;
    if (!fs::exists(label, ec))
      fail((fs::path(o.imagesDir) / image).string(), ": no label file of the same name (",
           label.string(), " is missing)");
    const auto [it, fresh] = bySample.emplace(niftiSampleName(image), image);
    if (!fresh) fail("--images: ", it->second, " and ", image, " would both become ", it->first);
  }
  prepareOutDir(o.outDir);
  return images;
}

}  // namespace hybrid3d::generate
