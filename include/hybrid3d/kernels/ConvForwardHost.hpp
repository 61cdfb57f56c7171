#pragma once
/// \file
/// Forward of a 3^3 stride-1 float convolution on host memory as a direct AVX2 + FMA kernel, for
/// layers with very few input channels (CosmoFlow's conv1: 4):
///
///   y(n, co, d, h, w) = bias[co] + sum over ci, a, b, c of
///                       w[co][ci][a][b][c] * x(n, ci, d + a + o0, h + b + o1, w + c + o2)
///
/// Why: with 4 input channels each output voxel is a 108-term sum, too short for a blocked
/// gemm or oneDNN's channel-blocked kernels to keep the FMA units busy: im2col + gemm and
/// oneDNN 2.6 (jit:avx2) ran conv1 well below the FMA peak (docs/performance-notes.md, "Direct
/// convolution kernels").
///
/// How: one work item per output row (n, d, h). Vectors run along W: 4 output channels x 2
/// vectors (16 voxels) are 8 accumulators in registers; each of the Cin x 27 taps loads 2
/// vectors of x (shifted by the tap's c) and broadcasts 4 weights for 8 FMAs. The row's
/// Cin x 9 input rows stay in L1 while the channel blocks pass over them. The bias starts the
/// sums; each output is written once. Sums run in a fixed order (ci, a, b, c): the same bits on
/// every run and every grid.
///
/// AVX2 + FMA only (HostIsa.hpp): the caller checks hostHasAvx2Fma() and keeps its engine's own
/// pass otherwise (and on device memory, and in double).

#include <algorithm>
#include <type_traits>

#include <Kokkos_Core.hpp>

#include <hybrid3d/core/KernelLabel.hpp>
#include <hybrid3d/core/RangePolicy.hpp>
#include <hybrid3d/core/Types.hpp>
#include <hybrid3d/kernels/HostIsa.hpp>
#include <hybrid3d/kernels/DirectConvOperands.hpp>

