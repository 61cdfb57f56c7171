// The driver of `hybrid3d import nifti`: pairs listed on rank 0, converted one rank per pair,
// checked as a dataset, put in place together, the manifest last.
#include <hybrid3d/core/Error.hpp>
#include <hybrid3d/data/CollectiveVerdict.hpp>
#include <hybrid3d/data/FilesOverRanks.hpp>
#include <hybrid3d/generate/NiftiImport.hpp>
#include <hybrid3d/generate/StagedFiles.hpp>

#include <filesystem>

namespace hybrid3d::generate {

namespace {

namespace fs = std::filesystem;

// Words joined by '\0' (no file name holds one).
std::string join(const std::vector<std::string>& words) {
  std::string all;
  for (const std::string& w : words) all += w + '\0';
  return all;
}

std::vector<std::string> split(const std::string& all) {
  std::vector<std::string> words;
  std::size_t from = 0;
  for (std::size_t at = all.find('\0'); at != std::string::npos; at = all.find('\0', from)) {
    words.push_back(all.substr(from, at - from));
    from = at + 1;
  }
  return words;
}

std::vector<std::string> broadcast(MPI_Comm comm, const std::vector<std::string>& words) {
  std::string all = join(words);
  long long length = static_cast<long long>(all.size());
  MPI_Bcast(&length, 1, MPI_LONG_LONG, 0, comm);
  all.resize(static_cast<std::size_t>(length));
  MPI_Bcast(all.data(), static_cast<int>(length), MPI_CHAR, 0, comm);
  return split(all);
}

// Every rank's infos on rank 0, in image order (`count` in all; empty elsewhere).
std::vector<NiftiSampleInfo> gatherInOrder(
    MPI_Comm comm, const std::vector<std::pair<std::size_t, NiftiSampleInfo>>& mine,
    std::size_t count) {
  int rank = 0, ranks = 1;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &ranks);
  std::vector<std::string> words;
  for (const auto& [index, info] : mine) {
    words.push_back(std::to_string(index));
    words.push_back(std::to_string(info.channels));
    words.push_back(info.image);
    words.push_back(info.line);
  }
  const std::string packed = join(words);
  int length = static_cast<int>(packed.size());
  std::vector<int> lengths(static_cast<std::size_t>(ranks)), starts(lengths.size());
  MPI_Gather(&length, 1, MPI_INT, lengths.data(), 1, MPI_INT, 0, comm);
  int total = 0;
  for (int r = 0; r < ranks; ++r) {
    starts[std::size_t(r)] = total;
    total += lengths[std::size_t(r)];
  }
  std::string all(static_cast<std::size_t>(rank == 0 ? total : 0), '\0');
  MPI_Gatherv(packed.data(), length, MPI_CHAR, all.data(), lengths.data(), starts.data(), MPI_CHAR,
              0, comm);
  std::vector<NiftiSampleInfo> infos(rank == 0 ? count : 0);
  const std::vector<std::string> fields = split(all);
  for (std::size_t f = 0; f + 3 < fields.size(); f += 4)
    infos[std::stoul(fields[f])] = {fields[f + 2], fields[f + 3], std::stoll(fields[f + 1])};
  return infos;
}

// A dataset trains one model: every image needs the first one's channels.
void checkSameChannels(const NiftiImportOptions& o, const std::vector<NiftiSampleInfo>& infos) {
  for (const NiftiSampleInfo& s : infos)
    if (s.channels != infos.front().channels)
      fail((fs::path(o.imagesDir) / s.image).string(), ": ", s.channels, " channel(s), but ",
           infos.front().image, " has ", infos.front().channels,
           "; the images of one dataset need the same channels");
}

Manifest manifestOf(const NiftiImportOptions& o, const std::vector<std::string>& images) {
  Manifest m;
  m.generator = "nifti";
  m.size = o.size;
  m.splits = {{"train", static_cast<Index>(images.size())}};
  m.settings = {{"classes", double(o.classes)}};
  for (std::size_t i = 0; i < images.size(); ++i) {
    ManifestSample s;
    s.split = "train";
    s.file = niftiSampleName(images[i]);
    s.index = i;
    m.samples.push_back(s);
  }
  return m;
}

}  // namespace

Manifest importNifti(MPI_Comm comm, const NiftiImportOptions& o,
                     const std::function<void(const NiftiSampleInfo&)>& onSample) {
  int rank = 0;
  MPI_Comm_rank(comm, &rank);
  std::vector<std::string> images;
  data::collectively(comm, [&] {
    if (rank == 0) images = listNiftiPairs(o);
  });
  images = broadcast(comm, images);

  StagedFiles staged;
  std::vector<std::pair<std::size_t, NiftiSampleInfo>> mine;
  data::forEachFileOfThisRank(comm, images.size(), [&](std::size_t i) {
    const std::string path = (fs::path(o.outDir) / niftiSampleName(images[i])).string();
    mine.emplace_back(i, convertNiftiPair(o, images[i], staged.stage(path)));
  });
  const std::vector<NiftiSampleInfo> infos = gatherInOrder(comm, mine, images.size());
  data::collectively(comm, [&] {
    if (rank == 0) checkSameChannels(o, infos);
  });
  staged.publish(comm);

  const Manifest m = manifestOf(o, images);
  data::collectively(comm, [&] {
    if (rank == 0) writeManifest(m, (fs::path(o.outDir) / "manifest.txt").string());
  });
  if (rank == 0 && onSample)
    for (const NiftiSampleInfo& s : infos) onSample(s);
  return m;
}

}  // namespace hybrid3d::generate
