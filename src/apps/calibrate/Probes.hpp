#pragma once
// The micro-benchmarks `hybrid3d calibrate` measures a machine with. Each is collective over
// `world` and runs on every rank at once, as training does (ranks share memory bandwidth, the
// file system and the node's cores), and returns the same figures on every rank.

#include <cstddef>
#include <string>

#include <mpi.h>

namespace hybrid3d::app::calibrate {

// MPI between world ranks 0 and 1 (the others wait): the one-way latency of 8-byte messages
// and the one-direction bandwidth of 16 MiB ones, both from ping-pong round trips (medians).
// Needs two ranks or more.
struct PingPong {
  double latencyUs = 0, GBs = 0;
};
PingPong pingPong(MPI_Comm world);

// A STREAM triad (a = b + s c, doubles) on every rank at once, the ranks' arrays together far
// larger than the last-level cache they share (on a GPU, than the device's L2): GB/s per rank (two
// reads and one write per element, STREAM's count), the median over repetitions and ranks.
struct Bandwidth {
  double GBs = 0;
  std::size_t arrayBytes = 0;  // each of the three arrays, per rank
};
Bandwidth triadBandwidth(MPI_Comm world);

// What launching a one-element kernel and fencing costs, in microseconds: the fixed cost of a
// layer pass's kernels (median over launches and ranks).
double launchOverheadUs(MPI_Comm world);

// Every rank writes a file of `bytesPerRank` under `directory`, flushes it to disk and drops
// its pages from the page cache, then every rank reads its own back at once. Per rank: its
// bytes over its own time (median over ranks); aggregate: all bytes over the slowest rank's
// time. The files are removed, also on failure. Throws hybrid3d::Error naming the file.
struct FileRead {
  double perRankGBs = 0, aggregateGBs = 0;
  bool pagesDropped = true;  // false: the page cache may have served the reads (named in the file)
};
FileRead fileSystemRead(MPI_Comm world, const std::string& directory, std::size_t bytesPerRank);

}  // namespace hybrid3d::app::calibrate
