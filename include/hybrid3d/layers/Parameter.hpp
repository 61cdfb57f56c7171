#pragma once
/// \file
/// Trainable parameters and their gradients, as layers expose them to optimizers, gradient
/// reduction and checkpoints (`/model/<layer>/<name>`, PyTorch shapes).
///
/// Distribution: `shape` is always the GLOBAL PyTorch shape. Most parameters are replicated:
/// every rank holds the whole tensor. A column shard (the first dense layer's weight, whose
/// columns multiply voxels owned by one rank of the spatial group) is a 2-D [rows, columns]
/// tensor of which this rank holds only `layout.columns`: value and grad are then
/// [rows, columns.size()] row-major, local column k being global column columns[k]. The shards
/// of a spatial group are disjoint and cover the tensor; every data-parallel group repeats them.
/// Anything that needs the global tensor (checkpoints, initialisers, tools, tests) goes through
/// layers/DistributedParameter.hpp.
///
/// Gradient contract of every layer's backward: it ADDS this rank's contribution to `grad`, and
/// the gradient of the global loss is the sum of `grad` over the ranks `layout.gradientScope`
/// names: the whole world (spatial x data) for a replicated parameter, the data-parallel
/// communicator for a column shard (no other rank of the spatial group holds those columns).
/// A layer whose computation is replicated on the ranks of a spatial group (dense layers after
/// the partial products are summed, their biases) adds its gradient on spatial rank 0 only, so
/// the world sum counts it once per group.

#include <string>
#include <vector>

#include <Kokkos_Core.hpp>
#include <mpi.h>

#include <hybrid3d/comm/GradientScope.hpp>
#include <hybrid3d/core/Error.hpp>
#include <hybrid3d/core/KernelLabel.hpp>
#include <hybrid3d/core/Types.hpp>

namespace hybrid3d {

/// How a parameter is spread over the ranks (see the top of this file).
struct ParameterLayout {
  bool columnShard = false;    // false: the whole tensor on every rank
  std::vector<Index> columns;  // column shard: the global column of each local column
  GradientScope gradientScope = GradientScope::World;
  /// GradientScope::DataParallel on a layer grid (grid/LayerGrid.hpp): the ranks holding the
  /// same columns, its dataComm(), borrowed; MPI_COMM_NULL: the process grid's dataComm().
  MPI_Comm replicaComm = MPI_COMM_NULL;
};

template <class T, class MemorySpace = DefaultMemorySpace>
struct Parameter {
  HYBRID3D_ASSERT_SPACE(MemorySpace);
  std::string name;                     // "weight", "bias", "running_mean", ...
  std::vector<Index> shape;             // global PyTorch shape, row-major
  Kokkos::View<T*, MemorySpace> value;  // this rank's part (the whole unless a column shard)
  Kokkos::View<T*, MemorySpace> grad;   // empty for buffers (batch-norm running statistics)
  ParameterLayout layout;
};

/// A parameter together with the layer that owns it: checkpoints store it as
/// `/model/<layer>/<name>` and its optimizer state as `/optimizer/<layer>/<name>/<state>`.
template <class T, class MemorySpace = DefaultMemorySpace>
struct NamedParameter {
  HYBRID3D_ASSERT_SPACE(MemorySpace);
  std::string layer;
  Parameter<T, MemorySpace> param;
  std::string path() const { return layer + "/" + param.name; }
};

/// Elements of the global tensor.
inline Index globalSize(const std::vector<Index>& shape) {
  Index n = 1;
  for (Index e : shape) n *= e;
  return n;
}

/// The label of a parameter's views: "hybrid3d::<layer>/<name>" (and "/grad"), as every view
/// label of the library starts. Checkpoints name parameters by NamedParameter::path(), never by
/// a label.
inline std::string parameterLabel(const std::string& layer, const std::string& name) {
  return Impl::viewLabel(layer + "/" + name);
}

/// Allocates a parameter (zeroed value and gradient) of the given PyTorch shape.
template <class T, class MemorySpace = DefaultMemorySpace>
Parameter<T, MemorySpace> createParameter(const std::string& layer, const std::string& name,
                                          const std::vector<Index>& shape, bool trainable = true) {
  const Index n = globalSize(shape);
  Parameter<T, MemorySpace> p{name,
                              shape,
                              Kokkos::View<T*, MemorySpace>(parameterLabel(layer, name), n),
                              {},
                              {}};  // no gradient yet; replicated
  if (trainable) p.grad = Kokkos::View<T*, MemorySpace>(parameterLabel(layer, name) + "/grad", n);
  return p;
}

/// Allocates this rank's columns `columns` (global indices < globalColumns) of a trainable
/// [rows, globalColumns] parameter: value and gradient [rows, columns.size()], zeroed, the
/// gradient summed over the data-parallel communicator.
template <class T, class MemorySpace = DefaultMemorySpace>
Parameter<T, MemorySpace> createColumnShard(const std::string& layer, const std::string& name,
                                            Index rows, Index globalColumns,
                                            std::vector<Index> columns) {
  for (Index c : columns)
    if (c < 0 || c >= globalColumns)
      fail(layer, "/", name, ": column ", c, " outside the ", globalColumns, " of the parameter");
  const Index n = rows * Index(columns.size());
  Parameter<T, MemorySpace> p{
      name,
      {rows, globalColumns},
      Kokkos::View<T*, MemorySpace>(parameterLabel(layer, name), n),
      Kokkos::View<T*, MemorySpace>(parameterLabel(layer, name) + "/grad", n),
      {true, std::move(columns), GradientScope::DataParallel}};
  return p;
}

}  // namespace hybrid3d
