#include <algorithm>
#include <cstdio>

#include <hybrid3d/core/Error.hpp>
#include <hybrid3d/plan/LayoutSearch.hpp>
#include <hybrid3d/plan/RankMemory.hpp>
#include <hybrid3d/plan/RecomputeChoice.hpp>

namespace hybrid3d {

namespace {

// The spatial coordinates of spatial rank `rank` (row-major, as MPI_Cart).
Int3 coordsOf(int rank, const Int3& grid) {
  return {rank / (grid[1] * grid[2]), rank / grid[2] % grid[1], rank % grid[2]};
}

// The grid of every layer of `config` on `layout` (throws what planModel throws).
std::vector<Int3> layerGridsOf(const TrainConfig& config, const Layout& layout) {
  const ModelOptions o = groupModelOptions(configFor(config, layout), layout.groups);
  std::vector<Int3> grids;
  for (const LayerPlan& l : planModel(o, layout.grid).layers) grids.push_back(l.grid);
  return grids;
}

}  // namespace

Layout parseLayout(const std::string& text) {
  const auto colon = text.find(':'), slash = text.find('/');
  Layout l;
  try {
    if (colon == std::string::npos) throw Error("no ':'");
    std::size_t used = 0;
    l.groups = std::stoi(text.substr(0, colon), &used);
    if (used != colon || l.groups < 1) throw Error("bad groups");
    l.grid = parseGridSpec(
        text.substr(colon + 1, slash == std::string::npos ? slash : slash - colon - 1));
    if (slash != std::string::npos) {
      l.minimumBoxWidth = std::stoi(text.substr(slash + 1), &used);
      if (used != text.size() - slash - 1 || l.minimumBoxWidth < 1) throw Error("bad width");
    }
  } catch (const std::exception&) {
    fail("layout '", text,
         "' is not G:DxHxW or G:DxHxW/K (data-parallel groups : spatial grid / minimum box "
         "width, e.g. 4:2x1x1 or 4:8x2x2/16)");
  }
  return l;
}

std::string toString(const Layout& l) {
  const std::string s = std::to_string(l.groups) + ":" + toString(l.grid);
  return l.minimumBoxWidth > 0 ? s + "/" + std::to_string(l.minimumBoxWidth) : s;
}

TrainConfig configFor(const TrainConfig& config, const Layout& layout) {
  TrainConfig c = config;
  if (layout.minimumBoxWidth > 0) c.model.layerGrids = {{}, layout.minimumBoxWidth};
  return c;
}

RunPlan planRunIn(Precision p, const TrainConfig& config, const Int3& grid, int groups,
                  const SetListing& train, const SetListing& validation) {
  return withPrecision(p, [&](auto tag) {
    return planRun<typename decltype(tag)::type>(config, grid, groups, train, validation);
  });
}

template <class T>
LayoutChoice costLayout(const TrainConfig& config, const Layout& layout, const Machine& machine,
                        double memoryLimit, const SetListing& train, const SetListing& validation,
                        const IoModel& io) {
  LayoutChoice c;
  c.layout = layout;
  // `auto`: planned without recomputation, then with the segments chosen for this layout (where
  // not even `all` fits, with `all`: the least it can hold; it does not fit).
  const bool chooses = config.model.recompute.mode == RecomputeOption::Mode::Auto;
  TrainConfig planned = configFor(config, layout);
  if (chooses) planned.model.recompute = {};
  c.run = planRunIn(precisionOf<T>(), planned, layout.grid, layout.groups, train, validation);
  c.run.fixedMemoryBytes = fixedMemoryBytes(machine);
  if (chooses) {
    const RecomputeChoice choice = chooseRecompute(c.run, machine, memoryLimit, io);
    c.run = withRecompute(c.run, choice.option);
    c.recomputeChosen = true;
  }
  c.cost = predictSlowestRank(c.run, machine, io);
  c.firstRank = predictStep(c.run, machine, {0, 0, 0}, io);
  // On layer grids the rank holding the most need not be the slowest (a redistribution's
  // buffers, a sub-grid with one sample more).
  const std::size_t largest =
      countStep(c.run, coordsOf(c.run.largestRank(), layout.grid), io).memoryBytes;
  c.memoryBytes = std::max({c.cost.memoryBytes, c.firstRank.memoryBytes, largest});
  const double limit = memoryLimit > 0 ? memoryLimit : machine.rank.memoryGiB * double(1 << 30);
  c.fits = limit <= 0 || double(c.memoryBytes) <= limit;
  return c;
}

template <class T>
std::vector<LayoutChoice> searchLayouts(const TrainConfig& config, int ranks,
                                        const Machine& machine, double memoryLimit,
                                        const SetListing& train, const SetListing& validation,
                                        const IoModel& io) {
  std::vector<LayoutChoice> all;
  for (int g = 1; g <= ranks; ++g) {
    if (ranks % g != 0 || !batchSplits(config, g)) continue;
    const int p = ranks / g;
    for (int d = 1; d <= p; ++d)
      for (int h = 1; h <= p / d; ++h) {
        if (p % (d * h) != 0) continue;
        // The deck's layer grids, then ever wider minimum boxes (ever coarser deep layers);
        // a width that changes no layer's grid is the same layout again.
        std::vector<std::vector<Int3>> seen;
        for (int k = 0; k <= config.model.inputWidth; k = k == 0 ? 2 : 2 * k) {
          const Layout l{g, {d, h, p / (d * h)}, k};
          try {
            std::vector<Int3> grids = layerGridsOf(config, l);
            if (std::find(seen.begin(), seen.end(), grids) != seen.end()) continue;
            seen.push_back(std::move(grids));
            all.push_back(costLayout<T>(config, l, machine, memoryLimit, train, validation, io));
          } catch (const Error&) {
            // the model refuses this grid (a layer too thin for it): not a layout to run
          }
        }
      }
  }
  std::stable_sort(all.begin(), all.end(), [](const LayoutChoice& a, const LayoutChoice& b) {
    if (a.fits != b.fits) return a.fits;
    return a.cost.phases.step() < b.cost.phases.step();
  });
  return all;
}

#define HYBRID3D_INSTANTIATE(T)                                                                  \
  template LayoutChoice costLayout<T>(const TrainConfig&, const Layout&, const Machine&, double, \
                                      const SetListing&, const SetListing&, const IoModel&);     \
  template std::vector<LayoutChoice> searchLayouts<T>(const TrainConfig&, int, const Machine&,   \
                                                      double, const SetListing&,                 \
                                                      const SetListing&, const IoModel&);
HYBRID3D_INSTANTIATE(float)
HYBRID3D_INSTANTIATE(double)
HYBRID3D_INSTANTIATE(bfloat16)
HYBRID3D_INSTANTIATE(float16)
#undef HYBRID3D_INSTANTIATE

}  // namespace hybrid3d
