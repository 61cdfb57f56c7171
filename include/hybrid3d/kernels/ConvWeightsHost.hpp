#pragma once
/// \file
/// Backward-weights of a 3^3 stride-1 float convolution on host memory as a direct AVX2 + FMA
/// kernel, for layers with few input channels (CosmoFlow's conv1: 4):
///
///   dw[co][ci][a][b][c] += sum over owned output voxels (n, d, h, w) of
///                          dy(n, co, d, h, w) * x(n, ci, d + a + o0, h + b + o1, w + c + o2)
///   db[co]              += sum of dy(n, co, ...)
///
/// Why: with 4 input channels the product is [Cout = 16] x [Cin * 27 = 108] summed over every
/// voxel. im2col + gemm (the kokkos engine) writes and reads 27 copies of x and hands OpenBLAS a
/// shape it packs badly, and oneDNN 2.6's jit:avx2 kernel reaches less still (both far from the
/// FMA peak: docs/performance-notes.md, "Direct convolution kernels"). This kernel reads x and
/// dy where they lie.
///
/// How: vectors run along W, so every load is contiguous: for 8 voxels of a row, 4 output
/// channels x the 3 W-taps c are 12 accumulators in registers, fed by 4 loads of dy and 3 of x
/// (x shifted by c) per 12 FMAs. Rows (n, d, h) go in tiles small enough that their dy and x
/// rows stay in cache while every (ci, a, b) passes over them; between tiles the accumulators
/// rest as per-lane partial sums in a small array on the stack, summed across lanes once at the
/// end. The order of every sum is fixed: the same bits on every run of one machine and grid (the
/// vector lanes split the sum by w mod 8, so another box cut sums in another order: float
/// rounding, as any engine).
///
/// AVX2 + FMA only (HostIsa.hpp): the caller checks hostHasAvx2Fma() and keeps its engine's own
/// pass otherwise (and on device memory, and in double).

#include <algorithm>
#include <cstring>
#include <type_traits>

#include <Kokkos_Core.hpp>

#include <hybrid3d/core/Error.hpp>
#include <hybrid3d/core/KernelLabel.hpp>
#include <hybrid3d/core/RangePolicy.hpp>
#include <hybrid3d/core/Types.hpp>
#include <hybrid3d/kernels/HostIsa.hpp>
#include <hybrid3d/kernels/DirectConvOperands.hpp>

