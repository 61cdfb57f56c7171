#pragma once
// Definitions of AvgPool3d's members (included by AvgPool3d.hpp; explicit instantiations in
// src/layers/AvgPool3d.cpp).

#include <hybrid3d/core/KernelLabel.hpp>
#include <hybrid3d/kernels/AvgPool3dBackwardHost.hpp>
#include <hybrid3d/kernels/AvgPool3dForwardHost.hpp>

namespace hybrid3d {

namespace Impl {

// AvgPool3d's forward over `rows` (N x C x the owned output box): one lane per owned output
// (offsets z, yy, xx in the owned box), the sum of its whole window, padding included (zeros
// from the halo, see Pool3d_impl.hpp), in PyTorch's (d, h, w) order, times the reciprocal
// divisor. K and S: the window's kernel and stride when compile-time constants, else 0 (see
// withStaticWindow).
template <int K, int S, class ExecSpace, class XView, class YView, class WView>
void avgPoolForward(const ExecSpace& exec, const OwnedRows& rows, const PoolGeometry& g,
                    const Origin3& xo, const GhostOffset& oy, const XView& xv, const YView& yv,
                    const WView& wd, const WView& wh, const WView& ww) {
  using T = typename YView::non_const_value_type;
  using C = typename WView::non_const_value_type;  // ComputeOf<T>: the sum's type
  // x's local index of the first owned output's window start, per dimension.
  const Index bd = g.start(0, g.outLo[0]) - xo.v[0], bh = g.start(1, g.outLo[1]) - xo.v[1],
              bw = g.start(2, g.outLo[2]) - xo.v[2];
  forEachRowCell(
      "hybrid3d::AvgPool3d::forward", exec, rows,
      // The row's part of the divisor, as (wd * wh) * ww.
      KOKKOS_LAMBDA(Index, Index, const Index z, const Index yy) { return C(wd(z) * wh(yy)); },
      KOKKOS_LAMBDA(const Index n, const Index c, const Index z, const Index yy, const Index xx,
                    const C a) {
        const Index kd = K > 0 ? K : g.k[0], kh = K > 0 ? K : g.k[1], kw = K > 0 ? K : g.k[2];
        const Index d0 = bd + z * (S > 0 ? S : g.s[0]), h0 = bh + yy * (S > 0 ? S : g.s[1]),
                    w0 = bw + xx * (S > 0 ? S : g.s[2]);
        C sum = 0;
        for (Index d = 0; d < kd; ++d)
          for (Index h = 0; h < kh; ++h)
            for (Index w = 0; w < kw; ++w) sum += C(xv(n, c, d0 + d, h0 + h, w0 + w));
        yv(n, c, oy.d + z, oy.h + yy, oy.w + xx) = T(sum * (a * ww(xx)));
      });
}

// The same with a compile-time window (K, S > 0), in two passes per row of outputs over a row
// buffer in per-thread scratch: first the sums over the window's K x K rows of x for every input
// column the row's windows read (unit-stride loads of K^2 rows), then each output's K columns
// of those sums. The per-output form loads K^3 cells at stride S along W, and ran far below
// the copy bandwidth (docs/performance-notes.md, "Pooling"). The order of the sum is now (w, then d
// and h): the last bits differ from PyTorch's (d, h, w), as any reordering; it is the same on every
// grid.
template <int K, int S, class ExecSpace, class XView, class YView, class WView>
void avgPoolForwardRowSums(const ExecSpace& exec, const OwnedRows& rows, const PoolGeometry& g,
                           const Origin3& xo, const GhostOffset& oy, const XView& xv,
                           const YView& yv, const WView& wd, const WView& wh, const WView& ww) {
  using T = typename YView::non_const_value_type;
  using C = typename WView::non_const_value_type;  // ComputeOf<T>: the sums' type
  using Member = typename RowPolicy<ExecSpace>::member_type;
  using Scratch =
      Kokkos::View<C*, typename ExecSpace::scratch_memory_space, Kokkos::MemoryUnmanaged>;
  const Index bd = g.start(0, g.outLo[0]) - xo.v[0], bh = g.start(1, g.outLo[1]) - xo.v[1],
              bw = g.start(2, g.outLo[2]) - xo.v[2];
  const Index columns = S * (rows.width - 1) + K;  // the input columns of a row's windows
  const auto kernel = KOKKOS_LAMBDA(const Member& team) {
    Index n, c, z;
    rows.decode(team.league_rank(), n, c, z);
    const Scratch sums(team.thread_scratch(0), columns);
    const Index d0 = bd + z * S;
    Kokkos::parallel_for(Kokkos::TeamThreadRange(team, rows.e1), [&](const Index yy) {
      const Index h0 = bh + yy * S;
      const C a = C(wd(z) * wh(yy));
      Kokkos::parallel_for(Kokkos::ThreadVectorRange(team, columns), [&](const Index j) {
        C s = 0;
        unrolled<K>([&](auto d) {
          unrolled<K>([&](auto h) {
            s += C(xv(n, c, d0 + decltype(d)::value, h0 + decltype(h)::value, bw + j));
          });
        });
        sums(j) = s;
      });
      // (A vector loop ends with its lanes synchronised on every backend, so the lanes below
      // see all of `sums`.)
      Kokkos::parallel_for(Kokkos::ThreadVectorRange(team, rows.width), [&](const Index xx) {
        C s = 0;
        unrolled<K>([&](auto w) { s += sums(S * xx + decltype(w)::value); });
        yv(n, c, oy.d + z, oy.h + yy, oy.w + xx) = T(s * (a * ww(xx)));
      });
    });
  };
  Kokkos::parallel_for(
      Impl::kernelLabel("hybrid3d::AvgPool3d::forward"),
      rowPolicy(exec, rows, kernel, Kokkos::ParallelForTag(), Scratch::shmem_size(columns)),
      kernel);
}

// Backward's first step over `rows` (N x C x the owned output box): z = dy * ((wd * wh) * ww),
// the term each input of the output's window receives, as forward's divisor.
template <class ExecSpace, class ZView, class DyView, class WView>
void avgPoolScaleGradient(const ExecSpace& exec, const OwnedRows& rows, const GhostOffset& ody,
                          const ZView& zv, const DyView& dyv, const WView& wd, const WView& wh,
                          const WView& ww) {
  using T = typename ZView::non_const_value_type;  // ComputeOf of dy's type
  forEachRowCell(
      "hybrid3d::AvgPool3d::backwardData", exec, rows,
      KOKKOS_LAMBDA(Index, Index, const Index z, const Index yy) { return T(wd(z) * wh(yy)); },
      KOKKOS_LAMBDA(const Index n, const Index c, const Index z, const Index yy, const Index xx,
                    const T a) {
        zv(n, c, z, yy, xx) = T(dyv(n, c, ody.d + z, ody.h + yy, ody.w + xx)) * (a * ww(xx));
      });
}

// Backward at one local input cell (i, j, k) of dx, the generic way: the sum of z over the owned
// outputs whose window holds it (the OutputRange tables), in the order od, oh, ow.
template <class ZView, class RangeView>
struct AvgPoolInputSum {
  using T = typename ZView::non_const_value_type;
  ZView z;  // [N, C, owned output box]
  RangeView rd, rh, rw;
  Index outLo[3];

