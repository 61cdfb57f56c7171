#pragma once
/// \file
/// What the direct host convolution kernels (ConvForwardHost.hpp, ConvWeightsHost.hpp) read of a
/// float 3^3 stride-1 layer's tensors: raw pointers and strides (elements; W is unit-stride in
/// NCDHW LayoutRight), the output box computed and where its taps start in the ghosted input.

#include <type_traits>

#include <Kokkos_Core.hpp>

#include <hybrid3d/core/Types.hpp>
#include <hybrid3d/kernels/HostIsa.hpp>
#include <hybrid3d/kernels/Im2col.hpp>

namespace hybrid3d::Impl {

/// Whether scalar T in memory space M (a memory space or a Kokkos::Device) is what the direct
/// kernels compute: float the host can address. A layer calls them only under `if constexpr` on
/// this, so other instantiations (double, device memory) hold no call.
template <class T, class M>
constexpr bool directConvHostTypes = std::is_same_v<T, float>&&
    Kokkos::SpaceAccessibility<Kokkos::HostSpace, typename M::memory_space>::accessible;

/// Whether the direct kernels can run a layer of scalar T in memory space M with this kernel,
/// stride and input channels, on this CPU: those types, 3^3 stride 1, at most maxCin input
/// channels (each kernel's own bound), AVX2 and FMA.
template <class T, class M>
bool directConvHostCanRun(Index kernel, Index stride, Index cin, Index maxCin) {
  return directConvHostTypes<T, M> && kernel == 3 && stride == 1 && cin <= maxCin &&
         hostHasAvx2Fma();
}

struct DirectConvOperands {
  Index batch = 0, cin = 0, cout = 0;
  Index od = 0, oh = 0, ow = 0;  // the output box
  const float* x = nullptr;      // x(n, ci, zd, zh, zw) at x + n*xN + ci*xC + zd*xD + zh*xH + zw
  Index xN = 0, xC = 0, xD = 0, xH = 0;
  Index o0 = 0, o1 = 0, o2 = 0;  // local input index of tap 0 of output voxel 0 (ConvGeometry)
  float* y = nullptr;  // y (forward) or dy (backward) at the box's first voxel (n = co = 0):
  Index yN = 0, yC = 0, yD = 0, yH = 0;  // y(n, co, d, h, w) at y + n*yN + co*yC + d*yD + h*yH + w
};

/// The operands of a float layer's box: x and y (or dy) as NCDHW LayoutRight views, y's first
/// voxel of the box at local index yFirst, the box's geometry.
template <class XView, class YView>
DirectConvOperands directConvOperands(const XView& x, const YView& y, const Index3& yFirst,
                                      const ConvGeometry& g) {
  static_assert(std::is_same_v<typename XView::non_const_value_type, float> &&
                    std::is_same_v<typename YView::non_const_value_type, float>,
                "the direct host convolution kernels compute float");
  DirectConvOperands p;
  p.batch = Index(x.extent(0));
  p.cin = g.cin;
  p.cout = g.cout;
  p.od = g.od;
  p.oh = g.oh;
  p.ow = g.ow;
  p.x = x.data();
  p.xN = Index(x.stride(0));
  p.xC = Index(x.stride(1));
  p.xD = Index(x.stride(2));
  p.xH = Index(x.stride(3));
  p.o0 = g.inOffset[0];
  p.o1 = g.inOffset[1];
  p.o2 = g.inOffset[2];
  p.yN = Index(y.stride(0));
  p.yC = Index(y.stride(1));
  p.yD = Index(y.stride(2));
  p.yH = Index(y.stride(3));
  p.y = y.data() ? y.data() + yFirst[0] * p.yD + yFirst[1] * p.yH + yFirst[2] : nullptr;
  return p;
}

}  // namespace hybrid3d::Impl
