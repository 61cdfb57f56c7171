#pragma once
// The tables `hybrid3d predict` writes (docs/predict.md): OUT/predictions.csv for regression (one
// row per volume, or per cube as well with --cubes) and OUT/metrics.csv for segmentation where
// labels are known, each with the means it prints. Rank 0 only.
#include <cstdint>
#include <string>
#include <vector>

#include <hybrid3d/core/Types.hpp>

namespace hybrid3d::app {

/// Writes `text` to `path` through `path`.tmp, flushed and renamed: a full disk or any write
/// error throws naming `path` and leaves nothing under it.
void writeFileAtomically(const std::string& path, const std::string& text);

class RegressionTable {
public:
  explicit RegressionTable(int targets) : targets_(targets) {}
  /// One row: `file` (a volume, or "NAME[d,h,w]" for a cube), its predictions and its targets
  /// (empty when the file has none).
  void add(const std::string& file, const std::vector<double>& predicted,
           const std::vector<double>& truth, bool counted = true);
  /// "file,target0,..,true_target0,..": true_ columns where some row has targets.
  std::string csv() const;
  /// "MSE 0.01 (target0 0.002, ...), MAE ... over N file(s) with targets", or "" without any.
  std::string summary() const;

private:
  struct Row {
    std::string file;
    std::vector<double> predicted, truth;
    bool counted;  // a volume's row (its cubes' rows are listed but not averaged again)
  };
  int targets_;
  std::vector<Row> rows_;
};

class SegmentationTable {
public:
  explicit SegmentationTable(int classes) : classes_(classes) {}
  /// Dice per class of `predicted` against `truth` (both [D,H,W]); a class absent from both
  /// counts 1, as training's validation Dice does.
  void add(const std::string& file, const std::vector<std::uint8_t>& predicted,
           const std::vector<std::uint8_t>& truth);
  bool empty() const { return rows_.empty(); }
  /// "file,dice_0,..,mean_foreground_dice,voxels_0,..,true_voxels_0,..".
  std::string csv() const;
  /// "mean Dice 0.9/0.7/0.2, mean foreground Dice 0.45 over N file(s) with labels".
  std::string summary() const;

private:
  struct Row {
    std::string file;
    std::vector<double> dice;
    std::vector<Index> voxels, trueVoxels;
  };
  double foreground(const Row& r) const;
  int classes_;
  std::vector<Row> rows_;
};

}  // namespace hybrid3d::app
