#pragma once
/// \file
/// Building blocks of the element-wise layers (activations, dropout, concat, losses): walking the
/// owned cells of DistTensors that may carry different ghost widths, and the rows of the
/// replicated [N, F] feature views of the dense part (kernels/FeatureView.hpp). Kernels take their
/// math functions from hybrid3d/core/Math.hpp.

#include <limits>

#include <Kokkos_Core.hpp>

#include <hybrid3d/core/RangePolicy.hpp>
#include <hybrid3d/core/KernelLabel.hpp>
#include <hybrid3d/core/Error.hpp>
#include <hybrid3d/core/Types.hpp>
#include <hybrid3d/grid/DistTensor.hpp>
#include <hybrid3d/kernels/FeatureView.hpp>

namespace hybrid3d {

namespace Impl {

/// The owned cells of N x C x (owned box) as rows along W: plane p is (n, c, z) and holds rows
/// y = 0 .. e1-1, each of `width` cells x = 0 .. width-1, with (z, y, x) offsets inside the owned
/// box. A row is contiguous in every tensor of the same decomposition, whatever its ghosts, so
/// one kernel can read x and write y although their ghost widths differ: each tensor adds its own
/// ghost offset. Decoding a plane costs a few divisions, once per e1 * width cells. The box may
/// be any box of offsets (pooling walks its owned outputs, or the whole local array of dx).
struct OwnedRows {
  Index channels = 0, e0 = 0, e1 = 0, width = 0;
  Index planes = 0;  // N * C * e0

  OwnedRows() = default;
  OwnedRows(Index n, Index c, const Index3& e)
      : channels(c), e0(e[0]), e1(e[1]), width(e[2]), planes(n * c * e[0]) {}
  template <class T, class M>
  explicit OwnedRows(const DistTensor<T, M>& t)
      : OwnedRows(t.batch(), t.channels(), t.owned().extents()) {}
  /// An [N, F] feature view: N rows of F (channel, z and y are 0).
  template <class T, class M>
  explicit OwnedRows(const FeatureView<T, M>& v)
      : OwnedRows(Index(v.extent(0)), 1, Index3{1, 1, Index(v.extent(1))}) {}

