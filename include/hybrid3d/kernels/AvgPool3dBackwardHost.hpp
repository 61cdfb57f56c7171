#pragma once
/// \file
/// AvgPool3d's backward-data on host memory for a compile-time window (K, S > 0): one pass that
/// computes every cell of the ghosted dx straight from dy, with the same bits as the two device
/// passes (avgPoolScaleGradient, then avgPoolSumWindows).
///
/// Why a host path: the device form first writes z = dy / divisor to a buffer and then walks
/// dx's rows through Kokkos' team and vector ranges, which on a host backend are plain loops
/// around each row. A row of dx at 32x64^3 is 65 cells, and its set-up (the decode, the
/// OutputRange look-ups, the choice among the nd x nh sums, the edge cells, the vectoriser's
/// alias checks between dx, the row buffer and z) cost about as much as its cells, and the kernel
/// ran well below the copy bandwidth (docs/performance-notes.md, "Pooling"). Here a plane of dx
/// (fixed n, c and D index) is one work item: its D outputs are found once, each row's H outputs
/// once, the row buffer and the rows of dx and dy are restrict pointers, and the scaling is
/// folded into the row buffer's sums (no z buffer written and read back).
///
/// The bits: each term is z = dy * (T(wd * wh) * ww), as avgPoolScaleGradient rounds it; a row's
/// buffer entry q is 0 + the terms of its nd x nh outputs in the order (od, oh), as
/// avgPoolSumWindows' byOutput; interior cells add their outputs' entries along W from 0 in
/// increasing ow; edge cells take the entry of their one output, or the generic (od, oh, ow)
/// sum of the terms when they have two or more, or 0 with none. The same operations in the same
/// order, so the same bits. The 16-bit types compute in float (the sums and the row buffer) and
/// round each dx value once, as the two passes do.

#include <Kokkos_Core.hpp>

#include <hybrid3d/core/KernelLabel.hpp>
#include <hybrid3d/kernels/Elementwise.hpp>
#include <hybrid3d/kernels/HostIsa.hpp>
#include <hybrid3d/kernels/PoolWindow.hpp>

