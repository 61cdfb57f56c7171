#include <hybrid3d/core/Error.hpp>
#include <hybrid3d/generate/DatasetTransform.hpp>
#include <hybrid3d/generate/SampleWriter.hpp>
#include <hybrid3d/generate/Split.hpp>
#include <hybrid3d/generate/WholeSample.hpp>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <filesystem>

namespace hybrid3d::generate {

namespace {

namespace fs = std::filesystem;

// The pieces of one source file, read whole by this rank, in its stored type and channel order.
template <class T>
void writePieces(const WholeSample& source, const std::vector<T>& volume,
                 const std::string& sourceName, Index size,
                 const std::vector<std::string>& outPaths) {
  const Index width = source.width, channels = source.channels, n = width / size;
  const bool channelsLast = source.format.channelsLast;
  for (Index p = 0; p < n * n * n; ++p) {
    const Index3 offset{p / (n * n) * size, p / n % n * size, p % n * size};
    const std::vector<T> piece = cutSubvolume(volume, channels, width, channelsLast, size, offset);
    SampleWriter file(MPI_COMM_SELF, outPaths.at(std::size_t(p)));
    const std::vector<Index> dims = channelsLast ? std::vector<Index>{size, size, size, channels}
                                                 : std::vector<Index>{channels, size, size, size};
    file.writeSlab("full", dims, 0, 0, dims[0], piece.data());
    copyTargetsAndAttributes(source, file,
                             {"layout", "source_file", "source_size", "split_size", "split_piece",
                              "split_offset_d", "split_offset_h", "split_offset_w"});
    // Channels-last pieces say so on the root group, as the project writes them: the published
    // files carry no attribute, and one on the source's /full is not copied with it.
    if (channelsLast) file.attribute("layout", "DHWC");
    file.attribute("source_file", sourceName);
    file.attribute("source_size", double(width));
    file.attribute("split_size", double(size));
    file.attribute("split_piece", double(p));
    file.attribute("split_offset_d", double(offset[0]));
    file.attribute("split_offset_h", double(offset[1]));
    file.attribute("split_offset_w", double(offset[2]));
    file.commit();
  }
}

void splitFile(const std::string& in, const std::string& sourceName, Index width, Index size,
               const std::vector<std::string>& outPaths) {
  const WholeSample source = readWholeSample(in, width);
  if (source.format.type == data::StoredType::Int16)
    writePieces(source, source.int16, sourceName, size, outPaths);
  else
    writePieces(source, source.float32, sourceName, size, outPaths);
}

}  // namespace

std::string splitUsage() { return "--in DIR --out DIR --size S"; }

SplitOptions parseSplitOptions(const std::vector<std::string>& args) {
  SplitOptions o;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& flag = args[i];
    if (flag != "--in" && flag != "--out" && flag != "--size")
      fail("split: unknown argument '", flag, "' (", splitUsage(), ")");
    if (i + 1 >= args.size()) fail(flag, ": missing value");
    const std::string& value = args[++i];
    if (flag == "--in") o.inDir = value;
    if (flag == "--out") o.outDir = value;
    if (flag == "--size") o.size = parseWholeOption("--size", value, 1, 65536);
  }
  if (o.inDir.empty()) fail("--in: missing (the dataset to split)");
  if (o.outDir.empty()) fail("--out: missing (the directory of the split dataset)");
  if (o.size == 0) fail("--size: missing (the sub-volumes' width, dividing the samples')");
  return o;
}

std::string subvolumeName(const std::string& file, Index piece, Index pieces) {
  int digits = 3;
  for (Index last = pieces - 1; last >= 1000; last /= 10) ++digits;
  std::string number = std::to_string(piece);
  number.insert(0, std::size_t(std::max(0, digits - int(number.size()))), '0');
  const fs::path p(file);
  return (p.parent_path() / (p.stem().string() + "_s" + number + p.extension().string())).string();
}

template <class T>
std::vector<T> cutSubvolume(const std::vector<T>& volume, Index channels, Index width,
                            bool channelsLast, Index size, const Index3& offset) {
  const Index C = channels, N = width, S = size;
  std::vector<T> out(static_cast<std::size_t>(C * S * S * S));
  T* to = out.data();
  if (channelsLast) {
    // A row of S voxels with all their channels is contiguous in both.
    for (Index d = 0; d < S; ++d)
      for (Index h = 0; h < S; ++h, to += S * C)
        std::memcpy(to, volume.data() + (((offset[0] + d) * N + offset[1] + h) * N + offset[2]) * C,
                    sizeof(T) * std::size_t(S * C));
  } else {
    for (Index c = 0; c < C; ++c)
      for (Index d = 0; d < S; ++d)
        for (Index h = 0; h < S; ++h, to += S)
          std::memcpy(to,
                      volume.data() + ((c * N + offset[0] + d) * N + offset[1] + h) * N + offset[2],
                      sizeof(T) * std::size_t(S));
  }
  return out;
}
template std::vector<float> cutSubvolume(const std::vector<float>&, Index, Index, bool, Index,
                                         const Index3&);
template std::vector<std::int16_t> cutSubvolume(const std::vector<std::int16_t>&, Index, Index,
                                                bool, Index, const Index3&);

Manifest splitDataset(MPI_Comm comm, const SplitOptions& o) {
  DatasetTransform t;
  t.command = "split";
  t.inDir = o.inDir;
  t.outDir = o.outDir;
  t.check = [&](const Manifest& m) {
    if (m.generator != "cosmology")
      fail("--in: ", o.inDir, " holds a ", m.generator, " dataset; split cuts cosmology samples");
    if (m.size % o.size != 0)
      fail("--size: ", o.size, " does not divide the dataset's size ", m.size);
  };
  auto pieces = [&](const Manifest& m) {
    const Index n = m.size / o.size;
    return n * n * n;
  };
  t.outputsOf = [&](const Manifest& m, const ManifestSample& s) {
    std::vector<ManifestSample> out;
    for (Index p = 0; p < pieces(m); ++p) {
      ManifestSample piece = s;
      piece.file = subvolumeName(s.file, p, pieces(m));
      piece.index = s.index * std::uint64_t(pieces(m)) + std::uint64_t(p);
      out.push_back(piece);
    }
    return out;
  };
  t.write = [&](const Manifest& m, const std::string& in, const std::vector<std::string>& out) {
    const std::string name = fs::path(in).lexically_relative(fs::path(o.inDir)).string();
    splitFile(in, name, m.size, o.size, out);
  };
  t.describe = [&](const Manifest& source, Manifest& m) {
    m.size = o.size;
    m.settings.push_back({"split_size", double(o.size)});
    m.settings.push_back({"source_size", double(source.size)});
  };
  return transformDataset(comm, t);
}

}  // namespace hybrid3d::generate
