#include <algorithm>
#include <cstdio>

#include <hybrid3d/core/Error.hpp>
#include <hybrid3d/train/LayoutSearch.hpp>

namespace hybrid3d {

Layout parseLayout(const std::string& text) {
  const auto colon = text.find(':');
  Layout l;
  try {
    if (colon == std::string::npos) throw Error("no ':'");
    std::size_t used = 0;
    l.groups = std::stoi(text.substr(0, colon), &used);
    if (used != colon || l.groups < 1) throw Error("bad groups");
    l.grid = parseGridSpec(text.substr(colon + 1));
  } catch (const std::exception&) {
    fail("layout '", text, "' is not G:DxHxW (data-parallel groups : spatial grid, e.g. 4:2x1x1)");
  }
  return l;
}

std::string toString(const Layout& l) { return std::to_string(l.groups) + ":" + toString(l.grid); }

template <class T>
LayoutChoice costLayout(const TrainConfig& config, const Layout& layout, const Machine& machine,
                        double memoryLimit, const SetListing& train, const SetListing& validation,
                        const IoModel& io) {
  LayoutChoice c;
  c.layout = layout;
  c.run = planRun<T>(config, layout.grid, layout.groups, train, validation);
  c.cost = predictSlowestRank(c.run, machine, io);
  c.firstRank = predictStep(c.run, machine, {0, 0, 0}, io);
  const double limit = memoryLimit > 0 ? memoryLimit : machine.rank.memoryGiB * double(1 << 30);
  c.fits = limit <= 0 || double(c.cost.memoryBytes) <= limit;
  return c;
}

template <class T>
std::vector<LayoutChoice> searchLayouts(const TrainConfig& config, int ranks,
                                        const Machine& machine, double memoryLimit,
                                        const SetListing& train, const SetListing& validation,
                                        const IoModel& io) {
  std::vector<LayoutChoice> all;
  for (int g = 1; g <= ranks; ++g) {
    if (ranks % g != 0 || config.globalBatch % g != 0) continue;
    const int p = ranks / g;
    for (int d = 1; d <= p; ++d)
      for (int h = 1; h <= p / d; ++h) {
        if (p % (d * h) != 0) continue;
        const Layout l{g, {d, h, p / (d * h)}};
        try {
          all.push_back(costLayout<T>(config, l, machine, memoryLimit, train, validation, io));
        } catch (const Error&) {
          // the model refuses this grid (a layer too thin for it): not a layout to run
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
#undef HYBRID3D_INSTANTIATE

}  // namespace hybrid3d
