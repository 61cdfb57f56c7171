#include <hybrid3d/core/Error.hpp>
#include <hybrid3d/data/CollectiveVerdict.hpp>
#include <hybrid3d/data/Dataset.hpp>
#include <hybrid3d/data/NpyFile.hpp>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <limits>
#include <random>

namespace hybrid3d::data {

namespace fs = std::filesystem;

namespace {

// The size of `file` as this process sees it; throws naming the file and `context`.
std::uint64_t sizeOf(const std::string& file, const std::string& context) {
  std::error_code ec;
  const std::uintmax_t bytes = fs::file_size(file, ec);
  if (ec) fail(file, ": ", context, "cannot be read (", ec.message(), ")");
  return std::uint64_t(bytes);
}

std::vector<std::uint64_t> sizesOf(const std::vector<std::string>& files,
                                   const std::string& context) {
  std::vector<std::uint64_t> bytes;
  bytes.reserve(files.size());
  for (const std::string& f : files) bytes.push_back(sizeOf(f, context));
  return bytes;
}

// The sample formats a directory may hold (SampleReader.hpp): HDF5 files (*.h5 as written
// here, *.hdf5 as the published CosmoFlow data) and numpy samples (NAME.data.npy; their
// NAME.label.npy is read with them, not listed).
enum class FileKind { Other, Hdf5, Npy };

FileKind kindOf(const fs::path& p) {
  const std::string name = p.filename().string();
  if (isNpySample(name)) return FileKind::Npy;
  return p.extension() == ".h5" || p.extension() == ".hdf5" ? FileKind::Hdf5 : FileKind::Other;
}

// What a directory listing takes for a sample: a sample file that is not a run's checkpoint (an
// output directory inside a dataset) nor hidden (macOS's "._" resource files, editors' copies).
bool isSampleName(const std::string& name) {
  return name.rfind("checkpoint", 0) != 0 && name.rfind('.', 0) != 0;
}

// A directory is one format. Both in one directory are most likely one data set twice (the
// HDF5 universes beside their numpy conversion), which would train on every sample twice, or
// half a conversion; a list file may still name files of both formats on purpose.
void refuseMixedFormats(const std::string& dir, const std::vector<std::string>& files) {
  std::size_t npy = 0;
  for (const std::string& f : files) npy += kindOf(f) == FileKind::Npy;
  if (npy == 0 || npy == files.size()) return;
  fail(dir, ": directory holds both HDF5 samples (", files.size() - npy,
       " *.h5/*.hdf5) and numpy samples (", npy,
       " *.data.npy); a dataset directory holds one format (move one set out, or name the files "
       "in a list file)");
}

// Listing runs on one rank: its note is printed once.
void noteIgnored(const std::string& dir, std::vector<std::string> ignored) {
  if (ignored.empty()) return;
  std::sort(ignored.begin(), ignored.end());
  std::string names;
  for (std::size_t i = 0; i < ignored.size() && i < 3; ++i) names += (i ? ", " : "") + ignored[i];
  if (ignored.size() > 3) names += ", ...";
  std::printf("hybrid3d: note: %s: %zu sample-named file(s) that are not samples ignored (%s)\n",
              dir.c_str(), ignored.size(), names.c_str());
  std::fflush(stdout);
}

// The files of a dataset directory, sorted by name.
Dataset listDirectory(const std::string& path) {
  std::error_code ec;
  std::vector<std::string> files, ignored;
  for (const auto& entry : fs::directory_iterator(path, ec)) {
    if (kindOf(entry.path()) == FileKind::Other) continue;
    if (isSampleName(entry.path().filename().string()))
      files.push_back(entry.path().string());
    else
      ignored.push_back(entry.path().filename().string());
  }
  if (ec) fail(path, ": cannot list the directory (", ec.message(), ")");
  std::sort(files.begin(), files.end());
  noteIgnored(path, ignored);
  if (files.empty()) fail(path, ": directory holds no sample file (*.h5, *.hdf5 or *.data.npy)");
  refuseMixedFormats(path, files);
  std::vector<std::uint64_t> bytes = sizesOf(files, "listed in the directory, but ");
  return Dataset(std::move(files), path, std::move(bytes));
}

// A list file is text. A line holding a control byte or bytes that are not UTF-8 is a binary
// file given where a list was expected (a sample under another name, whose HDF5 signature
// starts "\x89HDF"): refused, rather than its bytes taken for a file name.
bool isTextLine(const std::string& line) {
  for (std::size_t i = 0; i < line.size();) {
    const unsigned char u = static_cast<unsigned char>(line[i]);
    if ((u < 0x20 && u != '\t' && u != '\r') || u == 0x7f) return false;
    // A UTF-8 sequence: a lead byte 110xxxxx, 1110xxxx or 11110xxx, then 1 to 3 10xxxxxx.
    const std::size_t length = u < 0x80         ? 1
                               : (u >> 5) == 6  ? 2
                               : (u >> 4) == 14 ? 3
                               : (u >> 3) == 30 ? 4
                                                : 0;
    if (length == 0 || i + length > line.size()) return false;
    for (std::size_t k = 1; k < length; ++k)
      if ((static_cast<unsigned char>(line[i + k]) >> 6) != 2) return false;
    i += length;
  }
  return true;
}

// The files a list file names, one a line, relative to its folder.
Dataset readListFile(const std::string& path) {
  std::ifstream list(path);
  if (!list) fail(path, ": cannot open the list file");
  const fs::path base = fs::path(path).parent_path();
  std::vector<std::string> files;
  std::string line;
  for (int number = 1; std::getline(list, line); ++number) {
    if (!isTextLine(line))
      fail(path, ":", number,
           ": not a file name (binary bytes): a list file is text, one sample path a line, and "
           "a sample file given alone is named *.h5, *.hdf5 or *.data.npy");
    const auto first = line.find_first_not_of(" \t\r");
    if (first == std::string::npos || line[first] == '#') continue;
    const auto last = line.find_last_not_of(" \t\r");
    const fs::path p = line.substr(first, last - first + 1);
    files.push_back((p.is_absolute() ? p : base / p).string());
  }
  if (files.empty()) fail(path, ": list file names no sample file");
  std::vector<std::uint64_t> bytes = sizesOf(files, "named in " + path + ", but ");
  return Dataset(std::move(files), path, std::move(bytes));
}

const char* typeName(fs::file_type type) {
  switch (type) {
    case fs::file_type::fifo:
      return "FIFO (named pipe)";
    case fs::file_type::socket:
      return "socket";
    case fs::file_type::block:
      return "block device";
    case fs::file_type::character:
      return "character device";
    default:
      return "special file";
  }
}

}  // namespace

Dataset::Dataset(std::vector<std::string> files, std::string source,
                 std::vector<std::uint64_t> bytes)
    : files_(std::move(files)), source_(std::move(source)), bytes_(std::move(bytes)) {
  if (files_.empty()) fail("dataset", source_.empty() ? "" : " " + source_, ": no sample files");
  if (!bytes_.empty() && bytes_.size() != files_.size())
    fail("dataset", source_.empty() ? "" : " " + source_, ": ", bytes_.size(), " sizes for ",
         files_.size(), " files");
}

std::uint64_t Dataset::bytes(Index i) const {
  return bytes_.empty() ? kUnknownSize : bytes_.at(std::size_t(i));
}

void Dataset::checkUnchanged(Index i, const std::string& who) const {
  const std::uint64_t listed = bytes(i);
  if (listed == kUnknownSize) return;
  const std::uint64_t here = sizeOf(file(i), "listed, but on " + who + " it ");
  if (here != listed)
    fail(file(i), ": ", here, " bytes on ", who, " but ", listed,
         " bytes when the dataset was listed (the file changed, or the file system shows ranks "
         "different contents)");
}

Dataset Dataset::ofFiles(std::vector<std::string> files, const std::string& source) {
  std::vector<std::uint64_t> bytes = sizesOf(files, "sample file given on the " + source + " ");
  return Dataset(std::move(files), source, std::move(bytes));
}

Dataset Dataset::openShared(MPI_Comm comm, const std::string& path) {
  return listOnce(comm, [&] { return open(path); });
}

Dataset Dataset::listOnce(MPI_Comm comm, const std::function<Dataset()>& list) {
  int rank = 0;
  MPI_Comm_rank(comm, &rank);
  // Rank 0 packs source and names as NUL-terminated strings, then broadcasts them and the sizes.
  std::string packed;
  std::vector<std::uint64_t> bytes;
  long long counts[2] = {0, 0};  // files, packed characters
  collectively(comm, [&] {
    if (rank != 0) return;
    const Dataset d = list();
    packed = d.source() + '\0';
    for (const std::string& f : d.files()) packed += f + '\0';
    for (Index i = 0; i < d.size(); ++i) bytes.push_back(d.bytes(i));
    counts[0] = d.size();
    counts[1] = static_cast<long long>(packed.size());
  });
  MPI_Bcast(counts, 2, MPI_LONG_LONG, 0, comm);
  packed.resize(std::size_t(counts[1]));
  bytes.resize(std::size_t(counts[0]));
  MPI_Bcast(packed.data(), int(counts[1]), MPI_CHAR, 0, comm);
  MPI_Bcast(bytes.data(), int(counts[0]), MPI_UINT64_T, 0, comm);
  std::vector<std::string> names;
  std::size_t at = packed.find('\0') + 1;
  const std::string source = packed.substr(0, at - 1);
  while (at < packed.size()) {
    const std::size_t end = packed.find('\0', at);
    names.push_back(packed.substr(at, end - at));
    at = end + 1;
  }
  if (std::find(bytes.begin(), bytes.end(), kUnknownSize) != bytes.end()) bytes.clear();
  return Dataset(std::move(names), source, std::move(bytes));
}

Dataset Dataset::open(const std::string& path) {
  std::error_code ec;
  const fs::file_status status = fs::status(path, ec);
  if (!fs::exists(status)) fail(path, ": no such dataset directory or list file");
  if (fs::is_directory(status)) return listDirectory(path);
  // Anything else (a FIFO, a device) would block or never end when read as a list.
  if (!fs::is_regular_file(status))
    fail(path, ": is a ", typeName(status.type()),
         ", not a dataset directory, list file or sample file");
  if (kindOf(path) != FileKind::Other)
    return Dataset({path}, path, sizesOf({path}, "given as the dataset, but "));
  return readListFile(path);
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

BatchPlan BatchPlan::evaluation(Index numSamples, int globalBatch, int groups) {
  if (globalBatch < 1 || groups < 1)
    fail("evaluation mini-batch ", globalBatch, " over ", groups,
         " data-parallel groups: both must be >= 1");
  if (numSamples < 1) fail("evaluation: an empty dataset");
  BatchPlan p;
  p.n_ = numSamples;
  p.batch_ = globalBatch;
  p.groups_ = groups;
  p.shuffle_ = false;
  p.keepPartial_ = true;
  return p;
}

BatchPlan::BatchPlan(Index numSamples, int globalBatch, int groups, std::uint64_t seed,
                     bool shuffle)
    : n_(numSamples), batch_(globalBatch), groups_(groups), seed_(seed), shuffle_(shuffle) {
  if (globalBatch < 1 || groups < 1)
    fail("mini-batch ", globalBatch, " over ", groups, " data-parallel groups: both must be >= 1");
  if (globalBatch % groups != 0)
    fail("mini-batch ", globalBatch, " is not a multiple of the ", groups, " data-parallel groups");
  if (numSamples < globalBatch)
    fail("dataset of ", numSamples, " samples is smaller than the mini-batch ", globalBatch);
}

std::vector<Index> BatchPlan::epochOrder(int epoch) const {
  std::vector<Index> order(static_cast<std::size_t>(n_));
  for (Index i = 0; i < n_; ++i) order[std::size_t(i)] = i;
  if (shuffle_) shuffleDeterministic(order, seed_, std::uint64_t(epoch));
  return order;
}

Index BatchPlan::firstPosition(Index batch, int group) const {
  if (batch < 0 || batch >= batchesPerEpoch() || group < 0 || group >= groups_)
    fail("mini-batch ", batch, " of group ", group, " outside ", batchesPerEpoch(),
         " mini-batches x ", groups_, " groups");
  return batch * batch_ + Index(group) * localBatch();
}

int BatchPlan::count(Index batch, int group) const {
  const Index first = firstPosition(batch, group);
  const Index end = std::min((batch + 1) * Index(batch_), n_);
  return int(std::max<Index>(0, std::min<Index>(localBatch(), end - first)));
}

std::vector<Index> BatchPlan::samples(int epoch, Index batch, int group) const {
  const Index first = firstPosition(batch, group);
  const int n = count(batch, group);
  if (n == 0) return {};
  const std::vector<Index> order = epochOrder(epoch);
  return std::vector<Index>(order.begin() + first, order.begin() + first + n);
}

}  // namespace hybrid3d::data