namespace hybrid3d::Impl {

/// What the host backward reads: dy on the owned outputs (ody: its ghost offset), the per-
/// dimension reciprocal divisors of the owned outputs, and the inverse window map of dx's local
/// indices (Pool3dPlan::outputsOf).
template <class DyView, class WView, class RangeView>
struct AvgPoolBackwardInputs {
  using value_type = typename DyView::non_const_value_type;   // dy's and dx's
  using compute_type = typename WView::non_const_value_type;  // ComputeOf: the sums'
  DyView dy;
  GhostOffset ody;
  WView wd, wh, ww;
  RangeView rd, rh, rw;
  Index outLo[3];
  Index outW;  // owned outputs along W
};

/// One row's buffer: entry q = 0 + sum over the row's ND x NH outputs (od0 + a, oh0 + e) in the
/// order (a, e) of dy * (wd * wh * ww) at owned output q along W.
template <int ND, int NH, class In>
HYBRID3D_HOST_FORCEINLINE void avgPoolRowBuffer(const In& in, Index n, Index c, Index zd, Index zh,
                                                typename In::compute_type* __restrict byOutput) {
  using T = typename In::compute_type;
  const typename In::value_type* __restrict dy[ND][NH];
  T a[ND][NH];
  for (int e0 = 0; e0 < ND; ++e0)
    for (int e1 = 0; e1 < NH; ++e1) {
      dy[e0][e1] = &in.dy(n, c, in.ody.d + zd + e0, in.ody.h + zh + e1, in.ody.w);
      a[e0][e1] = T(in.wd(zd + e0) * in.wh(zh + e1));
    }
  const T* __restrict ww = &in.ww(0);
  for (Index q = 0; q < in.outW; ++q) {
    T s = 0;
    for (int e0 = 0; e0 < ND; ++e0)
      for (int e1 = 0; e1 < NH; ++e1) s += T(dy[e0][e1][q]) * (a[e0][e1] * ww[q]);
    byOutput[q] = s;
  }
}

/// The generic sum at dx's local cell (i, j, k): the terms of every owned output whose window
/// holds it, in the order (od, oh, ow) (AvgPoolInputSum on z).
template <class In>
inline typename In::compute_type avgPoolCellSum(const In& in, Index n, Index c, Index i, Index j,
                                                Index k) {
  using T = typename In::compute_type;
  T sum = 0;
  for (Index od = in.rd(i, 0); od < in.rd(i, 1); ++od)
    for (Index oh = in.rh(j, 0); oh < in.rh(j, 1); ++oh)
      for (Index ow = in.rw(k, 0); ow < in.rw(k, 1); ++ow) {
        const Index zd = od - in.outLo[0], zh = oh - in.outLo[1], zw = ow - in.outLo[2];
        const T a = T(in.wd(zd) * in.wh(zh));
        sum += T(in.dy(n, c, in.ody.d + zd, in.ody.h + zh, in.ody.w + zw)) * (a * in.ww(zw));
      }
  return sum;
}

/// The rows of dx's plane (n, c, i) with that plane's nd outputs along D from zd (ND == nd,
/// 1 <= ND <= ceil(K / S)): each row's buffer, then its interior (PhaseRun) and edge cells.
template <int K, int S, int ND, class DxView, class In>
HYBRID3D_HOST_FORCEINLINE void avgPoolBackwardPlane(
    const DxView& dxv, const In& in, const PhaseRun& run, Index n, Index c, Index i, Index zd,
    Index rowsH, Index width, typename In::compute_type* __restrict byOutput) {
  using T = typename DxView::non_const_value_type;
  using C = typename In::compute_type;
  constexpr int NO = (K + S - 1) / S;
  const Index base = run.output - in.outLo[2];  // buffer index of group 0's output
  for (Index j = 0; j < rowsH; ++j) {
    T* __restrict out = &dxv(n, c, i, j, 0);
    const Index oh0 = in.rh(j, 0), nh = in.rh(j, 1) - oh0;
    if (nh == 0) {  // no window holds the row
      for (Index k = 0; k < width; ++k) out[k] = T(0);
      continue;
    }
    if (run.groups == 0) {
      for (Index k = 0; k < width; ++k) out[k] = T(avgPoolCellSum(in, n, c, i, j, k));
      continue;
    }
    const Index zh = oh0 - in.outLo[1];
    unrolledOnHost<NO>([&](auto e) {
      if (nh == decltype(e)::value + 1)
        avgPoolRowBuffer<ND, decltype(e)::value + 1>(in, n, c, zd, zh, byOutput);
    });
    const auto edge = [&](const Index k) {
      const Index ow0 = in.rw(k, 0), nw = in.rw(k, 1) - ow0;
      out[k] = T(nw == 0   ? C(0)
                 : nw == 1 ? byOutput[ow0 - in.outLo[2]]
                           : avgPoolCellSum(in, n, c, i, j, k));
    };
    for (Index k = 0; k < run.first; ++k) edge(k);
    for (Index k = run.first + S * run.groups; k < width; ++k) edge(k);
    T* __restrict interior = out + run.first;
    const C* __restrict entries = byOutput + base;
    for (Index m = 0; m < run.groups; ++m)
      unrolledOnHost<S>([&](auto phase) {
        // The outputs along W of input `phase` of group m: m + first + jw, jw < 1 - first.
        constexpr int first = int(floorDiv(decltype(phase)::value - K, S)) + 1;
        C s = 0;
        unrolledOnHost<1 - first>([&](auto jw) { s += entries[m + first + decltype(jw)::value]; });
        interior[S * m + decltype(phase)::value] = T(s);
      });
  }
}

/// The plane function built for the baseline and for AVX2 (HostIsa.hpp; the plane and row-buffer
/// functions are force-inlined, so each copy is compiled for its target). Multiplies and adds
/// only, in the same order: the same bits on both (GCC neither contracts nor reorders them).
template <int K, int S, int ND, class DxView, class In>
void avgPoolBackwardPlaneBaseline(const DxView& dxv, const In& in, const PhaseRun& run, Index n,
                                  Index c, Index i, Index zd, Index rowsH, Index width,
                                  typename In::compute_type* byOutput) {
  avgPoolBackwardPlane<K, S, ND>(dxv, in, run, n, c, i, zd, rowsH, width, byOutput);
}

#if HYBRID3D_HOST_AVX2
template <int K, int S, int ND, class DxView, class In>
HYBRID3D_TARGET_AVX2 void avgPoolBackwardPlaneAvx2(const DxView& dxv, const In& in,
                                                   const PhaseRun& run, Index n, Index c, Index i,
                                                   Index zd, Index rowsH, Index width,
                                                   typename In::compute_type* byOutput) {
  avgPoolBackwardPlane<K, S, ND>(dxv, in, run, n, c, i, zd, rowsH, width, byOutput);
}
#endif

/// dx (every local cell, N x C x dx's local box as `rows`) := the backward of the average pool,
/// on a host execution space: one work item per plane of dx, a row buffer of the owned outputs
/// along W in per-thread scratch; the plane function of `isa` (Baseline where the build or the
/// CPU lacks AVX2).
template <int K, int S, class ExecSpace, class DxView, class In>
void avgPoolBackwardHost(const ExecSpace& exec, const OwnedRows& rows, const PhaseRun& run,
                         const DxView& dxv, const In& in, HostIsa isa) {
  using T = typename DxView::non_const_value_type;
  using C = typename In::compute_type;
  static_assert(
      Kokkos::SpaceAccessibility<Kokkos::HostSpace, typename ExecSpace::memory_space>::accessible,
      "avgPoolBackwardHost runs on host memory only");
  constexpr int NO = (K + S - 1) / S;
#if !HYBRID3D_HOST_AVX2
  (void)isa;  // a build without the AVX2 copy (device compilers) has only the baseline one
#endif
  using Policy = Kokkos::TeamPolicy<ExecSpace, Kokkos::IndexType<Index>>;
  using Member = typename Policy::member_type;
  using Scratch =
      Kokkos::View<C*, typename ExecSpace::scratch_memory_space, Kokkos::MemoryUnmanaged>;
  const Index entries = in.outW;
  const auto kernel = [=](const Member& team) {
    Index n, c, i;
    rows.decode(team.league_rank(), n, c, i);
    const Scratch byOutput(team.thread_scratch(0), entries);
    const Index od0 = in.rd(i, 0), nd = in.rd(i, 1) - od0;
    if (nd == 0) {  // no window holds the plane
      for (Index j = 0; j < rows.e1; ++j) {
        T* __restrict out = &dxv(n, c, i, j, 0);
        for (Index k = 0; k < rows.width; ++k) out[k] = T(0);
      }
      return;
    }
    const Index zd = od0 - in.outLo[0];
    unrolledOnHost<NO>([&](auto a) {
      constexpr int ND = decltype(a)::value + 1;
      if (nd != ND) return;
#if HYBRID3D_HOST_AVX2
      if (isa == HostIsa::Avx2) {
        avgPoolBackwardPlaneAvx2<K, S, ND>(dxv, in, run, n, c, i, zd, rows.e1, rows.width,
                                           byOutput.data());
        return;
      }
#endif
      avgPoolBackwardPlaneBaseline<K, S, ND>(dxv, in, run, n, c, i, zd, rows.e1, rows.width,
                                             byOutput.data());
    });
  };
  if (rows.planes > Index(std::numeric_limits<int>::max()))
    fail("hybrid3d: ", rows.planes, " planes of cells exceed a Kokkos league");
  Policy policy(exec, rows.planes, 1, 1);
  policy.set_scratch_size(0, Kokkos::PerThread(Scratch::shmem_size(entries)));
  Kokkos::parallel_for(Impl::kernelLabel("hybrid3d::AvgPool3d::backwardData"), policy, kernel);
}

}  // namespace hybrid3d::Impl
