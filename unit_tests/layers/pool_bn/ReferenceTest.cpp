// The refcheck runners of max_pool3d, avg_pool3d and batch_norm3d reproduce PyTorch's reference
// files (unit_tests/reference) to 1e-10 relative on every grid of standardGridCases(): groups split
// the case's batch when they can, else each group runs all of it.

#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <hdf5.h>

#include <hybrid3d/data/Hdf5.hpp>

#include "GridCases.hpp"
#include "Invariance.hpp"
#include "RefCase.hpp"

namespace hybrid3d::test {
namespace {

using app::refcheck::Comparison;
using app::refcheck::RefCase;
using app::refcheck::refOps;

void expectCaseMatches(const std::string& file, const std::string& op,
                       const std::vector<std::string>& tensors) {
  const RefCase c(file.find('/') == std::string::npos
                      ? std::string(HYBRID3D_TEST_DATA_DIR) + "/" + file
                      : file);
  ASSERT_EQ(c.op(), op);
  ASSERT_EQ(refOps().count(op), 1u) << op << " has no runner";
  const int ran = forEachGrid(standardGridCases(), [&](const ProcessGrid& grid, const GridCase&) {
    const std::vector<Comparison> result = refOps().at(op)(c, grid);
    std::vector<std::string> seen;
    for (const Comparison& r : result) {
      seen.push_back(r.tensor);
      EXPECT_LE(r.maxRelError, 1e-10) << file << ": " << r.tensor;
    }
    EXPECT_EQ(seen, tensors) << file << ": compared tensors";
  });
  EXPECT_GE(ran, 1);
}

TEST(RefCheck, MaxPool3dMatchesPyTorchOnEveryGrid) {
  expectCaseMatches("max_pool3d_k2_s2_p0.h5", "max_pool3d", {"output", "grad_input"});
}

TEST(RefCheck, AvgPool3dMatchesPyTorchOnEveryGrid) {
  expectCaseMatches("avg_pool3d_k3_s2_p1.h5", "avg_pool3d", {"output", "grad_input"});
}

TEST(RefCheck, BatchNorm3dMatchesPyTorchOnEveryGrid) {
  expectCaseMatches("batch_norm3d.h5", "batch_norm3d",
                    {"output", "running_mean_after", "running_var_after", "grad_input",
                     "grad_weight", "grad_bias"});
}

// A case file in the reference format, written with the HDF5 C API.
class CaseWriter {
public:
  explicit CaseWriter(const std::string& path)
      : file_(H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT), H5Fclose) {}
  void tensor(const char* name, const std::vector<hsize_t>& dims, const double* data) {
    data::Handle space(H5Screate_simple(int(dims.size()), dims.data(), nullptr), H5Sclose);
    data::Handle set(
        H5Dcreate2(file_, name, H5T_IEEE_F64LE, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT),
        H5Dclose);
    H5Dwrite(set, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, data);
  }
  void number(const char* name, double v) {
    data::Handle space(H5Screate(H5S_SCALAR), H5Sclose);
    data::Handle a(H5Acreate2(file_, name, H5T_IEEE_F64LE, space, H5P_DEFAULT, H5P_DEFAULT),
                   H5Aclose);
    H5Awrite(a, H5T_NATIVE_DOUBLE, &v);
  }
  void text(const char* name, const std::string& v) {
    data::Handle type(H5Tcopy(H5T_C_S1), H5Tclose);
    H5Tset_size(type, v.size());
    data::Handle space(H5Screate(H5S_SCALAR), H5Sclose);
    data::Handle a(H5Acreate2(file_, name, type, space, H5P_DEFAULT, H5P_DEFAULT), H5Aclose);
    H5Awrite(a, type, v.data());
  }

private:
  data::Handle file_;
};

TEST(RefCheck, BatchNorm3dInInferenceModeUsesTheCasesRunningStatistics) {
  // A case with training = 0 and running statistics, its expected tensors from the plain
  // formulas: y = (x - mean) / sqrt(var + eps) * gamma + beta, dx = dy * gamma / sqrt(var + eps),
  // dgamma = sum(dy * xhat), dbeta = sum(dy). Each rank writes and reads its own copy.
  const int N = 2, C = 3;
  const Index3 e{4, 5, 3};
  const Index cells = e[0] * e[1] * e[2];
  const auto x = randomGlobal<double>("x", N, C, e, 71, 2, 4);
  const auto dy = randomGlobal<double>("dy", N, C, e, 72);
  const auto stats = randomGlobal<double>("stats", 4, C, {1, 1, 1}, 73, 0.5, 1.5);
  const double eps = 1e-3;
  const double* gamma = &stats(0, 0, 0, 0, 0);
  const double* beta = &stats(1, 0, 0, 0, 0);
  const double* mean = &stats(2, 0, 0, 0, 0);
  const double* var = &stats(3, 0, 0, 0, 0);
  std::vector<double> y(x.size()), dx(x.size()), dgamma(C, 0.0), dbeta(C, 0.0);
  for (int n = 0; n < N; ++n)
    for (int c = 0; c < C; ++c)
      for (Index i = 0; i < cells; ++i) {
        const std::size_t at = (std::size_t(n) * C + c) * cells + i;
        const double xhat = (x.data()[at] - mean[c]) / std::sqrt(var[c] + eps);
        y[at] = xhat * gamma[c] + beta[c];
        dx[at] = dy.data()[at] * gamma[c] / std::sqrt(var[c] + eps);
        dgamma[c] += dy.data()[at] * xhat;
        dbeta[c] += dy.data()[at];
      }
  const std::string path =
      ::testing::TempDir() + "pool_bn_inference_case_" + std::to_string(worldRank()) + ".h5";
  {
    CaseWriter w(path);
    w.text("op", "batch_norm3d");
    w.number("training", 0);
    w.number("eps", eps);
    w.number("momentum", 0.1);
    const std::vector<hsize_t> shape{hsize_t(N), hsize_t(C), hsize_t(e[0]), hsize_t(e[1]),
                                     hsize_t(e[2])};
    const std::vector<hsize_t> channels{hsize_t(C)};
    w.tensor("input", shape, x.data());
    w.tensor("grad_output", shape, dy.data());
    w.tensor("weight", channels, gamma);
    w.tensor("bias", channels, beta);
    w.tensor("running_mean", channels, mean);
    w.tensor("running_var", channels, var);
    w.tensor("output", shape, y.data());
    w.tensor("grad_input", shape, dx.data());
    w.tensor("grad_weight", channels, dgamma.data());
    w.tensor("grad_bias", channels, dbeta.data());
    w.tensor("running_mean_after", channels, mean);  // inference leaves them as they were
    w.tensor("running_var_after", channels, var);
  }
  expectCaseMatches(path, "batch_norm3d",
                    {"output", "running_mean_after", "running_var_after", "grad_input",
                     "grad_weight", "grad_bias"});
  std::remove(path.c_str());
}

}  // namespace
}  // namespace hybrid3d::test
