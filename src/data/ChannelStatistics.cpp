#include <hybrid3d/core/Error.hpp>
#include <hybrid3d/data/ChannelStatistics.hpp>
#include <hybrid3d/data/FilesOverRanks.hpp>
#include <hybrid3d/data/Hdf5.hpp>
#include <hybrid3d/data/NpyFile.hpp>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <map>

namespace hybrid3d::data {

namespace {

// Planes per read: about 32 MiB of input whatever the width.
Index planesPerSlab(const SampleSpec& spec) {
  const Index plane = spec.channels * spec.extents[1] * spec.extents[2] * 4;
  return std::max<Index>(1, (Index(32) << 20) / std::max<Index>(1, plane));
}

// A voxel whose value (after log1p) is not a finite number: its stored value and where it is.
struct NonFinite {
  double stored = 0;
  Index voxel = -1;  // in the slab, row-major (d, h, w); -1: none
};

// The moments of one channel of a slab as read (stored type and order), two passes in double.
// Returns the first voxel whose value is not finite (log1p of a count <= -1, a NaN), if any;
// `into` is then left as it was.
template <class T>
NonFinite addChannel(const T* raw, Index voxels, Index channels, bool channelsLast, int c,
                     bool log1p, ChannelMoments& into) {
  const Index first = channelsLast ? c : c * voxels, stride = channelsLast ? channels : 1;
  auto value = [&](Index i) {
    const double v = double(raw[first + i * stride]);
    return log1p ? std::log1p(v) : v;
  };
  double sum = 0;
  for (Index i = 0; i < voxels; ++i) sum += value(i);
  if (!std::isfinite(sum))  // rare: only then look for the voxel, one more pass
    for (Index i = 0; i < voxels; ++i)
      if (!std::isfinite(value(i))) return {double(raw[first + i * stride]), i};
  const double mean = sum / double(voxels);
  double m2 = 0;
  for (Index i = 0; i < voxels; ++i) m2 += (value(i) - mean) * (value(i) - mean);
  // Chan's merge of this channel alone (ChannelMoments::merge); the caller adds the slab's count
  // once every channel is in.
  const double slab = double(voxels), n = into.count + slab;
  const double delta = mean - into.mean[std::size_t(c)];
  into.mean[std::size_t(c)] += delta * slab / n;
  into.m2[std::size_t(c)] += m2 + delta * delta * into.count * slab / n;
  return {};
}

// (channels, D, H, W) as "4 channels of 16x16x16".
std::string channelsAndExtents(const std::array<long long, 4>& s) {
  return std::to_string(s[0]) + " channels of " + std::to_string(s[1]) + "x" +
         std::to_string(s[2]) + "x" + std::to_string(s[3]);
}

// Stops at a voxel no statistics can include, naming the file, channel and voxel.
void refuseNonFinite(const std::string& path, const NonFinite& bad, int c, const Index3& e,
                     Index firstPlane, bool log1p) {
  const Index d = firstPlane + bad.voxel / (e[1] * e[2]), h = bad.voxel / e[2] % e[1],
              w = bad.voxel % e[2];
  fail(path, ": channel ", c, " voxel (", d, ", ", h, ", ", w, ") holds ", bad.stored,
       log1p ? "; log1p of a value <= -1 is not a finite number" : ", not a finite number",
       " (no mean includes it)");
}

}  // namespace

void ChannelMoments::merge(const ChannelMoments& other) {
  if (other.count == 0) return;
  if (count == 0) {
    *this = other;
    return;
  }
  const double n = count + other.count;
  for (std::size_t c = 0; c < mean.size(); ++c) {
    const double delta = other.mean[c] - mean[c];
    mean[c] += delta * other.count / n;
    m2[c] += other.m2[c] + delta * delta * count * other.count / n;
  }
  count = n;
}

std::vector<double> ChannelStatistics::scales() const {
  std::vector<double> s;
  for (double d : std) s.push_back(1.0 / d);
  return s;
}

ChannelMoments momentsOfFile(const std::string& path, const SampleSpec& spec, bool log1p) {
  const Index C = spec.channels;
  const Index3& e = spec.extents;
  SampleSpec inputOnly = spec;
  inputOnly.labels.clear();
  inputOnly.targets.clear();
  ChannelMoments file;
  file.mean.assign(std::size_t(C), 0.0);
  file.m2.assign(std::size_t(C), 0.0);
  std::vector<unsigned char> buffer;
  for (Index d0 = 0; d0 < e[0]; d0 += planesPerSlab(spec)) {
    Subvolume slab;
    slab.extents = e;
    slab.owned = Box3{{d0, 0, 0}, {std::min(e[0], d0 + planesPerSlab(spec)), e[1], e[2]}};
    slab.local = slab.read = slab.owned;
    SampleReader reader(MPI_COMM_SELF, inputOnly, slab, ReadMode::Independent);
    buffer.resize(reader.inputCapacityBytes());
    const SampleFormat format = reader.read(path, buffer.data(), nullptr, nullptr);
    const Index voxels = slab.read.size();
    for (int c = 0; c < C; ++c) {
      const NonFinite bad = format.type == StoredType::Int16
                                ? addChannel(reinterpret_cast<const std::int16_t*>(buffer.data()),
                                             voxels, C, format.channelsLast, c, log1p, file)
                                : addChannel(reinterpret_cast<const float*>(buffer.data()), voxels,
                                             C, format.channelsLast, c, log1p, file);
      if (bad.voxel >= 0) refuseNonFinite(path, bad, c, e, d0, log1p);
    }
    file.count += double(voxels);
  }
  return file;
}

ChannelStatistics channelStatistics(MPI_Comm comm, const Dataset& set, const SampleSpec& spec,
                                    bool log1p) {
  const std::size_t files = std::size_t(set.size()), C = std::size_t(spec.channels);
  // Per file: count, then C means, then C M2s; zero where another rank owns the file, so the
  // sum over ranks is exact.
  const std::size_t stride = 1 + 2 * C;
  std::vector<double> moments(files * stride, 0.0);
  forEachFileOfThisRank(comm, files, [&](std::size_t i) {
    const ChannelMoments m = momentsOfFile(set.file(Index(i)), spec, log1p);
    double* at = moments.data() + i * stride;
    at[0] = m.count;
    std::copy(m.mean.begin(), m.mean.end(), at + 1);
    std::copy(m.m2.begin(), m.m2.end(), at + 1 + C);
  });
  MPI_Allreduce(MPI_IN_PLACE, moments.data(), int(moments.size()), MPI_DOUBLE, MPI_SUM, comm);
  ChannelMoments all;
  for (std::size_t i = 0; i < files; ++i) {
    const double* at = moments.data() + i * stride;
    ChannelMoments m;
    m.count = at[0];
    m.mean.assign(at + 1, at + 1 + C);
    m.m2.assign(at + 1 + C, at + 1 + 2 * C);
    all.merge(m);
  }
  // A spec of zero-length extents reads nothing, and the moments then have no channel at all.
  if (all.count == 0) fail(set.source(), ": no voxel in the ", files, " sample(s) read");
  ChannelStatistics s;
  s.samples = set.size();
  s.log1p = log1p;
  s.mean = all.mean;
  for (std::size_t c = 0; c < C; ++c) {
    const double sd = std::sqrt(all.m2[c] / all.count);
    if (!(sd > 0) || !std::isfinite(sd) || !std::isfinite(all.mean[c]))
      fail(set.source(), ": channel ", c, " has mean ", all.mean[c], " and standard deviation ", sd,
           " over the ", files, " sample(s); no scale makes it unit");
    s.std.push_back(sd);
  }
  return s;
}

SampleSpec inputSpecOf(const std::string& file, const std::string& input) {
  std::vector<Index> shape;
  if (isNpySample(file)) {
    shape = NpyFile(file).header().shape;
  } else {
    QuietErrors quiet;
    shape = File(file).shape(input);
  }
  if (shape.size() != 4)
    fail(file, ": dataset '", input, "' has ", shape.size(), " dimensions; expected [C,D,H,W]");
  if (std::find(shape.begin(), shape.end(), Index(0)) != shape.end())
    fail(file, ": dataset '", input, "' has shape ", shapeText(shape),
         ": a zero-length dimension, no voxel to read");
  // SampleReader is the judge of the layout: channels first unless it reads the file as last.
  SampleSpec first{input, int(shape[0]), {shape[1], shape[2], shape[3]}, "", "", 0};
  SampleSpec last{input, int(shape[3]), {shape[0], shape[1], shape[2]}, "", "", 0};
  auto readable = [&](const SampleSpec& spec) {
    Subvolume none;
    none.extents = spec.extents;
    try {
      SampleReader(MPI_COMM_SELF, spec, none, ReadMode::Independent).inspect(file);
      return true;
    } catch (const Error&) {
      return false;
    }
  };
  // Without a model there is no channel count to look for. The volumes hybrid3d trains on are
  // cubes, so the dimension unlike the other three is the channels' ([16,16,16,4]: 4 channels
  // last, not 16 channels of 16x16x4); a layout attribute still decides, through SampleReader.
  const bool cubeLast = shape[0] == shape[1] && shape[1] == shape[2] && shape[3] != shape[0];
  if (cubeLast && readable(last)) return last;
  if (readable(first)) return first;
  if (readable(last)) return last;
  Subvolume none;
  none.extents = first.extents;
  SampleReader(MPI_COMM_SELF, first, none, ReadMode::Independent).inspect(file);  // throws
  return first;
}

SampleSpec commonInputSpec(MPI_Comm comm, const Dataset& set, const std::string& input) {
  const std::size_t files = std::size_t(set.size());
  // Per file: channels, D, H, W, each read by the rank that owns the file; zero elsewhere.
  std::vector<long long> shapes(4 * files, 0);
  forEachFileOfThisRank(comm, files, [&](std::size_t i) {
    const SampleSpec spec = inputSpecOf(set.file(Index(i)), input);
    shapes[4 * i] = spec.channels;
    for (std::size_t k = 0; k < 3; ++k) shapes[4 * i + 1 + k] = spec.extents[k];
  });
  MPI_Allreduce(MPI_IN_PLACE, shapes.data(), int(shapes.size()), MPI_LONG_LONG, MPI_SUM, comm);
  auto shapeOfFile = [&](std::size_t i) {
    return std::array<long long, 4>{shapes[4 * i], shapes[4 * i + 1], shapes[4 * i + 2],
                                    shapes[4 * i + 3]};
  };
  // The shape most files have (the earliest on a tie): the odd file is the one named.
  std::map<std::array<long long, 4>, std::size_t> count;
  for (std::size_t i = 0; i < files; ++i) ++count[shapeOfFile(i)];
  std::size_t common = 0;
  for (std::size_t i = 0; i < files; ++i)
    if (count[shapeOfFile(i)] > count[shapeOfFile(common)]) common = i;
  const std::array<long long, 4> want = shapeOfFile(common);
  const std::size_t most = count[want];
  for (std::size_t i = 0; i < files; ++i)
    if (shapeOfFile(i) != want)
      fail(set.file(Index(i)), ": dataset '", input, "' is ", channelsAndExtents(shapeOfFile(i)),
           ", but ", set.file(Index(common)),
           most > 1 ? " and " + std::to_string(most - 1) + " more of the " + std::to_string(files) +
                          " files are "
                    : " is ",
           channelsAndExtents(want), "; the samples of a dataset share one shape");
  return {input, int(want[0]), {want[1], want[2], want[3]}, "", "", 0};
}

}  // namespace hybrid3d::data
