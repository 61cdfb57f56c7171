// The file system's read bandwidth (Probes.hpp): what a rank's cold reads of its own file reach
// while every other rank reads its own.
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include <hybrid3d/core/Error.hpp>
#include <hybrid3d/data/CollectiveVerdict.hpp>

#include "Probes.hpp"
#include "Statistics.hpp"

namespace hybrid3d::app::calibrate {

namespace {

constexpr std::size_t chunk = std::size_t(4) << 20;  // bytes per read() and write() call

// The rank's file, removed when the scope ends (also when a step throws).
struct ScratchFile {
  std::string path;
  ~ScratchFile() {
    if (!path.empty()) ::unlink(path.c_str());
  }
};

// The share of the file's pages in the page cache (mincore), 1 when it cannot be told.
double residentShare(const std::string& path, std::size_t bytes) {
  const int fd = ::open(path.c_str(), O_RDONLY);
  if (fd < 0) return 1;
  void* map = ::mmap(nullptr, bytes, PROT_READ, MAP_SHARED, fd, 0);
  ::close(fd);
  if (map == MAP_FAILED) return 1;
  const std::size_t page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
  std::vector<unsigned char> in((bytes + page - 1) / page);
  double share = 1;
  if (::mincore(map, bytes, in.data()) == 0)
    share = double(std::count_if(in.begin(), in.end(), [](unsigned char c) { return c & 1; })) /
            double(in.size());
  ::munmap(map, bytes);
  return share;
}

// Writes `bytes` of data no file system compresses away, flushes them to disk and drops their
// pages from the page cache (posix_fadvise needs no privileges). Returns whether the pages are
// gone (on tmpfs, for one, they cannot be).
bool writeCold(const std::string& path, std::size_t bytes) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  if (fd < 0) fail(path, ": cannot create the scratch file: ", std::strerror(errno));
  std::vector<std::uint64_t> buffer(chunk / sizeof(std::uint64_t));
  std::uint64_t x = 88172645463325252ull ^ std::uint64_t(::getpid());
  for (std::size_t done = 0; done < bytes; done += chunk) {
    for (auto& v : buffer) x ^= x << 13, x ^= x >> 7, x ^= x << 17, v = x;  // xorshift
    const std::size_t n = std::min(chunk, bytes - done);
    if (::write(fd, buffer.data(), n) != static_cast<ssize_t>(n)) {
      const int e = errno;
      ::close(fd);
      fail(path, ": cannot write the scratch file: ", std::strerror(e));
    }
  }
  if (::fsync(fd) != 0) {
    ::close(fd);
    fail(path, ": cannot flush the scratch file to disk");
  }
  ::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
  ::close(fd);
  return residentShare(path, bytes) < 0.01;
}

// Drops the (clean) file's pages from the page cache again; returns whether they are gone.
bool dropPages(const std::string& path, std::size_t bytes) {
  const int fd = ::open(path.c_str(), O_RDONLY);
  if (fd < 0) fail(path, ": cannot open the scratch file: ", std::strerror(errno));
  ::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
  ::close(fd);
  return residentShare(path, bytes) < 0.01;
}

// Reads the whole file; returns the seconds it took.
double readAll(const std::string& path, std::size_t bytes) {
  std::vector<char> buffer(chunk);
  const double t0 = MPI_Wtime();
  const int fd = ::open(path.c_str(), O_RDONLY);
  if (fd < 0) fail(path, ": cannot open the scratch file: ", std::strerror(errno));
  std::size_t done = 0;
  for (ssize_t n; done < bytes && (n = ::read(fd, buffer.data(), chunk)) > 0;) done += n;
  ::close(fd);
  const double seconds = MPI_Wtime() - t0;
  if (done != bytes) fail(path, ": read ", done, " of the ", bytes, " bytes written");
  return seconds;
}

}  // namespace

FileRead fileSystemRead(MPI_Comm world, const std::string& directory, std::size_t bytesPerRank) {
  int rank, size;
  MPI_Comm_rank(world, &rank);
  MPI_Comm_size(world, &size);
  ScratchFile file;
  int dropped = 1;
  // Every step that can fail on one rank is agreed over the world: no rank waits for another
  // that has given up.
  data::collectively(world, [&] {
    file.path = directory + "/hybrid3d_calibrate_" + std::to_string(::getpid()) + "_rank" +
                std::to_string(rank) + ".tmp";
    dropped = writeCold(file.path, bytesPerRank) ? 1 : 0;
  });
  // One rank reading alone: what a rank's reads reach (the performance model takes the lesser
  // of that and its share of the aggregate).
  double alone = 0;
  MPI_Barrier(world);
  data::collectively(world, [&] {
    if (rank == 0) {
      alone = readAll(file.path, bytesPerRank);
      dropped = dropPages(file.path, bytesPerRank) ? dropped : 0;
    }
  });
  MPI_Bcast(&alone, 1, MPI_DOUBLE, 0, world);
  MPI_Allreduce(MPI_IN_PLACE, &dropped, 1, MPI_INT, MPI_MIN, world);
  // Every rank at once: what the node's storage delivers in all.
  double seconds = 0;
  MPI_Barrier(world);
  data::collectively(world, [&] { seconds = readAll(file.path, bytesPerRank); });
  double slowest = seconds;
  MPI_Allreduce(MPI_IN_PLACE, &slowest, 1, MPI_DOUBLE, MPI_MAX, world);
  FileRead r;
  r.perRankGBs = 1e-9 * double(bytesPerRank) / alone;
  r.aggregateGBs = 1e-9 * double(bytesPerRank) * size / slowest;
  r.pagesDropped = dropped != 0;
  return r;
}

}  // namespace hybrid3d::app::calibrate
