#pragma once
/// \file
/// Dropout with a mask that is the same on every process grid.
///
/// Element (c, d, h, w) of sample s is kept iff u < keep, where u in [0, 1) comes from a
/// counter-based hash of (seed, step, layer id, GLOBAL sample index, GLOBAL row r = (c*D + d)*H
/// + h, GLOBAL column w). An [N, F] view is a volume of F rows of width 1: feature f is row f,
/// column 0 (the same element as channel f of a 1x1x1 volume). No random state is stored and no
/// mask is kept: backward recomputes it from the hash, and a rank computes exactly the bits of its
/// own cells, whatever the grid.
///
/// The hash is split so that the per-element part vectorises: a 64-bit key per (sample, row)
/// (splitmix64, once per row of cells), and per element a 16-bit xor-shift-multiply hash of the
/// column (a bijection on 16 bits, constants from C. Wellons' hash-prospector) between the two
/// halves of the key: 16-bit multiplies, which SSE2 does eight to a register (it has no 32-bit
/// lane multiply, and no 64-bit one at all). So the global width W is at most 2^16 (the
/// constructor refuses more) and keep is resolved to 2^-16. (One chained 64-bit splitmix64 per
/// element, or a 32-bit lowbias32 per element, ran far slower than this hash, and the host rows'
/// own 16-bit column counter, impl/Dropout_impl.hpp, sped it up again: docs/performance-notes.md,
/// "Dropout".)
///
/// Training scales kept elements by 1/keep (inverted dropout, as PyTorch); inference and keep = 1
/// are the identity. Before each training step call setStep(step, firstGlobalSample), where
/// firstGlobalSample is the global index of the group's sample 0 (group * group batch). On a
/// layer grid (grid/LayerGrid.hpp) sub-grid k's local sample n is the group's sample k + n S.

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include <Kokkos_Core.hpp>

#include <hybrid3d/core/Devices.hpp>
#include <hybrid3d/core/Error.hpp>
#include <hybrid3d/grid/DistTensor.hpp>
#include <hybrid3d/grid/LayerGrid.hpp>
#include <hybrid3d/grid/TensorShape.hpp>
#include <hybrid3d/layers/LayerConvention.hpp>
#include <hybrid3d/layers/Parameter.hpp>
#include <hybrid3d/layers/SpatialGeometry.hpp>
#include <hybrid3d/kernels/Elementwise.hpp>
#include <hybrid3d/kernels/HostIsa.hpp>

