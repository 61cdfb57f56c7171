#pragma once
/// \file
/// Which grid each layer of a model runs on (docs/design.md section 11): the spatial grid unless
/// the rule says otherwise. Two ways, as decks give them (Parallel/layer grids, Parallel/minimum
/// box width):
///   - entries "FIRST..LAST=DxHxW" (or "NAME=DxHxW"): every layer from FIRST to LAST in the
///     architecture's definition order runs on sub-grids of DxHxW ranks (any shape of at most
///     the spatial group's ranks, not only divisors);
///   - a minimum box width K (LBANN's min_distconv_width, generalised): a layer not named by an
///     entry runs on the finest coarsening of the spatial grid (each dimension divided by a
///     divisor of it) in which every rank's input box is at least K voxels wide along each
///     dimension that is cut.
/// A layer reading features (the dense part) that no entry names stays on its input's grid:
/// features have no extent to cut, only samples to spread. Layers whose grids differ are joined
/// by a redistribution (comm/Redistribute.hpp), inserted by the model builder.

#include <string>
#include <vector>

#include <hybrid3d/core/Types.hpp>

namespace hybrid3d {

struct LayerGridEntry {
  std::string first, last;  // layer names, first == last for one layer
  Int3 dims{1, 1, 1};
};

struct LayerGridRule {
  std::vector<LayerGridEntry> entries;
  int minimumBoxWidth = 0;  // K; 0: off
  bool empty() const { return entries.empty() && minimumBoxWidth <= 0; }
};

/// "conv4..pool4=4x2x1, conv5..fc3=1x1x1" -> entries; "" -> none. Throws naming the entry.
std::vector<LayerGridEntry> parseLayerGridEntries(const std::string& text);
std::string toString(const std::vector<LayerGridEntry>& entries);

/// The finest coarsening of `spatial` whose boxes over `extents` are all at least `width` voxels
/// wide along each cut dimension (1x1x1 at worst); among equals the one whose smallest box is
/// widest, then the one cut along D first (contiguous reads, as autoSpatialGrid).
Int3 finestCoarsening(const Int3& spatial, const Index3& extents, int width);

/// Applies a rule to the layers of one model as its builder meets them, in definition order.
class LayerGridAssigner {
public:
  LayerGridAssigner(const LayerGridRule& rule, const Int3& spatial);

  /// The grid of the next layer, `name`, whose (first) input has `inputExtents` (a volume) or
  /// is a feature matrix on `inputGrid`. Throws naming the entry when entries overlap.
  Int3 next(const std::string& name, bool volumeInput, const Index3& inputExtents,
            const Int3& inputGrid);
  /// Throws naming the first entry whose layers were not all met, in order.
  void finish() const;

private:
  LayerGridRule rule_;
  Int3 spatial_;
  int open_ = -1;         // the entry whose range the last layer was in
  std::vector<int> met_;  // per entry: 0 none, 1 its first, 2 its last too
};

}  // namespace hybrid3d
