#pragma once
// Definitions of MaxPool3d's members (included by MaxPool3d.hpp; explicit instantiations in
// src/layers/MaxPool3d.cpp).

#include <hybrid3d/core/KernelLabel.hpp>
#include <hybrid3d/kernels/MaxPool3dBackwardHost.hpp>
#include <hybrid3d/kernels/MaxPool3dForwardHost.hpp>

namespace hybrid3d {

namespace Impl {

// MaxPool3d's forward over `rows` (N x C x the owned output box) without padding, so that every
// window lies inside the domain: one lane per owned output (offsets z, yy, xx in the owned box),
// PyTorch's rule (start from the first cell, take a cell if it is larger or NaN) as selects. K
// and S: the window's kernel and stride when compile-time constants, else 0 (see
// withStaticWindow).
template <int K, int S, class ExecSpace, class XView, class YView, class ArgView>
void maxPoolForwardUnpadded(const ExecSpace& exec, const OwnedRows& rows, const PoolGeometry& g,
                            const Origin3& xo, const GhostOffset& oy, const XView& xv,
                            const YView& yv, const ArgView& am) {
  using T = typename YView::non_const_value_type;
  using C = ComputeOf<T>;  // 16-bit values compare as floats (exactly); the winner is stored back
  // x's local index of the first owned output's window start, per dimension.
  const Index bd = g.start(0, g.outLo[0]) - xo.v[0], bh = g.start(1, g.outLo[1]) - xo.v[1],
              bw = g.start(2, g.outLo[2]) - xo.v[2];
  const bool keep = am.data() != nullptr;  // an inference layer keeps no winners
  forEachRowCell(
      "hybrid3d::MaxPool3d::forward", exec, rows,
      KOKKOS_LAMBDA(const Index n, const Index c, const Index z, const Index yy, const Index xx) {
        const Index kd = K > 0 ? K : g.k[0], kh = K > 0 ? K : g.k[1], kw = K > 0 ? K : g.k[2];
        const Index d0 = bd + z * (S > 0 ? S : g.s[0]), h0 = bh + yy * (S > 0 ? S : g.s[1]),
                    w0 = bw + xx * (S > 0 ? S : g.s[2]);
        C best = C(xv(n, c, d0, h0, w0));
        int arg = 0;
        for (Index d = 0; d < kd; ++d)
          for (Index h = 0; h < kh; ++h)
            for (Index w = 0; w < kw; ++w) {
              const C v = C(xv(n, c, d0 + d, h0 + h, w0 + w));
              const bool take = v > best || v != v;  // v != v: NaN propagates, as in PyTorch
              best = take ? v : best;
              arg = take ? PoolGeometry::packOffset(d, h, w) : arg;
            }
        yv(n, c, oy.d + z, oy.h + yy, oy.w + xx) = T(best);
        if (keep) am(n, c, z, yy, xx) = arg;
      });
}

// The same with padding: each window clipped to the domain (padding never wins).
template <class ExecSpace, class XView, class YView, class ArgView>
void maxPoolForwardClipped(const ExecSpace& exec, const OwnedRows& rows, const PoolGeometry& g,
                           const Origin3& xo, const GhostOffset& oy, const XView& xv,
                           const YView& yv, const ArgView& am) {
  using T = typename YView::non_const_value_type;
  using C = ComputeOf<T>;
  const bool keep = am.data() != nullptr;  // an inference layer keeps no winners
  forEachRowCell(
      "hybrid3d::MaxPool3d::forward", exec, rows,
      KOKKOS_LAMBDA(const Index n, const Index c, const Index z, const Index yy, const Index xx) {
        const Index od = g.outLo[0] + z, oh = g.outLo[1] + yy, ow = g.outLo[2] + xx;
        const Index d0 = g.first(0, od), d1 = g.last(0, od);
        const Index h0 = g.first(1, oh), h1 = g.last(1, oh);
        const Index w0 = g.first(2, ow), w1 = g.last(2, ow);
        C best = C(xv(n, c, d0 - xo.v[0], h0 - xo.v[1], w0 - xo.v[2]));
        int arg = g.offset(od, oh, ow, d0, h0, w0);
        for (Index d = d0; d < d1; ++d)
          for (Index h = h0; h < h1; ++h)
            for (Index w = w0; w < w1; ++w) {
              const C v = C(xv(n, c, d - xo.v[0], h - xo.v[1], w - xo.v[2]));
              if (v > best || v != v) {
                best = v;
                arg = g.offset(od, oh, ow, d, h, w);
              }
            }
        yv(n, c, oy.d + z, oy.h + yy, oy.w + xx) = T(best);
        if (keep) am(n, c, z, yy, xx) = arg;
      });
}

// MaxPool3d's backward for a compile-time window that tiles the volume (kernel K = stride), as
// a gather over `rows` (N x C x dx's local box): every local cell of dx is written once, dy
// where it won its window and zero elsewhere. A pass that zeroes dx and then scatters dy to the
// winners moves dx through memory twice more (the scatter reads back every cache line). A row
// (i, j) lies in the windows of one output row (z, yy) at offsets (rd, rh), or in none; its
// cells are walked by output along W, each writing its K cells (unit-stride argmax and dy
// loads). b: dx's local index of the first owned output's window start; out: the owned output
// box's extents.
template <int K, class ExecSpace, class DxView, class DyView, class ArgView>
void maxPoolBackwardTiled(const ExecSpace& exec, const OwnedRows& rows, const Index3& b,
                          const Index3& out, const GhostOffset& ody, const DxView& dxv,
                          const DyView& dyv, const ArgView& am) {
  using T = typename DxView::non_const_value_type;
  using Member = typename RowPolicy<ExecSpace>::member_type;
  const Index b0 = b[0], b1 = b[1], b2 = b[2], ed = out[0], eh = out[1], ew = out[2];
  const auto kernel = KOKKOS_LAMBDA(const Member& team) {
    Index n, c, i;
    rows.decode(team.league_rank(), n, c, i);
    Kokkos::parallel_for(Kokkos::TeamThreadRange(team, rows.e1), [&](const Index j) {
      const Index id = i - b0, jh = j - b1;
      const Index z = id >= 0 ? id / K : -1, yy = jh >= 0 ? jh / K : -1;
      const bool windowed = z >= 0 && z < ed && yy >= 0 && yy < eh;
      // Cells [first, last) lie in the row's windows, the others in none.
      const Index first = windowed ? b2 : rows.width, last = windowed ? b2 + K * ew : rows.width;
      const auto zero = [&](const Index x) { dxv(n, c, i, j, x) = T(0); };
      Kokkos::parallel_for(Kokkos::ThreadVectorRange(team, Index(0), first), zero);
      Kokkos::parallel_for(Kokkos::ThreadVectorRange(team, last, rows.width), zero);
      if (!windowed) return;
      const int target = PoolGeometry::packOffset(id - z * K, jh - yy * K, 0);
      Kokkos::parallel_for(Kokkos::ThreadVectorRange(team, ew), [&](const Index ow) {
        const int won = am(n, c, z, yy, ow) - target;  // the winner's W offset in this row
        const T g = dyv(n, c, ody.d + z, ody.h + yy, ody.w + ow);
        unrolled<K>([&](auto p) {
          dxv(n, c, i, j, b2 + K * ow + decltype(p)::value) = won == decltype(p)::value ? g : T(0);
        });
      });
    });
  };
  Kokkos::parallel_for(Impl::kernelLabel("hybrid3d::MaxPool3d::backwardData"),
                       rowPolicy(exec, rows, kernel, Kokkos::ParallelForTag()), kernel);
}

}  // namespace Impl

template <class T, class M>
MaxPool3d<T, M>::MaxPool3d(const LayerGrid& grid, const std::string& name, const TensorShape& input,
                           const Options& options)
    : SpatialLayer(
          Impl::poolGeometry("MaxPool3d", name, grid, input,
                             Window::cubic(options.kernel, options.stride, options.padding))),
      options_(options),
      plan_(grid, geometry_, Window::cubic(options.kernel, options.stride, options.padding)) {
  const Index3 e = plan_.outputOwned().extents();
  argmax_ = Kokkos::View<int*****, Kokkos::LayoutRight, M>(
      geometry_.viewLabel("argmax"), input.batch, input.channels, e[0], e[1], e[2]);
}

template <class T, class M>
void MaxPool3d<T, M>::forward(const execution_space& exec, const tensor_type& x,
                              const tensor_type& y) {
  geometry_.checkInput(x, "input");
  geometry_.checkOutput(y, "output");
  plan_.gatherInput(exec, x);
  haveArgmax_ = !released_;
  const Impl::PoolGeometry g = plan_.geometry();
  const Index N = x.batch(), C = x.channels();
  const Box3& owned = plan_.outputOwned();
  if (N * C * owned.size() == 0) return;
  const Impl::Origin3 xo = Impl::originOf(x);
  const auto oy = Impl::ghostOffset(y);
  const Impl::OwnedRows rows(N, C, owned.extents());
  if (options_.padding > 0) {
    Impl::maxPoolForwardClipped(exec, rows, g, xo, oy, x.view(), y.view(), argmax_);
    return;
  }
  Impl::withStaticWindow(g, [&](auto K, auto S) {
    constexpr int k = decltype(K)::value, s = decltype(S)::value;
    // The host rows (AVX2 where the CPU has it), for every type.
    if constexpr (k > 0 && Kokkos::SpaceAccessibility<Kokkos::HostSpace,
                                                      typename M::memory_space>::accessible)
      Impl::maxPoolForwardHost<k, s>(exec, rows, g, xo, oy, x.view(), y.view(), argmax_,
                                     Impl::bestHostIsa());
    else
      Impl::maxPoolForwardUnpadded<k, s>(exec, rows, g, xo, oy, x.view(), y.view(), argmax_);
  });
}

template <class T, class M>
void MaxPool3d<T, M>::backwardData(const execution_space& exec, const tensor_type& dy,
                                   const tensor_type& dx) {
  geometry_.checkOutput(dy, "output gradient");
  geometry_.checkInput(dx, "input gradient");
  if (!haveArgmax_) fail(plan_.label(), ": backwardData called before forward");
  const Impl::PoolGeometry g = plan_.geometry();
  const Index N = dx.batch(), C = dx.channels();
  const Box3 local = dx.localBox();
  if (options_.padding == 0 && options_.kernel == 2 && options_.stride == 2) {
    // The models' pool (U-Net, MLPerf CosmoFlow): windows tile the volume, gather once.
    if (N * C * local.size() > 0) {
      const Impl::Origin3 xo = Impl::originOf(dx);
      const Index3 b{g.start(0, g.outLo[0]) - xo.v[0], g.start(1, g.outLo[1]) - xo.v[1],
                     g.start(2, g.outLo[2]) - xo.v[2]};
      const Impl::OwnedRows rows(N, C, local.extents());
      if constexpr (Kokkos::SpaceAccessibility<Kokkos::HostSpace,
                                               typename M::memory_space>::accessible)
        Impl::maxPoolBackwardTiledHost<2>(exec, rows, b, plan_.outputOwned().extents(),
                                          Impl::ghostOffset(dy), dx.view(), dy.view(), argmax_,
                                          Impl::bestHostIsa());
      else
        Impl::maxPoolBackwardTiled<2>(exec, rows, b, plan_.outputOwned().extents(),
                                      Impl::ghostOffset(dy), dx.view(), dy.view(), argmax_);
    }
  } else if (options_.kernel <= options_.stride) {
    // Other windows that do not overlap: every input cell is the maximum of at most one output:
    // each owned output writes its dy to its winner, race-free and deterministic (one pass over the
    // outputs instead of one over the inputs).
    Impl::zeroFill(exec, dx.view());
    const Box3& owned = plan_.outputOwned();
    if (N * C * owned.size() > 0) {
      const Impl::Origin3 xo = Impl::originOf(dx);
      const auto ody = Impl::ghostOffset(dy);
      const auto dxv = dx.view();
      const auto dyv = dy.view();
      const auto am = argmax_;
      // x's local index of the first owned output's window start, per dimension.
      const Index bd = g.start(0, g.outLo[0]) - xo.v[0], bh = g.start(1, g.outLo[1]) - xo.v[1],
                  bw = g.start(2, g.outLo[2]) - xo.v[2];
      const Index sd = g.s[0], sh = g.s[1], sw = g.s[2];
      Impl::forEachRowCell(
          "hybrid3d::MaxPool3d::backwardData", exec, Impl::OwnedRows(N, C, owned.extents()),
          KOKKOS_LAMBDA(const Index n, const Index c, const Index z, const Index yy,
                        const Index xx) {
            const int at = am(n, c, z, yy, xx);
            dxv(n, c, bd + z * sd + Impl::PoolGeometry::offsetAlong(0, at),
                bh + yy * sh + Impl::PoolGeometry::offsetAlong(1, at),
                bw + xx * sw + Impl::PoolGeometry::offsetAlong(2, at)) =
                dyv(n, c, ody.d + z, ody.h + yy, ody.w + xx);
          });
    }
  } else if (N * C * local.size() > 0) {
    const Impl::Origin3 xo = Impl::originOf(dx), yo = Impl::originOf(dy);
    const auto dxv = dx.view();
    const auto dyv = dy.view();
    const auto rd = plan_.outputsOf(0), rh = plan_.outputsOf(1), rw = plan_.outputsOf(2);
    const auto am = argmax_;
    // One lane per local input cell (owned and ghost; local i, j, k, global d, h, w): the sum
    // of dy over the owned outputs whose maximum it was.
    Impl::forEachRowCell(
        "hybrid3d::MaxPool3d::backwardData", exec, Impl::OwnedRows(N, C, local.extents()),
        KOKKOS_LAMBDA(const Index n, const Index c, const Index i, const Index j, const Index k) {
          const Index d = i + xo.v[0], h = j + xo.v[1], w = k + xo.v[2];  // global indices
          ComputeOf<T> sum = 0;  // float for the 16-bit types, rounded once
          for (Index od = rd(i, 0); od < rd(i, 1); ++od)
            for (Index oh = rh(j, 0); oh < rh(j, 1); ++oh)
              for (Index ow = rw(k, 0); ow < rw(k, 1); ++ow)
                if (am(n, c, od - g.outLo[0], oh - g.outLo[1], ow - g.outLo[2]) ==
                    g.offset(od, oh, ow, d, h, w))
                  sum += ComputeOf<T>(dyv(n, c, od - yo.v[0], oh - yo.v[1], ow - yo.v[2]));
          dxv(n, c, i, j, k) = T(sum);
        });
  }
  plan_.halo().scatterAdd(exec, dx);
}

}  // namespace hybrid3d