namespace hybrid3d::Impl {

/// The most input channels the kernel takes: on the rank boxes of the 2-rank CosmoFlow step it
/// beat oneDNN on conv1 (4 -> 16), not on conv2 (16 -> 32), where oneDNN's channel-blocked
/// kernel has enough channels (docs/performance-notes.md, "Direct convolution kernels").
constexpr Index convForwardHostMaxCin = 4;

template <class T, class M>
bool convForwardHostCanRun(Index kernel, Index stride, Index cin) {  // DirectConvOperands.hpp
  return directConvHostCanRun<T, M>(kernel, stride, cin, convForwardHostMaxCin);
}

/// One rank's (or one overlap part's) problem: the operands, y the output box.
struct ConvForwardHostProblem : DirectConvOperands {
  const float* w = nullptr;     // [cout][cin][27], PyTorch's order
  const float* bias = nullptr;  // [cout] or null
};

#if HYBRID3D_HOST_AVX2
/// Output channels co0 .. co0 + B - 1 of one row, voxels w0 .. w0 + 8V - 1 (the last vector
/// masked to `mask` when Masked).
template <int B, int V, bool Masked>
HYBRID3D_TARGET_AVX2_FMA inline void convForwardHostBlock(const ConvForwardHostProblem& p,
                                                          const float* xRow, float* yRow, Index co0,
                                                          Index w0, __m256i mask) {
  __m256 acc[B][V];
  for (int j = 0; j < B; ++j)
    for (int v = 0; v < V; ++v)
      acc[j][v] = p.bias ? _mm256_set1_ps(p.bias[co0 + j]) : _mm256_setzero_ps();
  const Index cin = p.cin, taps = cin * 27, xC = p.xC, xD = p.xD, xH = p.xH;
  const float* wBlock = p.w + co0 * taps;
  const float* xBlock = xRow + w0;
  const float* xPlane = xBlock;  // x row (ci, a, b) = xBlock + ci * xC + a * xD + b * xH
  const float* wt = wBlock;      // weights of tap (ci, a, b, 0) of channel co0
  for (Index ci = 0; ci < cin; ++ci, xPlane += xC)
    for (int a = 0; a < 3; ++a) {
      const float* xr = xPlane + a * xD;
      for (int b = 0; b < 3; ++b, xr += xH, wt += 3)
        for (int c = 0; c < 3; ++c) {
          __m256 xv[V];
          for (int v = 0; v < V; ++v)
            xv[v] = Masked && v == V - 1 ? _mm256_maskload_ps(xr + c + 8 * v, mask)
                                         : _mm256_loadu_ps(xr + c + 8 * v);
          for (int j = 0; j < B; ++j) {
            const __m256 wv = _mm256_broadcast_ss(wt + j * taps + c);
            for (int v = 0; v < V; ++v) acc[j][v] = _mm256_fmadd_ps(wv, xv[v], acc[j][v]);
          }
        }
    }
  for (int j = 0; j < B; ++j)
    for (int v = 0; v < V; ++v) {
      float* out = yRow + (co0 + j) * p.yC + w0 + 8 * v;
      if (Masked && v == V - 1)
        _mm256_maskstore_ps(out, mask, acc[j][v]);
      else
        _mm256_storeu_ps(out, acc[j][v]);
    }
}

/// One output row, output channels co0 .. co0 + B - 1: blocks of 16 voxels, then of 8, then the
/// masked tail. (4 channels x 2 vectors: 8 accumulators, 2 loads of x and 4 broadcasts per 8
/// FMAs; 4 x 3 vectors needs all 16 registers, and GCC then spilled, which ran slower:
/// docs/performance-notes.md, "Direct convolution kernels".)
template <int B>
HYBRID3D_TARGET_AVX2_FMA void convForwardHostRow(const ConvForwardHostProblem& p, const float* xRow,
                                                 float* yRow, Index co0) {
  const __m256i all = _mm256_set1_epi32(-1);
  Index w0 = 0;
  for (; w0 + 16 <= p.ow; w0 += 16) convForwardHostBlock<B, 2, false>(p, xRow, yRow, co0, w0, all);
  for (; w0 + 8 <= p.ow; w0 += 8) convForwardHostBlock<B, 1, false>(p, xRow, yRow, co0, w0, all);
  if (w0 < p.ow)
    convForwardHostBlock<B, 1, true>(p, xRow, yRow, co0, w0, firstLanesMask(p.ow - w0));
}
#endif

/// y's box := the convolution, one work item per output row over the host execution space's
/// threads. Requires convForwardHostCanRun.
template <class HostExec>
void convForwardHost(const HostExec& exec, const ConvForwardHostProblem& p) {
  static_assert(
      Kokkos::SpaceAccessibility<Kokkos::HostSpace, typename HostExec::memory_space>::accessible,
      "convForwardHost runs on host memory only");
#if HYBRID3D_HOST_AVX2
  if (p.batch == 0 || p.od == 0 || p.oh == 0 || p.ow == 0 || !p.x || !p.y) return;
  const Index rowsPerSample = p.od * p.oh;
  Kokkos::parallel_for(
      kernelLabel("hybrid3d::Conv3d::forward::host"), rangePolicy(exec, 0, p.batch * rowsPerSample),
      [=](const Index row) {
        const Index n = row / rowsPerSample, d = row % rowsPerSample / p.oh, h = row % p.oh;
        const float* xRow = p.x + n * p.xN + (d + p.o0) * p.xD + (h + p.o1) * p.xH + p.o2;
        float* yRow = p.y + n * p.yN + d * p.yD + h * p.yH;
        Index co0 = 0;
        for (; co0 + 4 <= p.cout; co0 += 4) convForwardHostRow<4>(p, xRow, yRow, co0);
        switch (p.cout - co0) {
          case 3:
            convForwardHostRow<3>(p, xRow, yRow, co0);
            break;
          case 2:
            convForwardHostRow<2>(p, xRow, yRow, co0);
            break;
          case 1:
            convForwardHostRow<1>(p, xRow, yRow, co0);
            break;
          default:
            break;
        }
      });
#else
  (void)exec;
  (void)p;
#endif
}

}  // namespace hybrid3d::Impl
