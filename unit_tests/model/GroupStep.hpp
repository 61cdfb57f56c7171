#pragma once
// Where every whole-model test's step starts: the model built on `grid` for this group's share
// of the mini-batch, that share scattered into its input, in training mode at step 3 (dropout
// masks keyed by global sample) with its gradients zeroed.

#include <hybrid3d/comm/GlobalArray.hpp>
#include <hybrid3d/model/Models.hpp>

#include "ModelReference.hpp"
#include "TestDevice.hpp"

namespace hybrid3d::test {

struct GroupStep {
  Model<T, TestDevice> model;
  int first = 0;  // the group's samples are [first, first + samples) of the mini-batch
  int samples = 0;
};

inline GroupStep startGroupStep(const ProcessGrid& grid, ModelOptions o, const Batch& batch,
                                const TestExecSpace& exec) {
  GroupStep s;
  s.samples = int(batch.inputs.extent(0)) / grid.numGroups();
  s.first = grid.group() * s.samples;
  o.batch = s.samples;
  s.model = buildModel<T, TestDevice>(grid, o);
  auto& g = *s.model.graph;
  scatterFromGlobal(slice(batch.inputs, s.first, s.samples), g.input().volume);
  g.setTraining(true);
  g.setStep(3, s.first);
  g.zeroGradients(exec);
  return s;
}

}  // namespace hybrid3d::test
