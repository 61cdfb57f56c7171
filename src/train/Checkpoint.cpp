#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <climits>
#include <filesystem>

#include <hybrid3d/comm/MpiTypes.hpp>
#include <hybrid3d/core/Error.hpp>
#include <hybrid3d/train/Checkpoint.hpp>
#include <hybrid3d/data/CollectiveVerdict.hpp>
#include <hybrid3d/data/Hdf5.hpp>
#include <hybrid3d/data/Hdf5Lock.hpp>

#include "impl/CheckpointParts.hpp"

#include <mutex>

namespace hybrid3d {

// The HDF5 wrappers of the data part (Hdf5.hpp, Hdf5Lock.hpp).
using data::File;
using data::Handle;
using data::hdf5Mutex;
using data::nativeType;
using data::QuietErrors;

namespace {

// Rank 0 runs `work`; its error message (if any) is broadcast and thrown on every rank.
template <class Fn>
void onRankZero(MPI_Comm comm, Fn work) {
  int rank;
  MPI_Comm_rank(comm, &rank);
  std::string message;
  if (rank == 0) {
    try {
      work();
    } catch (const std::exception& e) {
      message = e.what();
      if (message.empty()) message = "unknown error";
    }
  }
  int length = static_cast<int>(message.size());
  MPI_Bcast(&length, 1, MPI_INT, 0, comm);
  if (length == 0) return;
  message.resize(length);
  MPI_Bcast(message.data(), length, MPI_CHAR, 0, comm);
  throw Error(message);
}

// Tests only: with HYBRID3D_TEST_CHECKPOINT_KILL_AT=K in the environment the writing rank
// SIGKILLs itself at the K-th point of writing counted over the process (after each dataset,
// the flush, the data's fsync, the rename, the directory's fsync), so that a test can show a
// crash anywhere leaves a loadable checkpoint behind.
void crashPointForTests() {
  static const long long killAt = [] {
    const char* v = std::getenv("HYBRID3D_TEST_CHECKPOINT_KILL_AT");
    return v ? std::atoll(v) : 0LL;
  }();
  static long long reached = 0;
  if (killAt > 0 && ++reached == killAt) std::raise(SIGKILL);
}

// Tests only: with HYBRID3D_TEST_NO_SPACE set, every dataset write fails as a full disk's
// would (ENOSPC), where a test cannot mount a small file system.
bool noSpaceForTests() {
  const bool on = std::getenv("HYBRID3D_TEST_NO_SPACE") != nullptr;
  if (on) errno = ENOSPC;
  return on;
}

// Bytes free to an unprivileged writer in the file system holding `dir`; -1 if unknown.
long long freeBytes(const std::string& dir) {
  struct statvfs s {};
  if (::statvfs(dir.c_str(), &s) != 0) return -1;
  return static_cast<long long>(s.f_bavail) * static_cast<long long>(s.f_frsize);
}

void fsyncPath(const std::string& path, int flags) {
  const int fd = ::open(path.c_str(), flags);
  if (fd < 0) return;
  ::fsync(fd);
  ::close(fd);
}

// Creates every missing group on the way to `path` (an absolute dataset path).
void makeGroups(hid_t file, const std::string& path) {
  for (std::size_t pos = path.find('/', 1); pos != std::string::npos;
       pos = path.find('/', pos + 1)) {
    const std::string group = path.substr(0, pos);
    if (H5Lexists(file, group.c_str(), H5P_DEFAULT) > 0) continue;
    Handle g(H5Gcreate2(file, group.c_str(), H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT), H5Gclose);
    if (!g.valid()) fail("cannot create group ", group);
  }
}

// FNV-1a over a dataset's values as stored: a checkpoint damaged after it was written (a bad
// disk, a copy cut short, an edit) is caught on loading, naming the dataset. Checkpoints from
// before each rank wrote its own part carry it (and files of writeArrays still do); it runs
// through the whole array in order, so checking it needs the whole array on one rank.
template <class T>
std::uint64_t checksumOf(const T* values, std::size_t n) {
  const auto* bytes = reinterpret_cast<const unsigned char*>(values);
  std::uint64_t h = 14695981039346656037ull;
  for (std::size_t i = 0; i < n * sizeof(T); ++i) h = (h ^ bytes[i]) * 1099511628211ull;
  return h;
}

constexpr const char* checksumAttribute = "fnv1a64";
// The checksum of a checkpoint's arrays since each rank writes its part: summed over the parts
// (train/impl/CheckpointParts.hpp's checksumShare), whatever the layout.
constexpr const char* partsChecksumAttribute = "elementhash64";

void writeChecksum(hid_t dataset, std::uint64_t sum, const std::string& name,
                   const std::string& path, const char* attribute = checksumAttribute) {
  Handle scalar(H5Screate(H5S_SCALAR), H5Sclose);
  const hid_t type = H5T_NATIVE_UINT64;  // a macro call: named before use (nvcc)
  Handle attr(H5Acreate2(dataset, attribute, type, scalar, H5P_DEFAULT, H5P_DEFAULT), H5Aclose);
  if (!attr.valid() || H5Awrite(attr, type, &sum) < 0)
    fail(path, ": cannot write the checksum of ", name);
}

template <class T, class View>
void writeArray(hid_t file, const std::string& name, const std::vector<Index>& shape, const View& v,
                const std::string& path) {
  Index n = 1;
  for (Index e : shape) n *= e;
  if (static_cast<std::size_t>(n) != v.size())
    fail(path, ": ", name, " holds ", v.size(), " values but its shape has ", n);
  auto h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), v);
  makeGroups(file, name);
  std::vector<hsize_t> dims(shape.begin(), shape.end());
  Handle space(H5Screate_simple(static_cast<int>(dims.size()), dims.data(), nullptr), H5Sclose);
  Handle d(
      H5Dcreate2(file, name.c_str(), nativeType<T>(), space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT),
      H5Dclose);
  if (!d.valid() || noSpaceForTests() ||
      H5Dwrite(d, nativeType<T>(), H5S_ALL, H5S_ALL, H5P_DEFAULT, h.data()) < 0)
    fail(path, ": cannot write ", name);
  writeChecksum(d, checksumOf(h.data(), h.size()), name, path);
  crashPointForTests();
}

