#pragma once
// Definitions of Dropout (included by Dropout.hpp; instantiated in src/layers/Dropout.cpp).

#include <algorithm>
#include <cstdint>

#include <hybrid3d/core/KernelLabel.hpp>
#include <hybrid3d/core/Scalar16.hpp>
#include <hybrid3d/kernels/HostRows.hpp>

namespace hybrid3d {

template <class T, class M>
Dropout<T, M>::Dropout(const LayerGrid& grid, const std::string& name, const TensorShape& input,
                       const Options& options)
    : options_(options) {
  LayerNaming naming = LayerNaming::quoted("Dropout", name);
  const std::string& label = naming.label;
  if (!(options.keep > 0.0 && options.keep <= 1.0))
    fail(label, ": keep probability ", options.keep, " outside (0, 1]");
  if (input.batch < 0 || input.channels < 0)
    fail(label, ": input has negative batch ", input.batch, " or channels ", input.channels);
  if (input.extents[2] > Impl::DropoutMask::kMaxWidth)
    fail(label, ": input width ", input.extents[2], " exceeds ", Impl::DropoutMask::kMaxWidth,
         " (the mask hashes a row's columns in 16 bits)");
  // Element-wise: the output has the input's shape, and no ghosts are read.
  geometry_ = SpatialGeometry(std::move(naming), grid.dims(), grid.coords(), input, input,
                              InputGhosts::Any);
  // FNV-1a of the name: a layer id every rank and every grid agrees on.
  std::uint64_t h = 0xcbf29ce484222325ull;
  for (unsigned char ch : name) h = (h ^ ch) * 0x100000001b3ull;
  layerKey_ = h;
  sampleOffset_ = grid.subGrid();
  sampleStride_ = grid.subGrids();
  mask_.threshold = Impl::DropoutMask::thresholdOf(options.keep);
  setStep(0, 0);
}

template <class T, class M>
void Dropout<T, M>::setStep(std::int64_t step, std::int64_t firstGlobalSample) {
  mask_.prefix = Impl::splitmix64(Impl::splitmix64(Impl::splitmix64(options_.seed) ^ layerKey_) ^
                                  std::uint64_t(step));
  firstSample_ = firstGlobalSample + sampleOffset_;
}

template <class T, class M>
void Dropout<T, M>::check(const feature_type& t, const char* what) const {
  const TensorShape& shape = geometry_.inputShape();
  const Index F = Index(shape.channels) * shape.extents[0] * shape.extents[1] * shape.extents[2];
  if (Index(t.extent(0)) != shape.batch || Index(t.extent(1)) != F)
    fail(geometry_.label(), ": view ", what, " is ", t.extent(0), "x", t.extent(1), ", expected ",
         shape.batch, "x", F);
}

template <class T, class M>
void Dropout<T, M>::apply(const char* label, const execution_space& exec, const tensor_type& x,
                          const tensor_type& y) const {
  const Impl::OwnedRows rows(x);
  const auto ox = Impl::ghostOffset(x), oy = Impl::ghostOffset(y);
  const auto xv = x.view(), yv = y.view();
  if (identity()) {
    if (xv.data() == yv.data() && ox.d == oy.d && ox.h == oy.h && ox.w == oy.w) return;
    Impl::forEachRowCell(
        label, exec, rows,
        KOKKOS_LAMBDA(const Index n, const Index c, const Index z, const Index yy, const Index xx) {
          copyValue(yv(n, c, oy.d + z, oy.h + yy, oy.w + xx),
                    xv(n, c, ox.d + z, ox.h + yy, ox.w + xx));
        });
    return;
  }
  const Impl::DropoutMask mask = mask_;
  const std::int64_t first = firstSample_, stride = sampleStride_;
  using C = ComputeOf<T>;  // float for the 16-bit types: the product rounded once
  const C scale = C(1.0 / options_.keep);
  const Index3& e = x.globalExtents();
  const Index D = e[0], H = e[1];
  const Index3& lo = x.owned().lo;
  const Index d0 = lo[0], h0 = lo[1], w0 = lo[2];
  // Per row: its key (two splitmix64); per cell: a 16-bit hash of its global column.
  constexpr bool host =
      Kokkos::SpaceAccessibility<Kokkos::HostSpace, typename M::memory_space>::accessible;
  if constexpr (host) {
    // Host: the row as one loop with the column counted in 16 bits beside the cell index.
    // Derived from the 64-bit cell index, the vectorised loop built each 16-bit column vector
    // from four 64-bit ones (a dozen shuffles and adds per eight cells, 49 instructions per
    // eight cells against 34 now); a 16-bit counter of its own is one add. The same decisions:
    // the hash reads only the column's low 16 bits (the constructor caps the width at 2^16).
    // Measured side by side, faster at both sizes (docs/performance-notes.md, "Dropout").
    // Devices keep one lane per cell (below). The rows are Impl::forEachOwnedRowOnHost's, built
    // for AVX2 where the CPU has it: the hash is integer arithmetic, the product one multiply,
    // so the bits do not depend on it; the 16-bit types' conversions vectorise there
    // (kernels/HostRows.hpp).
    const auto xr = Impl::hostRowStart(x), yr = Impl::hostRowStart(y);
    const Impl::HostIsa isa = Impl::bestHostIsa();
    Impl::forEachOwnedRowOnHost(
        label, exec, rows, isa,
        [=](const Index n, const Index c, const Index z,
            const Index yy) HYBRID3D_HOST_INLINE_LAMBDA {
          const Impl::DropoutMask m = mask;  // locals: see HostRows.hpp
          const C s = scale;
          const Index width = rows.width;
          const Impl::DropoutRowKey key =
              m.rowKey(first + n * stride, (c * D + d0 + z) * H + h0 + yy);
          const T* const in = xr.at(n, c, z, yy);  // no restrict: y may be x
          T* const out = yr.at(n, c, z, yy);
          if constexpr (isScalar16<T>) {
#if HYBRID3D_HOST_AVX2
            // AVX2: fused in registers, the decisions 16 at a time beside the products.
            if (Impl::fusedRows<T>(isa))
              return Impl::mapRowFused(
                  width, in, out, [s](const auto& v) HYBRID3D_HOST_INLINE_LAMBDA { return v * s; },
                  Impl::DropoutKeptLanes(m, key, std::uint16_t(w0)));
#endif
            // half on its float copies: a chunk's decisions first, 16 to a vector
            // (DropoutMask::keptRun), then its products (Impl::mapRowKept). bfloat16 on the
            // baseline keeps the hash inline (below).
            if constexpr (Impl::kRowsThroughFloats<T>) {
              alignas(32) std::int16_t keep[Impl::kFloatChunk];
              for (Index from = 0; from < width; from += Impl::kFloatChunk) {
                const Index count = std::min(Impl::kFloatChunk, width - from);
                m.keptRun(key, std::uint16_t(w0 + from), count, keep);
                Impl::mapRowKept(isa, count, in + from, out + from, keep,
                                 [s](const auto& v) HYBRID3D_HOST_INLINE_LAMBDA { return v * s; });
              }
              return;
            }
          }
          std::uint16_t column = std::uint16_t(w0);  // the hash inline
          for (Index xx = 0; xx < width; ++xx, ++column) {
            const C v = C(in[xx]);  // read on both sides of the select, or it is a branch
            out[xx] = T(m.kept(key, column) ? v * s : C(0));
          }
        });
    return;
  }
  Impl::forEachRowCell(
      label, exec, rows,
      KOKKOS_LAMBDA(const Index n, const Index c, const Index z, const Index yy) {
        return mask.rowKey(first + n * stride, (c * D + d0 + z) * H + h0 + yy);
      },
      KOKKOS_LAMBDA(const Index n, const Index c, const Index z, const Index yy, const Index xx,
                    const Impl::DropoutRowKey key) {
        const C v = C(xv(n, c, ox.d + z, ox.h + yy, ox.w + xx));
        yv(n, c, oy.d + z, oy.h + yy, oy.w + xx) =
            T(mask.kept(key, std::uint32_t(w0 + xx)) ? v * scale : C(0));
      });
}

template <class T, class M>
void Dropout<T, M>::apply(const char* label, const execution_space& exec, const feature_type& x,
                          const feature_type& y) const {
  const auto xv = x, yv = y;
  const Impl::OwnedRows rows(x);
  if (identity()) {
    if (xv.data() == yv.data()) return;
    Impl::forEachRowCell(
        label, exec, rows, KOKKOS_LAMBDA(const Index n, Index, Index, Index, const Index f) {
          copyValue(yv(n, f), xv(n, f));
        });
    return;
  }
  const Impl::DropoutMask mask = mask_;
  const std::int64_t first = firstSample_, stride = sampleStride_;
  using C = ComputeOf<T>;
  const C scale = C(1.0 / options_.keep);
  Impl::forEachRowCell(
      label, exec, rows, KOKKOS_LAMBDA(const Index n, Index, Index, Index, const Index f) {
        // Feature f is row f, column 0: a 64-bit key per element, but these views are small.
        yv(n, f) = T(mask.kept(mask.rowKey(first + n * stride, f), 0) ? C(xv(n, f)) * scale : C(0));
      });
}

template <class T, class M>
void Dropout<T, M>::forward(const execution_space& exec, const tensor_type& x,
                            const tensor_type& y) const {
  geometry_.checkInput(x, "input");
  geometry_.checkOutput(y, "output");
  apply("hybrid3d::Dropout::forward", exec, x, y);
}

template <class T, class M>
void Dropout<T, M>::backwardData(const execution_space& exec, const tensor_type& dy,
                                 const tensor_type& dx) const {
  geometry_.checkOutput(dy, "output gradient");
  geometry_.checkInput(dx, "input gradient");
  apply("hybrid3d::Dropout::backwardData", exec, dy, dx);
}

template <class T, class M>
void Dropout<T, M>::forward(const execution_space& exec, const feature_type& x,
                            const feature_type& y) const {
  check(x, "x");
  check(y, "y");
  apply("hybrid3d::Dropout::forward", exec, x, y);
}

template <class T, class M>
void Dropout<T, M>::backwardData(const execution_space& exec, const feature_type& dy,
                                 const feature_type& dx) const {
  check(dy, "dy");
  check(dx, "dx");
  apply("hybrid3d::Dropout::backwardData", exec, dy, dx);
}

}  // namespace hybrid3d
