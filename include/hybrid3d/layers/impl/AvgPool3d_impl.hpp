#pragma once
// Definitions of AvgPool3d's members (included by AvgPool3d.hpp; explicit instantiations in
// src/layers/AvgPool3d.cpp).

namespace hybrid3d {

namespace Impl {

// PyTorch's divisor of output (od, oh, ow): the window's volume up to the padding, or only its
// cells inside the domain.
KOKKOS_INLINE_FUNCTION Index avgPoolDivisor(const PoolGeometry& g, bool countIncludePad,
                                            Index od, Index oh, Index ow) {
  const Index o[3] = {od, oh, ow};
  Index count = 1;
  for (int d = 0; d < 3; ++d)
    count *= countIncludePad ? imin(g.start(d, o[d]) + g.k[d], g.n[d] + g.p[d]) - g.start(d, o[d])
                             : g.last(d, o[d]) - g.first(d, o[d]);
  return count;
}

}  // namespace Impl

template <class T, class M>
AvgPool3d<T, M>::AvgPool3d(const ProcessGrid& grid, const std::string& name,
                           const TensorShape& input, const Options& options)
    : options_(options),
      plan_(grid, "AvgPool3d", name, input,
            Window::cubic(options.kernel, options.stride, options.padding)) {}

template <class T, class M>
void AvgPool3d<T, M>::forward(const execution_space& exec, const tensor_type& x,
                              const tensor_type& y) {
  plan_.checkInput(x, "x");
  plan_.checkOutput(y, "y");
  plan_.halo().gather(exec, x);
  const Impl::PoolGeometry g = plan_.geometry();
  const Index N = x.batch(), C = x.channels();
  if (N * C * plan_.outputOwned().size() == 0) return;
  const Impl::Origin3 xo = Impl::originOf(x), yo = Impl::originOf(y);
  const auto xv = x.view();
  const auto yv = y.view();
  const bool includePad = options_.countIncludePad;
  using Policy = Kokkos::MDRangePolicy<execution_space, Kokkos::Rank<5>, Kokkos::IndexType<Index>>;
  // One thread per owned output (global indices od, oh, ow); the sum runs in PyTorch's order.
  Kokkos::parallel_for(
      "hybrid3d::AvgPool3d::forward",
      Policy(exec, {Index(0), Index(0), g.outLo[0], g.outLo[1], g.outLo[2]},
             {N, C, g.outHi[0], g.outHi[1], g.outHi[2]}),
      KOKKOS_LAMBDA(const Index n, const Index c, const Index od, const Index oh, const Index ow) {
        const Index d0 = g.first(0, od), d1 = g.last(0, od);
        const Index h0 = g.first(1, oh), h1 = g.last(1, oh);
        const Index w0 = g.first(2, ow), w1 = g.last(2, ow);
        T sum = 0;
        for (Index d = d0; d < d1; ++d)
          for (Index h = h0; h < h1; ++h)
            for (Index w = w0; w < w1; ++w) sum += xv(n, c, d - xo.v[0], h - xo.v[1], w - xo.v[2]);
        yv(n, c, od - yo.v[0], oh - yo.v[1], ow - yo.v[2]) =
            sum / static_cast<T>(Impl::avgPoolDivisor(g, includePad, od, oh, ow));
      });
}

template <class T, class M>
void AvgPool3d<T, M>::backwardData(const execution_space& exec, const tensor_type& dy,
                                   const tensor_type& dx) {
  plan_.checkOutput(dy, "dy");
  plan_.checkInput(dx, "dx");
  const Impl::PoolGeometry g = plan_.geometry();
  const Index N = dx.batch(), C = dx.channels();
  const Box3 local = dx.localBox();
  if (N * C * local.size() > 0) {
    const Impl::Origin3 xo = Impl::originOf(dx), yo = Impl::originOf(dy);
    const auto dxv = dx.view();
    const auto dyv = dy.view();
    const bool includePad = options_.countIncludePad;
    using Policy =
        Kokkos::MDRangePolicy<execution_space, Kokkos::Rank<5>, Kokkos::IndexType<Index>>;
    // One thread per local input cell (owned and ghost, global indices d, h, w): the sum of
    // dy / divisor over the owned outputs whose window contains it.
    Kokkos::parallel_for(
        "hybrid3d::AvgPool3d::backwardData",
        Policy(exec, {Index(0), Index(0), local.lo[0], local.lo[1], local.lo[2]},
               {N, C, local.hi[0], local.hi[1], local.hi[2]}),
        KOKKOS_LAMBDA(const Index n, const Index c, const Index d, const Index h, const Index w) {
          T sum = 0;
          if (g.inside(d, h, w)) {
            const Index od1 = g.lastOutput(0, d), oh1 = g.lastOutput(1, h);
            const Index ow1 = g.lastOutput(2, w);
            for (Index od = g.firstOutput(0, d); od < od1; ++od)
              for (Index oh = g.firstOutput(1, h); oh < oh1; ++oh)
                for (Index ow = g.firstOutput(2, w); ow < ow1; ++ow)
                  sum += dyv(n, c, od - yo.v[0], oh - yo.v[1], ow - yo.v[2]) /
                         static_cast<T>(Impl::avgPoolDivisor(g, includePad, od, oh, ow));
          }
          dxv(n, c, d - xo.v[0], h - xo.v[1], w - xo.v[2]) = sum;
        });
  }
  plan_.halo().scatterAdd(exec, dx);
}

}  // namespace hybrid3d
