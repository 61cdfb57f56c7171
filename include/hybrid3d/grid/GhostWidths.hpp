#pragma once
/// \file
/// Ghost widths: one rank's (GhostWidths) and every rank's of a process grid (GhostMap).
///
/// A strided window over an uneven block split overhangs by different amounts on different
/// ranks (average pool k3 s2 p1 over D = 9 on 6 ranks: rank 4 needs 2 high ghosts, rank 3 only
/// 1), so ghost widths are per rank: giving every rank the largest would make rank 3 reach two
/// ranks away and refuse a grid whose real needs all lie on immediate neighbours. Windows are
/// separable, so a rank's widths along dimension i depend only on its grid coordinate along i:
/// a GhostMap is three short tables, filled from global data (the decomposition and the layer's
/// window). Every rank holds the whole map, so a halo plans what each neighbour expects from it
/// without a message.

#include <array>
#include <memory>
#include <vector>

#include <hybrid3d/core/Error.hpp>
#include <hybrid3d/core/Types.hpp>

namespace hybrid3d {

/// Ghost cells per side along (d, h, w).
struct GhostWidths {
  Int3 lo{0, 0, 0};
  Int3 hi{0, 0, 0};

  static GhostWidths uniform(int w) { return {{w, w, w}, {w, w, w}}; }
  bool none() const { return lo == Int3{0, 0, 0} && hi == Int3{0, 0, 0}; }
  friend bool operator==(const GhostWidths& a, const GhostWidths& b) {
    return a.lo == b.lo && a.hi == b.hi;
  }
  friend bool operator!=(const GhostWidths& a, const GhostWidths& b) { return !(a == b); }
};

/// The ghost widths of every rank of a grid: lo(i, k) and hi(i, k) for grid coordinate k along
/// dimension i. The default map has no ghosts on any grid. The tables are shared between copies
/// (tensors are copied by value in the step; copying a map allocates nothing).
class GhostMap {
public:
  GhostMap() = default;
  /// No ghosts yet on a grid of `dims` (fill with set).
  explicit GhostMap(const Int3& dims) : GhostMap(dims, GhostWidths{}) {}
  /// The same widths on every rank of a grid of `dims`.
  GhostMap(const Int3& dims, const GhostWidths& every)
      : dims_(dims), tables_(std::make_shared<Tables>()) {
    for (int i = 0; i < 3; ++i) {
      if (dims[i] < 1) fail("ghost map: grid ", toString(dims), " has a dimension < 1");
      if (every.lo[i] < 0 || every.hi[i] < 0) fail("ghost map: negative ghost width");
      tables_->lo[i].assign(dims[i], every.lo[i]);
      tables_->hi[i].assign(dims[i], every.hi[i]);
    }
  }

  /// Set-up only: the widths of grid coordinate `coord` along `dim`.
  void set(int dim, int coord, int lo, int hi) {
    if (!tables_) fail("ghost map: set() on a map without a grid");
    if (lo < 0 || hi < 0) fail("ghost map: negative ghost width");
    if (tables_.use_count() > 1) tables_ = std::make_shared<Tables>(*tables_);
    tables_->lo[dim].at(coord) = lo;
    tables_->hi[dim].at(coord) = hi;
  }
  /// {0, 0, 0} for the default map (any grid).
  const Int3& dims() const { return dims_; }
  int lo(int dim, int coord) const { return tables_ ? tables_->lo[dim].at(coord) : 0; }
  int hi(int dim, int coord) const { return tables_ ? tables_->hi[dim].at(coord) : 0; }
  /// The widths of the rank at `coords` (an empty owned box included: DistTensor.hpp).
  GhostWidths at(const Int3& coords) const {
    GhostWidths g;
    for (int i = 0; i < 3; ++i) {
      g.lo[i] = lo(i, coords[i]);
      g.hi[i] = hi(i, coords[i]);
    }
    return g;
  }
  /// True when no rank has ghosts (then a layer needs no halo at all).
  bool none() const {
    if (!tables_) return true;
    for (int i = 0; i < 3; ++i)
      for (int k = 0; k < dims_[i]; ++k)
        if (tables_->lo[i][k] != 0 || tables_->hi[i][k] != 0) return false;
    return true;
  }
  /// Fails naming `what` unless the map can describe ghosts on a grid of `dims`.
  void checkGrid(const Int3& grid, const char* what) const {
    if (!none() && dims_ != grid)
      fail(what, ": ghost widths for grid ", toString(dims_), " used on grid ", toString(grid));
  }

  friend bool operator==(const GhostMap& a, const GhostMap& b) {
    if (a.none() || b.none()) return a.none() && b.none();
    return a.dims_ == b.dims_ && a.tables_->lo == b.tables_->lo && a.tables_->hi == b.tables_->hi;
  }
  friend bool operator!=(const GhostMap& a, const GhostMap& b) { return !(a == b); }

private:
  struct Tables {
    std::array<std::vector<int>, 3> lo, hi;
  };
  Int3 dims_{0, 0, 0};
  std::shared_ptr<Tables> tables_;  // null: no ghosts anywhere
};

}  // namespace hybrid3d
