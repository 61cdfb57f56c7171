#pragma once
/// \file
/// On-the-fly preprocessing of one sample's subvolume, as SampleReader delivered it (stored type
/// and channel order, host memory), into its slot of the input tensor: int16 -> float, optional
/// log1p, per-channel offset and scale, channels-last -> NCDHW, and zero padding of the ghost cells
/// outside the domain. One Kokkos kernel over the local box, so the device does the conversion and
/// the file bytes cross the host-device link at their stored size.

#include <cstdint>
#include <string>
#include <vector>

#include <Kokkos_Core.hpp>

#include <hybrid3d/core/KernelLabel.hpp>
#include <hybrid3d/core/Error.hpp>
#include <hybrid3d/core/Math.hpp>
#include <hybrid3d/core/Scalar16.hpp>
#include <hybrid3d/grid/DistTensor.hpp>
#include <hybrid3d/data/HostBatch.hpp>
#include <hybrid3d/data/SampleReader.hpp>
#include <hybrid3d/data/Subvolume.hpp>

namespace hybrid3d::data {

struct PreprocessOptions {
  bool log1p = false;                // y = log(1 + x), as MLPerf's CosmoFlow does to counts
  std::vector<double> channelScale;  // empty: 1 for every channel; else one factor per channel
  /// Subtracted before scaling: y = (f(x) - offset_c) * scale_c, so inputs can be centred (a
  /// large constant level, like log1p of counts, otherwise dominates the first layers and the
  /// zero padding at the domain boundary).
  std::vector<double> channelOffset;  // empty: 0 for every channel
};

namespace Impl {
/// The kernel of Preprocess::apply (a free function: CUDA forbids device lambdas in private
/// members).
template <class T, class M>
void convertSubvolume(const typename M::execution_space& exec, const SampleFormat& format,
                      const unsigned char* raw, bool log1p,
                      const Kokkos::View<ComputeOf<T>* [2], M>& affine, const Subvolume& sub,
                      const DistTensor<T, M>& x, int n) {
  using execution_space = typename M::execution_space;
  const Box3& local = sub.local;
  if (local.empty()) return;
  const Box3& read = sub.read;
  const Index r0 = read.lo[0] - local.lo[0], r1 = read.lo[1] - local.lo[1],
              r2 = read.lo[2] - local.lo[2];
  const Index e0 = read.extent(0), e1 = read.extent(1), e2 = read.extent(2);
  const Index C = x.channels();
  const bool int16 = format.type == StoredType::Int16;
  const bool last = format.channelsLast;
  const auto out = Kokkos::subview(x.view(), n, Kokkos::ALL, Kokkos::ALL, Kokkos::ALL, Kokkos::ALL);
  // Parallel over rows (c, d, h); each row runs along w, the contiguous direction of both the
  // output and (for CDHW files) the input, with the in-domain part split off so the inner loop
  // has no per-voxel bounds test.
  const Index W = local.extent(2);
  using Policy = Kokkos::MDRangePolicy<execution_space, Kokkos::Rank<3>, Kokkos::IndexType<Index>>;
  Kokkos::parallel_for(
      hybrid3d::Impl::kernelLabel("hybrid3d::Preprocess::apply"),
      Policy(exec, {0, 0, 0}, {C, local.extent(0), local.extent(1)}),
      KOKKOS_LAMBDA(Index c, Index d, Index h) {
        const Index rd = d - r0, rh = h - r1;
        if (rd < 0 || rd >= e0 || rh < 0 || rh >= e1) {
          for (Index w = 0; w < W; ++w) out(c, d, h, w) = T(0);  // zero padding
          return;
        }
        for (Index w = 0; w < r2; ++w) out(c, d, h, w) = T(0);
        for (Index w = r2 + e2; w < W; ++w) out(c, d, h, w) = T(0);
        // Element (c, rd, rh, rw) of the read box: at first + rw * stride.
        const Index first = last ? (rd * e1 + rh) * e2 * C + c : ((c * e0 + rd) * e1 + rh) * e2;
        const Index stride = last ? C : 1;
        // In float for the 16-bit types, rounded once into the input.
        using C = ComputeOf<T>;
        const C o = affine(c, 0), s = affine(c, 1);
        for (Index rw = 0; rw < e2; ++rw) {
          const Index i = first + rw * stride;
          C v = int16 ? static_cast<C>(reinterpret_cast<const std::int16_t*>(raw)[i])
                      : static_cast<C>(reinterpret_cast<const float*>(raw)[i]);
          if (log1p) v = math::log1p(v);
          out(c, d, h, r2 + rw) = (v - o) * s;
        }
      });
}
}  // namespace Impl

template <class T, class MemorySpace = DefaultMemorySpace>
class Preprocess {
  HYBRID3D_ASSERT_SPACE(MemorySpace);

public:
  using memory_space = MemorySpace;
  using execution_space = typename MemorySpace::execution_space;

