#pragma once
/// \file
/// Dynamic loss scaling for runs in half (IEEE binary16) activations, as PyTorch's GradScaler
/// and NVIDIA's mixed-precision recipe do it. Half's smallest normal is 2^-14: the gradients of
/// a loss averaged over many voxels fall below it and flush to zero. So the loss gradient is
/// multiplied by S before backward (the loss layers do it in float, before rounding), and the
/// parameter gradients, float sums, are divided by S before the optimizer sees them. A step whose
/// gradients hold an Inf or NaN on any rank is skipped (no update) and S halves; after
/// `growthInterval` clean steps in a row S doubles. bfloat16 has float's exponent range and
/// needs none of this (S stays 1, nothing is checked).

#include <vector>

#include <Kokkos_Core.hpp>
#include <mpi.h>

namespace hybrid3d {

struct LossScaleOptions {
  bool enabled = false;
  double initial = 65536.0;  // 2^16, GradScaler's default
  long long growthInterval = 2000;
};

class LossScale {
public:
  explicit LossScale(const LossScaleOptions& options) : options_(options) {
    scale_ = options.enabled ? options.initial : 1.0;
  }
  bool enabled() const { return options_.enabled; }
  double scale() const { return scale_; }
  long long skippedSteps() const { return skipped_; }
  /// After a step whose gradients were `finite` on every rank (the same verdict everywhere):
  /// returns whether the optimizer may step, and adjusts S.
  bool update(bool finite) {
    if (!options_.enabled) return true;
    if (!finite) {
      scale_ *= 0.5;
      clean_ = 0;
      ++skipped_;
      return false;
    }
    if (++clean_ >= options_.growthInterval) {
      scale_ *= 2.0;
      clean_ = 0;
    }
    return true;
  }
  /// A checkpoint's values, so a restart goes on with the same scale.
  long long cleanSteps() const { return clean_; }
  void restore(double scale, long long cleanSteps) {
    if (!options_.enabled) return;
    scale_ = scale;
    clean_ = cleanSteps;
  }

private:
  LossScaleOptions options_;
  double scale_ = 1.0;
  long long clean_ = 0, skipped_ = 0;
};

/// Collective over `world`: multiplies every gradient by `factor` and says whether all of them,
/// on every rank, are finite.
template <class P, class M>
bool scaleGradientsAndCheck(const typename M::execution_space& exec,
                            const std::vector<Kokkos::View<P*, M>>& gradients, P factor,
                            MPI_Comm world) {
  long long bad = 0;
  for (const auto& g : gradients) {
    long long b = 0;
    Kokkos::parallel_reduce(
        "hybrid3d::LossScale::unscale",
        Kokkos::RangePolicy<typename M::execution_space>(exec, 0, g.size()),
        KOKKOS_LAMBDA(const std::size_t i, long long& count) {
          const P v = g(i) * factor;
          g(i) = v;
          if (!(v - v == P(0))) ++count;  // v - v is 0 for finite v only
        },
        b);
    bad += b;
  }
  MPI_Allreduce(MPI_IN_PLACE, &bad, 1, MPI_LONG_LONG, MPI_SUM, world);
  return bad == 0;
}

}  // namespace hybrid3d
