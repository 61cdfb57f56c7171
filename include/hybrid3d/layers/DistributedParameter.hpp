#pragma once
/// \file
/// A parameter's GLOBAL tensor from the parts the ranks hold, and back (Parameter.hpp says how a
/// parameter is distributed). Checkpoints, initialisers, tools and tests that compare with the
/// 1-rank run or PyTorch use these, so none of them needs to know which layer shards what.
///
/// `local` is any per-rank array laid out as p.value: the value itself, the gradient, or an
/// optimizer state of p. For a replicated parameter these are plain copies; for a column shard
/// gatherGlobal is collective over `comm`, which must hold every column at least once (the
/// world, or one spatial group), and ranks holding the same columns must hold the same values
/// (replicas: values, optimizer state, reduced gradients).

#include <climits>
#include <vector>

#include <Kokkos_Core.hpp>
#include <mpi.h>

#include <hybrid3d/comm/Allreduce.hpp>
#include <hybrid3d/comm/MpiTypes.hpp>
#include <hybrid3d/core/Error.hpp>
#include <hybrid3d/grid/LayerGrid.hpp>
#include <hybrid3d/layers/Parameter.hpp>

namespace hybrid3d {

/// The global tensor (p.shape, row-major) of `local`, on every rank of `comm`.
template <class T, class M, class View>
std::vector<T> gatherGlobal(const Parameter<T, M>& p, const View& local, MPI_Comm comm) {
  const auto h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), local);
  if (!p.layout.columnShard) return std::vector<T>(h.data(), h.data() + h.size());
  const Index rows = p.shape.at(0), width = p.shape.at(1);
  const std::vector<Index>& mine = p.layout.columns;
  if (Index(h.size()) != rows * Index(mine.size()))
    fail("parameter ", p.name, ": ", h.size(), " local values for ", rows, "x", mine.size(),
         " columns");
  int size;
  MPI_Comm_size(comm, &size);
  const long long k = static_cast<long long>(mine.size());
  std::vector<long long> counts(size);
  MPI_Allgather(&k, 1, MPI_LONG_LONG, counts.data(), 1, MPI_LONG_LONG, comm);
  std::vector<int> colCounts(size), colOffsets(size), valCounts(size), valOffsets(size);
  long long colTotal = 0, valTotal = 0;
  for (int r = 0; r < size; ++r) {
    if (colTotal > INT_MAX || valTotal + counts[r] * rows > INT_MAX)
      fail("parameter ", p.name, ": more than 2^31 values to gather");
    colOffsets[r] = int(colTotal);
    valOffsets[r] = int(valTotal);
    colCounts[r] = int(counts[r]);
    valCounts[r] = int(counts[r] * rows);
    colTotal += counts[r];
    valTotal += counts[r] * rows;
  }
  std::vector<Index> columns(colTotal);
  std::vector<T> values(valTotal);
  MPI_Allgatherv(mine.data(), int(k), mpiType<std::int64_t>(), columns.data(), colCounts.data(),
                 colOffsets.data(), mpiType<std::int64_t>(), comm);
  MPI_Allgatherv(h.data(), int(k * rows), mpiType<T>(), values.data(), valCounts.data(),
                 valOffsets.data(), mpiType<T>(), comm);
  std::vector<T> global(std::size_t(rows * width));
  std::vector<char> seen(std::size_t(width), 0);
  for (int r = 0; r < size; ++r) {
    const Index* cols = columns.data() + colOffsets[r];
    const T* vals = values.data() + valOffsets[r];
    const Index kr = counts[r];
    for (Index j = 0; j < kr; ++j) seen[std::size_t(cols[j])] = 1;
    for (Index o = 0; o < rows; ++o)
      for (Index j = 0; j < kr; ++j) global[std::size_t(o * width + cols[j])] = vals[o * kr + j];
  }
  for (Index c = 0; c < width; ++c)
    if (!seen[std::size_t(c)])
      fail("parameter ", p.name, ": column ", c, " is held by no rank of the communicator");
  return global;
}

/// local := this rank's part of the global tensor `global` (p.shape, row-major).
template <class T, class M, class View>
void scatterGlobal(const Parameter<T, M>& p, const std::vector<T>& global, const View& local) {
  if (Index(global.size()) != globalSize(p.shape))
    fail("parameter ", p.name, ": ", global.size(), " global values, its shape has ",
         globalSize(p.shape));
  auto h = Kokkos::create_mirror_view(local);
  if (!p.layout.columnShard) {
    if (h.size() != global.size())
      fail("parameter ", p.name, ": ", h.size(), " local values for ", global.size(), " global");
    std::copy(global.begin(), global.end(), h.data());
  } else {
    const Index rows = p.shape.at(0), width = p.shape.at(1);
    const std::vector<Index>& cols = p.layout.columns;
    const Index k = Index(cols.size());
    if (Index(h.size()) != rows * k)
      fail("parameter ", p.name, ": ", h.size(), " local values for ", rows, "x", k, " columns");
    for (Index o = 0; o < rows; ++o)
      for (Index j = 0; j < k; ++j) h.data()[o * k + j] = global[std::size_t(o * width + cols[j])];
  }
  Kokkos::deep_copy(local, h);
}

/// The communicator of `grid` over which p's gradient is summed (Parameter.hpp's contract).
inline MPI_Comm gradientComm(const ParameterLayout& layout, const LayerGrid& grid) {
  if (layout.gradientScope == GradientScope::World) return grid.worldComm();
  return layout.replicaComm != MPI_COMM_NULL ? layout.replicaComm : grid.dataComm();
}

/// p.grad := its sum over gradientComm: what the trainer's reduction does, for tools and tests
/// (allocates a staging buffer per call).
template <class T, class M>
void reduceGradient(const Parameter<T, M>& p, const LayerGrid& grid) {
  allreduceSum(p.grad, gradientComm(p.layout, grid));
}

/// The gradient of the global loss as the global tensor, on every rank of the grid: p.grad is
/// reduced in place (reduceGradient), then gathered. What tools and tests compare with the
/// 1-rank run or PyTorch.
template <class T, class M>
std::vector<T> globalGradient(const Parameter<T, M>& p, const LayerGrid& grid) {
  reduceGradient(p, grid);
  return gatherGlobal(p, p.grad, grid.worldComm());
}

}  // namespace hybrid3d
