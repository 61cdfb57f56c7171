#pragma once
/// \file
/// Which code computes a convolution on this rank's local box. The distributed part (ghost
/// widths, halo gather before forward, the adjoint scatterAdd after backward-data, gradient
/// sums) is the layer's own and the same for every engine; an engine only turns a ghosted local
/// input box into the owned output box and back.
///
///   kokkos  im2col + KokkosBlas::gemm: every backend, float and double, and the 16-bit
///           activation types (bfloat16, half) with float workspaces and gemms; the reference.
///   onednn  oneDNN's direct convolution (the library PyTorch's CPU convolutions use): float,
///           bfloat16 and half on host memory, built when oneDNN is found
///           (HYBRID3D_ENABLE_ONEDNN). For the 16-bit types it runs oneDNN's bf16 (f16)
///           primitive with float accumulation where oneDNN has an optimised one for this CPU,
///           otherwise its f32 primitive, whose layout reorders convert at the boundary.
///   cudnn   cuDNN's convolutions (what LBANN and DiHydrogen use on NVIDIA GPUs): float and
///           double on CUDA device memory, built when Kokkos has CUDA and cuDNN is found
///           (HYBRID3D_ENABLE_CUDNN).
///   auto    per pass, the fastest code that can run the layer's scalar, memory space and box,
///           timed on this machine once per shape (engines/ConvTimings.hpp, Conv3d).

#include <algorithm>
#include <cstdint>
#include <limits>
#include <string>
#include <type_traits>

#include <Kokkos_Core.hpp>

#include <hybrid3d/Config.hpp>
#include <hybrid3d/core/Error.hpp>
#include <hybrid3d/core/Precision.hpp>
#include <hybrid3d/core/Scalar16.hpp>
#include <hybrid3d/core/Types.hpp>

