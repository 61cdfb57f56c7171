#pragma once
/// \file
/// A dataset's files written under staging names and put in place together at the end, so a
/// conversion that stops on its tenth file leaves none of the first nine where a training run
/// would list it. Each file is written to `path` + ".part" (no dataset listing takes it for a
/// sample; SampleWriter makes that write itself atomic), and publish() renames every file of
/// every rank into place once all are written. A StagedFiles destroyed unpublished removes the
/// staged files of its rank.

#include <string>
#include <vector>

#include <mpi.h>

namespace hybrid3d::generate {

class StagedFiles {
public:
  StagedFiles() = default;
  ~StagedFiles();
  StagedFiles(const StagedFiles&) = delete;
  StagedFiles& operator=(const StagedFiles&) = delete;

  /// The name to write `path` under until publish(); remembered by this rank.
  std::string stage(const std::string& path);

  /// Renames this rank's staged files to their paths; collective over `comm`, a failed rename
  /// thrown on every rank naming the file.
  void publish(MPI_Comm comm);

private:
  std::vector<std::string> paths_;
  bool published_ = false;
};

}  // namespace hybrid3d::generate