// A fixed-length string attribute on the root group.
void writeStringAttribute(hid_t file, const char* name, const std::string& text,
                          const std::string& path) {
  Handle type(H5Tcopy(H5T_C_S1), H5Tclose);
  H5Tset_size(type, std::max<std::size_t>(1, text.size()));
  Handle scalar(H5Screate(H5S_SCALAR), H5Sclose);
  Handle attr(H5Acreate2(file, name, type, scalar, H5P_DEFAULT, H5P_DEFAULT), H5Aclose);
  const std::string stored = text.empty() ? std::string(1, '\0') : text;
  if (!attr.valid() || H5Awrite(attr, type, stored.data()) < 0)
    fail(path, ": cannot write the ", name, " attribute");
}

std::string joinIdentity(const std::map<std::string, std::string>& identity) {
  std::string text;
  for (const auto& [key, value] : identity) text += key + "=" + value + "\n";
  return text;
}

std::map<std::string, std::string> splitIdentity(const std::string& text) {
  std::map<std::string, std::string> identity;
  std::size_t start = 0;
  while (start < text.size()) {
    std::size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    const std::string line = text.substr(start, end - start);
    const std::size_t eq = line.find('=');
    if (eq != std::string::npos) identity[line.substr(0, eq)] = line.substr(eq + 1);
    start = end + 1;
  }
  return identity;
}

// Rank 0's string, on every rank.
void broadcastString(std::string& text, MPI_Comm comm) {
  int length = static_cast<int>(text.size());
  MPI_Bcast(&length, 1, MPI_INT, 0, comm);
  text.resize(length);
  MPI_Bcast(text.data(), length, MPI_CHAR, 0, comm);
}

// The written and closed `tmp` to disk, renamed over `path`: data on disk before the rename
// makes it visible; the directory entry after.
void renameIntoPlace(const std::string& path, const std::string& tmp) {
  fsyncPath(tmp, O_RDONLY);
  crashPointForTests();
  if (std::rename(tmp.c_str(), path.c_str()) != 0) fail(path, ": cannot rename ", tmp, " over it");
  crashPointForTests();
  const std::string dir = std::filesystem::path(path).parent_path().string();
  fsyncPath(dir.empty() ? "." : dir, O_RDONLY | O_DIRECTORY);
  crashPointForTests();
}

// Creates `tmp`, lets `fill` write into it, flushes it to disk and renames it over `path`.
template <class Fill>
void writeAndRename(const std::string& path, const std::string& tmp, Fill fill) {
  QuietErrors quiet;
  {
    Handle file(H5Fcreate(tmp.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT), H5Fclose);
    if (!file.valid()) fail(path, ": cannot create ", tmp);
    fill(file.get());
    if (H5Fflush(file, H5F_SCOPE_GLOBAL) < 0) fail(path, ": cannot flush ", tmp);
    crashPointForTests();
  }
  renameIntoPlace(path, tmp);
}

// The errno of this rank's last failed dataset write, for naming a full disk as such.
int& lastWriteErrno() {
  static int error = 0;
  return error;
}

