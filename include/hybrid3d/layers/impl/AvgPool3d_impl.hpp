#pragma once
// Definitions of AvgPool3d's members (included by AvgPool3d.hpp; explicit instantiations in
// src/layers/AvgPool3d.cpp).

namespace hybrid3d {

template <class T, class M>
AvgPool3d<T, M>::AvgPool3d(const ProcessGrid& grid, const std::string& name,
                           const TensorShape& input, const Options& options)
    : options_(options),
      plan_(grid, "AvgPool3d", name, input,
            Window::cubic(options.kernel, options.stride, options.padding)) {
  // PyTorch's divisor is a product of one count per dimension: the window's extent up to the
  // padding (countIncludePad; always the kernel without ceil mode) or its extent inside the
  // domain. Its reciprocal per owned output and dimension turns the kernels' divisions into
  // two multiplications (a few ulp from PyTorch's single division).
  const Impl::PoolGeometry g = plan_.geometry();
  for (int d = 0; d < 3; ++d) {
    inverseCount_[d] = Kokkos::View<T*, M>(plan_.label() + " 1/count " + "DHW"[d],
                                           g.outHi[d] - g.outLo[d]);
    auto h = Kokkos::create_mirror_view(inverseCount_[d]);
    for (Index o = g.outLo[d]; o < g.outHi[d]; ++o) {
      const Index count = options.countIncludePad
                               ? Impl::imin(g.start(d, o) + g.k[d], g.n[d] + g.p[d]) - g.start(d, o)
                               : g.last(d, o) - g.first(d, o);
      h(o - g.outLo[d]) = T(1) / T(count);
    }
    Kokkos::deep_copy(inverseCount_[d], h);
  }
}

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
  const auto wd = inverseCount_[0], wh = inverseCount_[1], ww = inverseCount_[2];
  // One thread per owned output (global indices od, oh, ow); the sum runs in PyTorch's order.
  Kokkos::parallel_for(
      "hybrid3d::AvgPool3d::forward", Impl::poolPolicy(exec, N, C, g.outLo, g.outHi),
      KOKKOS_LAMBDA(const Index n, const Index c, const Index od, const Index oh, const Index ow) {
        const Index d0 = g.first(0, od), d1 = g.last(0, od);
        const Index h0 = g.first(1, oh), h1 = g.last(1, oh);
        const Index w0 = g.first(2, ow), w1 = g.last(2, ow);
        T sum = 0;
        for (Index d = d0; d < d1; ++d)
          for (Index h = h0; h < h1; ++h)
            for (Index w = w0; w < w1; ++w) sum += xv(n, c, d - xo.v[0], h - xo.v[1], w - xo.v[2]);
        yv(n, c, od - yo.v[0], oh - yo.v[1], ow - yo.v[2]) =
            sum * (wd(od - g.outLo[0]) * wh(oh - g.outLo[1]) * ww(ow - g.outLo[2]));
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
    const Impl::Origin3 yo = Impl::originOf(dy);
    const auto dxv = dx.view();
    const auto dyv = dy.view();
    const auto rd = plan_.outputsOf(0), rh = plan_.outputsOf(1), rw = plan_.outputsOf(2);
    const Index zero[3] = {0, 0, 0};
    const Index extent[3] = {local.extent(0), local.extent(1), local.extent(2)};
    const auto wd = inverseCount_[0], wh = inverseCount_[1], ww = inverseCount_[2];
    // One thread per local input cell (owned and ghost, local i, j, k): the sum of dy / divisor
    // over the owned outputs whose window contains it.
    Kokkos::parallel_for(
        "hybrid3d::AvgPool3d::backwardData", Impl::poolPolicy(exec, N, C, zero, extent),
        KOKKOS_LAMBDA(const Index n, const Index c, const Index i, const Index j, const Index k) {
          T sum = 0;
          for (Index od = rd(i, 0); od < rd(i, 1); ++od) {
            const T a = wd(od - g.outLo[0]);
            for (Index oh = rh(j, 0); oh < rh(j, 1); ++oh) {
              const T b = a * wh(oh - g.outLo[1]);  // the same product as forward's
              for (Index ow = rw(k, 0); ow < rw(k, 1); ++ow)
                sum += dyv(n, c, od - yo.v[0], oh - yo.v[1], ow - yo.v[2]) *
                       (b * ww(ow - g.outLo[2]));
            }
          }
          dxv(n, c, i, j, k) = sum;
        });
  }
  plan_.halo().scatterAdd(exec, dx);
}

}  // namespace hybrid3d
