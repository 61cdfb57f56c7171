#pragma once
// The reference checker's view of one case file (format: unit_tests/reference/README.md) and the
// table of operations it can run. Each op lives in its own file under apps/refcheck/ and
// registers a runner:
//
//   static const RefOp reg{"conv3d", runConv3dCase};
//
// A runner builds the layer from the file's attributes and tensor shapes (any shapes, channel
// counts and parameters), runs forward and backward on `grid` in double precision, and
// returns one Comparison per tensor it reproduced (output, grad_input, grad_weight, ...),
// computed with gatherToGlobal on every rank. The helpers below are what the runners share:
// splitting the batch over the data-parallel groups, loading parameters, comparing.

#include <map>
#include <string>
#include <vector>

#include <Kokkos_Core.hpp>
#include <mpi.h>

#include <hybrid3d/comm/GlobalArray.hpp>
#include <hybrid3d/grid/DistTensor.hpp>
#include <hybrid3d/grid/ProcessGrid.hpp>
#include <hybrid3d/data/Hdf5.hpp>
#include <hybrid3d/grid/TensorShape.hpp>
#include <hybrid3d/layers/Parameter.hpp>
#include <hybrid3d/kernels/Elementwise.hpp>

namespace hybrid3d::app::refcheck {

class RefCase {
public:
  explicit RefCase(const std::string& path) : file_(path) {}
  const std::string& path() const { return file_.path(); }
  std::string op() const { return file_.attributeString("op"); }
  bool has(const std::string& tensor) const { return file_.hasDataset(tensor); }
  double number(const std::string& attribute) const { return file_.attributeNumber(attribute); }
  bool hasNumber(const std::string& attribute) const { return file_.hasAttribute(attribute); }
  std::vector<Index> shape(const std::string& tensor) const { return file_.shape(tensor); }
  // A tensor of rank <= 5 as an (N, C, D, H, W) array, missing trailing dimensions set to 1
  // ([N, F] becomes (N, F, 1, 1, 1); a [4] vector (4, 1, 1, 1, 1)).
  GlobalArray<double> tensor(const std::string& name) const;
  std::vector<double> flat(const std::string& name) const { return file_.read<double>(name); }
  std::vector<int> labels(const std::string& name) const { return file_.read<int>(name); }

private:
  data::File file_;
};

struct Comparison {
  std::string tensor;
  double maxRelError;  // max |got - want| / max |want|
};

using RefRunner = std::vector<Comparison> (*)(const RefCase&, const ProcessGrid&);

inline std::map<std::string, RefRunner>& refOps() {
  static std::map<std::string, RefRunner> table;
  return table;
}

struct RefOp {
  RefOp(const std::string& op, RefRunner run) { refOps()[op] = run; }
};

// max |got - want| / max |want| over arrays of equal size.
double maxRelativeError(const double* got, const double* want, std::size_t n);

template <class View>
Comparison compare(const std::string& name, const View& got, const GlobalArray<double>& want) {
  if (got.size() != want.size()) return {name + " (shape mismatch)", 1e300};
  return {name, maxRelativeError(got.data(), want.data(), want.size())};
}

// An integer attribute of the case; fails naming the case and its op when it is missing.
int intAttribute(const RefCase& c, const std::string& name);
// An integer attribute of the case, `fallback` when it is missing.
int intAttribute(const RefCase& c, const std::string& name, int fallback);

// The (batch, channels, extents) of an NCDHW array.
TensorShape shapeOf(const GlobalArray<double>& a);

// ---- Splitting a case's batch over the data-parallel groups (samples(): GlobalArray.hpp) --------

// The worst error of each comparison over all ranks of `comm` (same order on every rank).
void reduceWorst(std::vector<Comparison>& comparisons, MPI_Comm comm);

// Runs a case as training would see it: the case's batch N is the global mini-batch, so when
// the G groups of `grid` divide it, group g runs samples [g*N/G, (g+1)*N/G) on `grid` (and the
// parameter gradients summed over the world are those of the whole batch); otherwise every
// group runs all N on a grid of its own built from its spatial communicator. Every rank
// returns the worst error over all groups. run(c, grid, first, count) runs samples
// [first, first + count) of the case on `grid`.
template <class Run>
std::vector<Comparison> overGroups(const RefCase& c, const ProcessGrid& grid, Run run) {
  const Index N = c.shape("input").at(0);
  const int G = grid.numGroups();
  std::vector<Comparison> out;
  if (N % G == 0) {
    out = run(c, grid, grid.group() * (N / G), N / G);
  } else {
    const ProcessGrid own(grid.spatialComm(), grid.dims());
    out = run(c, own, 0, N);
  }
  reduceWorst(out, grid.worldComm());
  return out;
}

// A runner of samples [first, first + count) of a case, and the RefRunner that runs it over the
// groups, for registration: static const RefOp reg{"conv3d", groupedRunner<runConv3d>};
using SamplesRunner = std::vector<Comparison> (*)(const RefCase& c, const ProcessGrid& grid,
                                                  Index first, Index count);
template <SamplesRunner Run>
std::vector<Comparison> groupedRunner(const RefCase& c, const ProcessGrid& grid) {
  return overGroups(c, grid, Run);
}

// ---- Moving data between the case file and the layer --------------------------------------------

// Copies the case's dataset into a layer vector (parameter value or buffer).
void load(const RefCase& c, const std::string& dataset, const Kokkos::View<double*>& to);

// Loads every parameter (this rank's part of it) from the dataset of its name ("weight", "bias").
void loadParameters(const RefCase& c, const std::vector<Parameter<double>>& params);

// A replicated [N, F] device view holding an (N, F, 1, 1, 1) global array.
FeatureView<double> toFeatures(const GlobalArray<double>& a);

// ---- Comparisons --------------------------------------------------------------------------------

// A layer vector against the case's dataset of the same name.
Comparison compareVector(const RefCase& c, const std::string& dataset,
                         const Kokkos::View<double*>& got);

// A distributed tensor holding samples [first, first + count) of the case, gathered over the
// spatial group, against the same samples of the case's dataset.
Comparison compareSamples(const RefCase& c, const std::string& dataset,
                          const DistTensor<double>& got, const ProcessGrid& grid, Index first,
                          Index count);

// A distributed tensor holding this group's samples, assembled into the whole batch over the
// data-parallel groups, against the case's whole dataset: the error is measured against the
// scale of the whole case, as on one process (pooling, batch norm).
Comparison compareWholeBatch(const RefCase& c, const std::string& dataset,
                             const DistTensor<double>& got, const ProcessGrid& grid);

// A replicated [count, F] view against samples [first, first + count) of the case's dataset.
Comparison compareSamples(const RefCase& c, const std::string& dataset,
                          const FeatureView<double>& got, Index first, Index count);

// The gradient contract (Parameter.hpp): each parameter's gradient summed over the ranks its
// scope names (the grid's world, or its data-parallel communicator for a column shard), gathered
// into the global tensor, equals the gradient of the whole mini-batch. Appends one comparison
// per parameter whose "grad_<name>" the case holds.
void compareGradients(const RefCase& c, const std::vector<Parameter<double>>& params,
                      const ProcessGrid& grid, std::vector<Comparison>& out);

}  // namespace hybrid3d::app::refcheck
