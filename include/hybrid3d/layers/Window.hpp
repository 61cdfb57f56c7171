#pragma once
/// \file
/// Sliding-window arithmetic shared by every spatial layer (convolution, transposed
/// convolution, pooling): output extents, the input range an output range reads, and from that
/// the ghost widths the layer's input tensor needs on a given process grid.
///
/// Input and output tensors are each block-decomposed over the same grid (docs/design.md section
/// 3), so with strides and uneven splits the input a rank needs can start before or end after the
/// input it owns; each rank's ghost widths are its own overhang, per side (grid/GhostWidths.hpp).
/// Everything here is computed from global data, so all ranks agree on every answer and know
/// every other rank's widths.

#include <string>

#include <hybrid3d/comm/HaloPlan.hpp>
#include <hybrid3d/core/Error.hpp>
#include <hybrid3d/core/IndexDivision.hpp>
#include <hybrid3d/grid/BlockDecomposition.hpp>
#include <hybrid3d/grid/DistTensor.hpp>

namespace hybrid3d {

/// A cubic-or-not window: kernel, stride and symmetric zero padding along (d, h, w).
struct Window {
  Int3 kernel{1, 1, 1};
  Int3 stride{1, 1, 1};
  Int3 padding{0, 0, 0};

  static Window cubic(int k, int s, int p) { return {{k, k, k}, {s, s, s}, {p, p, p}}; }
};

/// Half-open range of input indices (may reach into the padding: < 0 or >= extent).
struct IndexRange {
  Index first = 0, last = 0;
};

/// Convolution / pooling: output o reads inputs [o*s - p, o*s - p + k).
inline Index windowOutputExtent(Index n, int k, int s, int p) {
  const Index span = n + 2 * p - k;
  return span < 0 ? 0 : span / s + 1;
}
inline IndexRange windowInputRange(Index a, Index b, int k, int s, int p) {
  return {a * s - p, (b - 1) * s - p + k};
}

/// Transposed convolution: input i writes outputs [i*s - p, i*s - p + k), so output o reads
/// inputs i with o + p - k < i*s <= o + p.
inline Index transposedOutputExtent(Index n, int k, int s, int p) {
  return n == 0 ? 0 : (n - 1) * s - 2 * p + k;
}
inline IndexRange transposedInputRange(Index a, Index b, int k, int s, int p) {
  return {floorDiv(a + p - k, s) + 1, floorDiv(b - 1 + p, s) + 1};
}

inline Index3 windowOutputExtents(const Index3& n, const Window& w) {
  return {windowOutputExtent(n[0], w.kernel[0], w.stride[0], w.padding[0]),
          windowOutputExtent(n[1], w.kernel[1], w.stride[1], w.padding[1]),
          windowOutputExtent(n[2], w.kernel[2], w.stride[2], w.padding[2])};
}

/// Ghost widths of the input on every rank, so that each rank's output box can be computed from
/// its local input array. `inputRange(dim, a, b)` gives the input range output range [a, b)
/// reads along `dim`. A rank that owns output but no input (an upsampling layer whose input
/// extent is smaller than the grid) gets ghosts like any other: its empty box sits at the end
/// of the block below it, so the widths reach into that rank (DistTensor.hpp). A rank owning no
/// output needs none. Throws naming `layer` (comm/HaloPlan.hpp's one-line message) when some
/// rank needs a voxel that is not on an immediate neighbour.
template <class InputRangeFn>
GhostMap requiredGhosts(const BlockDecomposition& in, const BlockDecomposition& out,
                        InputRangeFn inputRange, const std::string& layer) {
  GhostMap g(out.dims());
  for (int dim = 0; dim < 3; ++dim) {
    for (int k = 0; k < out.dims()[dim]; ++k) {
      if (out.extent(dim, k) == 0) continue;
      const IndexRange need = inputRange(dim, out.begin(dim, k), out.end(dim, k));
      const Index lo = in.begin(dim, k) - need.first, hi = need.last - in.end(dim, k);
      g.set(dim, k, lo > 0 ? static_cast<int>(lo) : 0, hi > 0 ? static_cast<int>(hi) : 0);
    }
  }
  checkGhostWidths(in, g, layer);
  return g;
}

/// The usual case: a sliding window (convolution or pooling).
inline GhostMap windowGhosts(const BlockDecomposition& in, const BlockDecomposition& out,
                             const Window& w, const std::string& layer) {
  return requiredGhosts(
      in, out,
      [&](int d, Index a, Index b) {
        return windowInputRange(a, b, w.kernel[d], w.stride[d], w.padding[d]);
      },
      layer);
}

}  // namespace hybrid3d
