#include <cstdio>
#include <fstream>
#include <random>

#include <gtest/gtest.h>

#include <hybrid3d/core/Error.hpp>
#include <hybrid3d/train/Checkpoint.hpp>
#include <hybrid3d/data/Hdf5.hpp>
#include <hybrid3d/layers/DistributedParameter.hpp>
#include <hybrid3d/layers/FlattenDense.hpp>
#include <hybrid3d/optim/Adam.hpp>

#include "GridCases.hpp"

namespace hybrid3d::test {
namespace {

using Params = std::vector<NamedParameter<double>>;
constexpr auto write = writeCheckpoint<double, DefaultMemorySpace>;
constexpr auto read = readCheckpoint<double, DefaultMemorySpace>;

Params makeParams(unsigned seed) {
  Params ps{{"conv1", createParameter<double>("conv1", "weight", {4, 2, 3, 3, 3})},
            {"fc1", createParameter<double>("fc1", "bias", {5})}};
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(-1, 1);
  for (auto& p : ps) {
    auto h = Kokkos::create_mirror_view(p.param.value);
    for (std::size_t i = 0; i < h.size(); ++i) h(i) = u(rng);
    Kokkos::deep_copy(p.param.value, h);
    Kokkos::deep_copy(p.param.grad, 0.5);
  }
  return ps;
}

std::vector<double> flatten(const Params& ps) {
  std::vector<double> v;
  for (const auto& p : ps) {
    auto h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), p.param.value);
    v.insert(v.end(), h.data(), h.data() + h.size());
  }
  return v;
}

std::string scratch(const std::string& name) {
  // One directory per rank count so concurrently running registrations do not collide.
  return "checkpoint_test_np" + std::to_string(worldSize()) + "_" + name + ".h5";
}

TEST(Checkpoint, RoundTripRestoresParametersOptimizerAndState) {
  Params a = makeParams(1);
  Params buffers{{"bn1", createParameter<double>("bn1", "running_var", {3}, false)}};
  Kokkos::deep_copy(buffers[0].param.value, 2.5);
  Adam<double> adam(a, {});
  adam.step(DefaultExecutionSpace(), 1e-2);
  adam.step(DefaultExecutionSpace(), 1e-2);
  const std::string path = scratch("roundtrip");
  const std::map<std::string, std::string> identity = {{"mini-batch", "4"},
                                                       {"spatial grid", "2x1x1"}};
  write(path, MPI_COMM_WORLD, {a, buffers, &adam}, {7, 2, 1234, "<ParameterList/>", identity, ""});

  Params b = makeParams(2);
  Params buffersB{{"bn1", createParameter<double>("bn1", "running_var", {3}, false)}};
  Adam<double> adamB(b, {});
  const RunState s = read(path, MPI_COMM_WORLD, {b, buffersB, &adamB});
  EXPECT_EQ(flatten(a), flatten(b));
  EXPECT_EQ(flatten(buffers), flatten(buffersB));
  EXPECT_EQ(adamB.steps(), 2);
  EXPECT_EQ(s.step, 7);
  EXPECT_EQ(s.epoch, 2);
  EXPECT_EQ(s.seed, 1234u);
  EXPECT_EQ(s.deck, "<ParameterList/>");
  EXPECT_EQ(s.identity, identity);
  // The run state alone (what a restart checks before loading tensors) reads the same.
  const RunState alone = readRunState(path, MPI_COMM_WORLD);
  EXPECT_EQ(alone.step, 7);
  EXPECT_EQ(alone.identity, identity);
  // Same optimizer state: one more identical step keeps them identical.
  adam.step(DefaultExecutionSpace(), 1e-2);
  adamB.step(DefaultExecutionSpace(), 1e-2);
  EXPECT_EQ(flatten(a), flatten(b));
  // The fixed layout: PyTorch shapes under /model/<layer>/<param>.
  if (worldRank() == 0) {
    data::File f(path);
    EXPECT_EQ(f.shape("/model/conv1/weight"), (std::vector<Index>{4, 2, 3, 3, 3}));
    EXPECT_TRUE(f.hasDataset("/optimizer/conv1/weight/exp_avg"));
    std::remove(path.c_str());
  }
  MPI_Barrier(MPI_COMM_WORLD);
}

