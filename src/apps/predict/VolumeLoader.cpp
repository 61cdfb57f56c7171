#include "VolumeLoader.hpp"

#include <cmath>
#include <filesystem>
#include <mutex>

#include <hybrid3d/core/Error.hpp>
#include <hybrid3d/data/CollectiveVerdict.hpp>
#include <hybrid3d/data/Hdf5.hpp>
#include <hybrid3d/data/Hdf5Lock.hpp>
#include <hybrid3d/data/NpyFile.hpp>
#include <hybrid3d/data/SampleExtents.hpp>
#include <hybrid3d/generate/NiftiVolume.hpp>

namespace hybrid3d::app {

namespace {

namespace fs = std::filesystem;

template <class V>
void broadcast(MPI_Comm comm, std::vector<V>& v) {
  unsigned long long n = v.size();
  MPI_Bcast(&n, 1, MPI_UNSIGNED_LONG_LONG, 0, comm);
  v.resize(std::size_t(n));
  MPI_Bcast(v.data(), int(n * sizeof(V)), MPI_BYTE, 0, comm);
}

// A sample file's targets (HDF5 dataset, or the .label.npy beside a numpy sample).
std::vector<double> readTargets(const std::string& path, const data::SampleSpec& spec) {
  std::vector<float> t;
  if (data::isNpySample(path)) {
    const data::NpyFile f(data::npyLabelPath(path));
    if (f.header().descr != "<f4")
      fail(f.path(), ": targets of type ", f.header().descr, "; expected float32 (<f4)");
    t.resize(std::size_t(f.header().elements()));
    f.readAll(t.data());
  } else {
    std::lock_guard<std::mutex> lock(data::hdf5Mutex());
    data::QuietErrors quiet;
    t = data::File(path).read<float>(spec.targets);
  }
  if (int(t.size()) != spec.numTargets)
    fail(path, ": '", spec.targets, "' holds ", t.size(), " targets; the model has ",
         spec.numTargets);
  return std::vector<double>(t.begin(), t.end());
}

// Labels as uint8 [D,H,W] of `extents`, each a whole number in [0, classes).
template <class V>
std::vector<std::uint8_t> checkedLabels(const std::string& what, const std::vector<V>& v,
                                        const Index3& extents, int classes) {
  if (Index(v.size()) != extents[0] * extents[1] * extents[2])
    fail(what, ": ", v.size(), " labels; the volume has ", toString(extents), " voxels");
  std::vector<std::uint8_t> labels(v.size());
  for (std::size_t i = 0; i < v.size(); ++i) {
    if (!(v[i] >= 0 && v[i] < classes && double(v[i]) == std::floor(double(v[i]))))
      fail(what, ": holds label ", v[i], " at voxel ", i, "; the model has classes 0 to ",
           classes - 1);
    labels[i] = static_cast<std::uint8_t>(v[i]);
  }
  return labels;
}

std::vector<std::uint8_t> readLabels(const VolumeFile& file, const data::SampleSpec& spec,
                                     const std::string& labelsDir, const Index3& extents) {
  if (file.nifti) {
    const std::string path = (fs::path(labelsDir) / fs::path(file.path).filename()).string();
    if (!fs::exists(path))
      fail(path, ": no label file for ", file.path, " in --labels ", labelsDir);
    const generate::NiftiVolume l = generate::readNiftiVolume(path);
    if (l.channels != 1)
      fail(path, ": holds ", l.channels, " volumes along t; a label file holds one");
    if (Index3{l.extent[0], l.extent[1], l.extent[2]} != extents)
      fail(path, ": ", toString(Index3{l.extent[0], l.extent[1], l.extent[2]}),
           " voxels (D,H,W), its image ", toString(extents));
    return checkedLabels(path, l.values, extents, spec.classes);
  }
  std::lock_guard<std::mutex> lock(data::hdf5Mutex());
  data::QuietErrors quiet;
  const data::File f(file.path);
  const std::vector<Index> shape = f.shape(spec.labels);
  if (shape != std::vector<Index>{extents[0], extents[1], extents[2]})
    fail(file.path, ": dataset '", spec.labels, "' has shape ", data::shapeText(shape),
         "; the volume is ", toString(extents));
  const std::vector<int> v = f.read<int>(spec.labels);  // integer classes (section 7)
  return checkedLabels(file.path + ": dataset '" + spec.labels + "'", v, extents, spec.classes);
}

}  // namespace

std::vector<float> normalisedNifti(const std::string& path, Index& channels, Index3& extents) {
  const generate::NiftiVolume v = generate::readNiftiVolume(path);
  channels = v.channels;
  extents = {v.extent[0], v.extent[1], v.extent[2]};
  const Index n = v.voxels();
  std::vector<float> out(v.values.size());
  for (Index c = 0; c < channels; ++c) {
    const double* x = v.values.data() + c * n;
    double sum = 0, squares = 0;
    for (Index i = 0; i < n; ++i) sum += x[i];
    const double mean = sum / double(n);
    for (Index i = 0; i < n; ++i) squares += (x[i] - mean) * (x[i] - mean);
    const double sd = std::sqrt(squares / double(n));
    const double std = sd > 0 ? sd : 1.0;  // as import nifti: a constant channel becomes 0
    for (Index i = 0; i < n; ++i) out[std::size_t(c * n + i)] = float((x[i] - mean) / std);
  }
  return out;
}

VolumeLoader::VolumeLoader(const ProcessGrid& grid, const VolumeFile& file,
                           const data::SampleSpec& spec,
                           const data::PreprocessOptions& preprocessing,
                           const std::string& labelsDir)
    : grid_(grid), file_(file), spec_(spec), preprocessing_(preprocessing) {
  const MPI_Comm comm = grid.worldComm();
  const bool root = grid.worldRank() == 0;
  bool targets = false;
  data::collectively(comm, [&] {
    if (!root) return;
    Index channels = spec.channels;
    if (file.nifti) {
      nifti_ = normalisedNifti(file.path, channels, extents_);
    } else {
      extents_ = data::sampleExtents(file.path, spec);
    }
    if (channels != spec.channels)
      fail(file.path, ": holds ", channels, " channel(s); the checkpoint's model takes ",
           spec.channels);
    targets = !file.nifti && data::sampleHolds(file.path, spec.targets);
    if (targets) targets_ = readTargets(file.path, spec);
    hasLabels_ = file.nifti ? !labelsDir.empty()
                            : !spec.labels.empty() && data::sampleHolds(file.path, spec.labels);
    if (hasLabels_) labels_ = readLabels(file, spec, labelsDir, extents_);
  });
  MPI_Bcast(extents_.data(), 3, MPI_INT64_T, 0, comm);
  broadcast(comm, targets_);
  int known = hasLabels_;
  MPI_Bcast(&known, 1, MPI_INT, 0, comm);
  hasLabels_ = known != 0;
  spec_.extents = extents_;
  spec_.targets.clear();
  spec_.labels.clear();
}

std::vector<float> VolumeLoader::niftiBox(const data::Subvolume& sub) const {
  const MPI_Comm comm = grid_.worldComm();
  const int size = grid_.worldSize();
  const Box3& b = sub.read;
  std::int64_t mine[6] = {b.lo[0], b.lo[1], b.lo[2], b.hi[0], b.hi[1], b.hi[2]};
  std::vector<std::int64_t> boxes(6 * std::size_t(size));
  MPI_Gather(mine, 6, MPI_INT64_T, boxes.data(), 6, MPI_INT64_T, 0, comm);
  const Index C = spec_.channels, D = extents_[0], H = extents_[1], W = extents_[2];
  std::vector<float> packed;
  std::vector<int> counts(size), displs(size);
  if (grid_.worldRank() == 0) {
    for (int r = 0; r < size; ++r) {
      const std::int64_t* q = &boxes[6 * std::size_t(r)];
      const Box3 rb{{q[0], q[1], q[2]}, {q[3], q[4], q[5]}};
      displs[r] = int(packed.size());
      for (Index c = 0; c < C && !rb.empty(); ++c)
        for (Index d = rb.lo[0]; d < rb.hi[0]; ++d)
          for (Index h = rb.lo[1]; h < rb.hi[1]; ++h)
            for (Index w = rb.lo[2]; w < rb.hi[2]; ++w)
              packed.push_back(nifti_[std::size_t(((c * D + d) * H + h) * W + w)]);
      counts[r] = int(packed.size()) - displs[r];
    }
  }
  std::vector<float> box(std::size_t(C * b.size()));
  MPI_Scatterv(packed.data(), counts.data(), displs.data(), MPI_FLOAT, box.data(), int(box.size()),
               MPI_FLOAT, 0, comm);
  return box;
}

template <class T>
void VolumeLoader::fill(const DistTensor<T, DefaultMemorySpace>& x, const Index3& origin,
                        const Index3& valid) const {
  const data::Subvolume sub = data::Subvolume::of(x).window(origin, valid, extents_);
  const data::Preprocess<T> preprocess(preprocessing_, spec_.channels, sub);
  const DefaultExecutionSpace exec;
  if (file_.nifti) {
    const std::vector<float> box = niftiBox(sub);
    preprocess.apply(exec, data::SampleFormat{}, box.data(), x, 0);
  } else {
    data::SampleReader reader(grid_.spatialComm(), spec_, sub, data::ReadMode::Independent);
    std::vector<unsigned char> raw(reader.inputCapacityBytes());
    data::SampleFormat format;
    data::collectively(grid_.worldComm(),
                       [&] { format = reader.read(file_.path, raw.data(), nullptr, nullptr); });
    preprocess.apply(exec, format, raw.data(), x, 0);
  }
  exec.fence();
}

#define HYBRID3D_INSTANTIATE(T)                                                                \
  template void VolumeLoader::fill<T>(const DistTensor<T, DefaultMemorySpace>&, const Index3&, \
                                      const Index3&) const;
HYBRID3D_INSTANTIATE(float)
HYBRID3D_INSTANTIATE(double)
HYBRID3D_INSTANTIATE(bfloat16)
HYBRID3D_INSTANTIATE(float16)
#undef HYBRID3D_INSTANTIATE

}  // namespace hybrid3d::app
