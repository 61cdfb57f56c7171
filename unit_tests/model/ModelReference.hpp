#pragma once
// What the model tests compare: one forward and backward of a whole model (its loss, every
// parameter's global gradient, its arithmetic), a deterministic mini-batch to run it on, and
// the comparison with the 1-rank reference computed by world rank 0.

#include <algorithm>
#include <cmath>
#include <map>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <mpi.h>

#include <hybrid3d/comm/GlobalArray.hpp>

#include "Invariance.hpp"
#include "WorldRank.hpp"

namespace hybrid3d::test {

using T = double;

// What this rank holds of a column-sharded parameter (the first dense layer's weight).
struct Shard {
  std::vector<Index> columns;
  std::vector<double> value, reducedGrad;  // [rows, columns.size()]
};

struct Result {
  double loss = 0;
  double flops = 0;  // world sum of Graph::stepFlops
  // Inference on the first sample of each group alone (a short validation batch), where a
  // test evaluates one.
  double validationLoss = 0;
  // Global gradients by path, and the global value of each column-sharded parameter under
  // "<path> value".
  std::map<std::string, std::vector<double>> grads;
  std::map<std::string, Shard> shards;  // by path
};

template <class View>
inline std::vector<double> hostValues(const View& v) {
  auto h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), v);
  return std::vector<double>(h.data(), h.data() + h.size());
}

// The whole mini-batch of B samples: inputs, regression targets and segmentation labels.
struct Batch {
  GlobalArray<T> inputs, targets;
  GlobalArray<int> labels;
};

inline Batch makeBatch(int B, int channels, int S, int outputs, unsigned seed) {
  Batch b;
  b.inputs = randomGlobal<T>("inputs", B, channels, {S, S, S}, seed, 0.0, 2.0);
  b.targets = randomGlobal<T>("targets", B, outputs, {1, 1, 1}, seed + 1);
  b.labels = GlobalArray<int>("labels", B, 1, S, S, S);
  for (std::size_t i = 0; i < b.labels.size(); ++i) b.labels.data()[i] = int((i * 7919 + seed) % 3);
  return b;
}

// Samples [first, first + L) of a global array.
template <class V>
V slice(const V& a, int first, int L) {
  V s(a.label(), L, a.extent(1), a.extent(2), a.extent(3), a.extent(4));
  Kokkos::deep_copy(s, Kokkos::subview(a, Kokkos::pair<int, int>(first, first + L), Kokkos::ALL,
                                       Kokkos::ALL, Kokkos::ALL, Kokkos::ALL));
  return s;
}

inline void expectSame(const Result& got, const Result& want, double tol) {
  EXPECT_NEAR(got.loss, want.loss, tol * std::abs(want.loss));
  EXPECT_GT(want.flops, 0.0);
  EXPECT_EQ(got.flops, want.flops);  // sums of integers far below 2^53: exact in double
  ASSERT_EQ(got.grads.size(), want.grads.size());
  for (const auto& [name, w] : want.grads) {
    const auto& v = got.grads.at(name);
    double diff = 0, scale = 0;
    for (std::size_t i = 0; i < w.size(); ++i) {
      diff = std::max(diff, std::abs(v[i] - w[i]));
      scale = std::max(scale, std::abs(w[i]));
    }
    EXPECT_LE(diff, tol * scale) << name << ": max relative error " << diff / scale;
    EXPECT_GT(scale, 0.0) << name << " has a zero gradient: the test would prove nothing";
  }
}

// World rank 0's result on every rank: a 1-rank reference is computed by world rank 0 alone
// (the others would only repeat it on the same cores) and broadcast.
inline Result broadcastFromRankZero(Result r) {
  int entries = static_cast<int>(r.grads.size());
  MPI_Bcast(&r.loss, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
  MPI_Bcast(&r.flops, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
  MPI_Bcast(&r.validationLoss, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
  MPI_Bcast(&entries, 1, MPI_INT, 0, MPI_COMM_WORLD);
  auto it = r.grads.begin();
  for (int e = 0; e < entries; ++e) {
    std::string name = worldRank() == 0 ? it->first : std::string();
    std::vector<double> values = worldRank() == 0 ? it->second : std::vector<double>();
    int sizes[2] = {int(name.size()), int(values.size())};
    MPI_Bcast(sizes, 2, MPI_INT, 0, MPI_COMM_WORLD);
    name.resize(sizes[0]);
    values.resize(sizes[1]);
    MPI_Bcast(name.data(), sizes[0], MPI_CHAR, 0, MPI_COMM_WORLD);
    MPI_Bcast(values.data(), sizes[1], MPI_DOUBLE, 0, MPI_COMM_WORLD);
    if (worldRank() == 0)
      ++it;
    else
      r.grads[name] = values;
  }
  return r;
}

}  // namespace hybrid3d::test
