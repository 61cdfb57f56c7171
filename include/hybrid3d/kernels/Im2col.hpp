#pragma once
/// \file
/// The data-movement kernels of the gemm-based convolution (Conv3d): im2col for one chunk of
/// output rows, its adjoint col2im in gather form, and the copies between a chunk's [C, columns]
/// matrix and the owned cells of an NCDHW tensor.
///
/// A chunk is a run of consecutive output ROWS, a row being the OW voxels of one (n, od, oh) of
/// this rank's owned output box; rows are numbered n*OD*OH + od*OH + oh, so one chunk may hold
/// several samples (late layers with tiny boxes then still get long gemm columns). Column j of a
/// chunk is (row - firstRow) * OW + ow. Every kernel walks whole rows with an inner loop over ow:
/// the index arithmetic is paid once per row, and the inner loop reads and writes contiguous
/// memory (stride s on the input side).

#include <algorithm>
#include <cstddef>
#include <string>

#include <Kokkos_Core.hpp>

#include <hybrid3d/core/RangePolicy.hpp>
#include <hybrid3d/core/KernelLabel.hpp>
#include <hybrid3d/core/Types.hpp>
#include <hybrid3d/grid/DistTensor.hpp>

namespace hybrid3d::Impl {

/// Local index of a tensor's first owned voxel: its low ghost widths.
inline Index3 lowGhosts(const GhostWidths& g) { return {g.lo[0], g.lo[1], g.lo[2]}; }

/// Bytes of one chunk's operands the layers aim for on host memory spaces: small enough that
/// what im2col (or a pack kernel) writes is still in cache when gemm reads it: with 64 MiB
/// chunks the thin early gemms (Cout 16-64) stream their operands from memory, and 1 and 2 MiB
/// were slower again (more chunk boundaries in col2im); bench_conv_layers' figures are in
/// docs/performance-notes.md, "im2col chunk size". Devices, which want parallelism
/// rather than cache reuse, use the whole workspace.
constexpr std::size_t hostChunkBytes = std::size_t(4) << 20;

template <class MemorySpace>
std::size_t chunkBytes(std::size_t workspaceBytes) {
  constexpr bool host =
      Kokkos::SpaceAccessibility<Kokkos::HostSpace, typename MemorySpace::memory_space>::accessible;
  return host ? std::min(workspaceBytes, hostChunkBytes) : workspaceBytes;
}

/// Number of rows per gemm chunk: as many as `bytes` holds at `perColumn` elements per column
/// (the chunk's gemm operands), at least one, at most all.
inline Index rowsPerChunk(std::size_t bytes, std::size_t scalarSize, Index perColumn,
                          Index rowLength, Index rows) {
  const Index perRow = std::max<Index>(1, perColumn * rowLength) * Index(scalarSize);
  const Index fit = std::max<Index>(1, Index(bytes) / perRow);
  return std::max<Index>(1, std::min(fit, rows));
}

/// Everything a convolution kernel needs to map output voxels to input taps, as plain numbers
/// captured by value into kernels.
struct ConvGeometry {
  Index k = 1, s = 1;            // cubic kernel and stride
  Index cin = 0, cout = 0;       // channels
  Index od = 0, oh = 0, ow = 0;  // this rank's owned output box
  /// Local (ghosted) input index of tap 0 of output-box voxel 0, per dimension: output voxel o
  /// (box-relative) reads input local index o*s + tap + inOffset. Never negative: the input
  /// ghosts cover every tap.
  Index inOffset[3] = {0, 0, 0};