TEST(Checkpoint, FailedWriteLeavesThePreviousCheckpointWhole) {
  Params good = makeParams(3);
  const std::string path = scratch("atomic");
  write(path, MPI_COMM_WORLD, {good, {}, nullptr}, {1, 0, 0, "", {}, ""});
  // A parameter whose storage disagrees with its shape makes the writer fail half way, after
  // earlier datasets went into the temporary file.
  Params broken = makeParams(4);
  broken.push_back({"fc9", createParameter<double>("fc9", "weight", {3})});
  broken.back().param.shape = {4};
  EXPECT_THROW(write(path, MPI_COMM_WORLD, {broken, {}, nullptr}, {2, 0, 0, "", {}, ""}), Error);
  Params back = makeParams(5);
  const RunState s = read(path, MPI_COMM_WORLD, {back, {}, nullptr});
  EXPECT_EQ(flatten(back), flatten(good));
  EXPECT_EQ(s.step, 1);
  if (worldRank() == 0) {
    std::remove(path.c_str());
    std::remove((path + ".tmp").c_str());
  }
  MPI_Barrier(MPI_COMM_WORLD);
}

TEST(Checkpoint, ShapeMismatchAndMissingFileNameTheCulprit) {
  const std::string path = scratch("mismatch");
  Params a = makeParams(6);
  write(path, MPI_COMM_WORLD, {a, {}, nullptr}, {});
  Params other{{"conv1", createParameter<double>("conv1", "weight", {4, 2, 5, 5, 5})}};
  try {
    read(path, MPI_COMM_WORLD, {other, {}, nullptr});
    ADD_FAILURE() << "accepted a wrong shape";
  } catch (const Error& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find(path), std::string::npos) << m;
    EXPECT_NE(m.find("/model/conv1/weight has shape 4x2x3x3x3 but the model expects 4x2x5x5x5"),
              std::string::npos)
        << m;
  }
  EXPECT_THROW(read("no/such/file.h5", MPI_COMM_WORLD, {a, {}, nullptr}), Error);
  if (worldRank() == 0) std::remove(path.c_str());
  MPI_Barrier(MPI_COMM_WORLD);
}

// Reading `path` (conv1's weight damaged) must refuse it, naming the file and the dataset.
void expectRefusedAsDamaged(const std::string& path, Params& into) {
  try {
    read(path, MPI_COMM_WORLD, {into, {}, nullptr});
    ADD_FAILURE() << "accepted a damaged checkpoint";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(path + ": dataset /model/conv1/weight does not match "
                                                "its checksum"),
              std::string::npos)
        << e.what();
  }
}

