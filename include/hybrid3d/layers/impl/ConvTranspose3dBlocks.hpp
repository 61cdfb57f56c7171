#pragma once
// The data-movement kernels of the gemm-based transposed convolution with kernel == stride
// (ConvTranspose3d): input voxel i writes the disjoint k^3 block of outputs [i*k, i*k + k), so
// the layer is one gemm between a [Cin, voxels] matrix of inputs and a [Cout*k^3, voxels]
// matrix of output BLOCKS. These kernels move blocks between that matrix and a tensor's owned
// output box, which on an uneven grid need not be made of whole blocks: block entries whose
// output voxel another rank owns are skipped (forward) or read as zero (backward).
//
// Columns enumerate the input voxels of the range R that the owned output box reads, in rows
// (n, rd, rh) of RW voxels, as in Im2col.hpp; block row r = ((co*k + a)*k + b)*k + c is the
// PyTorch weight order of [Cin, Cout, k, k, k] read as [Cin, Cout*k^3].

#include <string>

#include <Kokkos_Core.hpp>

#include <hybrid3d/core/RangePolicy.hpp>
#include <hybrid3d/core/KernelLabel.hpp>
#include <hybrid3d/core/Types.hpp>

namespace hybrid3d::Impl {

struct BlockGeometry {
  Index k = 1;                   // kernel == stride
  Index cout = 0;                // output channels
  Index rd = 0, rh = 0, rw = 0;  // extents of the input range R
  Index inLo[3] = {0, 0, 0};     // global first voxel of R
  Index outLo[3] = {0, 0, 0};    // owned output box, global
  Index outHi[3] = {0, 0, 0};

  Index rowsPerSample() const { return rd * rh; }
};

// y(n, co, owned output voxel) = blocks(r, column of its input voxel) (+ bias(co)), summed in
// the blocks' compute type and rounded once to y's (16-bit) type.
template <class Exec, class BlockView, class YView, class BiasView>
void blocksToTensor(const Exec& exec, const BlockView& blocks, const YView& y, const Index3& off,
                    const BlockGeometry& g, Index firstRow, Index nrows, const BiasView& bias) {
  using T = typename BlockView::non_const_value_type;
  const Index k = g.k, RH = g.rh, RW = g.rw, perSample = g.rowsPerSample();
  const Index i0 = g.inLo[0], i1 = g.inLo[1], i2 = g.inLo[2];
  const Index lo0 = g.outLo[0], lo1 = g.outLo[1], lo2 = g.outLo[2];
  const Index hi0 = g.outHi[0], hi1 = g.outHi[1], OW = g.outHi[2] - g.outLo[2];
  const Index y0 = off[0], y1 = off[1], y2 = off[2];
  const bool hasBias = bias.data() != nullptr;
  Kokkos::parallel_for(
      Impl::kernelLabel("hybrid3d::ConvTranspose3d::forward"),
      rangePolicy(exec, 0, g.cout * nrows * k * k), KOKKOS_LAMBDA(const Index i) {
        Index t = i;
        const Index b = t % k;
        t /= k;
        const Index a = t % k;
        t /= k;
        const Index rr = t % nrows, co = t / nrows;
        const Index row = firstRow + rr, n = row / perSample, q = row % perSample;
        const Index od = (i0 + q / RH) * k + a, oh = (i1 + q % RH) * k + b;
        if (od < lo0 || od >= hi0 || oh < lo1 || oh >= hi1) return;
        const T bv = hasBias ? bias(co) : T(0);
        const Index r = ((co * k + a) * k + b) * k, col = rr * RW - i2;
        auto* out = &y(n, co, od - lo0 + y0, oh - lo1 + y1, y2);
        for (Index w = 0; w < OW; ++w) {
          const Index ow = lo2 + w;
          out[w] = blocks(r + ow % k, col + ow / k) + bv;
        }
      });
}

// blocks(r, column) = dy(n, co, output voxel) where this rank owns that voxel, else 0 (in the
// blocks' compute type).
template <class Exec, class DyView, class BlockView>
void tensorToBlocks(std::string_view label, const Exec& exec, const DyView& dy, const Index3& off,
                    const BlockView& blocks, const BlockGeometry& g, Index firstRow, Index nrows) {
  using T = typename BlockView::non_const_value_type;
  const Index k = g.k, RH = g.rh, RW = g.rw, perSample = g.rowsPerSample();
  const Index i0 = g.inLo[0], i1 = g.inLo[1], i2 = g.inLo[2];
  const Index lo0 = g.outLo[0], lo1 = g.outLo[1], lo2 = g.outLo[2];
  const Index hi0 = g.outHi[0], hi1 = g.outHi[1], hi2 = g.outHi[2];
  const Index y0 = off[0], y1 = off[1], y2 = off[2];
  Kokkos::parallel_for(
      Impl::kernelLabel(label), rangePolicy(exec, 0, g.cout * nrows * k * k),
      KOKKOS_LAMBDA(const Index i) {
        Index t = i;
        const Index b = t % k;
        t /= k;
        const Index a = t % k;
        t /= k;
        const Index rr = t % nrows, co = t / nrows;
        const Index row = firstRow + rr, n = row / perSample, q = row % perSample;
        const Index od = (i0 + q / RH) * k + a, oh = (i1 + q % RH) * k + b;
        const bool rowOwned = od >= lo0 && od < hi0 && oh >= lo1 && oh < hi1;
        const Index r = ((co * k + a) * k + b) * k;
        for (Index c = 0; c < k; ++c) {
          auto* out = &blocks(r + c, rr * RW);
          for (Index w = 0; w < RW; ++w) {
            const Index ow = (i2 + w) * k + c;
            out[w] = rowOwned && ow >= lo2 && ow < hi2
                         ? T(dy(n, co, od - lo0 + y0, oh - lo1 + y1, ow - lo2 + y2))
                         : T(0);
          }
        }
      });
}

// bias(co) += sum over the k^3 taps of perTap(co*k^3 + tap): folds the per-block-row sums of
// the output gradient into the bias gradient.
template <class Exec, class PerTapView, class BiasView>
void foldTaps(const Exec& exec, const PerTapView& perTap, const BiasView& bias, Index taps) {
  Kokkos::parallel_for(
      Impl::kernelLabel("hybrid3d::ConvTranspose3d::biasGrad"),
      rangePolicy(exec, 0, Index(bias.extent(0))), KOKKOS_LAMBDA(const Index co) {
        auto sum = bias(co);
        for (Index t = 0; t < taps; ++t) sum += perTap(co * taps + t);
        bias(co) = sum;
      });
}

}  // namespace hybrid3d::Impl
