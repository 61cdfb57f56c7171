#include <hybrid3d/core/Error.hpp>
#include <hybrid3d/data/CollectiveVerdict.hpp>
#include <hybrid3d/generate/StagedFiles.hpp>

#include <cstdio>

namespace hybrid3d::generate {

namespace {
std::string stagingName(const std::string& path) { return path + ".part"; }
}  // namespace

StagedFiles::~StagedFiles() {
  if (published_) return;
  for (const std::string& p : paths_) std::remove(stagingName(p).c_str());
}

std::string StagedFiles::stage(const std::string& path) {
  paths_.push_back(path);
  return stagingName(path);
}

void StagedFiles::publish(MPI_Comm comm) {
  data::collectively(comm, [&] {
    for (const std::string& p : paths_)
      if (std::rename(stagingName(p).c_str(), p.c_str()) != 0)
        fail(p, ": cannot rename '", stagingName(p), "' into place");
  });
  published_ = true;
}

}  // namespace hybrid3d::generate
