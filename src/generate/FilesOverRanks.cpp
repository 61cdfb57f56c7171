#include <hybrid3d/data/CollectiveVerdict.hpp>
#include <hybrid3d/generate/FilesOverRanks.hpp>

namespace hybrid3d::generate {

void forEachFileOfThisRank(MPI_Comm comm, std::size_t files,
                           const std::function<void(std::size_t)>& handle) {
  int rank = 0, ranks = 1;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &ranks);
  for (std::size_t first = 0; first < files; first += std::size_t(ranks)) {
    const std::size_t mine = first + std::size_t(rank);
    data::collectively(comm, [&] {
      if (mine < files) handle(mine);
    });
  }
}

}  // namespace hybrid3d::generate