// The message for a full disk: what `path` needs, what its directory has.
std::string noSpaceMessage(const std::string& path, const std::string& where, long long bytes,
                           long long free) {
  return "no space left on device: " + path + " needs about " + std::to_string(bytes) + " bytes, " +
         where + " has " + std::to_string(std::max(0LL, free)) + " bytes free";
}

std::string directoryOf(const std::string& path) {
  const std::string dir = std::filesystem::path(path).parent_path().string();
  return dir.empty() ? "." : dir;
}

// Rank 0 creates "<path>.tmp", lets `fill` write into it, flushes it to disk and renames it
// over `path`; a failure anywhere leaves `path` as it was and is thrown on every rank.
// `bytes`: about what the file will take, so that a full disk is named as such before and after.
template <class Fill>
void writeAtomically(const std::string& path, MPI_Comm comm, long long bytes, Fill fill) {
  onRankZero(comm, [&] {
    const std::string tmp = path + ".tmp", where = directoryOf(path);
    auto noSpace = [&](long long free) { return noSpaceMessage(path, where, bytes, free); };
    const long long before = freeBytes(where);
    if (before >= 0 && before < bytes) fail(noSpace(before));
    // HDF5 is not thread-safe and a loader may be prefetching on its own thread.
    std::lock_guard<std::mutex> lock(hdf5Mutex());
    try {
      writeAndRename(path, tmp, fill);
    } catch (const Error& e) {
      // The partial file would fill the disk further; errno is the failed write's.
      const int error = errno;
      const long long free = freeBytes(where);
      std::remove(tmp.c_str());
      if (error == ENOSPC || (free >= 0 && free < bytes)) fail(noSpace(free));
      throw;
    }
  });
}

// Every rank of `comm` creates "<path>.tmp" together (MPI-IO) and `fill` writes each rank's
// parts into it with collective transfers (its second argument); then rank 0 flushes it to disk
// and renames it over `path`. Every step that can fail is agreed over `comm`, so a failure
// anywhere leaves `path` as it was and is thrown on every rank. `bytes`: as writeAtomically's.
template <class Fill>
void writeTogetherAtomically(const std::string& path, MPI_Comm comm, long long bytes, Fill fill) {
  const std::string tmp = path + ".tmp", where = directoryOf(path);
  onRankZero(comm, [&] {
    const long long before = freeBytes(where);
    if (before >= 0 && before < bytes) fail(noSpaceMessage(path, where, bytes, before));
  });
  // HDF5 is not thread-safe and a loader may be prefetching on its own thread (which makes no
  // MPI call, so holding the lock through collective calls cannot deadlock).
  std::lock_guard<std::mutex> lock(hdf5Mutex());
  lastWriteErrno() = 0;
  try {
    QuietErrors quiet;
    {
      Handle fapl(H5Pcreate(H5P_FILE_ACCESS), H5Pclose);
      H5Pset_fapl_mpio(fapl, comm, MPI_INFO_NULL);
      Handle file(H5Fcreate(tmp.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, fapl), H5Fclose);
      data::agreeOnError(comm, file.valid() ? "" : path + ": cannot create " + tmp);
      Handle dxpl(H5Pcreate(H5P_DATASET_XFER), H5Pclose);
      H5Pset_dxpl_mpio(dxpl, H5FD_MPIO_INDEPENDENT);
      fill(file.get(), dxpl.get());
      const bool flushed = H5Fflush(file, H5F_SCOPE_GLOBAL) >= 0;
      data::agreeOnError(comm, flushed ? "" : path + ": cannot flush " + tmp);
      crashPointForTests();
    }  // closed together
    onRankZero(comm, [&] { renameIntoPlace(path, tmp); });
  } catch (const Error& e) {
    // The partial file would fill the disk further; a full disk on any rank is named as such.
    int full = lastWriteErrno() == ENOSPC ? 1 : 0;
    MPI_Allreduce(MPI_IN_PLACE, &full, 1, MPI_INT, MPI_MAX, comm);
    const std::string message = e.what();
    onRankZero(comm, [&] {
      const long long free = freeBytes(where);
      std::remove(tmp.c_str());
      if (full || (free >= 0 && free < bytes)) fail(noSpaceMessage(path, where, bytes, free));
      throw Error(message);
    });
  }
}

}  // namespace

void writeArrays(const std::string& path, MPI_Comm comm, const std::vector<NamedArray>& arrays) {
  long long bytes = 0;
  for (const NamedArray& a : arrays) bytes += static_cast<long long>(a.values.size() * 8);
  writeAtomically(path, comm, bytes, [&](hid_t file) {
    for (const NamedArray& a : arrays) {
      Kokkos::View<const double*, Kokkos::HostSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>> v(
          a.values.data(), a.values.size());
      writeArray<double>(file, a.name, a.shape, v, path);
    }
  });
}

