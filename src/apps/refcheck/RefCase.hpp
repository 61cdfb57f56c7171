#pragma once
// The reference checker's view of one case file (format: unit_tests/data/README.md) and the
// table of operations it can run. Each op lives in its own file under apps/refcheck/ and
// registers a runner:
//
//   static const RefOp reg{"conv3d", runConv3dCase};
//
// A runner builds the layer from the file's attributes and tensor shapes (any shapes, channel
// counts and parameters), runs forward and backward on `grid` in double precision, and
// returns one Comparison per tensor it reproduced (output, grad_input, grad_weight, ...),
// computed with gatherToGlobal on every rank.

#include <map>
#include <string>
#include <vector>

#include <hybrid3d/comm/GlobalArray.hpp>
#include <hybrid3d/grid/ProcessGrid.hpp>
#include <hybrid3d/io/Hdf5.hpp>

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
  io::File file_;
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
  if (got.size() != want.size())
    return {name + " (shape mismatch)", 1e300};
  return {name, maxRelativeError(got.data(), want.data(), want.size())};
}

}  // namespace hybrid3d::app::refcheck
