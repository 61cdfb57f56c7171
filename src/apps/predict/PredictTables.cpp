#include "PredictTables.hpp"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <sstream>

#include <hybrid3d/core/Error.hpp>

namespace hybrid3d::app {

namespace {

// Enough digits that a value read back is the value written (float64).
std::string exact(double v) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}

std::string shortNumber(double v) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

}  // namespace

void writeFileAtomically(const std::string& path, const std::string& text) {
  const std::string tmp = path + ".tmp";
  std::FILE* f = std::fopen(tmp.c_str(), "wb");
  if (!f) fail(path, ": cannot create ", tmp, " (", std::strerror(errno), ")");
  // Tests only: HYBRID3D_TEST_NO_SPACE fails the write as a full disk would, as it does a
  // checkpoint's (train/Checkpoint.cpp), where a test cannot mount a small file system.
  const bool full = std::getenv("HYBRID3D_TEST_NO_SPACE") != nullptr;
  if (full) errno = ENOSPC;
  const bool written = !full && std::fwrite(text.data(), 1, text.size(), f) == text.size();
  const int error = written && std::fflush(f) == 0 ? 0 : errno;
  const bool closed = std::fclose(f) == 0;
  if (!written || error || !closed) {
    const int e = error ? error : errno;
    std::remove(tmp.c_str());
    fail(path, ": cannot write its ", text.size(), " bytes (",
         e == ENOSPC ? "no space left on device" : std::strerror(e), ")");
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec) {
    std::remove(tmp.c_str());
    fail(path, ": cannot rename ", tmp, " into place (", ec.message(), ")");
  }
}

void RegressionTable::add(const std::string& file, const std::vector<double>& predicted,
                          const std::vector<double>& truth, bool counted) {
  rows_.push_back({file, predicted, truth, counted});
}

std::string RegressionTable::csv() const {
  bool truth = false;
  for (const Row& r : rows_) truth = truth || !r.truth.empty();
  std::ostringstream s;
  s << "file";
  for (int t = 0; t < targets_; ++t) s << ",target" << t;
  for (int t = 0; truth && t < targets_; ++t) s << ",true_target" << t;
  s << "\n";
  for (const Row& r : rows_) {
    s << r.file;
    for (double v : r.predicted) s << "," << exact(v);
    for (int t = 0; truth && t < targets_; ++t)
      s << "," << (r.truth.empty() ? std::string() : exact(r.truth[std::size_t(t)]));
    s << "\n";
  }
  return s.str();
}

std::string RegressionTable::summary() const {
  std::vector<double> se(std::size_t(targets_), 0.0), ae(std::size_t(targets_), 0.0);
  long long n = 0;
  for (const Row& r : rows_) {
    if (r.truth.empty() || !r.counted) continue;
    ++n;
    for (std::size_t t = 0; t < se.size(); ++t) {
      const double e = r.predicted[t] - r.truth[t];
      se[t] += e * e;
      ae[t] += e < 0 ? -e : e;
    }
  }
  if (n == 0) return {};
  double mse = 0, mae = 0;
  std::string perMse, perMae;
  for (std::size_t t = 0; t < se.size(); ++t) {
    mse += se[t] / double(n * targets_);
    mae += ae[t] / double(n * targets_);
    perMse += (t ? ", target" : "target") + std::to_string(t) + " " + shortNumber(se[t] / n);
    perMae += (t ? ", target" : "target") + std::to_string(t) + " " + shortNumber(ae[t] / n);
  }
  return "MSE " + shortNumber(mse) + " (" + perMse + "), MAE " + shortNumber(mae) + " (" + perMae +
         ") over " + std::to_string(n) + " file(s) with targets";
}

void SegmentationTable::add(const std::string& file, const std::vector<std::uint8_t>& predicted,
                            const std::vector<std::uint8_t>& truth) {
  Row r{file,
        {},
        std::vector<Index>(std::size_t(classes_), 0),
        std::vector<Index>(std::size_t(classes_), 0)};
  std::vector<Index> both(std::size_t(classes_), 0);
  for (std::size_t i = 0; i < predicted.size(); ++i) {
    ++r.voxels[predicted[i]];
    ++r.trueVoxels[truth[i]];
    if (predicted[i] == truth[i]) ++both[truth[i]];
  }
  for (int k = 0; k < classes_; ++k) {
    const Index denominator = r.voxels[std::size_t(k)] + r.trueVoxels[std::size_t(k)];
    r.dice.push_back(denominator > 0 ? 2.0 * double(both[std::size_t(k)]) / double(denominator)
                                     : 1.0);
  }
  rows_.push_back(r);
}

double SegmentationTable::foreground(const Row& r) const {
  double sum = 0;
  for (int k = 1; k < classes_; ++k) sum += r.dice[std::size_t(k)];
  return classes_ > 1 ? sum / double(classes_ - 1) : 0.0;
}

std::string SegmentationTable::csv() const {
  std::ostringstream s;
  s << "file";
  for (int k = 0; k < classes_; ++k) s << ",dice_" << k;
  s << ",mean_foreground_dice";
  for (int k = 0; k < classes_; ++k) s << ",voxels_" << k;
  for (int k = 0; k < classes_; ++k) s << ",true_voxels_" << k;
  s << "\n";
  for (const Row& r : rows_) {
    s << r.file;
    for (double d : r.dice) s << "," << exact(d);
    s << "," << exact(foreground(r));
    for (Index v : r.voxels) s << "," << v;
    for (Index v : r.trueVoxels) s << "," << v;
    s << "\n";
  }
  return s.str();
}

std::string SegmentationTable::summary() const {
  if (rows_.empty()) return {};
  std::vector<double> mean(std::size_t(classes_), 0.0);
  double fg = 0;
  for (const Row& r : rows_) {
    for (int k = 0; k < classes_; ++k) mean[std::size_t(k)] += r.dice[std::size_t(k)];
    fg += foreground(r);
  }
  std::string dice;
  for (int k = 0; k < classes_; ++k)
    dice += (k ? "/" : "") + shortNumber(mean[std::size_t(k)] / double(rows_.size()));
  return "mean Dice " + dice + ", mean foreground Dice " + shortNumber(fg / double(rows_.size())) +
         " over " + std::to_string(rows_.size()) + " file(s) with labels";
}

}  // namespace hybrid3d::app
