#include <hybrid3d/core/Error.hpp>
#include <hybrid3d/io/Dataset.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <limits>
#include <random>

namespace hybrid3d::io {

namespace fs = std::filesystem;

Dataset::Dataset(std::vector<std::string> files, std::string source)
    : files_(std::move(files)), source_(std::move(source)) {
  if (files_.empty())
    fail("dataset", source_.empty() ? "" : " " + source_, ": no sample files");
}

Dataset Dataset::open(const std::string& path) {
  std::error_code ec;
  std::vector<std::string> files;
  if (fs::is_directory(path, ec)) {
    for (const auto& entry : fs::directory_iterator(path, ec))
      if (entry.path().extension() == ".h5") files.push_back(entry.path().string());
    if (ec) fail(path, ": cannot list the directory (", ec.message(), ")");
    std::sort(files.begin(), files.end());
    if (files.empty()) fail(path, ": directory holds no *.h5 sample file");
  } else {
    std::ifstream list(path);
    if (!list) fail(path, ": no such dataset directory or list file");
    const fs::path base = fs::path(path).parent_path();
    std::string line;
    while (std::getline(list, line)) {
      const auto first = line.find_first_not_of(" \t\r");
      if (first == std::string::npos || line[first] == '#') continue;
      const auto last = line.find_last_not_of(" \t\r");
      const fs::path p = line.substr(first, last - first + 1);
      files.push_back((p.is_absolute() ? p : base / p).string());
    }
    if (files.empty()) fail(path, ": list file names no sample file");
  }
  return Dataset(std::move(files), path);
}

void shuffleDeterministic(std::vector<Index>& v, std::uint64_t seed, std::uint64_t stream) {
  std::seed_seq seq{std::uint32_t(seed), std::uint32_t(seed >> 32), std::uint32_t(stream),
                    std::uint32_t(stream >> 32)};
  std::mt19937_64 rng(seq);
  // Unbiased draw in [0, bound]: reject the top partial block of the 64-bit range.
  auto below = [&](std::uint64_t bound) {
    const std::uint64_t range = bound + 1;
    const std::uint64_t limit = std::numeric_limits<std::uint64_t>::max() -
                                std::numeric_limits<std::uint64_t>::max() % range;
    std::uint64_t r;
    do r = rng();
    while (r >= limit);
    return r % range;
  };
  for (std::size_t i = v.size(); i > 1; --i) std::swap(v[i - 1], v[below(i - 1)]);
}

BatchPlan::BatchPlan(Index numSamples, int globalBatch, int groups, std::uint64_t seed,
                     bool shuffle)
    : n_(numSamples), batch_(globalBatch), groups_(groups), seed_(seed), shuffle_(shuffle) {
  if (globalBatch < 1 || groups < 1)
    fail("mini-batch ", globalBatch, " over ", groups, " data-parallel groups: both must be >= 1");
  if (globalBatch % groups != 0)
    fail("mini-batch ", globalBatch, " is not a multiple of the ", groups,
         " data-parallel groups");
  if (numSamples < globalBatch)
    fail("dataset of ", numSamples, " samples is smaller than the mini-batch ", globalBatch);
}

std::vector<Index> BatchPlan::epochOrder(int epoch) const {
  std::vector<Index> order(static_cast<std::size_t>(n_));
  for (Index i = 0; i < n_; ++i) order[std::size_t(i)] = i;
  if (shuffle_) shuffleDeterministic(order, seed_, std::uint64_t(epoch));
  return order;
}

std::vector<Index> BatchPlan::samples(int epoch, Index batch, int group) const {
  if (batch < 0 || batch >= batchesPerEpoch() || group < 0 || group >= groups_)
    fail("mini-batch ", batch, " of group ", group, " outside ", batchesPerEpoch(),
         " mini-batches x ", groups_, " groups");
  const std::vector<Index> order = epochOrder(epoch);
  const Index first = batch * batch_ + Index(group) * localBatch();
  return std::vector<Index>(order.begin() + first, order.begin() + first + localBatch());
}

}  // namespace hybrid3d::io
