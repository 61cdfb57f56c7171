#include <hybrid3d/core/Error.hpp>
#include <hybrid3d/data/CollectiveVerdict.hpp>

#include <climits>
#include <vector>

namespace hybrid3d::data {

void agreeOnError(MPI_Comm comm, const std::string& localError) {
  int rank = 0;
  MPI_Comm_rank(comm, &rank);
  int mine = localError.empty() ? INT_MAX : rank, first = INT_MAX;
  MPI_Allreduce(&mine, &first, 1, MPI_INT, MPI_MIN, comm);
  if (first == INT_MAX) return;
  int length = rank == first ? static_cast<int>(localError.size()) : 0;
  MPI_Bcast(&length, 1, MPI_INT, first, comm);
  std::vector<char> text(localError.begin(), localError.end());
  text.resize(static_cast<std::size_t>(length));
  MPI_Bcast(text.data(), length, MPI_CHAR, first, comm);
  int size = 0, world = 0;
  MPI_Comm_size(comm, &size);
  MPI_Comm_size(MPI_COMM_WORLD, &world);
  if (size == world) throw WorldError(std::string(text.begin(), text.end()));
  throw Error(std::string(text.begin(), text.end()));
}

void collectively(MPI_Comm comm, const std::function<void()>& step) {
  std::string message;
  try {
    step();
  } catch (const Error& e) {
    message = e.what();
    if (message.empty()) message = "unknown error";
  }
  agreeOnError(comm, message);
}

}  // namespace hybrid3d::data