namespace hybrid3d {

enum class ConvEngine { Auto, Kokkos, OneDnn, Cudnn };

inline const char* toString(ConvEngine e) {
  switch (e) {
    case ConvEngine::Kokkos:
      return "kokkos";
    case ConvEngine::OneDnn:
      return "onednn";
    case ConvEngine::Cudnn:
      return "cudnn";
    case ConvEngine::Auto:
      break;
  }
  return "auto";
}

/// The deck's spelling ("auto", "kokkos", "onednn", "cudnn"), whatever this build holds (a
/// layer refuses an engine that is not built); anything else is refused naming the choices.
inline ConvEngine parseConvEngine(const std::string& name) {
  for (ConvEngine e : {ConvEngine::Auto, ConvEngine::Kokkos, ConvEngine::OneDnn, ConvEngine::Cudnn})
    if (name == toString(e)) return e;
  fail("convolution engine '", name, "' is not one of auto, kokkos, onednn, cudnn");
}

/// The oneDNN engine computes float activations, and bfloat16 and half ones (float weights and
/// accumulation), on memory the host can address (HostSpace: the Serial and OpenMP backends).
template <class T, class MemorySpace>
constexpr bool oneDnnCanRun() {
  return HYBRID3D_ENABLE_ONEDNN && (std::is_same_v<T, float> ||
                                    isScalar16<T>)&&std::is_same_v<MemorySpace, Kokkos::HostSpace>;
}

/// The cudnn engine computes float and double (cuDNN's FLOAT_CONFIG and DOUBLE_CONFIG, both
/// supported for 3-D convolutions) on CUDA device memory. Kokkos::CudaSpace exists only in
/// CUDA builds, hence the guard. (Not the 16-bit types yet: their layers run the kokkos engine
/// on CUDA memory.)
template <class T, class MemorySpace>
constexpr bool cudnnCanRun() {
#if HYBRID3D_ENABLE_CUDNN
  return (std::is_same_v<T, float> ||
          std::is_same_v<T, double>)&&std::is_same_v<MemorySpace, Kokkos::CudaSpace>;
#else
  return false;
#endif
}

/// Whether a Conv3d overlaps its halo exchanges with computation unless told otherwise
/// (deck key Model/halo overlap, ModelOptions::convOverlap, Conv3d::Options::overlap). Off: on
/// a small CPU node with shared-memory MPI it did not pay: the one-plane shell slabs cost more
/// per voxel than the interior (oneDNN's fixed costs per call; the kokkos engine's W slabs are
/// rows of one voxel), so the convolutions' CPU time per step rose by more than the exposed halo
/// time fell (docs/performance-notes.md, "Halo/compute overlap"). Worth measuring again where
/// messages cross a network or a GPU computes.
constexpr bool convOverlapByDefault = false;

/// The plan's guess for auto where it has no timing (plan/StepCost.cpp; Conv3d itself times its
/// candidates): below this many output voxels per sample on a rank, oneDNN's fixed costs per
/// pass (layout reorders, dispatch) outweighed its faster arithmetic on an AVX2 CPU
/// (docs/performance-notes.md, "oneDNN engine").
constexpr Index oneDnnMinOutputVoxels = 64;

/// The most elements one operand of a convolution may have on the vendor engines. oneDNN 2.6's
/// JIT kernels (the AVX-512 ones among them) and cuDNN's tensor descriptors index an operand
/// with 32-bit integers: a larger box wraps (a CosmoFlow conv1 box of 2048^3 voxels ends in an
/// integer division by zero inside oneDNN's primitive creation on AVX-512 CPUs). The kokkos
/// engine indexes with 64 bits and takes any box.
constexpr Index vendorConvMaxElements = std::numeric_limits<std::int32_t>::max();

/// The elements of a convolution's largest operand on one rank, as the vendor engines lay it
/// out: `batch` samples of the ghosted input box (`inputVoxels`) or of the output box, channels
/// rounded up to oneDNN's blocks of 16 (the layout its kernels index; cuDNN's is smaller).
inline Index largestConvOperand(Index batch, Index cin, Index cout, Index inputVoxels,
                                Index outputVoxels) {
  auto blocked = [](Index channels) { return (channels + 15) / 16 * 16; };
  return batch * std::max(blocked(cin) * inputVoxels, blocked(cout) * outputVoxels);
}

/// The engine a layer of scalar T in MemorySpace, with `outputVoxels` owned output voxels per
/// sample on this rank and `largestOperand` elements in its largest operand
/// (largestConvOperand), uses when `requested` is asked for (for auto, the plan's guess without
/// timings); refuses, naming the layer, an
/// engine that cannot run it. Auto never takes a vendor engine for an operand beyond
/// vendorConvMaxElements (autoBeyondVendorLimit tells a report so); asked by name, that engine
/// is refused naming the limit.
///
/// On CUDA memory auto takes cudnn whatever the box: it has no per-pass layout reorders (it reads
/// the ghosted arrays in place), so nothing argues for a size threshold before one is measured.
template <class T, class MemorySpace>
ConvEngine resolveConvEngine(ConvEngine requested, const std::string& layer, Index outputVoxels,
                             Index largestOperand) {
  constexpr bool onednn = oneDnnCanRun<T, MemorySpace>();
  constexpr bool cudnn = cudnnCanRun<T, MemorySpace>();
  const char* scalar = toString(precisionOf<T>());
  const bool indexable = largestOperand <= vendorConvMaxElements;
  if (requested == ConvEngine::Auto) {
    if (cudnn && indexable) return ConvEngine::Cudnn;
    return onednn && indexable && outputVoxels >= oneDnnMinOutputVoxels ? ConvEngine::OneDnn
                                                                        : ConvEngine::Kokkos;
  }
  if ((requested == ConvEngine::OneDnn && onednn) || (requested == ConvEngine::Cudnn && cudnn))
    if (!indexable)
      fail(layer, ": convolution engine ", toString(requested),
           " indexes an operand with 32-bit integers: this rank's largest has ", largestOperand,
           " elements, above its limit of ", vendorConvMaxElements,
           " (use more ranks per sample, a smaller mini-batch per group, or the kokkos engine)");
  if (requested == ConvEngine::OneDnn && !onednn) {
    if (!HYBRID3D_ENABLE_ONEDNN)
      fail(layer,
           ": convolution engine onednn is not built in (install oneDNN, e.g. Debian's "
           "libdnnl-dev, and configure with HYBRID3D_ENABLE_ONEDNN=ON)");
    fail(layer,
         ": convolution engine onednn computes float, bfloat16 and half on host memory only; "
         "this layer is ",
         scalar, " on ", MemorySpace::memory_space::name());
  }
  if (requested == ConvEngine::Cudnn && !cudnn) {
    if (!HYBRID3D_ENABLE_CUDNN)
      fail(layer,
           ": convolution engine cudnn is not built in (it needs a Kokkos with the CUDA "
           "backend and cuDNN; configure with HYBRID3D_ENABLE_CUDNN=ON)");
    fail(layer,
         ": convolution engine cudnn computes float and double on CUDA device memory "
         "(CudaSpace) only; this layer is ",
         scalar, " on ", MemorySpace::memory_space::name());
  }
  return requested;
}

/// Whether a layer asking `requested` may hold a onednn engine, for the memory a plan counts:
/// auto builds one to time it wherever oneDNN can run the layer (its share of the shared host
/// workspace stays reserved, whichever engine wins).
template <class T, class MemorySpace>
bool convMayHoldOneDnn(ConvEngine requested, Index largestOperand) {
  if (requested != ConvEngine::Auto) return requested == ConvEngine::OneDnn;
  return oneDnnCanRun<T, MemorySpace>() && largestOperand <= vendorConvMaxElements;
}

/// Whether auto took the kokkos engine only because a vendor engine that would otherwise run
/// cannot index this rank's largest operand (for the engine report).
template <class T, class MemorySpace>
bool autoBeyondVendorLimit(ConvEngine requested, Index outputVoxels, Index largestOperand) {
  if (requested != ConvEngine::Auto || largestOperand <= vendorConvMaxElements) return false;
  return resolveConvEngine<T, MemorySpace>(requested, "", outputVoxels, 0) != ConvEngine::Kokkos;
}

}  // namespace hybrid3d