namespace {

// One array of a checkpoint: the dataset and its GLOBAL shape; the parameter whose local layout
// its elements follow (Parameter.hpp: a value, a buffer, or an optimizer state
// "<layer>/<param>/<state>" of that parameter, stored flat in the parameter's element order);
// the part of that layout this rank holds in `local` (the whole of it unless the optimizer state
// is sharded: `parted`) and the part it writes and checks (each element by one rank).
template <class T, class M>
struct StoredArray {
  std::string dataset;
  std::vector<Index> shape, ownerShape;
  ParameterLayout layout;
  Kokkos::View<T*, M> local;
  bool parted = false;
  ShardRange held, written;
};

template <class T, class M>
StoredArray<T, M> storedArray(const std::string& dataset, const std::vector<Index>& shape,
                              const Parameter<T, M>& owner, const Kokkos::View<T*, M>& local,
                              const ShardRange* part, const std::string& path) {
  StoredArray<T, M> a{dataset, shape, owner.shape, owner.layout, local, part != nullptr, {}, {}};
  const std::size_t elements = std::size_t(Impl::localElements(owner.shape, owner.layout));
  a.held = part ? *part : ShardRange{0, elements};
  if (a.held.end() > elements || local.size() != a.held.count)
    fail(path, ": ", dataset, " holds ", local.size(), " values but its shape has ",
         part ? a.held.count : elements);
  return a;
}

// Every array of `c`, this rank's parts placed (collective over `comm`; a mismatch anywhere is
// thrown on every rank).
template <class T, class M>
std::vector<StoredArray<T, M>> storedArrays(const CheckpointContents<T, M>& c, MPI_Comm comm,
                                            const std::string& path) {
  std::vector<StoredArray<T, M>> out;
  data::collectively(comm, [&] {
    for (const auto* list : {&c.parameters, &c.buffers})
      for (const auto& p : *list)
        out.push_back(storedArray("/model/" + p.path(), p.param.shape, p.param, p.param.value,
                                  nullptr, path));
    if (!c.optimizer) return;
    const auto state = c.optimizer->state();
    const auto& parts = c.optimizerStateParts;
    if (!parts.empty() && parts.size() != state.size())
      fail(path, ": ", parts.size(), " optimizer state parts for ", state.size(), " states");
    for (std::size_t i = 0; i < state.size(); ++i) {
      const auto& [name, view] = state[i];
      Parameter<T, M> owner{name, {Index(view.size())}, {}, {}, {}};  // replicated unless found
      for (const auto& p : c.parameters)
        if (name.rfind(p.path() + "/", 0) == 0) owner = p.param;
      out.push_back(storedArray("/optimizer/" + name, {globalSize(owner.shape)}, owner, view,
                                parts.empty() ? nullptr : &parts[i], path));
    }
  });
  for (StoredArray<T, M>& a : out)
    a.written = a.parted ? a.held : Impl::writtenByCopies(comm, a.ownerShape, a.layout);
  return out;
}

// A column shard's part is scattered over the file (its columns' runs in every row: 2048 rows
// times 256 runs of 2 values per rank for CosmoFlow 64^3's fc1 on 2x2x1), which HDF5's
// selections and MPI-IO's collective writes handle in time quadratic in the pieces. So its
// values travel first (MPI_Alltoallv, by global index) to the rank whose contiguous slab of the
// flat tensor holds them (shardRange over the world), which writes the slab as one range; reading
// reverses it. A rank stages its slab (1/P of the tensor) and the indices of its own part.

// The global row-major index of each of a column shard's local elements `r` (ascending: the
// columns ascend in each row).
std::vector<std::int64_t> globalIndices(const std::vector<Index>& shape,
                                        const ParameterLayout& layout, const ShardRange& r) {
  const std::size_t k = layout.columns.size();
  std::vector<std::int64_t> out(r.count);
  for (std::size_t i = 0; i < r.count; ++i) {
    const std::size_t local = r.begin + i;
    out[i] = std::int64_t(local / k) * shape.at(1) + layout.columns[local % k];
  }
  return out;
}

// MPI's counts and displacements for sending ascending global indices `index` to the ranks whose
// slabs of `n` elements hold them, and for receiving what the others send (one MPI_Alltoall).
struct Routes {
  std::vector<int> sendCounts, sendOffsets, receiveCounts, receiveOffsets;
  std::size_t received = 0;
};

Routes routesToSlabs(const std::vector<std::int64_t>& index, std::uint64_t n, MPI_Comm comm) {
  int ranks = 1;
  MPI_Comm_size(comm, &ranks);
  Routes r;
  r.sendCounts.assign(std::size_t(ranks), 0);
  const std::uint64_t base = n / std::uint64_t(ranks), extra = n % std::uint64_t(ranks);
  const std::uint64_t edge = extra * (base + 1);
  for (std::int64_t g : index) {
    const std::uint64_t u = std::uint64_t(g);
    ++r.sendCounts[std::size_t(u < edge ? u / (base + 1) : extra + (u - edge) / base)];
  }
  r.receiveCounts.assign(std::size_t(ranks), 0);
  MPI_Alltoall(r.sendCounts.data(), 1, MPI_INT, r.receiveCounts.data(), 1, MPI_INT, comm);
  long long sent = 0, received = 0;
  for (int q = 0; q < ranks; ++q) {
    r.sendOffsets.push_back(int(sent));
    r.receiveOffsets.push_back(int(received));
    sent += r.sendCounts[std::size_t(q)];
    received += r.receiveCounts[std::size_t(q)];
  }
  if (sent > INT_MAX || received > INT_MAX) fail("checkpoint: a rank's part exceeds 2^31 values");
  r.received = std::size_t(received);
  return r;
}

// The slab of `a`'s flat tensor this rank writes and reads, as an array of its own: replicated
// layout over the flat tensor, held and written whole.
template <class T, class M>
StoredArray<T, Kokkos::HostSpace> slabArray(const StoredArray<T, M>& a, MPI_Comm comm) {
  int rank = 0, ranks = 1;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &ranks);
  const Index n = globalSize(a.shape);
  const ShardRange slab = shardRange(std::size_t(n), rank, ranks);
  return {a.dataset,
          a.shape,
          {n},
          {},
          Kokkos::View<T*, Kokkos::HostSpace>("hybrid3d::Checkpoint::slab", slab.count),
          false,
          slab,
          slab};
}