namespace hybrid3d {

namespace Impl {

KOKKOS_INLINE_FUNCTION std::uint64_t splitmix64(std::uint64_t z) {
  z += 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

/// The two 32-bit halves of a row's 64-bit key.
struct DropoutRowKey {
  std::uint32_t low, high;
};

/// The dropout decision for one element: a pure function of its keys, so any rank can compute
/// any element's bit. `prefix` already mixes (seed, layer, step). The element is kept iff
/// u = h * 2^-16 < keep (16 random bits -> [0, 1)), tested in integers as
/// h < threshold = ceil(keep * 2^16): the same decision, without a conversion per element.
struct DropoutMask {
  static constexpr std::int64_t kMaxWidth = std::int64_t(1) << 16;  // columns of a 16-bit hash

  std::uint64_t prefix = 0;
  std::int32_t threshold = std::int32_t(1) << 16;  // keep = 1

  static std::int32_t thresholdOf(double keep) {
    return static_cast<std::int32_t>(std::ceil(std::ldexp(keep, 16)));
  }
  /// The key of a global row of `sample`; once per row of cells.
  KOKKOS_INLINE_FUNCTION DropoutRowKey rowKey(std::int64_t sample, std::int64_t row) const {
    const std::uint64_t k =
        splitmix64(splitmix64(prefix ^ std::uint64_t(sample)) ^ std::uint64_t(row));
    return {std::uint32_t(k), std::uint32_t(k >> 32)};
  }
  /// The decision for the element in global column w (< kMaxWidth) of the row with key `key`.
  KOKKOS_INLINE_FUNCTION bool kept(const DropoutRowKey& key, std::uint32_t w) const {
    std::uint16_t h = std::uint16_t(w) ^ std::uint16_t(key.low);
    h ^= h >> 8;
    h = std::uint16_t(h * 0x88b5u);
    h ^= h >> 7;
    h = std::uint16_t(h * 0xdb2du);
    h ^= h >> 9;
    h ^= std::uint16_t(key.high);
    return std::int32_t(h) < threshold;
  }
  /// keep[i] := kept(key, column + i) ? -1 : 0 for i < n, the columns wrapping at 2^16 as kept
  /// reads them: the same operations in 16-bit lanes (h < threshold as h <= threshold - 1), 16
  /// cells to an AVX2 vector where kept inside a float row's loop took 32-bit lanes, 8.
  HYBRID3D_HOST_FORCEINLINE void keptRun(const DropoutRowKey& key, std::uint16_t column, Index n,
                                         std::int16_t* keep) const {
    const std::uint16_t low = std::uint16_t(key.low), high = std::uint16_t(key.high);
    const std::int32_t t = threshold < 1 ? 1 : threshold > 65536 ? 65536 : threshold;
    const std::uint16_t last = std::uint16_t(t - 1);
    const std::int16_t any = threshold < 1 ? 0 : -1;  // threshold 0: none kept
    // A 16-bit column counter of its own: derived from the 64-bit i, each vector of columns
    // took a dozen 64-bit adds and shuffles.
    std::uint16_t w = column;
    for (Index i = 0; i < n; ++i, ++w) {
      std::uint16_t h = std::uint16_t(w ^ low);
      h ^= h >> 8;
      h = std::uint16_t(h * 0x88b5u);
      h ^= h >> 7;
      h = std::uint16_t(h * 0xdb2du);
      h ^= h >> 9;
      h ^= high;
      keep[i] = std::int16_t((h <= last ? -1 : 0) & any);
    }
  }
};

#if HYBRID3D_HOST_AVX2
/// DropoutMask::kept for 16 columns at a time in 16-bit lanes of an AVX2 register, keptRun's
/// operations, as the mask of the fused 16-bit rows (Impl::mapRowFused, kernels/HostFusedRows.hpp):
/// lanes(i) holds the decisions of columns column + i to column + i + 15 (wrapping at 2^16, as
/// kept reads them), all ones where kept; kept(i) the one of column + i. In registers, not
/// through keptRun's array: its stores and loads took as long as the rows' arithmetic.
struct DropoutKeptLanes {
  std::uint16_t low, high, last, column;
  std::int16_t any;
  DropoutMask mask;
  DropoutRowKey key;

  DropoutKeptLanes(const DropoutMask& m, const DropoutRowKey& k, std::uint16_t firstColumn)
      : low(std::uint16_t(k.low)),
        high(std::uint16_t(k.high)),
        column(firstColumn),
        mask(m),
        key(k) {
    const std::int32_t t = m.threshold < 1 ? 1 : m.threshold > 65536 ? 65536 : m.threshold;
    last = std::uint16_t(t - 1);
    any = m.threshold < 1 ? 0 : -1;  // threshold 0: none kept
  }
  HYBRID3D_TARGET_AVX2 HYBRID3D_HOST_FORCEINLINE __m256i lanes(Index i) const {
    const __m256i lane = _mm256_setr_epi16(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
    __m256i h = _mm256_add_epi16(_mm256_set1_epi16(std::int16_t(column + i)), lane);
    h = _mm256_xor_si256(h, _mm256_set1_epi16(std::int16_t(low)));
    h = _mm256_xor_si256(h, _mm256_srli_epi16(h, 8));
    h = _mm256_mullo_epi16(h, _mm256_set1_epi16(std::int16_t(0x88b5)));
    h = _mm256_xor_si256(h, _mm256_srli_epi16(h, 7));
    h = _mm256_mullo_epi16(h, _mm256_set1_epi16(std::int16_t(0xdb2d)));
    h = _mm256_xor_si256(h, _mm256_srli_epi16(h, 9));
    h = _mm256_xor_si256(h, _mm256_set1_epi16(std::int16_t(high)));
    const __m256i limit = _mm256_set1_epi16(std::int16_t(last));             // h <= last, unsigned:
    const __m256i keep = _mm256_cmpeq_epi16(_mm256_min_epu16(h, limit), h);  // min(h, last) == h
    return _mm256_and_si256(keep, _mm256_set1_epi16(any));
  }
  HYBRID3D_HOST_FORCEINLINE bool kept(Index i) const {
    return mask.kept(key, std::uint16_t(column + i));
  }
};
#endif

}  // namespace Impl

template <class T, class MemorySpace = DefaultMemorySpace>
class Dropout : public SpatialLayer {
public:
  HYBRID3D_LAYER_TYPES(T, MemorySpace);

  struct Options {
    double keep = 0.5;       // keep probability in (0, 1]; PyTorch's p = 1 - keep
    std::uint64_t seed = 0;  // the run's seed, the same on every rank
  };

  /// The layer id in the hash is a hash of `name`, so layers differ and every grid agrees.
  /// `input` is the per-group shape; for the dense part pass {N, F, {1, 1, 1}}.
  Dropout(const LayerGrid& grid, const std::string& name, const TensorShape& input,
          const Options& options);

  // name(), shapes (the output's is the input's), decompositions and inputGhosts() (none, any
  // accepted): SpatialLayer (layers/SpatialGeometry.hpp).
  const Options& options() const { return options_; }
  std::vector<Parameter<ParamOf<T>, MemorySpace>> parameters() const { return {}; }

  void setTraining(bool training) { training_ = training; }
  bool training() const { return training_; }
  /// Selects the mask of one training step; firstGlobalSample = global index of the group's
  /// sample 0.
  void setStep(std::int64_t step, std::int64_t firstGlobalSample);
  /// True when forward and backward are the identity (inference or keep = 1).
  bool identity() const { return !training_ || options_.keep >= 1.0; }

  /// y := mask * x / keep on the owned cells (y may be x).
  void forward(const execution_space& exec, const tensor_type& x, const tensor_type& y) const;
  /// dx := mask * dy / keep (dx may be dy).
  void backwardData(const execution_space& exec, const tensor_type& dy,
                    const tensor_type& dx) const;
  void backwardWeights(const execution_space&, const tensor_type&, const tensor_type&) const {}
  void backward(const execution_space& exec, const tensor_type&, const tensor_type& dy,
                const tensor_type& dx) const {
    if (Impl::wanted(dx)) backwardData(exec, dy, dx);
  }

  /// The same on replicated [N, F] views.
  void forward(const execution_space& exec, const feature_type& x, const feature_type& y) const;
  void backwardData(const execution_space& exec, const feature_type& dy,
                    const feature_type& dx) const;
  void backward(const execution_space& exec, const feature_type&, const feature_type& dy,
                const feature_type& dx) const {
    if (Impl::wanted(dx)) backwardData(exec, dy, dx);
  }

  /// y := mask * x / keep, or a copy when identity(). Public only because CUDA forbids device
  /// lambdas in private member functions.
  void apply(const char* label, const execution_space& exec, const tensor_type& x,
             const tensor_type& y) const;
  void apply(const char* label, const execution_space& exec, const feature_type& x,
             const feature_type& y) const;

private:
  // The dense part: an [N, F] view of the input's N x (C*D*H*W) (it has no geometry).
  void check(const feature_type& t, const char* what) const;

  Options options_;
  std::uint64_t layerKey_ = 0;
  bool training_ = true;
  Impl::DropoutMask mask_;
  std::int64_t firstSample_ = 0;                      // the global index of local sample 0
  std::int64_t sampleOffset_ = 0, sampleStride_ = 1;  // of local sample n in the group: k + n S
};

#define HYBRID3D_EXTERN(T, D) extern template class Dropout<T, D>;
HYBRID3D_FOR_EACH_SCALAR_AND_DEVICE(HYBRID3D_EXTERN)
HYBRID3D_FOR_EACH_SCALAR16_AND_DEVICE(HYBRID3D_EXTERN)
#undef HYBRID3D_EXTERN

}  // namespace hybrid3d

#include <hybrid3d/layers/impl/Dropout_impl.hpp>