  /// For tensors laid out as `subvolume` with `channels` channels. Allocates its device buffers
  /// here, never in apply().
  Preprocess(const PreprocessOptions& options, int channels, const Subvolume& subvolume)
      : options_(options), channels_(channels), sub_(subvolume) {
    if (!options.channelScale.empty() && int(options.channelScale.size()) != channels)
      fail("preprocess: ", options.channelScale.size(), " channel scales for ", channels,
           " channels");
    if (!options.channelOffset.empty() && int(options.channelOffset.size()) != channels)
      fail("preprocess: ", options.channelOffset.size(), " channel offsets for ", channels,
           " channels");
    affine_ =
        Kokkos::View<ComputeOf<T>* [2], MemorySpace>("hybrid3d::Preprocess::affine", channels);
    auto h = Kokkos::create_mirror_view(affine_);
    for (int c = 0; c < channels; ++c) {
      h(c, 0) =
          static_cast<ComputeOf<T>>(options.channelOffset.empty() ? 0.0 : options.channelOffset[c]);
      h(c, 1) =
          static_cast<ComputeOf<T>>(options.channelScale.empty() ? 1.0 : options.channelScale[c]);
    }
    Kokkos::deep_copy(affine_, h);
    if constexpr (!hostAccessible)
      staging_ = Kokkos::View<unsigned char*, MemorySpace>("hybrid3d::Preprocess::staging",
                                                           stagingBytes(channels, subvolume));
  }

  /// The device buffer one slot's stored input is copied into (none where the host's memory is
  /// the model's): what the constructor allocates, and the memory plan counts.
  static std::size_t stagingBytes(int channels, const Subvolume& subvolume) {
    return hostAccessible ? 0 : inputSlotBytes(channels, subvolume);
  }

  const PreprocessOptions& options() const { return options_; }

  /// Writes slot n of x from `hostInput` (the read box of every channel, in `format`). On return
  /// hostInput may be reused (the host-to-device copy has completed).
  void apply(const execution_space& exec, const SampleFormat& format, const void* hostInput,
             const DistTensor<T, MemorySpace>& x, int n) const {
    issue(exec, format, hostInput, x, n);
    if constexpr (!hostAccessible) exec.fence();  // the caller may refill hostInput now
  }

  /// Every slot of `batch` into the same slot of x; on return `batch` may be refilled. The
  /// slots' copies and kernels queue on `exec` with one fence at the end: the device staging
  /// buffer is reused slot after slot in the order of the queue. The batch's input is in pinned
  /// memory (io/HostBatch.hpp), so each copy is a single DMA transfer.
  void apply(const execution_space& exec, const HostBatch& batch,
             const DistTensor<T, MemorySpace>& x) const {
    if (x.batch() != batch.slots())
      fail("preprocess: tensor '", x.view().label(), "' has batch ", x.batch(), ", the loader ",
           batch.slots(), " samples per group");
    for (int s = 0; s < batch.slots(); ++s)
      issue(exec, batch.formats[std::size_t(s)], batch.inputOf(s), x, s);
    if constexpr (!hostAccessible) exec.fence();
  }

private:
  static constexpr bool hostAccessible =
      Kokkos::SpaceAccessibility<Kokkos::HostSpace, typename MemorySpace::memory_space>::accessible;

  // The copy of one slot's bytes to the device (when the device is not host-accessible) and
  // its conversion kernel, issued to exec; no fence.
  void issue(const execution_space& exec, const SampleFormat& format, const void* hostInput,
             const DistTensor<T, MemorySpace>& x, int n) const {
    // The subvolume may be a window of a larger file (Subvolume::window), placed elsewhere in
    // the file than x's box in x's domain: the local boxes must have the same extents.
    const Subvolume xs = Subvolume::of(x);
    if (x.channels() != channels_ || xs.local.extents() != sub_.local.extents() || n < 0 ||
        n >= x.batch())
      fail("preprocess: tensor '", x.view().label(), "' (channels ", x.channels(), ", box ",
           xs.local, ", slot ", n, ") is not the one this preprocess was built for");
    const std::size_t bytes =
        std::size_t(channels_) * std::size_t(sub_.read.size()) * format.elementSize();
    const unsigned char* raw = static_cast<const unsigned char*>(hostInput);
    if constexpr (!hostAccessible) {
      Kokkos::View<const unsigned char*, Kokkos::HostSpace, Kokkos::MemoryUnmanaged> src(raw,
                                                                                         bytes);
      auto dst = Kokkos::subview(staging_, Kokkos::pair<std::size_t, std::size_t>(0, bytes));
      Kokkos::deep_copy(exec, dst, src);  // ordered after the previous slot's kernel
      raw = staging_.data();
    }
    Impl::convertSubvolume(exec, format, raw, options_.log1p, affine_, sub_, x, n);
  }

  PreprocessOptions options_;
  int channels_;
  Subvolume sub_;
  Kokkos::View<ComputeOf<T>* [2], MemorySpace> affine_;  // per channel: offset, scale
  Kokkos::View<unsigned char*, MemorySpace> staging_;    // host-inaccessible spaces only
};

extern template class Preprocess<float, DefaultMemorySpace>;
extern template class Preprocess<double, DefaultMemorySpace>;
extern template class Preprocess<bfloat16, DefaultMemorySpace>;
extern template class Preprocess<float16, DefaultMemorySpace>;

}  // namespace hybrid3d::data
