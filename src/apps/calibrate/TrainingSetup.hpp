#pragma once
// Private to calibrate: one rank's model alone (1x1x1 grid, MPI_COMM_SELF) at a deck's options,
// local batch 1, with what the trainer builds around it, to time its layers (LayerTimings.cpp)
// and to measure what a process holds besides (FixedMemory.cpp).

#include <memory>
#include <random>
#include <vector>

#include <Kokkos_Core.hpp>
#include <Kokkos_Random.hpp>

#include <hybrid3d/comm/GradientReducer.hpp>
#include <hybrid3d/data/Preprocess.hpp>
#include <hybrid3d/data/Subvolume.hpp>
#include <hybrid3d/deck/TrainDeck.hpp>
#include <hybrid3d/grid/ProcessGrid.hpp>
#include <hybrid3d/model/Models.hpp>
#include <hybrid3d/optim/Adam.hpp>
#include <hybrid3d/optim/Sgd.hpp>
#include <hybrid3d/plan/StepCost.hpp>

namespace hybrid3d::app::calibrate {

using M = DefaultMemorySpace;
using Exec = DefaultExecutionSpace;

// The deck's configuration for one rank alone at input width `size`, local batch 1.
inline TrainConfig configFor(const deck::DeckRun& deck, int size) {
  TrainConfig c = deck.config;
  c.model.inputWidth = size;
  c.globalBatch = 1;
  c.validationBatch = 0;
  c.model.layerGrids = {};  // timed on one rank: a deck's layer grids of more ranks would not fit
  return c;
}

// The model with what the trainer builds around it (src/train/Trainer.cpp): its optimizer, a
// gradient reducer (nothing to reduce on one rank, but the calls a step makes), synthetic
// inputs and truth (the first layers' ghosts filled, as the trainer's preprocessing does).
template <class T>
struct Setup {
  ProcessGrid grid{MPI_COMM_SELF, {1, 1, 1}};
  Model<T, M> model;
  std::unique_ptr<Optimizer<T, M>> optimizer;
  std::unique_ptr<GradientReducer<T, M>> reducer;
  // The trainer's preprocessing of a sample as the files store it (IoModel), into the input.
  std::unique_ptr<data::Preprocess<T, M>> preprocess;
  data::SampleFormat format;
  std::vector<unsigned char> stored;
  Exec exec;

  Setup(const TrainConfig& config, int seed, const IoModel& io) {
    ModelOptions mo = config.model;
    mo.batch = 1;
    model = buildModel<T, M>(grid, mo);
    auto& g = *model.graph;
    data::PreprocessOptions po;
    po.log1p = config.data.log1p;
    po.channelScale = config.data.channelScale;
    po.channelOffset = config.data.channelOffset;
    const data::Subvolume sub = data::Subvolume::of(g.input().volume);
    preprocess = std::make_unique<data::Preprocess<T, M>>(po, model.inputChannels, sub);
    format.type = io.fileScalarBytes == 2 ? data::StoredType::Int16 : data::StoredType::Float32;
    stored.assign(
        std::size_t(model.inputChannels) * std::size_t(sub.read.size()) * format.elementSize(),
        0);  // zeros: counts or intensities, log1p defined
    if (config.optimizer == "adam")
      optimizer = std::make_unique<Adam<T, M>>(g.parameters(), config.adam);
    else
      optimizer = std::make_unique<Sgd<T, M>>(g.parameters(), config.sgd);
    reducer = std::make_unique<GradientReducer<T, M>>(grid.worldComm(), grid.dataComm(),
                                                      g.gradientsByNode());
    Kokkos::Random_XorShift64_Pool<Exec> pool(1234 + 17 * seed);
    Kokkos::fill_random(g.input().volume.view(), pool, T(0), T(1));
    std::mt19937 stream(99 + seed);
    std::vector<float> targets(std::size_t(model.outputs));
    for (float& t : targets) t = std::uniform_real_distribution<float>(-1, 1)(stream);
    const Index S = config.model.inputWidth;
    std::vector<int> labels(std::size_t(S * S * S));
    for (int& l : labels) l = std::uniform_int_distribution<int>(0, model.outputs - 1)(stream);
    model.task->load(exec, {targets.data(), targets.size(), labels.data(), labels.size()}, 0, 1);
    g.setInputGhostsFilled(true);
    g.setTraining(true);
    exec.fence();
  }

  // The trainer's load of the sample into the model's input (Trainer::load).
  void load() {
    preprocess->apply(exec, format, stored.data(), model.graph->input().volume, 0);
    exec.fence();
  }

  // One training step as Trainer::step takes it, minus the loader.
  void step(long long i, double lr) {
    auto& g = *model.graph;
    g.setStep(i, 0);
    g.zeroGradients(exec);
    g.forward(exec);
    model.task->loss(exec, g, true);
    g.backward(exec, reducer.get());
    reducer->finish(exec);
    optimizer->step(exec, lr);
    exec.fence();
  }
};

}  // namespace hybrid3d::app::calibrate