// `a`'s written part moved to the slabs (collective over `comm`).
template <class T, class M>
StoredArray<T, Kokkos::HostSpace> gatheredSlab(const StoredArray<T, M>& a, MPI_Comm comm) {
  StoredArray<T, Kokkos::HostSpace> s = slabArray(a, comm);
  const auto host = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), a.local);
  const T* mine = host.data() + (a.written.begin - a.held.begin);
  const std::vector<std::int64_t> index = globalIndices(a.ownerShape, a.layout, a.written);
  const Routes r = routesToSlabs(index, std::uint64_t(globalSize(a.shape)), comm);
  std::vector<std::int64_t> from(r.received);
  std::vector<T> values(r.received);
  MPI_Alltoallv(index.data(), r.sendCounts.data(), r.sendOffsets.data(), MPI_INT64_T, from.data(),
                r.receiveCounts.data(), r.receiveOffsets.data(), MPI_INT64_T, comm);
  MPI_Alltoallv(mine, r.sendCounts.data(), r.sendOffsets.data(), mpiType<T>(), values.data(),
                r.receiveCounts.data(), r.receiveOffsets.data(), mpiType<T>(), comm);
  std::string error;
  if (r.received != s.held.count)
    error = a.dataset + ": the ranks' parts put " + std::to_string(r.received) +
            " values in a slab of " + std::to_string(s.held.count);
  for (std::size_t i = 0; i < r.received && error.empty(); ++i)
    s.local(std::size_t(from[i]) - s.held.begin) = values[i];
  data::agreeOnError(comm, error);
  return s;
}

// `a`'s held part from the slabs `s` read (collective over `comm`).
template <class T, class M>
void scatterSlab(const StoredArray<T, Kokkos::HostSpace>& s, const StoredArray<T, M>& a,
                 MPI_Comm comm) {
  const std::vector<std::int64_t> index = globalIndices(a.ownerShape, a.layout, a.held);
  const Routes r = routesToSlabs(index, std::uint64_t(globalSize(a.shape)), comm);
  std::vector<std::int64_t> asked(r.received);
  MPI_Alltoallv(index.data(), r.sendCounts.data(), r.sendOffsets.data(), MPI_INT64_T, asked.data(),
                r.receiveCounts.data(), r.receiveOffsets.data(), MPI_INT64_T, comm);
  std::vector<T> answers(r.received);
  for (std::size_t i = 0; i < r.received; ++i)
    answers[i] = s.local(std::size_t(asked[i]) - s.held.begin);
  const auto host = Kokkos::create_mirror_view(Kokkos::HostSpace(), a.local);
  MPI_Alltoallv(answers.data(), r.receiveCounts.data(), r.receiveOffsets.data(), mpiType<T>(),
                host.data(), r.sendCounts.data(), r.sendOffsets.data(), mpiType<T>(), comm);
  Kokkos::deep_copy(a.local, host);
}

