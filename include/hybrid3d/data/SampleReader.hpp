#pragma once
/// \file
/// Reads this rank's subvolume of one sample file (docs/design.md section 7): the box of its owned
/// cells plus the in-domain ghosts of the input (`/full` or `/volume`, every channel), the
/// owned box of the labels (`/segmentation`) and the targets (`/unitPar`). Never the whole volume.
///
/// Formats, told apart by the file's name:
/// - HDF5 (*.h5, *.hdf5): the input [C,D,H,W] or [D,H,W,C] (InputLayout.hpp: the file's layout
///   attribute, the deck's 'Data/layout' or the shape), float32 or int16, contiguous or chunked
///   and compressed (HDF5 decompresses); one hyperslab per rank.
/// - NumPy (NAME.data.npy, MLPerf HPC's CosmoFlow release): the input as an .npy array, int16 or
///   float32, either layout; the targets in NAME.label.npy beside it. Read by file offsets
///   (NpyFile.hpp): one pread per contiguous run of the rank's box. No labels.
///
/// Two ways to read, giving byte-identical results:
/// - Collective: the file is opened through MPI-IO on the spatial group's communicator and every
///   hyperslab is read with a collective H5Dread (the paper's scheme: MPI-IO can merge the ranks'
///   requests into large contiguous file accesses). NumPy files have no collective read: each
///   rank preads its runs, and the verdicts are still agreed as below.
/// - Independent: each rank opens the file itself with HDF5's default (POSIX) driver and reads its
///   hyperslab; no MPI call is made, so a background prefetch thread can use it without
///   MPI_THREAD_MULTIPLE.
///
/// Values are delivered as stored (float32 or int16, CDHW or DHWC order): conversion, log1p,
/// scaling and zero padding happen on the device in Preprocess, so a read moves the fewest bytes.
///
/// Bad files: every rank first checks the file's metadata (exists, is HDF5 or a readable .npy,
/// datasets present, rank, shape and type as the deck expects) with its own POSIX open. In
/// Collective mode the verdict is then agreed over the spatial communicator before any
/// collective call, so a file that is bad from only some ranks' view makes every rank throw the
/// same one-line message instead of hanging. In Independent mode the error is this rank's alone:
/// agree on it with agreeOnError (BatchLoader does, over the world).

#include <cstdint>
#include <string>

#include <mpi.h>

#include <hybrid3d/data/InputLayout.hpp>
#include <hybrid3d/data/Subvolume.hpp>

namespace hybrid3d::data {

enum class ReadMode { Collective, Independent };

enum class StoredType { Float32, Int16 };

/// How one file stores its input: element type and channel position.
struct SampleFormat {
  StoredType type = StoredType::Float32;
  bool channelsLast = false;  // [D,H,W,C] (InputLayout.hpp says how it is recognised)
  std::size_t elementSize() const { return type == StoredType::Int16 ? 2 : 4; }
  friend bool operator==(const SampleFormat& a, const SampleFormat& b) {
    return a.type == b.type && a.channelsLast == b.channelsLast;
  }
};

/// What the deck expects of every sample file.
struct SampleSpec {
  std::string input = "/full";  // [C,D,H,W] or [D,H,W,C], float32 or int16
  int channels = 4;
  Index3 extents{0, 0, 0};           // (D,H,W)
  std::string labels;                // "/segmentation" [D,H,W] integer, or "" for none
  std::string targets = "/unitPar";  // [numTargets] float, or "" for none
  int numTargets = 4;
  int classes = 0;                           // labels must lie in [0, classes) (0: not checked)
  LayoutChoice layout = LayoutChoice::Auto;  // the deck's 'Data/layout'

  static SampleSpec cosmology(int channels, const Index3& extents) {
    return {"/full", channels, extents, "", "/unitPar", 4};
  }
  static SampleSpec segmentation(int channels, const Index3& extents, int classes = 0) {
    return {"/volume", channels, extents, "/segmentation", "", 0, classes};
  }
};

/// Bytes this reader took from files (stored sizes), and the time it spent reading.
struct ReadCounters {
  std::uint64_t inputBytes = 0, labelBytes = 0, targetBytes = 0;
  std::uint64_t samples = 0;
  double seconds = 0;
};

/// The buffers one sample needs on the rank reading `sub`: its input (every channel of the read
/// box at 4 bytes per value, the largest stored type), its labels (owned box), its targets.
inline std::size_t inputSlotBytes(int channels, const Subvolume& sub) {
  return static_cast<std::size_t>(channels) * static_cast<std::size_t>(sub.read.size()) * 4;
}
inline Index labelSlotCount(const SampleSpec& spec, const Subvolume& sub) {
  return spec.labels.empty() ? 0 : sub.owned.size();
}
inline int targetSlotCount(const SampleSpec& spec) {
  return spec.targets.empty() ? 0 : spec.numTargets;
}

class SampleReader {
public:
  /// `spatialComm` is the group's communicator (used only in Collective mode). Throws when the
  /// spec is inconsistent (channels < 1, extents not those of the subvolume).
  SampleReader(MPI_Comm spatialComm, const SampleSpec& spec, const Subvolume& subvolume,
               ReadMode mode);

  const SampleSpec& spec() const { return spec_; }
  const Subvolume& subvolume() const { return sub_; }
  ReadMode mode() const { return mode_; }

  /// Buffer sizes read() needs (the free functions below, which the memory plan uses too).
  std::size_t inputCapacityBytes() const { return inputSlotBytes(spec_.channels, sub_); }
  Index labelCount() const { return labelSlotCount(spec_, sub_); }
  int targetCount() const { return targetSlotCount(spec_); }

  /// Reads sample `path`: the input's read box of every channel into `input` in the returned
  /// stored format (CDHW: [C][d][h][w] of the read box; DHWC: [d][h][w][C]), the labels of the
  /// owned box into `labels` ([d][h][w]) and the targets into `targets`; the last two are
  /// ignored when the spec has none. Collective over the spatial communicator in Collective mode
  /// (same path on every rank); no MPI call in Independent mode. Throws hybrid3d::Error naming
  /// the file and the problem.
  SampleFormat read(const std::string& path, void* input, int* labels, float* targets);

  /// Checks the metadata of `path` against the spec with a POSIX open on this rank alone;
  /// returns the input's format or throws naming the file and what is wrong.
  SampleFormat inspect(const std::string& path) const;

  const ReadCounters& counters() const { return counters_; }
  void resetCounters() { counters_ = {}; }

private:
  SampleFormat inspectHdf5(const std::string& path) const;
  SampleFormat inspectNpy(const std::string& path) const;
  // Read steps after inspect(). readHdf5 keeps a collective read's error in `readError` so that
  // every rank still takes part in every collective H5Dread; readNpy throws (no MPI inside).
  void readHdf5(const std::string& path, const SampleFormat& format, void* input, int* labels,
                float* targets, std::string& readError);
  void readNpy(const std::string& path, const SampleFormat& format, void* input, float* targets);

  MPI_Comm comm_;
  SampleSpec spec_;
  Subvolume sub_;
  ReadMode mode_;
  ReadCounters counters_;
};

}  // namespace hybrid3d::data
