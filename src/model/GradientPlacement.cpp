#include <algorithm>
#include <numeric>

#include <hybrid3d/core/Error.hpp>
#include <hybrid3d/model/GradientPlacement.hpp>

namespace hybrid3d {

namespace {

std::size_t roundUp(std::size_t bytes, std::size_t alignment) {
  return (bytes + alignment - 1) / alignment * alignment;
}

}  // namespace

bool livesOverlap(const BufferLife& a, const BufferLife& b) {
  auto meet = [](int f0, int l0, int f1, int l1) { return f0 <= l1 && f1 <= l0; };
  const bool aAgain = a.again >= 0, bAgain = b.again >= 0;
  return meet(a.first, a.last, b.first, b.last) ||
         (bAgain && meet(a.first, a.last, b.again, b.againLast)) ||
         (aAgain && meet(a.again, a.againLast, b.first, b.last)) ||
         (aAgain && bAgain && meet(a.again, a.againLast, b.again, b.againLast));
}

std::vector<std::size_t> placeByLifetime(const std::vector<BufferLife>& buffers,
                                         std::size_t alignment, std::size_t& arenaBytes) {
  // Largest first (the greedy-by-size rule of TensorFlow Lite's arena planner): the big buffers
  // claim the low offsets, the small ones fill the gaps their lives leave. Ties by index, so
  // the order (and every offset) is the same wherever the same buffers are placed.
  std::vector<std::size_t> order(buffers.size());
  std::iota(order.begin(), order.end(), std::size_t(0));
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    return buffers[a].bytes > buffers[b].bytes;
  });
  std::vector<std::size_t> offsets(buffers.size(), 0);
  std::vector<std::size_t> placed;  // indices, by increasing offset
  arenaBytes = 0;
  for (std::size_t i : order) {
    const BufferLife& b = buffers[i];
    if (b.first > b.last || (b.again >= 0 && (b.again <= b.last || b.again > b.againLast)))
      fail("memory placement: buffer ", i, " has a life that ends before it starts");
    const std::size_t size = roundUp(b.bytes, alignment);
    // The lowest gap between the placed buffers alive with this one that holds it.
    std::size_t at = 0;
    for (std::size_t j : placed) {
      if (!livesOverlap(b, buffers[j])) continue;
      if (offsets[j] >= at + size) break;
      at = std::max(at, offsets[j] + roundUp(buffers[j].bytes, alignment));
    }
    offsets[i] = at;
    placed.insert(std::upper_bound(placed.begin(), placed.end(), at,
                                   [&](std::size_t o, std::size_t j) { return o < offsets[j]; }),
                  i);
    arenaBytes = std::max(arenaBytes, at + size);
  }
  return offsets;
}

GradientPlacement placeGradients(const GradientEdges& edges) {
  const int n = static_cast<int>(edges.consumers.size());
  if (edges.bytes.size() != edges.consumers.size())
    fail("memory placement: ", edges.bytes.size(), " gradient sizes for ", n, " nodes");
  auto backwardAt = [n](int node) { return 2 * n - 1 - node; };
  std::vector<BufferLife> lives;
  int outputGradientRead = n - 1;  // the loss writes it once the forward pass is done
  for (int p = 0; p < n; ++p) {
    const auto& consumers = edges.consumers[p];
    if (edges.bytes[p].size() != consumers.size())
      fail("memory placement: node ", p, " has ", consumers.size(), " consumers but ",
           edges.bytes[p].size(), " gradient sizes");
    if (consumers.empty()) outputGradientRead = std::max(outputGradientRead, backwardAt(p));
    for (std::size_t k = 0; k < consumers.size(); ++k) {
      if (consumers[k] <= p || consumers[k] >= n)
        fail("memory placement: node ", p, " feeds node ", consumers[k], ", not a later one");
      lives.push_back({edges.bytes[p][k], backwardAt(consumers[k]), backwardAt(p)});
    }
  }
  lives.push_back({edges.outputGradientBytes, n - 1, outputGradientRead});

  GradientPlacement out;
  const std::vector<std::size_t> offsets =
      placeByLifetime(lives, gradientAlignment, out.arenaBytes);
  std::size_t next = 0;
  for (int p = 0; p < n; ++p) {
    out.offsets.emplace_back();
    for (std::size_t bytes : edges.bytes[p]) {
      out.offsets.back().push_back(offsets[next++]);
      out.separateBytes += bytes;
    }
  }
  out.outputGradientOffset = offsets[next];
  // Never empty: a view into it then has an address even where every gradient is empty (a
  // rank without samples in a layer), and EdgeTensor tells a feature matrix by its address.
  out.arenaBytes = std::max(out.arenaBytes, gradientAlignment);
  out.separateBytes += edges.outputGradientBytes;
  return out;
}

ActivationPlacement placeInferenceActivations(const std::vector<std::size_t>& bytes,
                                              const std::vector<std::vector<int>>& readers) {
  const int n = static_cast<int>(bytes.size()) - 1;  // nodes; index 0 is the model input
  if (n < 0 || readers.size() != bytes.size())
    fail("memory placement: ", readers.size(), " reader lists for ", bytes.size(), " activations");
  std::vector<BufferLife> lives;
  ActivationPlacement out;
  for (int a = 0; a <= n; ++a) {
    int last = readers[a].empty() ? n : 0;
    for (int node : readers[a]) {
      if (node < a || node >= n)
        fail("memory placement: activation ", a, " is read by node ", node, ", not a later one");
      last = std::max(last, node + 1);
    }
    lives.push_back({bytes[a], a, last});
    out.separateBytes += bytes[a];
  }
  out.offsets = placeByLifetime(lives, gradientAlignment, out.arenaBytes);
  out.arenaBytes = std::max(out.arenaBytes, gradientAlignment);
  return out;
}

}  // namespace hybrid3d