TEST(Checkpoint, DamagedDatasetIsNamedWithTheFile) {
  const std::string path = scratch("damaged");
  Params a = makeParams(7);
  write(path, MPI_COMM_WORLD, {a, {}, nullptr}, {3, 0, 0, "", {}, "restart at step 1: x\n"});
  EXPECT_EQ(readRunState(path, MPI_COMM_WORLD).history, "restart at step 1: x\n");
  // One value changed in place, as a bad disk or an edit would: the checksum stays the old one.
  if (worldRank() == 0) {
    const hid_t file = H5Fopen(path.c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
    const hid_t d = H5Dopen2(file, "/model/conv1/weight", H5P_DEFAULT);
    std::vector<double> v(4 * 2 * 27);
    H5Dread(d, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, v.data());
    v[17] = 0;
    H5Dwrite(d, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, v.data());
    H5Dclose(d);
    H5Fclose(file);
  }
  MPI_Barrier(MPI_COMM_WORLD);
  Params b = makeParams(8);
  expectRefusedAsDamaged(path, b);
  if (worldRank() == 0) std::remove(path.c_str());
  MPI_Barrier(MPI_COMM_WORLD);
}

// FNV-1a 64 of an array's bytes: the checksum checkpoints carried before each rank wrote its own
// part (attribute "fnv1a64").
std::uint64_t formerChecksum(const std::vector<double>& values) {
  const auto* bytes = reinterpret_cast<const unsigned char*>(values.data());
  std::uint64_t h = 14695981039346656037ull;
  for (std::size_t i = 0; i < values.size() * sizeof(double); ++i)
    h = (h ^ bytes[i]) * 1099511628211ull;
  return h;
}

// Rank 0 turns the checkpoint at `path` into one of the former kind: each parameter's
// elementhash64 replaced by fnv1a64 of its values, then `poke` (if >= 0) of conv1's weight
// changed as damage would.
void makeFormer(const std::string& path, const Params& params, int poke) {
  if (worldRank() == 0) {
    const hid_t file = H5Fopen(path.c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
    for (const auto& p : params) {
      const std::string name = "/model/" + p.path();
      const hid_t d = H5Dopen2(file, name.c_str(), H5P_DEFAULT);
      std::vector<double> v(std::size_t(globalSize(p.param.shape)));
      H5Dread(d, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, v.data());
      H5Adelete(d, "elementhash64");
      const std::uint64_t sum = formerChecksum(v);
      const hid_t scalar = H5Screate(H5S_SCALAR), u64 = H5T_NATIVE_UINT64;
      const hid_t attr = H5Acreate2(d, "fnv1a64", u64, scalar, H5P_DEFAULT, H5P_DEFAULT);
      H5Awrite(attr, u64, &sum);
      H5Aclose(attr);
      H5Sclose(scalar);
      if (poke >= 0 && p.path() == "conv1/weight") {
        v[std::size_t(poke)] += 1;
        H5Dwrite(d, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, v.data());
      }
      H5Dclose(d);
    }
    H5Fclose(file);
  }
  MPI_Barrier(MPI_COMM_WORLD);
}

TEST(Checkpoint, AFileWithTheFormerChecksumIsStillReadAndChecked) {
  const std::string path = scratch("former");
  const Params a = makeParams(10);
  write(path, MPI_COMM_WORLD, {a, {}, nullptr}, {4, 0, 0, "", {}, ""});
  makeFormer(path, a, -1);
  Params b = makeParams(11);
  EXPECT_EQ(read(path, MPI_COMM_WORLD, {b, {}, nullptr}).step, 4);
  EXPECT_EQ(flatten(b), flatten(a));
  makeFormer(path, a, 5);
  expectRefusedAsDamaged(path, b);
  if (worldRank() == 0) std::remove(path.c_str());
  MPI_Barrier(MPI_COMM_WORLD);
}

TEST(Checkpoint, FullDiskIsNamedAndLeavesNoTemporaryFile) {
  const std::string path = scratch("full");
  Params a = makeParams(9);
  setenv("HYBRID3D_TEST_NO_SPACE", "1", 1);
  try {
    write(path, MPI_COMM_WORLD, {a, {}, nullptr}, {});
    ADD_FAILURE() << "a write that cannot succeed succeeded";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("no space left on device: " + path + " needs about "),
              std::string::npos)
        << e.what();
  }
  unsetenv("HYBRID3D_TEST_NO_SPACE");
  EXPECT_FALSE(std::ifstream(path + ".tmp").good());
  EXPECT_FALSE(std::ifstream(path).good());
  MPI_Barrier(MPI_COMM_WORLD);
}

// FlattenDense's weight is a column shard (each rank holds its own voxels' columns); the file
// holds the global tensor and the Adam state in the same global layout, so a checkpoint written
// on 2x1x1 restarts on 1x1x2 (an uneven split of W = 3) and on one rank with every global
// tensor bit-identical.
struct DenseState {
  std::vector<std::vector<double>> tensors;  // weight, bias, then every Adam state, global
};

DenseState globalState(const FlattenDense<double>& layer, const Adam<double>& adam, MPI_Comm comm) {
  DenseState s;
  for (const auto& p : layer.parameters()) s.tensors.push_back(gatherGlobal(p, p.value, comm));
  for (const auto& [name, view] : adam.state()) {
    const auto& p = name.rfind("fc1/weight/", 0) == 0 ? layer.weight() : layer.bias();
    s.tensors.push_back(gatherGlobal(p, view, comm));
  }
  return s;
}

Params named(const FlattenDense<double>& layer) {
  Params ps;
  for (const auto& p : layer.parameters()) ps.push_back({layer.name(), p});
  return ps;
}

TEST(Checkpoint, ColumnShardsRestartOnAnotherGridWithBitIdenticalGlobalTensors) {
  if (worldSize() % 2 != 0) GTEST_SKIP() << "needs a 2x1x1 grid";
  const TensorShape in{1, 3, {4, 2, 3}};
  const Index features = 3 * 4 * 2 * 3;
  const std::string path = scratch("shards");
  DenseState written;
  {
    ProcessGrid grid(MPI_COMM_WORLD, {2, 1, 1});
    FlattenDense<double> layer(grid, "fc1", in, {5, true});
    std::mt19937_64 rng(17);  // the same global tensors on every rank
    std::uniform_real_distribution<double> u(-1, 1);
    for (const auto& p : layer.parameters()) {
      std::vector<double> value(std::size_t(globalSize(p.shape))), grad(value.size());
      for (auto& v : value) v = u(rng);
      for (auto& g : grad) g = u(rng);
      scatterGlobal(p, value, p.value);
      scatterGlobal(p, grad, p.grad);
    }
    const Params params = named(layer);
    ASSERT_TRUE(layer.weight().layout.columnShard);
    ASSERT_LT(layer.weight().value.size(), std::size_t(5 * features));
    Adam<double> adam(params, {});
    adam.step(DefaultExecutionSpace(), 1e-2);
    adam.step(DefaultExecutionSpace(), 1e-2);
    write(path, MPI_COMM_WORLD, {params, {}, &adam}, {2, 0, 0, "", {}, ""});
    written = globalState(layer, adam, MPI_COMM_WORLD);
  }
  ASSERT_EQ(written.tensors.size(), 6u);  // weight, bias, exp_avg and exp_avg_sq of each
  if (worldRank() == 0) {                 // the file's tensors are the global ones
    data::File f(path);
    EXPECT_EQ(f.shape("/model/fc1/weight"), (std::vector<Index>{5, features}));
    EXPECT_EQ(f.read<double>("/model/fc1/weight"), written.tensors[0]);
    EXPECT_EQ(f.read<double>("/optimizer/fc1/weight/exp_avg"), written.tensors[2]);
  }
  auto restoresOn = [&](MPI_Comm comm, const Int3& dims) {
    ProcessGrid grid(comm, dims);
    FlattenDense<double> layer(grid, "fc1", in, {5, true});
    const Params params = named(layer);
    Adam<double> adam(params, {});
    read(path, comm, {params, {}, &adam});
    EXPECT_EQ(adam.steps(), 2);
    const DenseState back = globalState(layer, adam, comm);
    ASSERT_EQ(back.tensors.size(), written.tensors.size());
    for (std::size_t i = 0; i < back.tensors.size(); ++i)
      EXPECT_EQ(back.tensors[i], written.tensors[i]) << "tensor " << i << " on " << toString(dims);
  };
  restoresOn(MPI_COMM_WORLD, {1, 1, 2});
  if (worldRank() == 0) restoresOn(MPI_COMM_SELF, {1, 1, 1});
  MPI_Barrier(MPI_COMM_WORLD);
  if (worldRank() == 0) std::remove(path.c_str());
  MPI_Barrier(MPI_COMM_WORLD);
}

}  // namespace
}  // namespace hybrid3d::test
