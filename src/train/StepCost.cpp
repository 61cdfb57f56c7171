#include <algorithm>
#include <cmath>
#include <set>

#include <hybrid3d/comm/HaloPlan.hpp>
#include <hybrid3d/core/Devices.hpp>
#include <hybrid3d/core/Error.hpp>
#include <hybrid3d/data/Subvolume.hpp>
#include <hybrid3d/layers/LayerFlops.hpp>
#include <hybrid3d/train/RunChecks.hpp>
#include <hybrid3d/train/StepCost.hpp>

namespace hybrid3d {

namespace {

double scalarBytes(const RunPlan& r) { return r.precision == "double" ? 8.0 : 4.0; }

Index channelsTimesVoxels(const TensorShape& s) {
  return Index(s.channels) * s.extents[0] * s.extents[1] * s.extents[2];
}

// The layer's input reaches it from the model input: the reader fills its ghosts (Trainer
// sets setInputGhostsFilled) and no gradient flows back into the data.
bool readsModelInput(const LayerPlan& l) { return l.inputs.at(0) == ModelPlan::Input; }

// The engine a convolution runs on the rank owning `outOwned` output voxels, as Conv3d picks it.
std::string convEngineName(const RunPlan& r, const LayerPlan& l, Index outOwned) {
  const ConvEngine e =
      r.precision == "double"
          ? resolveConvEngine<double, DefaultMemorySpace>(l.conv.engine, l.name, outOwned)
          : resolveConvEngine<float, DefaultMemorySpace>(l.conv.engine, l.name, outOwned);
  return toString(e);
}

// One exchange's traffic from the boxes the rank sends: bytes and distinct neighbours.
HaloTraffic traffic(const std::vector<HaloBox>& boxes, double perVoxel) {
  HaloTraffic t;
  std::set<int> ranks;
  Index voxels = 0;
  for (const HaloBox& b : boxes) {
    voxels += b.box.size();
    if (!b.box.empty()) ranks.insert(b.rank);
  }
  t.bytes = std::size_t(double(voxels) * perVoxel);
  t.neighbours = int(ranks.size());
  return t;
}

// Memory traffic of one step of a layer without a calibrated timing, in tensor elements
// (forward reads and writes, backward the same again and the saved input or output).
double trafficElements(const LayerPlan& l, double in, double out, bool dataGradient) {
  if (l.kind == "Conv3d" || l.kind == "ConvTranspose3d")
    return (in + out) + (dataGradient ? in + out : 0) + (in + out);  // fwd, bwd-data, bwd-weights
  if (l.kind == "BatchNorm3d") return 3 * in + 4 * in;  // statistics, normalise; two backward
  if (l.kind == "FlattenDense" || l.kind == "Dense") return 3 * in;
  return 2 * (in + out) + (dataGradient ? in + out : 0);  // element-wise, pools, concat
}

}  // namespace

std::string layerKey(const RunPlan& r, int id, const Int3& coords) {
  const LayerPlan& l = r.model.layers.at(id);
  const TensorShape& x = r.model.shape(l.inputs.at(0));
  std::string key = l.kind + " ";
  if (l.kind == "Conv3d" || l.kind == "ConvTranspose3d") {
    const Index owned = BlockDecomposition(l.output.extents, r.grid).ownedBox(coords).size();
    key += std::to_string(x.channels) + ">" + std::to_string(l.output.channels);
    if (l.kind == "Conv3d")
      key += " k" + std::to_string(l.conv.kernel) + " s" + std::to_string(l.conv.stride) + " " +
             convEngineName(r, l, owned);
    if (readsModelInput(l)) key += " first";
  } else if (l.kind == "Concat") {
    key +=
        std::to_string(x.channels) + "+" + std::to_string(r.model.shape(l.inputs.at(1)).channels);
  } else if (l.kind == "FlattenDense" || l.kind == "Dense") {
    key += ">" + std::to_string(l.output.channels);
  } else {
    key += "c" + std::to_string(l.output.channels);
  }
  return key + " " + r.precision;
}

StepCost countStep(const RunPlan& r, const Int3& coords, const IoModel& io) {
  const ModelPlan& m = r.model;
  const double scalar = scalarBytes(r);
  StepCost c;
  c.coords = coords;
  for (int id = 0; id < int(m.layers.size()); ++id) {
    const LayerPlan& l = m.layers[id];
    const TensorShape& x = m.shape(l.inputs.at(0));
    const BlockDecomposition inDec(x.extents, r.grid), outDec(l.output.extents, r.grid);
    const double batch = l.output.batch;
    const double ownedOut = l.volume ? double(outDec.ownedBox(coords).size()) : 1.0;
    const double ownedIn = double(inDec.ownedBox(coords).size());
    const bool dataGradient = !readsModelInput(l);
    LayerCost lc;
    lc.name = l.name;
    lc.kind = l.kind;
    lc.key = layerKey(r, id, coords);
    double inElements = 0;
    for (int in : l.inputs) inElements += batch * m.shape(in).channels * ownedIn;
    const double outElements = batch * l.output.channels * ownedOut;
    lc.passes = 2;
    if (l.kind == "Conv3d") {
      const double k3 = double(l.conv.kernel) * l.conv.kernel * l.conv.kernel;
      const LayerFlops f =
          convolutionFlops(outElements * x.channels * k3, l.conv.bias ? outElements : 0);
      lc.flops = f.step(dataGradient);
      lc.passes = dataGradient ? 3 : 2;
    } else if (l.kind == "ConvTranspose3d") {
      lc.flops = convolutionFlops(outElements * x.channels, 0).step(dataGradient);
      lc.passes = dataGradient ? 3 : 2;
    } else if (l.kind == "FlattenDense") {
      const double features = double(x.channels) * ownedIn;  // this rank's columns
      lc.flops = 3 * 2 * batch * features * l.output.channels;
    } else if (l.kind == "Dense") {
      lc.flops = 3 * 2 * batch * double(channelsTimesVoxels(x)) * l.output.channels;
    }
    if (l.kind == "FlattenDense")
      lc.work = batch * x.channels * ownedIn;
    else if (l.kind == "Dense")
      lc.work = batch * double(channelsTimesVoxels(x));
    else
      lc.work = batch * ownedOut;
    lc.bytes = scalar * trafficElements(l, inElements, outElements, dataGradient);

    // Halo exchanges of the layer's input: a gather before forward unless the reader filled
    // the ghosts, a scatter-add after backward where a gradient flows into the input.
    const GhostMap& ghosts = l.inputGhosts.at(0);
    if (!ghosts.none() && r.grid[0] * r.grid[1] * r.grid[2] > 1) {
      const HaloPlan h = planHalo(inDec, coords, ghosts, l.name);
      const double perVoxel = scalar * batch * x.channels;
      if (dataGradient) {
        lc.gather = traffic(h.sends, perVoxel);
        lc.scatter = traffic(h.recvs, perVoxel);
      }
    }
    c.haloBytes += lc.gather.bytes + lc.scatter.bytes;
    c.layers.push_back(lc);
  }

  for (int id = 0; id < int(m.layers.size()); ++id)
    for (const PlannedGradient& g : m.gradients(id, coords)) {
      if ((g.columnShard ? r.groups : r.world) == 1) continue;  // nothing to sum
      c.allreduceBytes += std::size_t(double(g.values) * scalar);
      ++c.reductions;
    }

  // Reads: this rank's ghosted subvolume of each of its group's samples, its owned labels.
  const BlockDecomposition inputDec(m.input.extents, r.grid);
  const data::Subvolume sub(inputDec, coords, m.outputGhosts(ModelPlan::Input).at(coords));
  const data::SampleSpec spec = sampleSpec(m.traits, m.input.extents);
  double perSample = double(spec.channels) * double(sub.read.size()) * io.fileScalarBytes;
  if (!spec.labels.empty()) perSample += double(sub.owned.size()) * io.labelBytes;
  if (!spec.targets.empty()) perSample += double(spec.numTargets) * sizeof(float);
  c.ioBytes = std::size_t(perSample * m.input.batch);

  const int rank = (coords[0] * r.grid[1] + coords[1]) * r.grid[2] + coords[2];
  Index local = 0;
  for (int id = 0; id < int(m.layers.size()); ++id) local += m.localParameters(id, coords);
  c.memoryBytes = r.memory.at(rank).total() +
                  std::size_t(double(local) * scalar * r.optimizerStates) +
                  std::size_t(double(spec.channels) * double(sub.local.size()) * scalar *
                              m.input.batch * (r.prefetch ? 2 : 1));
  return c;
}

namespace {

// Seconds per unit of work of a calibrated timing at `work`: interpolated in log(work) between
// the measured sizes, the nearest one's outside them.
double calibratedSeconds(const LayerTiming& t, double work) {
  const std::vector<double>& v = t.voxels;
  auto perWork = [&](std::size_t i) { return t.seconds[i] / v[i]; };
  if (work <= v.front()) return work * perWork(0);
  if (work >= v.back()) return work * perWork(v.size() - 1);
  std::size_t i = 1;
  while (v[i] < work) ++i;
  const double a = std::log(v[i - 1]), b = std::log(v[i]), f = (std::log(work) - a) / (b - a);
  return work * std::exp((1 - f) * std::log(perWork(i - 1)) + f * std::log(perWork(i)));
}

// Latency and bandwidth (bytes per second) of a communicator of `size` ranks whose members are
// `stride` ranks apart: inside one node while they span no more ranks than a node holds.
struct Link {
  double alpha, beta;
};
Link link(const Network& n, int size, int stride, bool allAtOnce) {
  if (double(size) * stride <= n.ranksPerNode) return {1e-6 * n.intraLatencyUs, 1e9 * n.intraGBs};
  // Across nodes: a ring crosses each node boundary once (one rank of the node sends at a time);
  // every rank sending at once (a halo, recursive halving) shares the node's injection bandwidth.
  const double share =
      allAtOnce ? n.interGBs / std::min(n.ranksPerNode, size * stride) : n.interGBs;
  return {1e-6 * n.interLatencyUs, 1e9 * std::min(n.intraGBs, share)};
}

double allreduceSeconds(const Network& n, double bytes, int size, int stride) {
  if (size <= 1 || bytes <= 0) return 0;
  const double p = size;
  if (n.allreduce == AllreduceAlgorithm::Ring) {
    const Link l = link(n, size, stride, false);
    return 2 * (p - 1) * l.alpha + 2 * (p - 1) / p * bytes / l.beta;
  }
  const Link l = link(n, size, stride, true);
  return 2 * std::ceil(std::log2(p)) * l.alpha + 2 * (p - 1) / p * bytes / l.beta;
}

}  // namespace

StepCost predictStep(const RunPlan& r, const Machine& machine, const Int3& coords,
                     const IoModel& io) {
  StepCost c = countStep(r, coords, io);
  const RankRates& rate = machine.rank;
  const Network& net = machine.network;
  const double peak = 1e9 * (r.precision == "double" ? rate.doubleGflops : rate.floatGflops);
  const double memory = 1e9 * rate.memoryGBs * rate.memoryEfficiency;
  const int spatial = r.grid[0] * r.grid[1] * r.grid[2];
  const double scalar = scalarBytes(r);
  const Link haloLink = link(net, spatial, 1, true);

  for (int id = 0; id < int(c.layers.size()); ++id) {
    LayerCost& lc = c.layers[id];
    const LayerPlan& l = r.model.layers[id];
    if (const LayerTiming* t = machine.timing(lc.key)) {
      lc.computeSeconds = calibratedSeconds(*t, lc.work);
      lc.calibrated = true;
    } else {
      lc.computeSeconds = lc.flops / (peak * rate.convolutionEfficiency) + lc.bytes / memory +
                          1e-6 * rate.layerOverheadUs * lc.passes;
    }
    // The layers' own collectives run inside them (the trainer counts them as compute):
    // batch-norm statistics forward and backward, the first dense layer's partial products.
    if (l.kind == "BatchNorm3d") {
      const int over = r.model.options.batchNormPerGroup ? spatial : r.world;
      lc.computeSeconds += 2 * allreduceSeconds(net, 2.0 * 8 * l.output.channels, over, 1);
    } else if (l.kind == "FlattenDense") {
      lc.computeSeconds +=
          allreduceSeconds(net, scalar * l.output.batch * l.output.channels, spatial, 1);
    }
    auto exchange = [&](const HaloTraffic& h) {
      return h.neighbours * haloLink.alpha + double(h.bytes) / haloLink.beta +
             2 * double(h.bytes) / memory;  // pack and unpack
    };
    lc.haloSeconds = exchange(lc.gather) + exchange(lc.scatter);
    lc.backwardSeconds = lc.computeSeconds * (lc.passes - 1) / lc.passes + exchange(lc.scatter);
    c.phases.compute += lc.computeSeconds;
    c.phases.halo += lc.haloSeconds;
  }

  // The update reads the gradient and the value, writes the value, and reads and writes each
  // state value.
  Index local = 0;
  for (int id = 0; id < int(r.model.layers.size()); ++id)
    local += r.model.localParameters(id, coords);
  c.optimizerSeconds = double(local) * scalar * (3 + 2 * r.optimizerStates) / memory;
  c.phases.compute += c.optimizerSeconds;

  // Backward runs from the last layer to the first; a layer's reductions start when its
  // backward pass ends and run one after another; the step waits, before the update, for what
  // the rest of the backward pass did not cover.
  double clock = 0, reducedAt = 0;
  for (int id = int(c.layers.size()) - 1; id >= 0; --id) {
    const LayerCost& lc = c.layers[id];
    clock += lc.backwardSeconds;
    for (const PlannedGradient& g : r.model.gradients(id, coords)) {
      const double bytes = double(g.values) * scalar;
      const double t = g.columnShard ? allreduceSeconds(net, bytes, r.groups, spatial)
                                     : allreduceSeconds(net, bytes, r.world, 1);
      if (t > 0) reducedAt = std::max(clock, reducedAt) + t;
      c.allreduceSeconds += t;
    }
  }
  c.phases.allreduce = std::max(0.0, reducedAt - clock);

  const double readRate = 1e9 * std::min(machine.fileSystem.readGBsPerRank,
                                         machine.fileSystem.aggregateReadGBs / r.world);
  c.ioSeconds = double(c.ioBytes) / readRate;
  const double busy = c.phases.compute + c.phases.halo + c.phases.allreduce;
  c.phases.io = r.prefetch ? std::max(0.0, c.ioSeconds - busy) : c.ioSeconds;
  c.samplesPerSecond = double(r.train.batch) / c.phases.step();
  return c;
}

StepCost predictSlowestRank(const RunPlan& r, const Machine& machine, const IoModel& io) {
  std::vector<Int3> ranks;
  if (r.grid[0] * r.grid[1] * r.grid[2] <= 64) {
    for (int d = 0; d < r.grid[0]; ++d)
      for (int h = 0; h < r.grid[1]; ++h)
        for (int w = 0; w < r.grid[2]; ++w) ranks.push_back({d, h, w});
  } else {
    ranks = {{0, 0, 0}, {r.grid[0] / 2, r.grid[1] / 2, r.grid[2] / 2}};
  }
  StepCost slowest;
  for (std::size_t i = 0; i < ranks.size(); ++i) {
    StepCost c = predictStep(r, machine, ranks[i], io);
    if (i == 0 || c.phases.step() > slowest.phases.step()) slowest = std::move(c);
  }
  return slowest;
}

}  // namespace hybrid3d
