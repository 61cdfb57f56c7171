#pragma once
// Helpers of the generator tests: a scratch directory shared by the ranks, sub-communicators,
// and whole-dataset reads on one rank.

#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include <mpi.h>

#include <hybrid3d/data/Hdf5.hpp>

namespace hybrid3d::test {

// A fresh directory made by rank 0 of `comm`, known to every rank, removed at scope exit.
class ScratchDir {
public:
  explicit ScratchDir(MPI_Comm comm = MPI_COMM_WORLD) : comm_(comm) {
    MPI_Comm_rank(comm, &rank_);
    char name[4096] = {};
    if (rank_ == 0) {
      std::string pattern = (std::filesystem::temp_directory_path() / "hybrid3d_gen_XXXXXX");
      pattern.copy(name, pattern.size());
      if (!mkdtemp(name)) name[0] = '\0';
    }
    MPI_Bcast(name, sizeof name, MPI_CHAR, 0, comm);
    path_ = name;
  }
  ~ScratchDir() {
    MPI_Barrier(comm_);
    std::error_code ec;
    if (rank_ == 0 && !path_.empty()) std::filesystem::remove_all(path_, ec);
  }
  const std::string& path() const { return path_; }
  std::string operator/(const std::string& child) const { return path_ + "/" + child; }

private:
  MPI_Comm comm_;
  int rank_ = 0;
  std::string path_;
};

// The first `ranks` ranks of the world (MPI_COMM_NULL elsewhere); freed at scope exit.
class FirstRanks {
public:
  explicit FirstRanks(int ranks) {
    int me = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_split(MPI_COMM_WORLD, me < ranks ? 0 : MPI_UNDEFINED, me, &comm_);
  }
  ~FirstRanks() {
    if (comm_ != MPI_COMM_NULL) MPI_Comm_free(&comm_);
  }
  MPI_Comm comm() const { return comm_; }
  bool inside() const { return comm_ != MPI_COMM_NULL; }

private:
  MPI_Comm comm_ = MPI_COMM_NULL;
};

// Whole dataset `name` of an HDF5 file, read by the calling rank alone.
template <class T>
std::vector<T> readWhole(const std::string& path, const std::string& name) {
  return data::File(path).read<T>(name);
}

}  // namespace hybrid3d::test
