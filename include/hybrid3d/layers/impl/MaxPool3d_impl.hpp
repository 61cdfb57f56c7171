#pragma once
// Definitions of MaxPool3d's members (included by MaxPool3d.hpp; explicit instantiations in
// src/layers/MaxPool3d.cpp).

namespace hybrid3d {

template <class T, class M>
MaxPool3d<T, M>::MaxPool3d(const ProcessGrid& grid, const std::string& name,
                           const TensorShape& input, const Options& options)
    : options_(options),
      plan_(grid, "MaxPool3d", name, input,
            Window::cubic(options.kernel, options.stride, options.padding)) {
  const Index3 e = plan_.outputOwned().extents();
  argmax_ = Kokkos::View<int*****, Kokkos::LayoutRight, M>(
      plan_.label() + " argmax", input.batch, input.channels, e[0], e[1], e[2]);
}

template <class T, class M>
void MaxPool3d<T, M>::forward(const execution_space& exec, const tensor_type& x,
                              const tensor_type& y) {
  plan_.checkInput(x, "x");
  plan_.checkOutput(y, "y");
  plan_.halo().gather(exec, x);
  haveArgmax_ = true;
  const Impl::PoolGeometry g = plan_.geometry();
  const Index N = x.batch(), C = x.channels();
  if (N * C * plan_.outputOwned().size() == 0) return;
  const Impl::Origin3 xo = Impl::originOf(x), yo = Impl::originOf(y);
  const auto xv = x.view();
  const auto yv = y.view();
  const auto am = argmax_;
  using Policy = Kokkos::MDRangePolicy<execution_space, Kokkos::Rank<5>, Kokkos::IndexType<Index>>;
  // One thread per owned output (global indices od, oh, ow).
  Kokkos::parallel_for(
      "hybrid3d::MaxPool3d::forward",
      Policy(exec, {Index(0), Index(0), g.outLo[0], g.outLo[1], g.outLo[2]},
             {N, C, g.outHi[0], g.outHi[1], g.outHi[2]}),
      KOKKOS_LAMBDA(const Index n, const Index c, const Index od, const Index oh, const Index ow) {
        const Index d0 = g.first(0, od), d1 = g.last(0, od);
        const Index h0 = g.first(1, oh), h1 = g.last(1, oh);
        const Index w0 = g.first(2, ow), w1 = g.last(2, ow);
        // PyTorch's rule: start from the first cell, take a cell if it is larger or NaN.
        T best = xv(n, c, d0 - xo.v[0], h0 - xo.v[1], w0 - xo.v[2]);
        int arg = g.offset(od, oh, ow, d0, h0, w0);
        for (Index d = d0; d < d1; ++d)
          for (Index h = h0; h < h1; ++h)
            for (Index w = w0; w < w1; ++w) {
              const T v = xv(n, c, d - xo.v[0], h - xo.v[1], w - xo.v[2]);
              if (v > best || v != v) {  // v != v: NaN propagates, as in PyTorch
                best = v;
                arg = g.offset(od, oh, ow, d, h, w);
              }
            }
        yv(n, c, od - yo.v[0], oh - yo.v[1], ow - yo.v[2]) = best;
        am(n, c, od - g.outLo[0], oh - g.outLo[1], ow - g.outLo[2]) = arg;
      });
}

template <class T, class M>
void MaxPool3d<T, M>::backwardData(const execution_space& exec, const tensor_type& dy,
                                   const tensor_type& dx) {
  plan_.checkOutput(dy, "dy");
  plan_.checkInput(dx, "dx");
  if (!haveArgmax_) fail(plan_.label(), ": backwardData called before forward");
  const Impl::PoolGeometry g = plan_.geometry();
  const Index N = dx.batch(), C = dx.channels();
  const Box3 local = dx.localBox();
  if (N * C * local.size() > 0) {
    const Impl::Origin3 xo = Impl::originOf(dx), yo = Impl::originOf(dy);
    const auto dxv = dx.view();
    const auto dyv = dy.view();
    const auto am = argmax_;
    using Policy =
        Kokkos::MDRangePolicy<execution_space, Kokkos::Rank<5>, Kokkos::IndexType<Index>>;
    // One thread per local input cell (owned and ghost, global indices d, h, w): the sum of dy
    // over the owned outputs whose maximum it was.
    Kokkos::parallel_for(
        "hybrid3d::MaxPool3d::backwardData",
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
                  if (am(n, c, od - g.outLo[0], oh - g.outLo[1], ow - g.outLo[2]) ==
                      g.offset(od, oh, ow, d, h, w))
                    sum += dyv(n, c, od - yo.v[0], oh - yo.v[1], ow - yo.v[2]);
          }
          dxv(n, c, d - xo.v[0], h - xo.v[1], w - xo.v[2]) = sum;
        });
  }
  plan_.halo().scatterAdd(exec, dx);
}

}  // namespace hybrid3d
