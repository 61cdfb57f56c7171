#include <hybrid3d/train/Trainer.hpp>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <type_traits>

#include <hybrid3d/comm/MpiTypes.hpp>
#include <hybrid3d/core/Error.hpp>
#include <hybrid3d/core/KernelLabel.hpp>
#include <hybrid3d/core/Math.hpp>
#include <hybrid3d/core/PhaseTimers.hpp>
#include <hybrid3d/core/Precision.hpp>
#include <hybrid3d/train/Checkpoint.hpp>
#include <hybrid3d/kernels/Elementwise.hpp>
#include <hybrid3d/optim/Adam.hpp>
#include <hybrid3d/optim/Sgd.hpp>
#include <hybrid3d/core/OwnedComm.hpp>
#include <hybrid3d/train/CollectiveWatchdog.hpp>
#include <hybrid3d/train/InputStatistics.hpp>
#include <hybrid3d/train/LossDiagnosis.hpp>
#include <hybrid3d/train/OutputDirectory.hpp>
#include <hybrid3d/train/Preemption.hpp>
#include <hybrid3d/train/RunChecks.hpp>
#include <hybrid3d/train/RunIdentity.hpp>

namespace hybrid3d {

template <class T, class M>
struct Trainer<T, M>::Data {
  std::unique_ptr<data::BatchLoader> loader;
  std::unique_ptr<data::Preprocess<T, M>> preprocess;
};

namespace {

std::string hms(double seconds) {
  const long s = seconds > 0 ? static_cast<long>(seconds + 0.5) : 0;
  char buf[32];
  std::snprintf(buf, sizeof buf, "%02ld:%02ld:%02ld", s / 3600, (s / 60) % 60, s % 60);
  return buf;
}

// With batch statistics per spatial group, each group's running statistics follow its own
// samples and drift apart. A checkpoint keeps their mean over the data-parallel groups, not
// world rank 0's: the running statistics are an exponential average, linear in the batch
// statistics, so the groups' mean after more steps is the same whether each group went on from
// its own values or every group from the mean, and a restart continues it exactly (up to
// rounding). The live buffers are left alone, so checkpointing changes nothing in the run.
template <class T, class M>
std::vector<NamedParameter<T, M>> meanOverGroups(std::vector<NamedParameter<T, M>> buffers,
                                                 const ProcessGrid& grid) {
  const int groups = grid.numGroups();
  for (auto& b : buffers) {
    const auto& live = b.param.value;
    Kokkos::View<T*, Kokkos::HostSpace> h("hybrid3d::Trainer::groupMeanHost", live.size());
    Kokkos::deep_copy(h, live);
    MPI_Allreduce(MPI_IN_PLACE, h.data(), static_cast<int>(h.size()), mpiType<T>(), MPI_SUM,
                  grid.dataComm());
    for (std::size_t i = 0; i < h.size(); ++i) h(i) /= static_cast<T>(groups);
    Kokkos::View<T*, M> mean("hybrid3d::Trainer::groupMean", live.size());
    Kokkos::deep_copy(mean, h);
    b.param.value = mean;
  }
  return buffers;
}

// What the model's task reads of a host batch: its targets and this rank's labels, by slot.
HostTruth truthOf(const data::HostBatch& batch) {
  HostTruth t;
  t.targets = batch.targets.data();
  t.targetsPerSlot = batch.targets.extent(1);
  t.labels = batch.labels.data();
  t.labelsPerSlot = batch.labels.extent(1) * batch.labels.extent(2) * batch.labels.extent(3);
  return t;
}

}  // namespace

template <class T, class M>
Trainer<T, M>::Trainer(const ProcessGrid& grid, const TrainConfig& config)
    : grid_(grid), config_(config), lossScale_([&] {
        LossScaleOptions o = config.lossScale;
        o.enabled = std::is_same_v<T, float16>;
        return o;
      }()) {
  const int G = grid.numGroups();
  checkTrainConfig(config, G);  // the values a dry run checks too (RunChecks.hpp)
  const ModelOptions mo = groupModelOptions(config, G);
  model_ = buildModel<T, M>(grid, mo);
  auto& graph = *model_.graph;
  for (std::size_t i = 0; i < graph.size(); ++i)
    staged_ = staged_ || graph.node(i).movesBetweenGrids();

  const StateSharding sharding = config.stateSharding;
  reducer_ = std::make_unique<GradientReducer<ParamOf<T>, M>>(
      grid.worldComm(), grid.dataComm(), graph.gradientsByNode(),
      sharding == StateSharding::Gradients ? ReduceTo::Shards : ReduceTo::Whole);
  shards_ = std::make_unique<ReplicatedStateShards<ParamOf<T>, M>>(
      sharding, grid.worldComm(), grid.dataComm(), graph.parameters(), *reducer_);
  // The optimizer updates (and holds state for) this rank's part of each parameter only.
  const auto& updated = shards_->optimizerParameters();
  if (config.optimizer == "sgd")
    optimizer_ = std::make_unique<Sgd<ParamOf<T>, M>>(updated, config.sgd);
  else if (config.optimizer == "adam")
    optimizer_ = std::make_unique<Adam<ParamOf<T>, M>>(updated, config.adam);
  else
    fail("training: unknown optimizer \"", config.optimizer, "\" (sgd or adam)");

  // Data: one loader per set, each with its preprocessing. The model's task holds the truth
  // (targets or labels) of whichever set was loaded last.
  const Index3 extents = graph.inputShape().extents;
  const data::SampleSpec spec = sampleSpec(modelTraits(mo), extents, config.data);
  const data::Subvolume sub = data::Subvolume::of(graph.input().volume);
  data::PreprocessOptions po;  // the training set's (auto statistics), for both sets
  auto makeData = [&](bool training) {
    auto d = std::make_unique<Data>();
    data::LoaderOptions lo;
    lo.globalBatch =
        training || config.validationBatch == 0 ? config.globalBatch : config.validationBatch;
    lo.evaluation = !training;
    lo.seed = config.model.seed;
    lo.shuffle = training && config.data.shuffle;
    lo.mode = config.data.readMode;
    lo.prefetch = config.data.prefetch;
    lo.cacheBytes = config.data.cacheBytes;
    // Listed once (world rank 0) and broadcast: every rank plans the same batches.
    const data::Dataset set = listDataset(grid.worldComm(), config, training);
    // Before the loader, whose prefetch would read beside the statistics' pass.
    if (training) po = preprocessOptions(grid.worldComm(), config.data, set, spec);
    d->loader = std::make_unique<data::BatchLoader>(grid, set, spec, sub, lo);
    d->preprocess = std::make_unique<data::Preprocess<T, M>>(po, model_.inputChannels, sub);
    return d;
  };
  train_ = makeData(true);
  if (!config.data.validation.empty()) validation_ = makeData(false);
  // data::Preprocess writes the input's whole local box, its ghosts read from the file (and zero
  // padding): the first layers need not exchange them again.
  graph.setInputGhostsFilled(true);

  identity_ = runIdentity(config, grid, precisionOf<T>(),
                          static_cast<long long>(train_->loader->plan().numSamples()));
  if (!config.restartFrom.empty()) {
    // Checked before any tensor is read, so a changed architecture is named as such.
    restartNotes_ =
        checkRestart(config.restartFrom, readRunState(config.restartFrom, grid.worldComm()),
                     identity_, config.deckText);
    if (grid.worldRank() == 0)
      for (const std::string& note : restartNotes_)
        std::printf("hybrid3d: restart: %s\n", note.c_str());
    const RunState s = readCheckpointWhole(config.restartFrom);
    step_ = s.step;
    const Index spe = train_->loader->plan().batchesPerEpoch();
    epoch_ = static_cast<int>(step_ / spe);
    train_->loader->seek(epoch_, step_ % spe);
  }
}

template <class T, class M>
Trainer<T, M>::~Trainer() = default;

template <class T, class M>
RunState Trainer<T, M>::readCheckpointWhole(const std::string& path) {
  auto& graph = *model_.graph;
  CheckpointContents<ParamOf<T>, M> contents{graph.parameters(), graph.buffers(), optimizer_.get()};
  // The file holds the optimizer's state whole: a sharded optimizer reads only its parts.
  contents.optimizerStateParts = shards_->stateParts(*optimizer_);
  return readCheckpoint<ParamOf<T>, M>(path, grid_.worldComm(), contents);
}

template <class T, class M>
void Trainer<T, M>::load(Data& d, const data::HostBatch& batch) {
  const execution_space& exec = exec_;
  d.preprocess->apply(exec, batch, model_.graph->input().volume);
  model_.task->load(exec, truthOf(batch), 0, batch.slots());
}

template <class T, class M>
double Trainer<T, M>::lossAndGradient(bool withGradient) {
  const execution_space& exec = exec_;
  auto& graph = *model_.graph;
  graph.forward(exec);
  model_.task->setGradientScale(lossScale_.scale());
  const double loss = model_.task->loss(exec, graph, withGradient);
  // The loss is a global mean, the same number on every rank: all ranks stop together, with
  // its first cause named (a diagnosis pass, collective, run only now).
  if (!std::isfinite(loss)) {
    if (!batch_)
      fail("training: the loss is ", loss, " at step ", step_ + 1, " (epoch ", epoch_ + 1, ")");
    LossDiagnosisInputs<T, M> in;
    in.grid = &grid_;
    in.graph = &graph;
    in.batch = batch_;
    in.dataset = &train_->loader->dataset();
    in.loss = loss;
    in.step = step_;
    in.epoch = epoch_;
    in.restartFrom = config_.restartFrom;
    in.restartStep = restartStep_;
    in.previousSamples = &previousSamples_;
    in.previousLoss = previousLoss_;
    throw WorldError(diagnoseNonFiniteLoss(in));
  }
  return loss;
}

template <class T, class M>
double Trainer<T, M>::forwardBackward() {
  const execution_space& exec = exec_;
  auto& graph = *model_.graph;
  const data::HostBatch& batch = train_->loader->next();
  batch_ = &batch;
  load(*train_, batch);
  graph.setTraining(true);
  // Dropout masks: keyed by the step and each sample's position in the global mini-batch.
  graph.setStep(step_, static_cast<std::int64_t>(grid_.group()) * graph.inputShape().batch);
  graph.zeroGradients(exec);
  const double loss = lossAndGradient(true);
  // Kept for the diagnosis of a later step (the capacity stays: no allocation after the first).
  previousSamples_.assign(batch.samples.begin(), batch.samples.end());
  previousLoss_ = loss;
  graph.backward(exec, reducer_.get());
  reducer_->finish(exec);  // the optimizer step on exec sees the sums
  return loss;
}

template <class T, class M>
bool Trainer<T, M>::unscaleGradients() {
  if (!lossScale_.enabled()) return true;
  // The gradients the optimizer reads: with sharding, this rank's parts of the sums (the
  // verdict is agreed over the world, so every part is checked).
  const bool finite = scaleGradientsAndCheck<ParamOf<T>, M>(exec_, shards_->optimizerGradients(),
                                                            ParamOf<T>(1.0 / lossScale_.scale()),
                                                            grid_.worldComm());
  return lossScale_.update(finite);
}

template <class T, class M>
double Trainer<T, M>::step() {
  const execution_space& exec = exec_;
  const double loss = forwardBackward();
  const double rate = config_.schedule.rate(step_, train_->loader->plan().batchesPerEpoch());
  if (unscaleGradients()) {
    optimizer_->step(exec, rate);
    shards_->gatherParameters(exec);  // whole again for the next forward (sharded only)
  }
  exec.fence();
  ++step_;
  return loss;
}

template <class T, class M>
void Trainer<T, M>::loadSlots(Data& d, const data::HostBatch& batch, int first, int real) {
  const execution_space& exec = exec_;
  const auto& x = model_.graph->input().volume;
  const int L = x.batch();
  for (int n = 0; n < L; ++n) {
    if (n < real) {
      d.preprocess->apply(exec, batch.formats[std::size_t(first + n)], batch.inputOf(first + n), x,
                          n);
    } else {  // padding: zeros, evaluated like a sample and then ignored
      Kokkos::deep_copy(
          exec, Kokkos::subview(x.view(), n, Kokkos::ALL, Kokkos::ALL, Kokkos::ALL, Kokkos::ALL),
          T(0));
    }
  }
  model_.task->load(exec, truthOf(batch), first, real);
}

template <class T, class M>
EvalSummary Trainer<T, M>::evaluate() {
  if (!validation_) return {};
  const execution_space& exec = exec_;
  auto& graph = *model_.graph;
  graph.setTraining(false);
  model_.task->clearMetrics();
  double samples = 0;  // counted once per data-parallel group
  // A group's part of a validation batch goes through the model L samples at a time (the batch
  // its activations have). Every group runs the same number of forward passes, padded where its
  // part is short or empty, so the model's collectives match; only the real samples count.
  const int L = graph.inputShape().batch;
  const Index batches = validation_->loader->plan().batchesPerEpoch();
  for (Index b = 0; b < batches; ++b) {
    const data::HostBatch& batch = validation_->loader->next();
    for (int first = 0; first < batch.slots(); first += L) {
      const int real = std::max(0, std::min(L, batch.filled - first));
      loadSlots(*validation_, batch, first, real);
      graph.forward(exec);
      model_.task->addMetrics(exec, graph, real);
      samples += real;
    }
  }
  graph.setTraining(true);
  MPI_Allreduce(MPI_IN_PLACE, &samples, 1, MPI_DOUBLE, MPI_SUM, grid_.dataComm());
  EvalSummary summary;
  model_.task->summarize(grid_, summary);  // collective: on every rank, with samples or not
  if (samples == 0) return EvalSummary{};
  summary.present = true;
  summary.samples = static_cast<long long>(samples);
  // Reduced: the same number on every rank, so all ranks stop together.
  if (!std::isfinite(summary.loss))
    fail("validation: the loss is ", summary.loss, " after step ", step_,
         "; check the validation data");
  return summary;
}

template <class T, class M>
void Trainer<T, M>::loadWeights(const std::string& path) {
  readCheckpoint<ParamOf<T>, M>(path, grid_.worldComm(),
                                {model_.graph->parameters(), model_.graph->buffers(), nullptr});
}

template <class T, class M>
void Trainer<T, M>::saveCheckpoint(const std::string& path) const {
  const bool perGroup = config_.model.batchNormPerGroup && grid_.numGroups() > 1;
  CheckpointContents<ParamOf<T>, M> contents{
      model_.graph->parameters(),
      perGroup ? meanOverGroups(model_.graph->buffers(), grid_) : model_.graph->buffers(),
      optimizer_.get()};
  // A sharded optimizer writes its parts where the whole would be: the file is the same
  // whatever the sharding.
  contents.optimizerStateParts = shards_->stateParts(*optimizer_);
  writeCheckpoint<ParamOf<T>, M>(
      path, grid_.worldComm(), contents,
      {step_, epoch_, config_.model.seed, config_.deckText, identity_, config_.history});
}

template <class T, class M>
void Trainer<T, M>::printImplementations() {
  auto& graph = *model_.graph;
  for (std::size_t i = 0; i < graph.size(); ++i) {
    const std::string how = graph.node(i).implementation();
    if (!how.empty()) std::printf("  %s: %s\n", graph.node(i).name().c_str(), how.c_str());
  }
}

namespace {

OutputDirectoryOptions outputOptions(const TrainConfig& c, long long step) {
  OutputDirectoryOptions o;
  o.dir = c.outputDir;
  o.datasets = {c.data.train, c.data.validation};
  o.restarting = !c.restartFrom.empty();
  o.restartStep = step;
  o.overwrite = c.overwrite;
  return o;
}

// One step's seconds by phase, or their sums since the last progress line: what the step's
// wall time leaves after the halo exchanges, the gradient reduction, the exposed input wait and
// the redistributions is compute.
struct StepSeconds {
  double compute = 0, halo = 0, allreduce = 0, io = 0, redistribute = 0;
  double total() const { return compute + halo + allreduce + io + redistribute; }
  void add(const StepSeconds& s) {
    compute += s.compute;
    halo += s.halo;
    allreduce += s.allreduce;
    io += s.io;
    redistribute += s.redistribute;
  }
};

// A finished step as the progress line reports it.
struct StepDone {
  double loss = 0, rate = 0;  // the mean loss, the learning rate it stepped with
};

}  // namespace

// One call of run(), split into its phases: the run's resources (output directory, metrics
// file, signal handlers, watchdog), the steps of each epoch, the agreement after each step, the
// epoch's end, and the first and last lines.
template <class T, class M>
struct Trainer<T, M>::Session {
  explicit Session(Trainer& trainer);
  void announce() const;  // rank 0: what runs, in which precision, on which engines
  // The steps to the epoch's end, the last step or a stop, then the epoch's checkpoint,
  // validation and line.
  EpochSummary trainEpoch();
  StepDone timedStep();  // one step, its phases summed and its metrics row written
  void printProgress(const StepDone& done);
  // Every rank learns whether any rank got a signal or reached the checkpoint clock, and so
  // stops or checkpoints after the same step.
  void stopOrCheckpoint();
  EpochSummary endEpoch(double epochStart, double lossSum, long long count);
  void checkpointNow();
  void announceEnd() const;

