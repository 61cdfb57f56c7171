#pragma once
/// \file
/// What a model is trained for (docs/design.md section 2). A task owns the loss layer, the device
/// buffers of the truth the output is compared with (targets or labels) and the loading of a host
/// mini-batch's truth into them, the validation metrics computed on the device, and the
/// description of the sample fields it reads. The trainer calls it through Task and names no
/// loss; an architecture names its TaskKind in its traits (Architecture.hpp, Tasks.hpp).

#include <cstddef>
#include <memory>
#include <string>
#include <tuple>

#include <hybrid3d/core/Devices.hpp>
#include <hybrid3d/grid/LayerGrid.hpp>
#include <hybrid3d/grid/ProcessGrid.hpp>
#include <hybrid3d/grid/TensorShape.hpp>
#include <hybrid3d/model/EvalSummary.hpp>
#include <hybrid3d/model/Graph.hpp>

namespace hybrid3d {

/// The datasets of a sample file a task reads besides the architecture's input channels; the
/// trainer makes a data::SampleSpec of them (train/RunChecks.hpp), model being below data.
struct SampleFields {
  std::string input;    // [C,D,H,W] input volume
  std::string labels;   // [D,H,W] integer classes, or "" for none
  std::string targets;  // [numTargets] float, or "" for none
  int numTargets = 0;
  int classes = 0;  // labels must lie in [0, classes) (0: not checked)
};

/// A host mini-batch's truth as the data part stores it: slot-major, in host-accessible memory.
struct HostTruth {
  const float* targets = nullptr;
  std::size_t targetsPerSlot = 0;
  const int* labels = nullptr;  // the voxels this rank owns, (d, h, w) of each slot
  std::size_t labelsPerSlot = 0;
};

/// Where a task's tensors live: the model's output on its grid (a layer grid may hold only some
/// of the group's samples on a rank: grid/LayerGrid.hpp) and the model input's grid, where the
/// reader puts each rank's labels.
struct TaskLayout {
  LayerGrid output;    // the grid of the model's last layer
  LayerGrid input;     // the spatial grid
  TensorShape shape;   // the output's shape on this rank (its samples)
  int groupBatch = 0;  // samples per data-parallel group
};

template <class T, class MemorySpace = DefaultMemorySpace>
class Task {
  HYBRID3D_ASSERT_SPACE(MemorySpace);

public:
  using execution_space = typename MemorySpace::execution_space;
  using graph_type = Graph<T, MemorySpace>;

  virtual ~Task() = default;

  /// Slots [first, first + real) of `truth` into the model's slots [0, real) (the group's
  /// samples, wherever the output's grid puts them); the model's other slots get zero truth
  /// (padding of a short validation batch: evaluated, then ignored).
  virtual void load(const execution_space& exec, const HostTruth& truth, int first, int real) = 0;
  /// The global mean loss of graph.output() against the loaded truth, the same number on every
  /// rank (collective); withGradient: also writes dL/d(output) into graph.outputGradient().
  virtual double loss(const execution_space& exec, const graph_type& graph, bool withGradient) = 0;
  /// dL/d(output) is written multiplied by this (half's loss scaling: train/LossScale.hpp); the
  /// loss itself is not scaled.
  void setGradientScale(double scale) { gradientScale_ = scale; }

  /// A validation pass: clearMetrics, addMetrics after each forward pass (model slots
  /// [0, real) of the group hold samples), then summarize (collective over grid's world) fills
  /// the loss and the task's metrics of `summary`.
  virtual void clearMetrics() = 0;
  virtual void addMetrics(const execution_space& exec, const graph_type& graph, int real) = 0;
  virtual void summarize(const ProcessGrid& grid, EvalSummary& summary) = 0;

protected:
  double gradientScale_ = 1.0;
};

/// Makes a task for a model whose output and input live as `layout` says.
template <class T, class M>
using TaskMaker = std::unique_ptr<Task<T, M>> (*)(const TaskLayout& layout);

namespace Impl {
// One maker per scalar and device the library is built for (the trailing nullptr_t takes the
// list's last comma).
#define HYBRID3D_TASK_MAKER(T, D) TaskMaker<T, D>,
using TaskMakers = std::tuple<HYBRID3D_FOR_EACH_SCALAR_AND_DEVICE(
    HYBRID3D_TASK_MAKER) HYBRID3D_FOR_EACH_SCALAR16_AND_DEVICE(HYBRID3D_TASK_MAKER) std::nullptr_t>;
#undef HYBRID3D_TASK_MAKER
}  // namespace Impl

/// A kind of task (Tasks.hpp): its name, the sample fields it reads for a model of `outputs`
/// outputs, and its Task for every scalar and device.
struct TaskKind {
  std::string name;
  SampleFields (*fields)(int outputs) = nullptr;
  Impl::TaskMakers makers;

  template <class T, class M>
  std::unique_ptr<Task<T, M>> make(const TaskLayout& layout) const {
    return std::get<TaskMaker<T, M>>(makers)(layout);
  }
};

/// The makers of TaskT<T, D> for every scalar and device, for a TaskKind's definition.
template <template <class, class> class TaskT>
Impl::TaskMakers taskMakers() {
#define HYBRID3D_TASK_MAKER(T, D)                                \
  +[](const TaskLayout& layout) -> std::unique_ptr<Task<T, D>> { \
    return std::make_unique<TaskT<T, D>>(layout);                \
  },
  return Impl::TaskMakers(HYBRID3D_FOR_EACH_SCALAR_AND_DEVICE(HYBRID3D_TASK_MAKER)
                              HYBRID3D_FOR_EACH_SCALAR16_AND_DEVICE(HYBRID3D_TASK_MAKER) nullptr);
#undef HYBRID3D_TASK_MAKER
}

}  // namespace hybrid3d