  bool empty() const { return planes == 0 || e1 == 0 || width == 0; }
  KOKKOS_INLINE_FUNCTION void decode(Index p, Index& n, Index& c, Index& z) const {
    z = p % e0;
    p /= e0;
    c = p % channels;
    n = p / channels;
  }
};

/// Where the owned box starts in a tensor's local array (its low ghost widths).
struct GhostOffset {
  Index d = 0, h = 0, w = 0;
};
template <class T, class M>
GhostOffset ghostOffset(const DistTensor<T, M>& t) {
  const Int3& g = t.ghosts().lo;
  return {g[0], g[1], g[2]};
}

template <class ExecSpace>
using RowPolicy = Kokkos::TeamPolicy<ExecSpace, Kokkos::IndexType<Index>>;

/// One team per plane of `rows`, with vector lanes for a row: the smallest power of two that
/// covers it, capped at the backend's maximum (a warp on CUDA; host backends run the row as one
/// loop), and the team size Kokkos recommends for `kernel` with that vector length.
/// `threadScratch`: bytes of level-0 scratch per team thread (a row buffer its lanes share),
/// set before asking for the team size so that the recommendation fits it.
template <class ExecSpace, class Kernel, class Tag>
RowPolicy<ExecSpace> rowPolicy(const ExecSpace& exec, const OwnedRows& rows, const Kernel& kernel,
                               const Tag& tag, std::size_t threadScratch = 0) {
  if (rows.planes > Index(std::numeric_limits<int>::max()))
    fail("hybrid3d: ", rows.planes, " planes of cells exceed a Kokkos league");
  const int max = RowPolicy<ExecSpace>::vector_length_max();
  int vector = 1;
  while (vector < max && vector < rows.width) vector *= 2;
  auto probe = RowPolicy<ExecSpace>(exec, 1, Kokkos::AUTO, vector);
  if (threadScratch > 0) probe.set_scratch_size(0, Kokkos::PerThread(threadScratch));
  const int team = probe.team_size_recommended(kernel, tag);
  auto policy = RowPolicy<ExecSpace>(exec, int(rows.planes), team, vector);
  if (threadScratch > 0) policy.set_scratch_size(0, Kokkos::PerThread(threadScratch));
  return policy;
}

/// body(n, c, z, y, x) for every cell of `rows`: one team per plane, its rows over the team's
/// threads, a row's cells over the vector lanes. The innermost index is unit-stride, so a GPU
/// coalesces and a CPU compiler vectorises the row loop (body must be branch-free for that).
/// Cells are independent.
template <class ExecSpace, class Body>
void forEachRowCell(const char* label, const ExecSpace& exec, const OwnedRows& rows,
                    const Body& body) {
  if (rows.empty()) return;
  using Member = typename RowPolicy<ExecSpace>::member_type;
  const auto kernel = KOKKOS_LAMBDA(const Member& team) {
    Index n, c, z;
    rows.decode(team.league_rank(), n, c, z);
    Kokkos::parallel_for(Kokkos::TeamThreadRange(team, rows.e1), [&](const Index y) {
      Kokkos::parallel_for(Kokkos::ThreadVectorRange(team, rows.width),
                           [&](const Index x) { body(n, c, z, y, x); });
    });
  };
  Kokkos::parallel_for(Impl::kernelLabel(label),
                       rowPolicy(exec, rows, kernel, Kokkos::ParallelForTag()), kernel);
}

/// The same with a per-row value: rowValue(n, c, z, y) is computed once per row (on every vector
/// lane of the row's thread on a GPU, so it must give the same on all of them) and passed on as
/// body(n, c, z, y, x, value). Row-invariant work (a sample's hash key, a pooling row's weights)
/// then happens once per row: the compiler cannot hoist a load out of the cell loop past its
/// stores, and every such load adds a run-time alias check to the vectorised loop (GCC gives up
/// past 10). The value is a plain value, not a function: nvcc's device compiler exhausted the
/// memory on a row function returning the cell lambda.
template <class ExecSpace, class RowValue, class Body>
void forEachRowCell(const char* label, const ExecSpace& exec, const OwnedRows& rows,
                    const RowValue& rowValue, const Body& body) {
  if (rows.empty()) return;
  using Member = typename RowPolicy<ExecSpace>::member_type;
  const auto kernel = KOKKOS_LAMBDA(const Member& team) {
    Index n, c, z;
    rows.decode(team.league_rank(), n, c, z);
    Kokkos::parallel_for(Kokkos::TeamThreadRange(team, rows.e1), [&](const Index y) {
      const auto value = rowValue(n, c, z, y);
      Kokkos::parallel_for(Kokkos::ThreadVectorRange(team, rows.width),
                           [&](const Index x) { body(n, c, z, y, x, value); });
    });
  };
  Kokkos::parallel_for(Impl::kernelLabel(label),
                       rowPolicy(exec, rows, kernel, Kokkos::ParallelForTag()), kernel);
}

/// The sum over every cell of body(n, c, z, y, x, sum), which adds the cell's term to sum. Rows
/// are summed first, then the rows of a plane, then the planes: the order (and so the last bits)
/// differs from a flat sum over the cells.
template <class ExecSpace, class Body>
double sumOverRowCells(const char* label, const ExecSpace& exec, const OwnedRows& rows,
                       const Body& body) {
  double result = 0;
  if (rows.empty()) return result;
  using Member = typename RowPolicy<ExecSpace>::member_type;
  const auto kernel = KOKKOS_LAMBDA(const Member& team, double& sum) {
    Index n, c, z;
    rows.decode(team.league_rank(), n, c, z);
    double plane = 0;
    Kokkos::parallel_reduce(
        Kokkos::TeamThreadRange(team, rows.e1),
        [&](const Index y, double& planeSum) {
          double row = 0;
          Kokkos::parallel_reduce(
              Kokkos::ThreadVectorRange(team, rows.width),
              [&](const Index x, double& s) { body(n, c, z, y, x, s); }, row);
          Kokkos::single(Kokkos::PerThread(team), [&] { planeSum += row; });
        },
        plane);
    Kokkos::single(Kokkos::PerTeam(team), [&] { sum += plane; });
  };
  Kokkos::parallel_reduce(Impl::kernelLabel(label),
                          rowPolicy(exec, rows, kernel, Kokkos::ParallelReduceTag()), kernel,
                          result);
  return result;
}

/// v := 0 over its whole span (ghosts included), on `exec`. Kokkos::deep_copy(exec, v, 0) does
/// the same but allocates in the step loop: it builds its kernel label ("Kokkos::ViewFill-5D")
/// as a heap string at every call, and on Kokkos 4 its RangePolicy has no chunk size, which
/// default-constructs an execution space instance (core/RangePolicy.hpp).
template <class ExecSpace, class View>
void zeroFill(const ExecSpace& exec, const View& v) {
  using T = typename View::non_const_value_type;
  if (!v.span_is_contiguous()) fail("zeroFill: view '", v.label(), "' is not contiguous");
  T* const p = v.data();
  Kokkos::parallel_for(
      kernelLabel("hybrid3d::zeroFill"), rangePolicy(exec, 0, static_cast<Index>(v.span())),
      KOKKOS_LAMBDA(const Index i) { p[i] = T(0); });
}

/// True when both tensors hold the same owned cells (same N, C, decomposition and coordinates).
template <class T, class U, class M>
bool sameOwnedLayout(const DistTensor<T, M>& a, const DistTensor<U, M>& b) {
  return a.batch() == b.batch() && a.channels() == b.channels() &&
         a.decomposition() == b.decomposition() && a.coords() == b.coords();
}

}  // namespace Impl
}  // namespace hybrid3d
