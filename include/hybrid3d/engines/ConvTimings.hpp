#pragma once
/// \file
/// What `auto` chooses a convolution's code by: each candidate's time for each pass on this
/// machine, measured once per shape and kept in a cache file.
///
/// A candidate is an engine (engines/ConvEngine.hpp) or the direct host kernels (AVX2 + FMA,
/// kernels/ConvForwardHost.hpp and ConvWeightsHost.hpp). Conv3d asks the cache for its rank's
/// shape; on a miss it times every candidate that can run each pass (once, or the fastest of a
/// few runs when short) and records the times. The ranks then take, for each pass, the candidate
/// whose slowest rank is fastest, so that every rank runs the same code.
///
/// The cache file (convTimingCachePath) is text: a header naming the CPU (model name and the
/// instruction-set flags that change which kernels run) and the library versions (oneDNN,
/// Kokkos, hybrid3d), then one row per shape. A file written for another CPU or other versions,
/// or one that does not parse, is ignored with one line saying why and rewritten on the next
/// measurement: a timing is never taken from it. Writers hold an flock on "<file>.lock" while
/// they merge their rows into what is on disk, write a temporary file and rename it into place,
/// so concurrent ranks and jobs neither corrupt the file nor drop each other's rows; the first
/// row written for a shape stays, and a job that measured the shape at the same time takes it.

#include <array>
#include <functional>
#include <limits>
#include <map>
#include <optional>
#include <string>

#include <hybrid3d/core/Precision.hpp>
#include <hybrid3d/core/Types.hpp>

namespace hybrid3d {

enum class ConvPass { Forward, BackwardData, BackwardWeights };
constexpr int convPassCount = 3;
const char* toString(ConvPass pass);  // "forward", "backward-data", "backward-weights"

/// The code that may compute one pass of a convolution. Direct: the AVX2 + FMA host kernels
/// (forward and backward-weights only).
enum class ConvCandidate { Kokkos, Direct, OneDnn, Cudnn };
constexpr int convCandidateCount = 4;
const char* toString(ConvCandidate candidate);  // "kokkos", "direct", "onednn", "cudnn"

/// Seconds per pass [ConvPass][ConvCandidate]; notCandidate where the candidate cannot run it.
using ConvTimes = std::array<std::array<double, convCandidateCount>, convPassCount>;
constexpr double notCandidate = std::numeric_limits<double>::infinity();
/// Every entry notCandidate.
ConvTimes noConvTimes();
/// Whether two rows time the same candidates (finite in the same places).
bool sameCandidates(const ConvTimes& a, const ConvTimes& b);
/// The candidate with the least finite time (ties: the first in ConvCandidate's order; Kokkos
/// when none is finite).
ConvCandidate fastestCandidate(const std::array<double, convCandidateCount>& seconds);

/// What a convolution's time depends on, for the cache's key.
struct ConvShape {
  Index batch = 0, cin = 0, cout = 0;
  Index3 inLocal{0, 0, 0};  // the ghosted input box
  Index3 out{0, 0, 0};      // the owned output box
  Index kernel = 1, stride = 1, padding = 0;
  Index3 ghostsLo{0, 0, 0}, ghostsHi{0, 0, 0};
  bool bias = false;
  Precision precision = Precision::Float;
  int threads = 1;  // the host threads the engines run on
  /// One token without spaces, e.g.
  /// "n2:c4>16:in18x18x18:out16x16x16:k3s1p1:g1,1,1/1,1,1:bias:float:threads1".
  std::string key() const;
};

/// The CPU line of the cache's header: model name and the instruction-set flags that matter.
std::string convTimingCpu();
/// The versions line: oneDNN (when built), Kokkos, hybrid3d.
std::string convTimingVersions();

/// The cache file: $HYBRID3D_CONV_TIMINGS when set (empty: no file, times kept in the process
/// only), else $XDG_CACHE_HOME/hybrid3d/conv-timings.txt, else
/// $HOME/.cache/hybrid3d/conv-timings.txt, else none.
std::string convTimingCachePath();

class ConvTimingCache {
public:
  /// Reads `path` (empty: none) if it exists and was written for `cpu` and `versions`;
  /// otherwise starts empty and note() says why the file was ignored.
  ConvTimingCache(std::string path, std::string cpu, std::string versions);
  /// The process's cache of convTimingCachePath() for this CPU and these versions.
  static ConvTimingCache& shared();

  std::optional<ConvTimes> find(const std::string& shapeKey) const;
  /// Keeps the row and merges it into the file (locked, temporary file renamed into place);
  /// returns the row kept: the file's where another writer recorded the shape first with the
  /// same candidates (its row never changes after, so every job that reads it chooses alike). A
  /// file that cannot be written costs a note, not the run.
  ConvTimes record(const std::string& shapeKey, const ConvTimes& times);
  /// Why the file was ignored or could not be written ("" when all is well); each note once.
  std::string takeNote();
  const std::string& path() const { return path_; }

private:
  std::map<std::string, ConvTimes> rows_;
  std::string path_, cpu_, versions_, note_;
};

/// A seam for tests: times a convolution's candidates instead of running them. It receives
/// which candidates can run each pass (finite entries of `candidates`, in any unit) and returns
/// their seconds (notCandidate for the others).
using ConvTimer = std::function<ConvTimes(const ConvTimes& candidates)>;

}  // namespace hybrid3d