namespace hybrid3d::Impl {

/// The most input channels the kernel takes (its partial sums live on the stack: 110 KiB at
/// 32). Up to 32 it beat the best other engine on the rank boxes of the 2-rank CosmoFlow step;
/// wider layers keep their engine's pass: at 64 and 128 input channels a first try was slower
/// (the tile's x rows grow with the channels and leave L2). Figures: docs/performance-notes.md,
/// "Direct convolution kernels".
constexpr Index convWeightsHostMaxCin = 32;

template <class T, class M>
bool convWeightsHostCanRun(Index kernel, Index stride, Index cin) {  // DirectConvOperands.hpp
  return directConvHostCanRun<T, M>(kernel, stride, cin, convWeightsHostMaxCin);
}

/// One rank's problem: the operands (y is dy on the owned output box), the gradients added into.
struct ConvWeightsHostProblem : DirectConvOperands {
  float* dw = nullptr;  // [cout][cin][27], added into
  float* db = nullptr;  // [cout], added into; null without a bias
};

/// Rows of a tile: about this many bytes of dy and x rows per tile (a core's L2 holds them with
/// room for the next tile's prefetch).
constexpr Index convWeightsHostTileBytes = Index(96) << 10;

#if HYBRID3D_HOST_AVX2
/// How a row of p.ow outputs is swept: `full` voxels in whole vectors, then `rest` (< 8) in a
/// masked one.
struct ConvWeightsHostRow {
  static constexpr int lanes = 8;
  Index full, rest;
  __m256i mask;
};

/// convWeightsHostBlock's partial sums: [j][ci][a][b][c][lane] for output channel co0 + j.
template <int B>
using ConvWeightsHostPartial = float[B][convWeightsHostMaxCin][27][ConvWeightsHostRow::lanes];

/// bias[j] += dy of output channel co0 + j over rows [h0, h1) of the (n, d) plane at dyPlane.
template <int B>
HYBRID3D_TARGET_AVX2_FMA HYBRID3D_HOST_FORCEINLINE void convWeightsHostBiasRows(
    const ConvWeightsHostProblem& p, const ConvWeightsHostRow& row, const float* dyPlane, Index h0,
    Index h1, __m256 (&bias)[B]) {
  for (Index h = h0; h < h1; ++h)
    for (int j = 0; j < B; ++j) {
      const float* r = dyPlane + j * p.yC + h * p.yH;
      for (Index w = 0; w < row.full; w += ConvWeightsHostRow::lanes)
        bias[j] = _mm256_add_ps(bias[j], _mm256_loadu_ps(r + w));
      if (row.rest) bias[j] = _mm256_add_ps(bias[j], _mm256_maskload_ps(r + row.full, row.mask));
    }
}

/// The partial sums of taps (ci, a, b, c = 0..2) of every block channel += dy * x over rows
/// [h0, h1), x's rows shifted by b and c: 12 accumulators for 8 voxels, fed by B loads of dy and
/// 3 of x.
template <int B>
HYBRID3D_TARGET_AVX2_FMA HYBRID3D_HOST_FORCEINLINE void convWeightsHostTapRows(
    const ConvWeightsHostProblem& p, const ConvWeightsHostRow& row, const float* dyPlane,
    const float* xPlane, int b, Index h0, Index h1, float (*part)[ConvWeightsHostRow::lanes]) {
  const Index full = row.full;
  const __m256i mask = row.mask;
  __m256 acc[B][3];
  for (int j = 0; j < B; ++j)
    for (int c = 0; c < 3; ++c)
      acc[j][c] = _mm256_load_ps(part[j * convWeightsHostMaxCin * 27 + c]);
  for (Index h = h0; h < h1; ++h) {
    const float* xr = xPlane + (h + b + p.o1) * p.xH;
    const float* yr = dyPlane + h * p.yH;
    for (Index w = 0; w < full; w += ConvWeightsHostRow::lanes) {
      const __m256 x0 = _mm256_loadu_ps(xr + w), x1 = _mm256_loadu_ps(xr + w + 1),
                   x2 = _mm256_loadu_ps(xr + w + 2);
      for (int j = 0; j < B; ++j) {
        const __m256 g = _mm256_loadu_ps(yr + j * p.yC + w);
        acc[j][0] = _mm256_fmadd_ps(g, x0, acc[j][0]);
        acc[j][1] = _mm256_fmadd_ps(g, x1, acc[j][1]);
        acc[j][2] = _mm256_fmadd_ps(g, x2, acc[j][2]);
      }
    }
    if (row.rest) {  // masked lanes load zeros (and touch no memory)
      const __m256 x0 = _mm256_maskload_ps(xr + full, mask),
                   x1 = _mm256_maskload_ps(xr + full + 1, mask),
                   x2 = _mm256_maskload_ps(xr + full + 2, mask);
      for (int j = 0; j < B; ++j) {
        const __m256 g = _mm256_maskload_ps(yr + j * p.yC + full, mask);
        acc[j][0] = _mm256_fmadd_ps(g, x0, acc[j][0]);
        acc[j][1] = _mm256_fmadd_ps(g, x1, acc[j][1]);
        acc[j][2] = _mm256_fmadd_ps(g, x2, acc[j][2]);
      }
    }
  }
  for (int j = 0; j < B; ++j)
    for (int c = 0; c < 3; ++c)
      _mm256_store_ps(part[j * convWeightsHostMaxCin * 27 + c], acc[j][c]);
}

/// Lanes summed in a fixed order, then added into the caller's gradients.
template <int B>
HYBRID3D_TARGET_AVX2_FMA HYBRID3D_HOST_FORCEINLINE void convWeightsHostAddLanes(
    const ConvWeightsHostProblem& p, Index co0, const ConvWeightsHostPartial<B>& partial,
    const __m256 (&bias)[B]) {
  for (int j = 0; j < B; ++j) {
    float* dwRow = p.dw + (co0 + j) * p.cin * 27;
    for (Index ci = 0; ci < p.cin; ++ci)
      for (int t = 0; t < 27; ++t) {
        const float* l = partial[j][ci][t];
        dwRow[ci * 27 + t] += ((l[0] + l[1]) + (l[2] + l[3])) + ((l[4] + l[5]) + (l[6] + l[7]));
      }
    if (p.db) {
      alignas(32) float l[ConvWeightsHostRow::lanes];
      _mm256_store_ps(l, bias[j]);
      p.db[co0 + j] += ((l[0] + l[1]) + (l[2] + l[3])) + ((l[4] + l[5]) + (l[6] + l[7]));
    }
  }
}

/// The output channels co0 .. co0 + B - 1 (B <= 4): their dw rows and bias.
template <int B>
HYBRID3D_TARGET_AVX2_FMA void convWeightsHostBlock(const ConvWeightsHostProblem& p, Index co0) {
  alignas(32) ConvWeightsHostPartial<B> partial;
  std::memset(partial, 0, sizeof(partial));
  __m256 bias[B];
  for (int j = 0; j < B; ++j) bias[j] = _mm256_setzero_ps();

  constexpr int lanes = ConvWeightsHostRow::lanes;
  const Index full = p.ow / lanes * lanes;
  const ConvWeightsHostRow row{full, p.ow - full, firstLanesMask(p.ow - full)};
  const Index rowBytes = Index(sizeof(float)) * (B * p.ow + p.cin * 3 * (p.ow + 2));
  const Index tileRows = std::max<Index>(1, std::min(p.oh, convWeightsHostTileBytes / rowBytes));

  for (Index n = 0; n < p.batch; ++n)
    for (Index d = 0; d < p.od; ++d)
      for (Index h0 = 0; h0 < p.oh; h0 += tileRows) {
        const Index h1 = std::min(p.oh, h0 + tileRows);
        const float* dyPlane = p.y + n * p.yN + co0 * p.yC + d * p.yD;
        if (p.db) convWeightsHostBiasRows<B>(p, row, dyPlane, h0, h1, bias);
        for (Index ci = 0; ci < p.cin; ++ci)
          for (int a = 0; a < 3; ++a) {
            const float* xPlane = p.x + n * p.xN + ci * p.xC + (d + a + p.o0) * p.xD + p.o2;
            for (int b = 0; b < 3; ++b)
              convWeightsHostTapRows<B>(p, row, dyPlane, xPlane, b, h0, h1,
                                        partial[0][ci] + (a * 3 + b) * 3);
          }
      }
  convWeightsHostAddLanes<B>(p, co0, partial, bias);
}
#endif

/// dw (and db) += this rank's contribution, blocks of 4 output channels in parallel over the
/// host execution space's threads (each block owns its rows of dw: no two threads add into the
/// same value). Requires hostHasAvx2Fma() and cin <= convWeightsHostMaxCin.
template <class HostExec>
void convWeightsHost(const HostExec& exec, const ConvWeightsHostProblem& p) {
  static_assert(
      Kokkos::SpaceAccessibility<Kokkos::HostSpace, typename HostExec::memory_space>::accessible,
      "convWeightsHost runs on host memory only");
#if HYBRID3D_HOST_AVX2
  if (p.batch == 0 || p.od == 0 || p.oh == 0 || p.ow == 0 || !p.x || !p.y) return;
  // The partial sums are sized for convWeightsHostMaxCin: a wider layer would overrun them.
  if (p.cin > convWeightsHostMaxCin)
    fail("convWeightsHost: ", p.cin, " input channels, the kernel takes at most ",
         convWeightsHostMaxCin);
  const Index blocks = (p.cout + 3) / 4;
  Kokkos::parallel_for(kernelLabel("hybrid3d::Conv3d::backwardWeights::host"),
                       rangePolicy(exec, 0, blocks), [=](const Index i) {
                         const Index co0 = i * 4;
                         switch (std::min<Index>(4, p.cout - co0)) {
                           case 4:
                             convWeightsHostBlock<4>(p, co0);
                             break;
                           case 3:
                             convWeightsHostBlock<3>(p, co0);
                             break;
                           case 2:
                             convWeightsHostBlock<2>(p, co0);
                             break;
                           default:
                             convWeightsHostBlock<1>(p, co0);
                             break;
                         }
                       });
#else
  (void)exec;
  (void)p;
#endif
}

}  // namespace hybrid3d::Impl
