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
#include <hybrid3d/data/Hdf5.hpp>
#include <hybrid3d/data/Hdf5Lock.hpp>
#include <hybrid3d/layers/DistributedParameter.hpp>

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
// disk, a copy cut short, an edit) is caught on loading, naming the dataset.
template <class T>
std::uint64_t checksumOf(const T* values, std::size_t n) {
  const auto* bytes = reinterpret_cast<const unsigned char*>(values);
  std::uint64_t h = 14695981039346656037ull;
  for (std::size_t i = 0; i < n * sizeof(T); ++i) h = (h ^ bytes[i]) * 1099511628211ull;
  return h;
}

constexpr const char* checksumAttribute = "fnv1a64";

void writeChecksum(hid_t dataset, std::uint64_t sum, const std::string& name,
                   const std::string& path) {
  Handle scalar(H5Screate(H5S_SCALAR), H5Sclose);
  const hid_t type = H5T_NATIVE_UINT64;  // a macro call: named before use (nvcc)
  Handle attr(H5Acreate2(dataset, checksumAttribute, type, scalar, H5P_DEFAULT, H5P_DEFAULT),
              H5Aclose);
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

template <class T>
void writeScalar(hid_t file, const std::string& name, T value, const std::string& path) {
  Kokkos::View<T*, Kokkos::HostSpace> v("hybrid3d::Checkpoint::scalar", 1);
  v(0) = value;
  writeArray<T>(file, name, {1}, v, path);
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

// Creates `tmp`, lets `fill` write into it, flushes it to disk and renames it over `path`.
template <class Fill>
void writeAndRename(const std::string& path, const std::string& tmp, Fill fill) {
  {
    QuietErrors quiet;
    {
      Handle file(H5Fcreate(tmp.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT), H5Fclose);
      if (!file.valid()) fail(path, ": cannot create ", tmp);
      fill(file.get());
      if (H5Fflush(file, H5F_SCOPE_GLOBAL) < 0) fail(path, ": cannot flush ", tmp);
      crashPointForTests();
    }
    // Data on disk before the rename makes it visible; the directory entry after.
    fsyncPath(tmp, O_RDONLY);
    crashPointForTests();
    if (std::rename(tmp.c_str(), path.c_str()) != 0)
      fail(path, ": cannot rename ", tmp, " over it");
    crashPointForTests();
    const std::string dir = std::filesystem::path(path).parent_path().string();
    fsyncPath(dir.empty() ? "." : dir, O_RDONLY | O_DIRECTORY);
    crashPointForTests();
  }
}

// Rank 0 creates "<path>.tmp", lets `fill` write into it, flushes it to disk and renames it
// over `path`; a failure anywhere leaves `path` as it was and is thrown on every rank.
// `bytes`: about what the file will take, so that a full disk is named as such before and after.
template <class Fill>
void writeAtomically(const std::string& path, MPI_Comm comm, long long bytes, Fill fill) {
  onRankZero(comm, [&] {
    const std::string tmp = path + ".tmp";
    const std::string dir = std::filesystem::path(path).parent_path().string();
    const std::string where = dir.empty() ? "." : dir;
    auto noSpace = [&](long long free) {
      return "no space left on device: " + path + " needs about " + std::to_string(bytes) +
             " bytes, " + where + " has " + std::to_string(std::max(0LL, free)) + " bytes free";
    };
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

// One per-parameter array of a checkpoint: the dataset, its GLOBAL shape, this rank's part and
// the parameter whose distribution that part follows (a value, a buffer, or an optimizer state
// "<layer>/<param>/<state>" of that parameter, stored flat in the parameter's element order).
template <class T, class M>
struct StoredArray {
  std::string dataset;
  std::vector<Index> shape;
  Parameter<T, M> owner;  // the parameter's shape and layout (its views are not used)
  Kokkos::View<T*, M> local;
};

template <class T, class M>
std::vector<StoredArray<T, M>> storedArrays(const CheckpointContents<T, M>& c) {
  std::vector<StoredArray<T, M>> out;
  for (const auto& p : c.parameters)
    out.push_back({"/model/" + p.path(), p.param.shape, p.param, p.param.value});
  for (const auto& p : c.buffers)
    out.push_back({"/model/" + p.path(), p.param.shape, p.param, p.param.value});
  if (c.optimizer)
    for (const auto& [name, view] :
         c.wholeOptimizerState ? *c.wholeOptimizerState : c.optimizer->state()) {
      Parameter<T, M> owner{name, {Index(view.size())}, {}, {}, {}};  // replicated unless found
      for (const auto& p : c.parameters)
        if (name.rfind(p.path() + "/", 0) == 0) owner = p.param;
      out.push_back({"/optimizer/" + name, {globalSize(owner.shape)}, owner, view});
    }
  return out;
}

}  // namespace

template <class T, class M>
void writeCheckpoint(const std::string& path, MPI_Comm comm, const CheckpointContents<T, M>& c,
                     const RunState& state) {
  // Column shards are gathered into their global tensors first (collective), so that rank 0
  // writes the same file whatever the grid.
  const std::vector<StoredArray<T, M>> arrays = storedArrays(c);
  std::vector<std::vector<T>> gathered(arrays.size());
  for (std::size_t i = 0; i < arrays.size(); ++i)
    if (arrays[i].owner.layout.columnShard)
      gathered[i] = gatherGlobal(arrays[i].owner, arrays[i].local, comm);
  long long bytes = 1 << 20;  // the file's own structures, about
  for (const StoredArray<T, M>& a : arrays)
    bytes += static_cast<long long>(globalSize(a.shape)) * static_cast<long long>(sizeof(T));
  writeAtomically(path, comm, bytes, [&](hid_t file) {
    for (std::size_t i = 0; i < arrays.size(); ++i) {
      const StoredArray<T, M>& a = arrays[i];
      if (a.owner.layout.columnShard)
        writeArray<T>(
            file, a.dataset, a.shape,
            Kokkos::View<const T*, Kokkos::HostSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>>(
                gathered[i].data(), gathered[i].size()),
            path);
      else
        writeArray<T>(file, a.dataset, a.shape, a.local, path);
    }
    if (c.optimizer)
      writeScalar<std::int64_t>(file, "/optimizer/steps", c.optimizer->steps(), path);
    writeScalar<std::int64_t>(file, "/state/step", state.step, path);
    writeScalar<std::int64_t>(file, "/state/epoch", state.epoch, path);
    writeScalar<std::int64_t>(file, "/state/seed", static_cast<std::int64_t>(state.seed), path);
    writeStringAttribute(file, "deck", state.deck, path);
    writeStringAttribute(file, "identity", joinIdentity(state.identity), path);
    writeStringAttribute(file, "history", state.history, path);
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

// The dataset `name` of global shape `shape` (checked), as a flat array.
template <class T>
std::vector<T> readGlobal(const File& f, const std::string& name, const std::vector<Index>& shape) {
  if (!f.hasDataset(name)) fail(f.path(), ": no dataset ", name);
  if (f.shape(name) != shape) {
    std::string want, got;
    for (Index e : shape) want += (want.empty() ? "" : "x") + std::to_string(e);
    for (Index e : f.shape(name)) got += (got.empty() ? "" : "x") + std::to_string(e);
    fail(f.path(), ": ", name, " has shape ", got, " but the model expects ", want);
  }
  std::vector<T> values = f.read<T>(name);
  verifyChecksum(f, name, values);
  return values;
}

// The run state of an open file (rank 0); scalars[0..2] = step, epoch, seed.
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

// Every rank's RunState from rank 0's reading.
RunState broadcastState(std::int64_t* scalars, std::string deck, std::string identity,
                        std::string history, MPI_Comm comm) {
  MPI_Bcast(scalars, 3, MPI_INT64_T, 0, comm);
  broadcastString(deck, comm);
  broadcastString(identity, comm);
  broadcastString(history, comm);
  RunState state;
  state.step = scalars[0];
  state.epoch = scalars[1];
  state.seed = static_cast<unsigned long long>(scalars[2]);
  state.deck = std::move(deck);
  state.identity = splitIdentity(identity);
  state.history = std::move(history);
  return state;
}

}  // namespace

RunState readRunState(const std::string& path, MPI_Comm comm) {
  std::int64_t scalars[3] = {0, 0, 0};
  std::string deck, identity, history;
  onRankZero(comm, [&] {
    std::lock_guard<std::mutex> lock(hdf5Mutex());  // see writeAtomically
    deck = readState(File(path), scalars, identity, history);
  });
  return broadcastState(scalars, deck, identity, history, comm);
}

template <class T, class M>
RunState readCheckpoint(const std::string& path, MPI_Comm comm, const CheckpointContents<T, M>& c) {
  // Rank 0 reads every global tensor; each is broadcast and every rank keeps its own part.
  const std::vector<StoredArray<T, M>> arrays = storedArrays(c);
  std::vector<std::vector<T>> global(arrays.size());
  std::int64_t scalars[3] = {0, 0, 0}, optimizerSteps = 0;
  std::string deck, identity, history;
  onRankZero(comm, [&] {
    std::lock_guard<std::mutex> lock(hdf5Mutex());  // see writeAtomically
    File f(path);
    for (std::size_t i = 0; i < arrays.size(); ++i)
      global[i] = readGlobal<T>(f, arrays[i].dataset, arrays[i].shape);
    if (c.optimizer) optimizerSteps = f.read<std::int64_t>("/optimizer/steps").at(0);
    deck = readState(f, scalars, identity, history);
  });
  for (std::size_t i = 0; i < arrays.size(); ++i) {
    const Index n = globalSize(arrays[i].shape);
    if (n > INT_MAX) fail(path, ": ", arrays[i].dataset, " has more than 2^31 values");
    global[i].resize(std::size_t(n));
    MPI_Bcast(global[i].data(), static_cast<int>(n), mpiType<T>(), 0, comm);
    scatterGlobal(arrays[i].owner, global[i], arrays[i].local);
    std::vector<T>().swap(global[i]);
  }
  if (c.optimizer) {
    MPI_Bcast(&optimizerSteps, 1, MPI_INT64_T, 0, comm);
    c.optimizer->setSteps(optimizerSteps);
  }
  return broadcastState(scalars, deck, identity, history, comm);
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
