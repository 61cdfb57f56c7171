#include <algorithm>
#include <cmath>
#include <set>

#include "impl/Traffic.hpp"

namespace hybrid3d::Impl {

namespace {
constexpr double line = 64;
}  // namespace

double lineBytes(const Box3& box, double rows, double scalar) {
  const double run = double(box.extent(2)) * scalar;
  return rows * double(box.extent(0)) * double(box.extent(1)) * std::ceil(run / line) * line;
}

HaloTraffic haloTraffic(const std::vector<HaloBox>& boxes, double rows, double scalar) {
  HaloTraffic t;
  std::set<int> ranks;
  double bytes = 0, packed = 0;
  for (const HaloBox& b : boxes) {
    if (b.box.empty()) continue;
    ranks.insert(b.rank);
    bytes += rows * double(b.box.size()) * scalar;
    packed += lineBytes(b.box, rows, scalar);
  }
  t.bytes = std::size_t(bytes);
  t.packedBytes = std::size_t(packed);
  t.neighbours = int(ranks.size());
  return t;
}

RedistributeTraffic redistributeTraffic(const RedistributePlan& plan, int channels, bool volume,
                                        std::size_t scalarBytes) {
  const double scalar = double(scalarBytes);
  auto lines = [&](const std::vector<RedistributeBlock>& blocks) {
    double sum = 0;
    for (const RedistributeBlock& b : blocks)
      sum += volume ? lineBytes(b.box, channels, scalar)
                    : std::ceil(channels * scalar / line) * line;  // one row [F] per sample
    return sum;
  };
  RedistributeTraffic t;
  // In whole values, as Redistribute counts them: cells x channels x the scalar's bytes.
  t.bytes = std::size_t(cellsOf(plan.sends)) * std::size_t(channels) * scalarBytes;
  t.receivedBytes = std::size_t(cellsOf(plan.recvs)) * std::size_t(channels) * scalarBytes;
  t.peers = std::max(peersOf(plan.sends), peersOf(plan.recvs));
  t.touchedBytes = std::size_t(lines(plan.sends) + double(t.bytes) + double(t.receivedBytes) +
                               lines(plan.recvs) + 2 * lines(plan.copies));
  return t;
}

}  // namespace hybrid3d::Impl