  Index taps() const { return k * k * k; }
  Index rowsPerSample() const { return od * oh; }
};

/// A [rows, cols] LayoutRight matrix over raw memory: how chunks of workspaces and tensors are
/// handed to KokkosBlas::gemm (contiguous, so the BLAS library gets plain leading dimensions).
template <class T, class M>
using Matrix = Kokkos::View<T**, Kokkos::LayoutRight, M, Kokkos::MemoryTraits<Kokkos::Unmanaged>>;
template <class T, class M>
using Vector = Kokkos::View<T*, Kokkos::LayoutRight, M, Kokkos::MemoryTraits<Kokkos::Unmanaged>>;

/// col(r, j) = x(n, ci, od*s + a + off0, oh*s + b + off1, ow*s + c + off2) for the chunk's rows,
/// r = ((ci*k + a)*k + b)*k + c (the PyTorch weight order, so W[Cout, Cin*k^3] multiplies it).
/// One thread per (ci, row) copies all k^3 taps of that row: the index arithmetic is amortised
/// over k^3 * OW elements, which matters for the 4^3 boxes of late layers.
template <class Exec, class XView, class ColView>
void im2col(const Exec& exec, const XView& x, const ColView& col, const ConvGeometry& g,
            Index firstRow, Index nrows) {
  const Index k = g.k, s = g.s, OH = g.oh, OW = g.ow;
  const Index perSample = g.rowsPerSample();
  const Index o0 = g.inOffset[0], o1 = g.inOffset[1], o2 = g.inOffset[2];
  Kokkos::parallel_for(
      Impl::kernelLabel("hybrid3d::Conv3d::im2col"), rangePolicy(exec, 0, g.cin * nrows),
      KOKKOS_LAMBDA(const Index i) {
        const Index rr = i % nrows, ci = i / nrows;
        const Index row = firstRow + rr, n = row / perSample, t = row % perSample;
        const Index zd = (t / OH) * s + o0, zh = (t % OH) * s + o1;
        Index r = ci * k * k * k;
        for (Index a = 0; a < k; ++a)
          for (Index b = 0; b < k; ++b) {
            const auto* in = &x(n, ci, zd + a, zh + b, o2);
            for (Index c = 0; c < k; ++c, ++r) {
              auto* out = &col(r, rr * OW);
              if (s == 1)  // the common case, kept apart so that it vectorises
                for (Index w = 0; w < OW; ++w) out[w] = in[c + w];
              else
                for (Index w = 0; w < OW; ++w) out[w] = in[c + w * s];
            }
          }
      });
}

/// The adjoint of im2col for one chunk, in gather form: each thread owns one input row
/// (n, ci, zd, zh) of the ghosted dx and adds into it every col entry of the chunk that im2col
/// read from it. No two threads write the same cell, so there are no atomics and the sum order
/// is fixed (bitwise reproducible). Only the input rows the chunk can reach are visited.
template <class Exec, class ColView, class DxView>
void col2imAdd(const Exec& exec, const ColView& col, const DxView& dx, const ConvGeometry& g,
               Index firstRow, Index nrows) {
  const Index k = g.k, s = g.s, OD = g.od, OH = g.oh, OW = g.ow, C = g.cin;
  const Index perSample = g.rowsPerSample();
  const Index o0 = g.inOffset[0], o1 = g.inOffset[1], o2 = g.inOffset[2];
  const Index lastRow = firstRow + nrows - 1;
  const Index n0 = firstRow / perSample, n1 = lastRow / perSample;
  // Input planes the chunk touches: tight when it lies in one sample, all planes otherwise
  // (it then spans whole samples' worth of rows anyway).
  Index zd0 = o0, zd1 = (OD - 1) * s + k + o0;
  if (n0 == n1) {
    zd0 = ((firstRow % perSample) / OH) * s + o0;
    zd1 = ((lastRow % perSample) / OH) * s + k + o0;
  }
  const Index zh0 = o1, nzd = zd1 - zd0, nzh = (OH - 1) * s + k;
  const Index count = (n1 - n0 + 1) * C * nzd * nzh;
  Kokkos::parallel_for(
      Impl::kernelLabel("hybrid3d::Conv3d::col2im"), rangePolicy(exec, 0, count),
      KOKKOS_LAMBDA(const Index i) {
        Index t = i;
        const Index zh = zh0 + t % nzh;
        t /= nzh;
        const Index zd = zd0 + t % nzd;
        t /= nzd;
        const Index ci = t % C, n = n0 + t / C;
        auto* out = &dx(n, ci, zd, zh, o2);
        for (Index a = 0; a < k; ++a) {
          const Index pd = zd - o0 - a;
          if (pd < 0 || pd % s != 0 || pd / s >= OD) continue;
          for (Index b = 0; b < k; ++b) {
            const Index ph = zh - o1 - b;
            if (ph < 0 || ph % s != 0 || ph / s >= OH) continue;
            const Index row = n * perSample + (pd / s) * OH + ph / s;
            if (row < firstRow || row > lastRow) continue;
            const Index r = ((ci * k + a) * k + b) * k;
            for (Index c = 0; c < k; ++c) {
              const auto* in = &col(r + c, (row - firstRow) * OW);
              if (s == 1)
                for (Index w = 0; w < OW; ++w) out[c + w] += in[w];
              else
                for (Index w = 0; w < OW; ++w) out[c + w * s] += in[w];
            }
          }
        }
      });
}

/// y(n, co, owned voxel) = m(co, j) (+ bias(co)): a chunk's gemm result into the owned cells of
/// a tensor whose owned box starts at local index `off` (its low ghost widths). m and the bias
/// are in the compute type (float for 16-bit y): the sum is taken there and rounded once.
template <class Exec, class MView, class YView, class BiasView>
void chunkToTensor(std::string_view label, const Exec& exec, const MView& m, const YView& y,
                   const Index3& off, const ConvGeometry& g, Index firstRow, Index nrows,
                   const BiasView& bias) {
  using T = typename MView::non_const_value_type;
  const Index C = static_cast<Index>(m.extent(0)), OH = g.oh, OW = g.ow;
  const Index perSample = g.rowsPerSample();
  const Index y0 = off[0], y1 = off[1], y2 = off[2];
  const bool hasBias = bias.data() != nullptr;
  Kokkos::parallel_for(
      Impl::kernelLabel(label), rangePolicy(exec, 0, C * nrows), KOKKOS_LAMBDA(const Index i) {
        const Index rr = i % nrows, co = i / nrows;
        const Index row = firstRow + rr, n = row / perSample, t = row % perSample;
        const T b = hasBias ? bias(co) : T(0);
        const auto* in = &m(co, rr * OW);
        auto* out = &y(n, co, t / OH + y0, t % OH + y1, y2);
        for (Index w = 0; w < OW; ++w) out[w] = in[w] + b;
      });
}

/// m(co, j) = dy(n, co, owned voxel): the reverse copy, packing a chunk of an output gradient
/// (converting 16-bit values to m's compute type).
template <class Exec, class DyView, class MView>
void tensorToChunk(std::string_view label, const Exec& exec, const DyView& dy, const Index3& off,
                   const MView& m, const ConvGeometry& g, Index firstRow, Index nrows) {
  const Index C = static_cast<Index>(m.extent(0)), OH = g.oh, OW = g.ow;
  const Index perSample = g.rowsPerSample();
  const Index y0 = off[0], y1 = off[1], y2 = off[2];
  Kokkos::parallel_for(
      Impl::kernelLabel(label), rangePolicy(exec, 0, C * nrows), KOKKOS_LAMBDA(const Index i) {
        const Index rr = i % nrows, co = i / nrows;
        const Index row = firstRow + rr, n = row / perSample, t = row % perSample;
        const auto* in = &dy(n, co, t / OH + y0, t % OH + y1, y2);
        auto* out = &m(co, rr * OW);
        for (Index w = 0; w < OW; ++w) out[w] = in[w];
      });
}

/// to[i] = from[i] over the whole span of `to` (a contiguous view, ghosts included): a float
/// sum rounded once into 16-bit storage.
template <class Exec, class FromView, class ToView>
void roundInto(std::string_view label, const Exec& exec, const FromView& from, const ToView& to) {
  using T = typename ToView::non_const_value_type;
  const auto* src = from.data();
  auto* dst = to.data();
  Kokkos::parallel_for(
      Impl::kernelLabel(label), rangePolicy(exec, 0, Index(to.span())),
      KOKKOS_LAMBDA(const Index i) { dst[i] = T(src[i]); });
}

}  // namespace hybrid3d::Impl