  Trainer& t;
  bool root;
  // Created, checked and locked for the run (an earlier run's files refused or kept, the
  // metrics after a restart's checkpoint dropped).
  const OutputDirectory output;
  MetricsCsv csv;
  // The step agreement's own communicator (its messages use one tag) and the watchdog over
  // the waits inside a step.
  const OwnedComm agreementComm;
  std::atomic<long long> stepNow;
  const CollectiveWatchdog watchdog;
  const std::string checkpoint;
  PreemptionSignals signals;
  double lastCheckpoint;
  long long checkpointStep = -1;
  int stopSignal = 0;
  const Index spe;  // steps per epoch
  const long long totalSteps;
  double start = 0;            // after the first lines: the clock of the ETA and the end line
  long long stepsThisRun = 0;  // not counting a restart's earlier steps
  StepSeconds sinceProgress;   // summed since the last progress line
};

template <class T, class M>
Trainer<T, M>::Session::Session(Trainer& trainer)
    : t(trainer),
      root(t.grid_.worldRank() == 0),
      output(t.grid_.worldComm(), outputOptions(t.config_, t.step_)),
      csv(t.config_.outputDir + "/metrics.csv", !t.config_.restartFrom.empty(),
          t.grid_.worldComm()),
      agreementComm(t.grid_.worldComm()),
      stepNow(t.step_),
      watchdog(t.config_.collectiveTimeoutSeconds, t.grid_.worldRank(), stepNow),
      checkpoint(t.checkpointPath()),
      lastCheckpoint(MPI_Wtime()),
      spe(t.train_->loader->plan().batchesPerEpoch()),
      totalSteps(t.config_.maxSteps >= 0
                     ? std::min<long long>(t.config_.maxSteps, spe * t.config_.epochs)
                     : spe * t.config_.epochs) {}

template <class T, class M>
void Trainer<T, M>::Session::announce() const {
  if (!root) return;
  const TrainConfig& c = t.config_;
  std::printf(
      "hybrid3d: %s, input %d^3, %d ranks = %d groups x spatial grid %s, mini-batch %d, "
      "%lld steps per epoch, %d epochs\n",
      t.model_.architecture.c_str(), c.model.inputWidth, t.grid_.worldSize(), t.grid_.numGroups(),
      toString(t.grid_.dims()).c_str(), c.globalBatch, static_cast<long long>(spe), c.epochs);
  if (isScalar16<T>)
    std::printf(
        "hybrid3d: precision %s: activations, their gradients and halos in %s; parameters, "
        "gradient sums, batch-norm statistics, loss and optimizer in float%s\n",
        toString(precisionOf<T>()), toString(precisionOf<T>()),
        t.lossScale_.enabled()
            ? Impl::concat("; dynamic loss scale ", t.lossScale_.scale(), " (doubled after ",
                           c.lossScale.growthInterval,
                           " clean steps, halved and the step skipped on an overflow)")
                  .c_str()
            : "");
  t.printImplementations();
}

template <class T, class M>
EpochSummary Trainer<T, M>::Session::trainEpoch() {
  const double epochStart = MPI_Wtime();
  double lossSum = 0;
  long long count = 0;
  sinceProgress = StepSeconds{};  // an epoch's lines count its own steps only
  while (t.step_ / spe == t.epoch_ && t.step_ < totalSteps && !stopSignal) {
    const StepDone done = timedStep();
    lossSum += done.loss;
    ++count;
    ++stepsThisRun;
    if (root && (t.step_ % t.config_.printEvery == 0 || t.step_ == totalSteps)) printProgress(done);
    stopOrCheckpoint();
  }
  return endEpoch(epochStart, lossSum, count);
}

template <class T, class M>
StepDone Trainer<T, M>::Session::timedStep() {
  PhaseTimers::global().reset();
  const double ioBefore = t.train_->loader->stats().exposedSeconds;
  const double t0 = MPI_Wtime();
  StepDone done;
  done.loss = t.step();
  stepNow.store(t.step_, std::memory_order_relaxed);
  const double dt = MPI_Wtime() - t0;
  const PhaseTimers& phases = PhaseTimers::global();
  StepSeconds s;
  s.io = t.train_->loader->stats().exposedSeconds - ioBefore;
  s.halo = phases.halo;
  s.allreduce = phases.allreduce;
  s.redistribute = phases.redistribute;
  s.compute = std::max(0.0, dt - s.halo - s.allreduce - s.io - s.redistribute);
  done.rate = t.config_.schedule.rate(t.step_ - 1, spe);
  csv.row({t.step_, t.epoch_ + 1, done.loss, done.rate, t.config_.globalBatch / dt, s.compute,
           s.halo, s.allreduce, s.io, phases.haloBytes, phases.allreduceBytes, t.staged_,
           s.redistribute, phases.redistributeBytes});
  sinceProgress.add(s);
  return done;
}

template <class T, class M>
void Trainer<T, M>::Session::printProgress(const StepDone& done) {
  const StepSeconds& s = sinceProgress;
  const double per = (MPI_Wtime() - start) / double(stepsThisRun);
  const double all = s.total();
  auto pct = [&](double v) { return all > 0 ? 100.0 * v / all : 0.0; };
  // The redistributions' share only where the model has layer grids.
  const std::string moving =
      t.staged_ ? Impl::concat(" redistribute ", int(pct(s.redistribute) + 0.5), "%") : "";
  std::printf(
      "epoch %d/%d step %lld/%lld loss %.5g lr %.3g %.2f samples/s | compute %.0f%% "
      "halo %.0f%% allreduce %.0f%%%s io %.0f%% | ETA %s\n",
      t.epoch_ + 1, t.config_.epochs, t.step_, totalSteps, done.loss, done.rate,
      t.config_.globalBatch / per, pct(s.compute), pct(s.halo), pct(s.allreduce), moving.c_str(),
      pct(s.io), hms(per * double(totalSteps - t.step_)).c_str());
  std::fflush(stdout);
  sinceProgress = StepSeconds{};
}

template <class T, class M>
void Trainer<T, M>::Session::stopOrCheckpoint() {
  const TrainConfig& c = t.config_;
  if (t.step_ == c.testSignalStep &&
      (c.testSignalRank < 0 || c.testSignalRank == t.grid_.worldRank()))
    std::raise(c.testSignal);
  // Every rank stops after the same step, whichever rank the signal reached.
  const bool clockDue =
      c.checkpointMinutes > 0 && MPI_Wtime() - lastCheckpoint >= 60 * c.checkpointMinutes;
  const StepAgreement agreed = agreeAfterStep(agreementComm.get(), signals.received(), clockDue,
                                              c.collectiveTimeoutSeconds, t.step_);
  stopSignal = agreed.signal;
  if (!stopSignal &&
      (agreed.checkpointDue || (c.checkpointEvery > 0 && t.step_ % c.checkpointEvery == 0)))
    checkpointNow();
}

template <class T, class M>
EpochSummary Trainer<T, M>::Session::endEpoch(double epochStart, double lossSum, long long count) {
  EpochSummary summary;
  const bool complete = t.step_ / spe > t.epoch_;
  if (complete) ++t.epoch_;
  summary.epoch = complete ? t.epoch_ : t.epoch_ + 1;
  summary.steps = t.step_;
  summary.trainLoss = count ? lossSum / double(count) : 0;
  summary.seconds = MPI_Wtime() - epochStart;
  summary.samplesPerSecond =
      summary.seconds > 0 ? count * t.config_.globalBatch / summary.seconds : 0;
  // The epoch is saved before it is validated: a bad validation sample costs no training.
  if (complete && checkpointStep != t.step_) checkpointNow();
  // A preempted run validates only a finished epoch (as the uninterrupted run would there).
  summary.validation = complete || !stopSignal ? t.evaluate() : EvalSummary{};
  csv.validation(t.step_, t.epoch_, summary.validation);
  if (root) {
    std::printf("epoch %d %s: train loss %.5g, %.1f s, %.2f samples/s%s%s\n", summary.epoch,
                complete ? "done" : "stopped", summary.trainLoss, summary.seconds,
                summary.samplesPerSecond, summary.validation.present ? ", validation " : "",
                summary.validation.present ? summary.validation.describe().c_str() : "");
    std::fflush(stdout);
  }
  return summary;
}

template <class T, class M>
void Trainer<T, M>::Session::checkpointNow() {
  t.saveCheckpoint(checkpoint);
  lastCheckpoint = MPI_Wtime();
  checkpointStep = t.step_;
}

template <class T, class M>
void Trainer<T, M>::Session::announceEnd() const {
  if (!root) return;
  const long long step = t.step_;
  if (stopSignal)
    std::printf(
        "hybrid3d: %s received: stopped after step %lld of %lld (epoch %lld/%d, %lld of "
        "its %lld steps done); checkpoint %s\n",
        signalName(stopSignal), step, totalSteps, static_cast<long long>(step / spe + 1),
        t.config_.epochs, static_cast<long long>(step % spe), static_cast<long long>(spe),
        checkpoint.c_str());
  else
    std::printf("hybrid3d: finished %lld steps in %s; checkpoint %s, metrics %s/metrics.csv\n",
                step, hms(MPI_Wtime() - start).c_str(), checkpoint.c_str(),
                t.config_.outputDir.c_str());
  if (t.lossScale_.enabled())
    std::printf("hybrid3d: loss scaling skipped %lld of %lld steps; the scale is now %g\n",
                t.lossScale_.skippedSteps(), stepsThisRun, t.lossScale_.scale());
  std::fflush(stdout);
}

template <class T, class M>
EpochSummary Trainer<T, M>::run() {
  Session r(*this);
  restartStep_ = config_.restartFrom.empty() ? -1 : step_;
  r.announce();
  r.start = MPI_Wtime();
  EpochSummary summary;
  while (epoch_ < config_.epochs && step_ < r.totalSteps && !r.stopSignal) summary = r.trainEpoch();
  if (r.checkpointStep != step_) r.checkpointNow();
  summary.stoppedBySignal = r.stopSignal;
  r.announceEnd();
  return summary;
}

template class Trainer<float, DefaultMemorySpace>;
template class Trainer<double, DefaultMemorySpace>;
template class Trainer<bfloat16, DefaultMemorySpace>;
template class Trainer<float16, DefaultMemorySpace>;

}  // namespace hybrid3d
