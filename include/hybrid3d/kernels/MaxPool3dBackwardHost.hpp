#pragma once
/// \file
/// MaxPool3d's backward on host memory for a window that tiles the volume (kernel K = stride, no
/// padding): maxPoolBackwardTiled's gather (every local cell of dx written once, dy where it won
/// its window, zero elsewhere) as a row loop over pointers, built for the baseline and for AVX2
/// (kernels/HostRows.hpp).
///
/// Why: through Kokkos' vector ranges over 5-D view indices the 16-bit types' rows did not
/// vectorise on the baseline build, and the backward took about 5 times float's time for half
/// the bytes (issue 38). Only compares, selects and copies: the same bits on every instruction
/// set and as maxPoolBackwardTiled (tests compare them cell by cell).

#include <Kokkos_Core.hpp>

#include <hybrid3d/core/Scalar16.hpp>
#include <hybrid3d/kernels/HostRows.hpp>
#include <hybrid3d/kernels/PoolWindow.hpp>

namespace hybrid3d::Impl {

/// The arguments are maxPoolBackwardTiled's: `rows` N x C x dx's local box, b dx's local index of
/// the first owned output's window start, out the owned output box's extents; `isa` the build of
/// the row loop (tests ask for each, the layer for the best).
template <int K, class ExecSpace, class DxView, class DyView, class ArgView>
void maxPoolBackwardTiledHost(const ExecSpace& exec, const OwnedRows& rows, const Index3& b,
                              const Index3& out, const GhostOffset& ody, const DxView& dxv,
                              const DyView& dyv, const ArgView& am, HostIsa isa) {
  using T = typename DxView::non_const_value_type;
  const Index b0 = b[0], b1 = b[1], b2 = b[2], ed = out[0], eh = out[1], ew = out[2];
  const HostRowStart<T> dxr{dxv.data(), Index(dxv.stride(0)), Index(dxv.stride(1)),
                            Index(dxv.stride(2)), Index(dxv.stride(3))};
  const HostRowStart<const T> dyr{
      dyv.data() + ody.d * Index(dyv.stride(2)) + ody.h * Index(dyv.stride(3)) + ody.w,
      Index(dyv.stride(0)), Index(dyv.stride(1)), Index(dyv.stride(2)), Index(dyv.stride(3))};
  const HostRowStart<const int> argr{am.data(), Index(am.stride(0)), Index(am.stride(1)),
                                     Index(am.stride(2)), Index(am.stride(3))};
  forEachOwnedRowOnHost(
      "hybrid3d::MaxPool3d::backwardData", exec, rows, isa,
      [=](const Index n, const Index c, const Index i, const Index j) HYBRID3D_HOST_INLINE_LAMBDA {
        const Index width = rows.width;
        const Index id = i - b0, jh = j - b1;
        const Index z = id >= 0 ? id / K : -1, yy = jh >= 0 ? jh / K : -1;
        const bool windowed = z >= 0 && z < ed && yy >= 0 && yy < eh;
        // Cells [first, last) lie in the row's windows, the others in none.
        const Index first = windowed ? b2 : width, last = windowed ? b2 + K * ew : width;
        T* __restrict dx = dxr.at(n, c, i, j);
        const T zero = T(0);
        for (Index x = 0; x < first; ++x) copyValue(dx[x], zero);
        for (Index x = last; x < width; ++x) copyValue(dx[x], zero);
        if (!windowed) return;
        const int target = PoolGeometry::packOffset(id - z * K, jh - yy * K, 0);
        const int* __restrict arg = argr.at(n, c, z, yy);
        const T* __restrict dy = dyr.at(n, c, z, yy);
        T* __restrict windows = dx + b2;
        for (Index ow = 0; ow < ew; ++ow) {
          const int won = arg[ow] - target;  // the winner's W offset in this row
          const T g = dy[ow];
          for (int p = 0; p < K; ++p) selectValue(windows[K * ow + p], won == p, g, zero);
        }
      });
}

}  // namespace hybrid3d::Impl