  KOKKOS_INLINE_FUNCTION T operator()(Index n, Index c, Index i, Index j, Index k) const {
    T sum = 0;
    for (Index od = rd(i, 0); od < rd(i, 1); ++od)
      for (Index oh = rh(j, 0); oh < rh(j, 1); ++oh)
        for (Index ow = rw(k, 0); ow < rw(k, 1); ++ow)
          sum += z(n, c, od - outLo[0], oh - outLo[1], ow - outLo[2]);
    return sum;
  }
};

// Backward's second step over `rows` (N x C x dx's local box, local indices (i, j, k)): every
// input cell, owned or ghost, gets AvgPoolInputSum.
template <class ExecSpace, class DxView, class Sum>
void avgPoolSumWindows(std::integral_constant<int, 0>, std::integral_constant<int, 0>,
                       const ExecSpace& exec, const OwnedRows& rows, const PhaseRun&,
                       const DxView& dxv, const Sum& sum) {
  using T = typename DxView::non_const_value_type;
  forEachRowCell(
      "hybrid3d::AvgPool3d::backwardData", exec, rows,
      KOKKOS_LAMBDA(const Index n, const Index c, const Index i, const Index j, const Index k) {
        dxv(n, c, i, j, k) = T(sum(n, c, i, j, k));
      });
}

// The same with a compile-time window (K, S > 0). The row's at most NO = ceil(K / S) outputs
// along D and along H are the same for every cell of the row, so their sums come first, one per
// owned output along W, into a row buffer in per-thread scratch (unit-stride loads of z); then
// a vector lane takes a group of S consecutive inputs of the row's interior (PhaseRun) and adds
// the buffer's entries of each input's outputs along W (summing the NO x NO x taps terms of
// every input directly ran far slower: docs/performance-notes.md, "Pooling"). A row with nd x nh
// outputs along D and H sums only those (a vector loop per (nd, nh), chosen once per row): the
// terms it skips are the +0 that an earlier version read from a zero plane of z for the outputs a
// row lacks, which change no bit of a sum that starts at +0 (such a sum is never -0).
// The cells outside the interior (a few per row) with at most one output along W take that
// output's buffer entry: the generic order (od, oh, ow) is then the buffer's (od, oh), so the
// bits are the same; only cells with two or more outputs there (an odd leftover at a rank's
// edge) take the generic sum. A row that no window holds (padding, ghosts past the owned
// outputs) is zero. Per-cell generic sums at the row ends and the zero-plane terms cost about
// half of this kernel's time at 64^3.
template <int K, int S, class ExecSpace, class DxView, class Sum>
void avgPoolSumWindows(std::integral_constant<int, K>, std::integral_constant<int, S>,
                       const ExecSpace& exec, const OwnedRows& rows, const PhaseRun& run,
                       const DxView& dxv, const Sum& sum) {
  using T = typename DxView::non_const_value_type;
  using C = typename Sum::T;  // ComputeOf<T>: the sums' type (z's)
  constexpr int NO = (K + S - 1) / S;
  using Member = typename RowPolicy<ExecSpace>::member_type;
  using Scratch =
      Kokkos::View<C*, typename ExecSpace::scratch_memory_space, Kokkos::MemoryUnmanaged>;
  // Buffer entry q holds the outputs along W of z's index q (every owned output).
  const Index entries = Index(sum.z.extent(4));
  const auto kernel = KOKKOS_LAMBDA(const Member& team) {
    Index n, c, i;
    rows.decode(team.league_rank(), n, c, i);
    const Scratch byOutput(team.thread_scratch(0), entries);
    Kokkos::parallel_for(Kokkos::TeamThreadRange(team, rows.e1), [&](const Index j) {
      const Index od0 = sum.rd(i, 0), nd = sum.rd(i, 1) - od0;
      const Index oh0 = sum.rh(j, 0), nh = sum.rh(j, 1) - oh0;
      if (nd == 0 || nh == 0) {  // no window holds the row: the generic sum is +0
        Kokkos::parallel_for(Kokkos::ThreadVectorRange(team, rows.width),
                             [&](const Index k) { dxv(n, c, i, j, k) = T(0); });
        return;
      }
      if (run.groups == 0) {
        Kokkos::parallel_for(Kokkos::ThreadVectorRange(team, rows.width),
                             [&](const Index k) { dxv(n, c, i, j, k) = T(sum(n, c, i, j, k)); });
        return;
      }
      const Index zd = od0 - sum.outLo[0], zh = oh0 - sum.outLo[1];
      // The row's nd x nh outputs along D and H, summed per output along W in the order (od, oh).
      unrolled<NO>([&](auto a) {
        unrolled<NO>([&](auto e) {
          constexpr int NA = decltype(a)::value + 1, NE = decltype(e)::value + 1;
          if (nd != NA || nh != NE) return;
          Kokkos::parallel_for(Kokkos::ThreadVectorRange(team, entries), [&](const Index q) {
            C s = 0;
            unrolled<NA>([&](auto da) {
              unrolled<NE>([&](auto he) {
                s += sum.z(n, c, zd + decltype(da)::value, zh + decltype(he)::value, q);
              });
            });
            byOutput(q) = s;
          });
        });
      });
      // (A vector loop ends with its lanes synchronised on every backend.)
      const auto edge = [&](const Index k) {
        const Index ow0 = sum.rw(k, 0), nw = sum.rw(k, 1) - ow0;
        dxv(n, c, i, j, k) = T(nw == 0   ? C(0)
                               : nw == 1 ? byOutput(ow0 - sum.outLo[2])
                                         : sum(n, c, i, j, k));
      };
      Kokkos::parallel_for(Kokkos::ThreadVectorRange(team, run.first), edge);
      Kokkos::parallel_for(Kokkos::ThreadVectorRange(team, run.first + S * run.groups, rows.width),
                           edge);
      const Index base = run.output - sum.outLo[2];  // z's W index of group 0's output
      Kokkos::parallel_for(Kokkos::ThreadVectorRange(team, run.groups), [&](const Index m) {
        unrolled<S>([&](auto phase) {
          // The outputs along W of input `phase`: base + m + first + jw, jw < 1 - first.
          constexpr int first = int(floorDiv(decltype(phase)::value - K, S)) + 1;
          C s = 0;
          unrolled<1 - first>(
              [&](auto jw) { s += byOutput(base + m + first + decltype(jw)::value); });
          dxv(n, c, i, j, run.first + S * m + decltype(phase)::value) = T(s);
        });
      });
    });
  };
  Kokkos::parallel_for(
      Impl::kernelLabel("hybrid3d::AvgPool3d::backwardData"),
      rowPolicy(exec, rows, kernel, Kokkos::ParallelForTag(), Scratch::shmem_size(entries)),
      kernel);
}

// PyTorch's divisor is a product of one count per dimension: the window's extent up to the
// padding (countIncludePad; always the kernel without ceil mode) or its extent inside the
// domain. Its reciprocal per owned output and dimension turns the kernels' divisions into two
// multiplications (a few ulp from PyTorch's single division). out[d]: one entry per owned output
// along dimension d.
template <class T, class M, class C>
void avgPoolInverseCounts(const Pool3dPlan<T, M>& plan, bool countIncludePad,
                          Kokkos::View<C*, M> (&out)[3]) {
  const PoolGeometry g = plan.geometry();
  for (int d = 0; d < 3; ++d) {
    out[d] = Kokkos::View<C*, M>(plan.viewLabel(std::string("1/count ") + "DHW"[d]),
                                 g.outHi[d] - g.outLo[d]);
    auto h = Kokkos::create_mirror_view(out[d]);
    for (Index o = g.outLo[d]; o < g.outHi[d]; ++o) {
      const Index count = countIncludePad
                              ? imin(g.start(d, o) + g.k[d], g.n[d] + g.p[d]) - g.start(d, o)
                              : g.last(d, o) - g.first(d, o);
      h(o - g.outLo[d]) = C(1) / C(count);
    }
    Kokkos::deep_copy(out[d], h);
  }
}

// Backward-data before the halo's scatterAdd, the form every backend runs: scaledDy := dy /
// divisor on the owned outputs (avgPoolScaleGradient), then every local cell of dx sums those of
// its outputs (avgPoolSumWindows). `inverseCount`: avgPoolInverseCounts.
template <class T, class M>
void avgPoolBackwardTwoPass(const typename M::execution_space& exec, const Pool3dPlan<T, M>& plan,
                            const Kokkos::View<ComputeOf<T>*, M> (&inverseCount)[3],
                            const Kokkos::View<ComputeOf<T>*****, Kokkos::LayoutRight, M>& scaledDy,
                            const DistTensor<T, M>& dy, const DistTensor<T, M>& dx) {
  const PoolGeometry g = plan.geometry();
  const Index N = dx.batch(), C = dx.channels();
  const Box3 local = dx.localBox();
  const Box3& owned = plan.outputOwned();
  if (N * C * owned.size() > 0)
    avgPoolScaleGradient(exec, OwnedRows(N, C, owned.extents()), ghostOffset(dy), scaledDy,
                         dy.view(), inverseCount[0], inverseCount[1], inverseCount[2]);
  if (N * C * local.size() == 0) return;
  const AvgPoolInputSum<Kokkos::View<ComputeOf<T>*****, Kokkos::LayoutRight, M>, OutputRange<M>>
      sum{scaledDy,
          plan.outputsOf(0),
          plan.outputsOf(1),
          plan.outputsOf(2),
          {g.outLo[0], g.outLo[1], g.outLo[2]}};
  withStaticWindow(g, [&](auto K, auto S) {
    avgPoolSumWindows(K, S, exec, OwnedRows(N, C, local.extents()), plan.wInterior(), dx.view(),
                      sum);
  });
}

// The same in one pass on host memory for the windows withStaticWindow knows
// (AvgPool3dBackwardHost.hpp), with the same bits; false (nothing done) for other windows.
// `isa`: the plane function's build (tests ask for each; the layer for the best one).
template <class T, class M>
bool avgPoolBackwardOnePassHost(const typename M::execution_space& exec,
                                const Pool3dPlan<T, M>& plan,
                                const Kokkos::View<ComputeOf<T>*, M> (&inverseCount)[3],
                                const DistTensor<T, M>& dy, const DistTensor<T, M>& dx,
                                HostIsa isa = bestHostIsa()) {
  static_assert(Kokkos::SpaceAccessibility<Kokkos::HostSpace, typename M::memory_space>::accessible,
                "avgPoolBackwardOnePassHost: host memory only");
  const PoolGeometry g = plan.geometry();
  const Index N = dx.batch(), C = dx.channels();
  const Box3 local = dx.localBox();
  bool done = false;
  withStaticWindow(g, [&](auto K, auto S) {
    constexpr int k = decltype(K)::value, s = decltype(S)::value;
    if constexpr (k > 0) {
      done = true;
      if (N * C * local.size() == 0) return;
      const AvgPoolBackwardInputs<typename DistTensor<T, M>::view_type,
                                  Kokkos::View<ComputeOf<T>*, M>, OutputRange<M>>
          in{dy.view(),
             ghostOffset(dy),
             inverseCount[0],
             inverseCount[1],
             inverseCount[2],
             plan.outputsOf(0),
             plan.outputsOf(1),
             plan.outputsOf(2),
             {g.outLo[0], g.outLo[1], g.outLo[2]},
             plan.outputOwned().extent(2)};
      avgPoolBackwardHost<k, s>(exec, OwnedRows(N, C, local.extents()), plan.wInterior(), dx.view(),
                                in, isa);
    }
  });
  return done;
}

}  // namespace Impl

template <class T, class M>
AvgPool3d<T, M>::AvgPool3d(const LayerGrid& grid, const std::string& name, const TensorShape& input,
                           const Options& options)
    : SpatialLayer(
          Impl::poolGeometry("AvgPool3d", name, grid, input,
                             Window::cubic(options.kernel, options.stride, options.padding))),
      options_(options),
      plan_(grid, geometry_, Window::cubic(options.kernel, options.stride, options.padding)) {
  Impl::avgPoolInverseCounts(plan_, options.countIncludePad, inverseCount_);
  // The two-pass backward's buffer; the host's one pass needs none.
  const bool onePass =
      Kokkos::SpaceAccessibility<Kokkos::HostSpace, typename M::memory_space>::accessible &&
      Impl::hasStaticWindow(plan_.geometry());
  const Index3 e = onePass ? Index3{0, 0, 0} : plan_.outputOwned().extents();
  scaledDy_ = Kokkos::View<compute_type*****, Kokkos::LayoutRight, M>(
      geometry_.viewLabel("dy / divisor"), input.batch, input.channels, e[0], e[1], e[2]);
}

template <class T, class M>
void AvgPool3d<T, M>::forward(const execution_space& exec, const tensor_type& x,
                              const tensor_type& y) {
  geometry_.checkInput(x, "input");
  geometry_.checkOutput(y, "output");
  plan_.gatherInput(exec, x);
  const Impl::PoolGeometry g = plan_.geometry();
  const Index N = x.batch(), C = x.channels();
  const Box3& owned = plan_.outputOwned();
  if (N * C * owned.size() == 0) return;
  const Impl::Origin3 xo = Impl::originOf(x);
  const auto oy = Impl::ghostOffset(y);
  const Impl::OwnedRows rows(N, C, owned.extents());
  Impl::withStaticWindow(g, [&](auto K, auto S) {
    constexpr int k = decltype(K)::value, s = decltype(S)::value;
    // The host rows (AVX2 where the CPU has it), for every type.
    if constexpr (k > 0 && Kokkos::SpaceAccessibility<Kokkos::HostSpace,
                                                      typename M::memory_space>::accessible)
      Impl::avgPoolForwardHost<k, s>(exec, rows, g, xo, oy, x.view(), y.view(), inverseCount_[0],
                                     inverseCount_[1], inverseCount_[2], Impl::bestHostIsa());
    else if constexpr (k > 0)
      Impl::avgPoolForwardRowSums<k, s>(exec, rows, g, xo, oy, x.view(), y.view(), inverseCount_[0],
                                        inverseCount_[1], inverseCount_[2]);
    else
      Impl::avgPoolForward<k, s>(exec, rows, g, xo, oy, x.view(), y.view(), inverseCount_[0],
                                 inverseCount_[1], inverseCount_[2]);
  });
}

template <class T, class M>
void AvgPool3d<T, M>::backwardData(const execution_space& exec, const tensor_type& dy,
                                   const tensor_type& dx) {
  geometry_.checkOutput(dy, "output gradient");
  geometry_.checkInput(dx, "input gradient");
  bool done = false;
  // The host's one pass, for every type (the same bits as the two passes).
  if constexpr (Kokkos::SpaceAccessibility<Kokkos::HostSpace, typename M::memory_space>::accessible)
    done = Impl::avgPoolBackwardOnePassHost(exec, plan_, inverseCount_, dy, dx);
  if (!done) Impl::avgPoolBackwardTwoPass(exec, plan_, inverseCount_, scaledDy_, dy, dx);
  plan_.halo().scatterAdd(exec, dx);
}

}  // namespace hybrid3d