// A memory dataspace of `count` elements (none selected when 0).
Handle memorySpace(std::size_t count) {
  const hsize_t n = std::max<hsize_t>(1, count);
  Handle space(H5Screate_simple(1, &n, nullptr), H5Sclose);
  if (count == 0) H5Sselect_none(space);
  return space;
}

// The checksum of `a` from every rank's share of it (its written part, whose values start at
// `values`), and that the shares covered the tensor once. Collective over `comm`.
template <class T, class M>
std::uint64_t checksumOver(const StoredArray<T, M>& a, const T* values, MPI_Comm comm,
                           const std::string& path) {
  std::uint64_t sums[2] = {Impl::checksumShare(values, sizeof(T), a.written), a.written.count};
  MPI_Allreduce(MPI_IN_PLACE, sums, 2, MPI_UINT64_T, MPI_SUM, comm);
  if (sums[1] != std::uint64_t(globalSize(a.shape)))
    fail(path, ": ", a.dataset, ": the ranks' parts hold ", sums[1], " of its ",
         globalSize(a.shape), " values");
  return sums[0];
}

// Creates `a`'s dataset, writes this rank's part of it with the others (`dxpl` collective) and
// its checksum. Collective over `comm`.
template <class T, class M>
void writePart(hid_t file, hid_t dxpl, const StoredArray<T, M>& a, MPI_Comm comm,
               const std::string& path) {
  if (a.layout.columnShard) fail(path, ": ", a.dataset, " is written through its slabs");
  const auto host = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), a.local);
  makeGroups(file, a.dataset);
  const std::vector<hsize_t> dims(a.shape.begin(), a.shape.end());
  Handle space(H5Screate_simple(int(dims.size()), dims.data(), nullptr), H5Sclose);
  // No fill values: the ranks' parts cover the dataset (checked below), and parallel HDF5 would
  // have rank 0 write the whole of it first.
  Handle dcpl(H5Pcreate(H5P_DATASET_CREATE), H5Pclose);
  H5Pset_fill_time(dcpl, H5D_FILL_TIME_NEVER);
  Handle d(
      H5Dcreate2(file, a.dataset.c_str(), nativeType<T>(), space, H5P_DEFAULT, dcpl, H5P_DEFAULT),
      H5Dclose);
  if (!d.valid()) fail(path, ": cannot write ", a.dataset);  // metadata: alike on every rank
  const T none{};
  const T* values = a.written.count ? host.data() + (a.written.begin - a.held.begin) : &none;
  std::string error;
  try {
    Handle part(Impl::selectRange(space, a.written), H5Sclose);
    if (noSpaceForTests() ||
        H5Dwrite(d, nativeType<T>(), memorySpace(a.written.count), part, dxpl, values) < 0) {
      lastWriteErrno() = errno;
      error = path + ": cannot write " + a.dataset;
    }
  } catch (const Error& e) {
    error = e.what();
  }
  data::agreeOnError(comm, error);
  writeChecksum(d, checksumOver(a, values, comm, path), a.dataset, path, partsChecksumAttribute);
  crashPointForTests();
}

// A scalar of the run state: rank 0's value, written by rank 0.
template <class T>
void writeScalarPart(hid_t file, hid_t dxpl, const std::string& name, T value, MPI_Comm comm,
                     const std::string& path) {
  Kokkos::View<T*, Kokkos::HostSpace> v("hybrid3d::Checkpoint::scalar", 1);
  v(0) = value;
  const Parameter<T, Kokkos::HostSpace> owner{name, {1}, v, {}, {}};
  StoredArray<T, Kokkos::HostSpace> a = storedArray<T>(name, {1}, owner, v, nullptr, path);
  a.written = Impl::writtenByCopies(comm, a.ownerShape, a.layout);
  writePart(file, dxpl, a, comm, path);
}

// Rank 0's text, on every rank (attributes are written by all ranks alike).
std::string fromRankZero(std::string text, MPI_Comm comm);

}  // namespace

