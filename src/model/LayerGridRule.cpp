#include <hybrid3d/core/Error.hpp>
#include <hybrid3d/core/ItemList.hpp>
#include <hybrid3d/grid/ProcessGrid.hpp>
#include <hybrid3d/model/LayerGridRule.hpp>

namespace hybrid3d {

namespace {

std::string rangeText(const LayerGridEntry& e) {
  return (e.first == e.last ? e.first : e.first + ".." + e.last) + "=" + toString(e.dims);
}

}  // namespace

std::vector<LayerGridEntry> parseLayerGridEntries(const std::string& text) {
  std::vector<LayerGridEntry> entries;
  const std::vector<std::string> items = splitItems(text, ',');
  if (items.size() == 1 && items[0].empty()) return entries;  // "" or only blanks
  for (const std::string& item : items) {
    if (item.empty())
      fail("layer grids: an empty entry in \"", text, "\" (entries are FIRST..LAST=DxHxW, ",
           "separated by commas)");
    const std::size_t eq = item.find('=');
    if (eq == std::string::npos)
      fail("layer grids: entry \"", item, "\" is not FIRST..LAST=DxHxW or NAME=DxHxW");
    const std::string names = trimBlanks(item.substr(0, eq));
    LayerGridEntry e;
    const std::size_t dots = names.find("..");
    e.first = trimBlanks(names.substr(0, dots));
    e.last = dots == std::string::npos ? e.first : trimBlanks(names.substr(dots + 2));
    if (e.first.empty() || e.last.empty()) fail("layer grids: entry \"", item, "\" names no layer");
    try {
      e.dims = parseGridSpec(trimBlanks(item.substr(eq + 1)));
    } catch (const Error& err) {
      fail("layer grids: entry \"", item, "\": ", err.what());
    }
    entries.push_back(e);
  }
  return entries;
}

std::string toString(const std::vector<LayerGridEntry>& entries) {
  std::string s;
  for (const LayerGridEntry& e : entries) s += (s.empty() ? "" : ", ") + rangeText(e);
  return s;
}

Int3 finestCoarsening(const Int3& spatial, const Index3& extents, int width) {
  Int3 best{1, 1, 1};
  long long bestRanks = 0;
  Index bestWidth = -1;
  // Count D down first so that among equals the one cut along D wins (strict comparisons).
  for (int d = spatial[0]; d >= 1; --d)
    for (int h = spatial[1]; h >= 1; --h)
      for (int w = spatial[2]; w >= 1; --w) {
        if (spatial[0] % d || spatial[1] % h || spatial[2] % w) continue;
        const Int3 g{d, h, w};
        Index narrowest = -1;  // the smallest box along a cut dimension
        bool fits = true;
        for (int i = 0; i < 3; ++i) {
          if (g[i] == 1) continue;
          const Index box = extents[i] / g[i];  // blocks differ by one: the smallest
          fits = fits && box >= width;
          narrowest = narrowest < 0 ? box : std::min(narrowest, box);
        }
        if (!fits) continue;
        const long long ranks = 1LL * d * h * w;
        if (ranks > bestRanks || (ranks == bestRanks && narrowest > bestWidth)) {
          best = g;
          bestRanks = ranks;
          bestWidth = narrowest;
        }
      }
  return best;
}

LayerGridAssigner::LayerGridAssigner(const LayerGridRule& rule, const Int3& spatial)
    : rule_(rule), spatial_(spatial), met_(rule.entries.size(), 0) {}

Int3 LayerGridAssigner::next(const std::string& name, bool volumeInput, const Index3& inputExtents,
                             const Int3& inputGrid) {
  const auto& entries = rule_.entries;
  for (int i = 0; i < int(entries.size()); ++i) {
    if (entries[i].first != name || met_[i] != 0) continue;
    if (open_ >= 0)
      fail("layer grids: entries ", rangeText(entries[open_]), " and ", rangeText(entries[i]),
           " overlap at layer '", name, "'");
    open_ = i;
    met_[i] = 1;
  }
  if (open_ >= 0) {
    const int i = open_;
    if (entries[i].last == name) {
      met_[i] = 2;
      open_ = -1;
    }
    return entries[i].dims;
  }
  if (!volumeInput) return inputGrid;
  if (rule_.minimumBoxWidth > 0)
    return finestCoarsening(spatial_, inputExtents, rule_.minimumBoxWidth);
  return spatial_;
}

void LayerGridAssigner::finish() const {
  for (std::size_t i = 0; i < rule_.entries.size(); ++i) {
    const LayerGridEntry& e = rule_.entries[i];
    if (met_[i] == 0)
      fail("layer grids: entry ", rangeText(e), ": the model has no layer '", e.first, "'");
    if (met_[i] == 1)
      fail("layer grids: entry ", rangeText(e), ": no layer '", e.last, "' after '", e.first, "'");
  }
}

}  // namespace hybrid3d
