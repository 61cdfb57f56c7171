#include "PredictInputs.hpp"

#include <algorithm>
#include <filesystem>
#include <set>

#include <hybrid3d/core/Error.hpp>
#include <hybrid3d/data/Dataset.hpp>

namespace hybrid3d::app {

namespace {

namespace fs = std::filesystem;

bool endsWith(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

std::string baseName(const std::string& path) {
  std::string n = fs::path(path).filename().string();
  for (const char* ext : {".nii.gz", ".nii", ".data.npy", ".hdf5", ".h5"})
    if (endsWith(n, ext)) return n.substr(0, n.size() - std::string(ext).size());
  return n;
}

// The NIfTI files of a directory, sorted, hidden ones (macOS "._" files) left out.
std::vector<std::string> niftiFiles(const std::string& dir) {
  std::vector<std::string> files;
  for (const auto& e : fs::directory_iterator(dir)) {
    const std::string n = e.path().filename().string();
    if (!n.empty() && n[0] != '.' && isNiftiPath(n) && e.is_regular_file())
      files.push_back(e.path().string());
  }
  std::sort(files.begin(), files.end());
  return files;
}

std::vector<std::string> filesOf(const std::vector<std::string>& inputs) {
  std::vector<std::string> files;
  for (const std::string& in : inputs) {
    std::error_code ec;
    if (fs::is_directory(in, ec)) {
      std::vector<std::string> f = niftiFiles(in);
      if (f.empty()) f = data::Dataset::open(in).files();
      files.insert(files.end(), f.begin(), f.end());
    } else if (fs::is_regular_file(in, ec)) {
      files.push_back(in);
    } else {
      fail(in, ": no such volume file or directory (--in)");
    }
  }
  return files;
}

}  // namespace

bool isNiftiPath(const std::string& path) {
  return endsWith(path, ".nii") || endsWith(path, ".nii.gz");
}

std::vector<VolumeFile> listPredictInputs(MPI_Comm comm, const std::vector<std::string>& inputs) {
  const data::Dataset listed =
      data::Dataset::listOnce(comm, [&] { return data::Dataset(filesOf(inputs), "--in"); });
  std::vector<VolumeFile> volumes;
  std::set<std::string> names;
  for (const std::string& f : listed.files()) {
    VolumeFile v{f, baseName(f), isNiftiPath(f)};
    if (!names.insert(v.name).second)
      fail(f, ": a second volume named ", v.name, " (its outputs would overwrite the first's)");
    volumes.push_back(v);
  }
  return volumes;
}

}  // namespace hybrid3d::app