template <class T, class M>
void writeCheckpoint(const std::string& path, MPI_Comm comm, const CheckpointContents<T, M>& c,
                     const RunState& state) {
  // Each rank writes its own part of every array into the one file: no tensor is gathered.
  const std::vector<StoredArray<T, M>> arrays = storedArrays(c, comm, path);
  long long bytes = 1 << 20;  // the file's own structures, about
  for (const StoredArray<T, M>& a : arrays)
    bytes += static_cast<long long>(globalSize(a.shape)) * static_cast<long long>(sizeof(T));
  const std::string deck = fromRankZero(state.deck, comm),
                    history = fromRankZero(state.history, comm),
                    identity = fromRankZero(joinIdentity(state.identity), comm);
  writeTogetherAtomically(path, comm, bytes, [&](hid_t file, hid_t dxpl) {
    for (const StoredArray<T, M>& a : arrays)
      if (a.layout.columnShard)
        writePart(file, dxpl, gatheredSlab(a, comm), comm, path);
      else
        writePart(file, dxpl, a, comm, path);
    if (c.optimizer)
      writeScalarPart<std::int64_t>(file, dxpl, "/optimizer/steps", c.optimizer->steps(), comm,
                                    path);
    writeScalarPart<std::int64_t>(file, dxpl, "/state/step", state.step, comm, path);
    writeScalarPart<std::int64_t>(file, dxpl, "/state/epoch", state.epoch, comm, path);
    writeScalarPart<std::int64_t>(file, dxpl, "/state/seed", static_cast<std::int64_t>(state.seed),
                                  comm, path);
    writeStringAttribute(file, "deck", deck, path);
    writeStringAttribute(file, "identity", identity, path);
    writeStringAttribute(file, "history", history, path);
  });
}

namespace {

// A dataset read as T whose stored values are T's (the checksum is of the stored bytes) must
// match its checksum; files from before checksums have none.
template <class T>
void verifyChecksum(const File& f, const std::string& name, const std::vector<T>& values) {
  Handle d = f.openDataset(name);
  if (!d.valid() || H5Aexists(d, checksumAttribute) <= 0) return;
  Handle stored(H5Dget_type(d), H5Tclose);
  if (H5Tget_size(stored) != sizeof(T) || H5Tget_class(stored) != H5T_FLOAT) return;
  std::uint64_t want = 0;
  Handle attr(H5Aopen(d, checksumAttribute, H5P_DEFAULT), H5Aclose);
  const hid_t type = H5T_NATIVE_UINT64;
  if (!attr.valid() || H5Aread(attr, type, &want) < 0)
    fail(f.path(), ": cannot read the checksum of ", name);
  if (checksumOf(values.data(), values.size()) != want)
    fail(f.path(), ": dataset ", name,
         " does not match its checksum: the file was damaged after it was written (restart from "
         "an intact copy)");
}

// `a`'s dataset checked against its checksum, this rank's part read being `host` (`a.held`):
// every rank checks its written part and the shares are summed. A file from before the parts'
// checksum carries FNV-1a of the whole array: rank 0 reads the whole array to check it.
// Collective over `comm`.
template <class T, class M, class Host>
void verifyParts(const File& f, hid_t dataset, const StoredArray<T, M>& a, const Host& host,
                 MPI_Comm comm) {
  Handle stored(H5Dget_type(dataset), H5Tclose);
  if (H5Tget_size(stored) != sizeof(T) || H5Tget_class(stored) != H5T_FLOAT) return;
  if (H5Aexists(dataset, partsChecksumAttribute) <= 0) {
    if (H5Aexists(dataset, checksumAttribute) > 0)
      onRankZero(comm, [&] { verifyChecksum(f, a.dataset, f.read<T>(a.dataset)); });
    return;
  }
  std::uint64_t want = 0;
  Handle attr(H5Aopen(dataset, partsChecksumAttribute, H5P_DEFAULT), H5Aclose);
  const hid_t type = H5T_NATIVE_UINT64;
  if (!attr.valid() || H5Aread(attr, type, &want) < 0)
    fail(f.path(), ": cannot read the checksum of ", a.dataset);
  const T none{};
  const T* values = a.written.count ? host.data() + (a.written.begin - a.held.begin) : &none;
  if (checksumOver(a, values, comm, f.path()) != want)
    fail(f.path(), ": dataset ", a.dataset,
         " does not match its checksum: the file was damaged after it was written (restart from "
         "an intact copy)");
}

// The dataset `name` must exist with the global shape `shape` (metadata: alike on every rank).
void checkShape(const File& f, const std::string& name, const std::vector<Index>& shape) {
  if (!f.hasDataset(name)) fail(f.path(), ": no dataset ", name);
  if (f.shape(name) != shape) {
    std::string want, got;
    for (Index e : shape) want += (want.empty() ? "" : "x") + std::to_string(e);
    for (Index e : f.shape(name)) got += (got.empty() ? "" : "x") + std::to_string(e);
    fail(f.path(), ": ", name, " has shape ", got, " but the model expects ", want);
  }
}

// This rank's part of `a` read from `f` with the others (`dxpl` collective where the file is
// shared) and checked. Collective over `comm`.
template <class T, class M>
void readPart(const File& f, hid_t dxpl, const StoredArray<T, M>& a, MPI_Comm comm) {
  if (a.layout.columnShard) fail(f.path(), ": ", a.dataset, " is read through its slabs");
  checkShape(f, a.dataset, a.shape);
  Handle d = f.openDataset(a.dataset);
  Handle space(H5Dget_space(d), H5Sclose);
  const auto host = Kokkos::create_mirror_view(Kokkos::HostSpace(), a.local);
  std::string error;
  try {
    Handle part(Impl::selectRange(space, a.held), H5Sclose);
    T none{};
    T* into = a.held.count ? host.data() : &none;
    if (H5Dread(d, nativeType<T>(), memorySpace(a.held.count), part, dxpl, into) < 0)
      error = f.path() + ": cannot read " + a.dataset;
  } catch (const Error& e) {
    error = e.what();
  }
  data::agreeOnError(comm, error);
  verifyParts(f, d, a, host, comm);
  Kokkos::deep_copy(a.local, host);
}

// The run state of an open file; scalars[0..2] = step, epoch, seed.
std::string readState(const File& f, std::int64_t* scalars, std::string& identity,
                      std::string& history) {
  std::string deck;
  if (f.hasAttribute("deck")) deck = f.attributeString("deck");
  if (f.hasAttribute("identity")) identity = f.attributeString("identity");
  if (f.hasAttribute("history")) history = f.attributeString("history");
  if (history == std::string(1, '\0')) history.clear();
  if (f.hasDataset("/state/step")) {
    scalars[0] = f.read<std::int64_t>("/state/step").at(0);
    scalars[1] = f.read<std::int64_t>("/state/epoch").at(0);
    scalars[2] = f.read<std::int64_t>("/state/seed").at(0);
  }
  return deck;
}

RunState runState(const std::int64_t* scalars, std::string deck, const std::string& identity,
                  std::string history) {
  RunState state;
  state.step = scalars[0];
  state.epoch = scalars[1];
  state.seed = static_cast<unsigned long long>(scalars[2]);
  state.deck = std::move(deck);
  state.identity = splitIdentity(identity);
  state.history = std::move(history);
  return state;
}

std::string fromRankZero(std::string text, MPI_Comm comm) {
  broadcastString(text, comm);
  return text;
}

}  // namespace

