#pragma once
// How a convolution overlaps its halo exchange with computation: this rank's owned output box
// is cut into an INTERIOR, whose input windows read no ghost cell that a neighbour fills, and a
// SHELL of up to six slabs around it that do. The interior can run between Halo::gatherBegin and
// gatherEnd; the shell runs once the neighbours' data has arrived. (Ghosts outside the domain
// hold the zero padding from gatherBegin on, so sides at the domain boundary do not shrink the
// interior: on a 2x1x1 grid each rank's shell is one slab.)
//
// In backward-data the roles turn around: the shell's contributions are all that reaches the
// ghost cells of dx, so the shell runs first, the adjoint scatterAdd starts, and the interior
// runs while its messages fly.

#include <algorithm>
#include <vector>

#include <hybrid3d/core/Types.hpp>

namespace hybrid3d::Impl {

// A box of output voxels relative to the owned output box: voxels [lo, lo + extents).
struct OutputPart {
  Index3 lo{0, 0, 0};
  Index3 extents{0, 0, 0};

  bool empty() const { return extents[0] <= 0 || extents[1] <= 0 || extents[2] <= 0; }
  Index size() const { return empty() ? 0 : extents[0] * extents[1] * extents[2]; }
};

// The interior and the shell slabs of one rank's output box.
struct OutputSplit {
  OutputPart interior;
  std::vector<OutputPart> shell;  // disjoint, together with interior: the whole box
};

// Per dimension, the local (ghosted) input indices [readyLo, readyHi) that hold their values
// before the exchange completes: the owned cells, grown by the ghosts of every side whose
// ghosts are all padding (outside the domain).
struct ReadyInput {
  Index3 lo{0, 0, 0}, hi{0, 0, 0};
};

// `out`: owned output extents; `inOffset`: local input index of tap 0 of output voxel 0;
// kernel k, stride s. Output voxel o (per dimension) reads local inputs [o*s + inOffset,
// o*s + inOffset + k). The interior is empty when no output voxel avoids the remote ghosts;
// the shell is then the whole box.
inline OutputSplit splitOutputBox(const Index3& out, const Index3& inOffset, Index k, Index s,
                                  const ReadyInput& ready) {
  OutputSplit split;
  Index a[3], b[3];
  bool interior = true;
  for (int d = 0; d < 3; ++d) {
    // First o with o*s + inOffset >= ready.lo; one past the last o with o*s + inOffset + k <=
    // ready.hi (division rounding towards -inf on the left bound is not needed: a >= 0).
    const Index lo = ready.lo[d] - inOffset[d];
    a[d] = lo <= 0 ? 0 : (lo + s - 1) / s;
    const Index room = ready.hi[d] - k - inOffset[d];
    b[d] = room < 0 ? 0 : std::min(out[d], room / s + 1);
    if (a[d] >= b[d]) interior = false;
  }
  if (!interior) {
    if (out[0] > 0 && out[1] > 0 && out[2] > 0) split.shell.push_back({{0, 0, 0}, out});
    return split;
  }
  split.interior = {{a[0], a[1], a[2]}, {b[0] - a[0], b[1] - a[1], b[2] - a[2]}};
  // Peel D, then H, then W: the slabs along W (one contiguous run per row) are the smallest.
  auto add = [&](Index3 lo, Index3 hi) {
    const OutputPart p{lo, {hi[0] - lo[0], hi[1] - lo[1], hi[2] - lo[2]}};
    if (!p.empty()) split.shell.push_back(p);
  };
  add({0, 0, 0}, {a[0], out[1], out[2]});
  add({b[0], 0, 0}, {out[0], out[1], out[2]});
  add({a[0], 0, 0}, {b[0], a[1], out[2]});
  add({a[0], b[1], 0}, {b[0], out[1], out[2]});
  add({a[0], a[1], 0}, {b[0], b[1], a[2]});
  add({a[0], a[1], b[2]}, {b[0], b[1], out[2]});
  return split;
}

}  // namespace hybrid3d::Impl