RunState readRunState(const std::string& path, MPI_Comm comm) {
  std::int64_t scalars[3] = {0, 0, 0};
  std::string deck, identity, history;
  onRankZero(comm, [&] {
    std::lock_guard<std::mutex> lock(hdf5Mutex());  // see writeAtomically
    deck = readState(File(path), scalars, identity, history);
  });
  MPI_Bcast(scalars, 3, MPI_INT64_T, 0, comm);
  return runState(scalars, fromRankZero(deck, comm), fromRankZero(identity, comm),
                  fromRankZero(history, comm));
}

template <class T, class M>
RunState readCheckpoint(const std::string& path, MPI_Comm comm, const CheckpointContents<T, M>& c) {
  // Each rank reads its own part of every array from the one file and checks its share of it.
  const std::vector<StoredArray<T, M>> arrays = storedArrays(c, comm, path);
  std::lock_guard<std::mutex> lock(hdf5Mutex());        // see writeTogetherAtomically
  data::collectively(comm, [&] { File probe(path); });  // one that will not open, on every rank
  const File f(path, comm);
  Handle dxpl(H5Pcreate(H5P_DATASET_XFER), H5Pclose);
  if (comm != MPI_COMM_SELF) H5Pset_dxpl_mpio(dxpl, H5FD_MPIO_COLLECTIVE);
  for (const StoredArray<T, M>& a : arrays) {
    if (!a.layout.columnShard) {
      readPart(f, dxpl, a, comm);
      continue;
    }
    const auto slab = slabArray(a, comm);
    readPart(f, dxpl, slab, comm);
    scatterSlab(slab, a, comm);
  }
  if (c.optimizer) c.optimizer->setSteps(f.read<std::int64_t>("/optimizer/steps").at(0));
  std::int64_t scalars[3] = {0, 0, 0};
  std::string identity, history;
  std::string deck = readState(f, scalars, identity, history);
  return runState(scalars, std::move(deck), identity, std::move(history));
}

template void writeCheckpoint<float, DefaultMemorySpace>(
    const std::string&, MPI_Comm, const CheckpointContents<float, DefaultMemorySpace>&,
    const RunState&);
template void writeCheckpoint<double, DefaultMemorySpace>(
    const std::string&, MPI_Comm, const CheckpointContents<double, DefaultMemorySpace>&,
    const RunState&);
template RunState readCheckpoint<float, DefaultMemorySpace>(
    const std::string&, MPI_Comm, const CheckpointContents<float, DefaultMemorySpace>&);
template RunState readCheckpoint<double, DefaultMemorySpace>(
    const std::string&, MPI_Comm, const CheckpointContents<double, DefaultMemorySpace>&);

}  // namespace hybrid3d
