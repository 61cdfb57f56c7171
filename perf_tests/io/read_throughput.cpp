// Sample-reading benchmark: throughput of this rank count's spatially parallel reads of
// CosmoFlow-like samples (4 channels, int16, 128^3 and 256^3), MPI-IO collective against
// independent POSIX reads, and the I/O time per training step left exposed with and without
// prefetch when the step computes for a fixed time. Then one sample of L^3 (default 512^3, about
// 1 GiB int16) in each stored form a user may have: the project's own [C,D,H,W], the published
// CosmoFlow channels-last [D,H,W,C] HDF5 file without layout attribute, and the MLPerf numpy
// .data.npy [D,H,W,C], read by every rank's box cold and warm.
//
//   mpirun -n 2 build/bin/bench_io [samples] [compute_ms_128] [compute_ms_256] [dir] [L]
// defaults: 4 samples per size (0: only the forms case), compute steps of 40 and 300 ms, files
// under /tmp (deleted at the end), L = 512 (0: no forms case). The spatial grid is
// autoSpatialGrid(ranks) (one group: every rank reads a part of every sample).
//
// Page cache: a file just written (or read) is served from memory. Before every "cold"
// measurement rank 0 fsyncs each file and drops its pages with posix_fadvise(DONTNEED), which
// needs no privileges; "warm" repeats the measurement with the pages cached. The compute step is
// a sleep (a GPU computing while the host idles); on a CPU-only run the prefetch thread would
// compete with the compute for cores.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include <fcntl.h>
#include <unistd.h>

#include <Kokkos_Core.hpp>
#include <hdf5.h>
#include <mpi.h>

#include <hybrid3d/core/MpiThreads.hpp>
#include <hybrid3d/data/BatchLoader.hpp>
#include <hybrid3d/data/Hdf5.hpp>
#include <hybrid3d/data/Preprocess.hpp>
#include <hybrid3d/data/SampleReader.hpp>

using namespace hybrid3d;

namespace {

int rankOf(MPI_Comm c) {
  int r;
  MPI_Comm_rank(c, &r);
  return r;
}

double maxOver(double v) {
  MPI_Allreduce(MPI_IN_PLACE, &v, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  return v;
}

double sumOver(double v) {
  MPI_Allreduce(MPI_IN_PLACE, &v, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  return v;
}

// How a sample is stored: the project's own layout, the published CosmoFlow HDF5 files
// (channels-last, no layout attribute), the MLPerf HPC numpy release (channels-last .npy).
enum class Form { Own, ChannelsLastHdf5, ChannelsLastNpy };
const char* formName(Form f) {
  return f == Form::Own                ? "own [C,D,H,W] .h5"
         : f == Form::ChannelsLastHdf5 ? "[D,H,W,C] .hdf5"
                                       : "[D,H,W,C] .data.npy";
}

// An .npy file as numpy.save writes it (version 1.0, header padded to 64 bytes), and its
// label file beside it.
void writeNpy(const std::string& path, Index S, const std::vector<std::int16_t>& data) {
  std::string dict = "{'descr': '<i2', 'fortran_order': False, 'shape': (" + std::to_string(S) +
                     ", " + std::to_string(S) + ", " + std::to_string(S) + ", 4), }";
  while ((10 + dict.size() + 1) % 64 != 0) dict += ' ';
  dict += '\n';
  std::string head = "\x93NUMPY";
  head += char(1);
  head += char(0);
  head += char(dict.size() & 0xff);
  head += char(dict.size() >> 8);
  std::FILE* f = std::fopen(path.c_str(), "wb");
  std::fwrite((head + dict).data(), 1, head.size() + dict.size(), f);
  std::fwrite(data.data(), 2, data.size(), f);
  std::fclose(f);
  const std::string label = path.substr(0, path.size() - 9) + ".label.npy";
  std::string ldict = "{'descr': '<f4', 'fortran_order': False, 'shape': (4,), }";
  while ((10 + ldict.size() + 1) % 64 != 0) ldict += ' ';
  ldict += '\n';
  std::string lhead = "\x93NUMPY";
  lhead += char(1);
  lhead += char(0);
  lhead += char(ldict.size());
  lhead += char(0);
  const float par[4] = {0.1f, -0.2f, 0.3f, -0.4f};
  std::FILE* l = std::fopen(label.c_str(), "wb");
  std::fwrite((lhead + ldict).data(), 1, lhead.size() + ldict.size(), l);
  std::fwrite(par, 4, 4, l);
  std::fclose(l);
}

// Rank 0 writes `n` samples /full [4,S,S,S] int16 of Poisson-like counts and /unitPar (or
// the same values in another form).
std::vector<std::string> writeSamples(const std::string& dir, Index S, int n,
                                      Form form = Form::Own) {
  std::vector<std::string> paths;
  const char* ext = form == Form::Own                ? ".h5"
                    : form == Form::ChannelsLastHdf5 ? ".hdf5"
                                                     : ".data.npy";
  for (int i = 0; i < n; ++i)
    paths.push_back(dir + "/s" + std::to_string(S) + "_" + std::to_string(i) + ext);
  if (rankOf(MPI_COMM_WORLD) == 0) {
    std::vector<std::int16_t> data(std::size_t(4 * S * S * S));
    std::uint64_t x = 88172645463325252ull;
    for (int i = 0; i < n; ++i) {
      for (auto& v : data) {  // xorshift: fast, and incompressible enough for a file system
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        v = std::int16_t(x % 64);
      }
      if (form == Form::ChannelsLastNpy) {
        writeNpy(paths[i], S, data);
        continue;
      }
      data::Handle f(H5Fcreate(paths[i].c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT),
                     H5Fclose);
      const hsize_t s = hsize_t(S);
      const hsize_t dims[4] = {form == Form::Own ? 4 : s, s, s, form == Form::Own ? s : 4};
      data::Handle space(H5Screate_simple(4, dims, nullptr), H5Sclose);
      data::Handle d(
          H5Dcreate2(f, "/full", H5T_STD_I16LE, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT),
          H5Dclose);
      H5Dwrite(d, H5T_NATIVE_INT16, H5S_ALL, H5S_ALL, H5P_DEFAULT, data.data());
      const float par[4] = {0.1f, -0.2f, 0.3f, -0.4f};
      const hsize_t four = 4;
      data::Handle ps(H5Screate_simple(1, &four, nullptr), H5Sclose);
      data::Handle p(
          H5Dcreate2(f, "/unitPar", H5T_IEEE_F32LE, ps, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT),
          H5Dclose);
      H5Dwrite(p, H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, par);
    }
  }
  MPI_Barrier(MPI_COMM_WORLD);
  return paths;
}

// Drops the files' pages from the page cache so the next read goes to the disk.
void evict(const std::vector<std::string>& paths) {
  if (rankOf(MPI_COMM_WORLD) == 0)
    for (const std::string& p : paths) {
      const int fd = ::open(p.c_str(), O_RDONLY);
      if (fd < 0) continue;
      ::fsync(fd);
      ::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
      ::close(fd);
    }
  MPI_Barrier(MPI_COMM_WORLD);
}

struct ReadFigures {
  double secondsPerSample, perRankMBs, totalMBs;
};

ReadFigures measureReads(const ProcessGrid& grid, const data::Subvolume& sub, Index S,
                         const std::vector<std::string>& paths, data::ReadMode mode, bool cold) {
  data::SampleReader reader(grid.spatialComm(), data::SampleSpec::cosmology(4, {S, S, S}), sub,
                            mode);
  std::vector<unsigned char> input(reader.inputCapacityBytes());
  std::vector<float> targets(4);
  if (cold) evict(paths);
  MPI_Barrier(MPI_COMM_WORLD);
  const double t0 = MPI_Wtime();
  for (const std::string& p : paths) reader.read(p, input.data(), nullptr, targets.data());
  const double t = maxOver(MPI_Wtime() - t0);
  const double bytes = double(reader.counters().inputBytes);
  const int P = grid.worldSize();
  return {t / paths.size(), sumOver(bytes) / P / t / 1e6, sumOver(bytes) / t / 1e6};
}

struct StepFigures {
  double firstExposed, steadyExposed, preprocess;  // seconds per step, slowest rank (medians)
};

StepFigures measureSteps(const ProcessGrid& grid, const data::Subvolume& sub, Index S,
                         const std::vector<std::string>& paths, bool prefetch, double computeSec) {
  data::LoaderOptions o;
  o.globalBatch = 1;
  o.seed = 7;
  o.prefetch = prefetch;
  const data::SampleSpec spec = data::SampleSpec::cosmology(4, {S, S, S});
  auto x = createDistTensor<float>("x", 1, 4, BlockDecomposition({S, S, S}, grid.dims()),
                                   grid.coords(), GhostWidths::uniform(1));
  data::Preprocess<float> preprocess({true, {}, {}}, 4, sub);
  data::BatchLoader loader(grid, data::Dataset(paths), spec, sub, o);
  DefaultExecutionSpace exec;
  evict(paths);
  std::vector<double> exposed, pre;
  for (std::size_t step = 0; step < paths.size(); ++step) {  // one epoch, every file cold
    MPI_Barrier(MPI_COMM_WORLD);
    const double t0 = MPI_Wtime();
    const data::HostBatch& batch = loader.next();
    const double t1 = MPI_Wtime();
    preprocess.apply(exec, batch, x);
    exec.fence();
    const double t2 = MPI_Wtime();
    std::this_thread::sleep_for(std::chrono::duration<double>(computeSec));
    exposed.push_back(maxOver(t1 - t0));
    pre.push_back(maxOver(t2 - t1));
    if (std::getenv("BENCH_IO_VERBOSE") && rankOf(MPI_COMM_WORLD) == 0)
      std::printf("    step %zu prefetch %d: exposed %.1f ms, preprocess %.1f ms\n", step,
                  int(prefetch), 1e3 * exposed.back(), 1e3 * pre.back());
  }
  // Medians: robust to the other jobs of a shared machine. The first step is apart: nothing can
  // have been read ahead of it.
  auto median = [](std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v.empty() ? 0.0 : v[v.size() / 2];
  };
  return {exposed[0], median(std::vector<double>(exposed.begin() + 1, exposed.end())), median(pre)};
}

// One L^3 sample in each form, read by every rank's box (ghosts 1), cold and warm, each mode;
// time relative to the own layout's.
void measureForms(const std::string& dir, Index L) {
  const int rank = rankOf(MPI_COMM_WORLD);
  int P;
  MPI_Comm_size(MPI_COMM_WORLD, &P);
  const Int3 dims = autoSpatialGrid(P, {L, L, L});
  ProcessGrid grid(MPI_COMM_WORLD, dims);
  const data::Subvolume sub(BlockDecomposition({L, L, L}, dims), grid.coords(),
                            GhostWidths::uniform(1));
  if (rank == 0)
    std::printf(
        "\nforms: one %ld^3 x 4 int16 sample (%.0f MiB) per form, grid %s, ghosts 1\n"
        "  %-20s %-12s %-5s %12s %16s %12s %10s\n",
        long(L), 8.0 * L * L * L / 1048576.0, toString(dims).c_str(), "form", "read", "cache",
        "ms/sample", "MB/s per rank", "MB/s total", "time/own");
  ReadFigures own[2][2];
  for (Form form : {Form::Own, Form::ChannelsLastHdf5, Form::ChannelsLastNpy}) {
    const std::vector<std::string> paths = writeSamples(dir, L, 1, form);
    for (int cold = 1; cold >= 0; --cold)
      for (int m = 0; m < 2; ++m) {
        const data::ReadMode mode =
            m == 0 ? data::ReadMode::Collective : data::ReadMode::Independent;
        const ReadFigures f = measureReads(grid, sub, L, paths, mode, cold);
        if (form == Form::Own) own[m][cold] = f;
        if (rank == 0)
          std::printf("  %-20s %-12s %-5s %12.1f %16.0f %12.0f %10.2f\n", formName(form),
                      m == 0 ? "collective" : "independent", cold ? "cold" : "warm",
                      1e3 * f.secondsPerSample, f.perRankMBs, f.totalMBs,
                      f.secondsPerSample / own[m][cold].secondsPerSample);
      }
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0)
      for (const std::string& p : paths) {
        std::filesystem::remove(p);
        if (form == Form::ChannelsLastNpy)
          std::filesystem::remove(p.substr(0, p.size() - 9) + ".label.npy");
      }
  }
  if (rank == 0)
    std::printf(
        "  (numpy samples have no collective read: each rank preads its box in both "
        "modes)\n");
}

// A fresh folder under `base` for this run's files, made by rank 0 and known to every rank.
std::string makeRunDir(const std::string& base) {
  char dir[512] = {};
  if (rankOf(MPI_COMM_WORLD) == 0) {
    std::string t = base + "/hybrid3d_bench_io_XXXXXX";
    std::vector<char> buf(t.begin(), t.end());
    buf.push_back('\0');
    std::snprintf(dir, sizeof(dir), "%s", mkdtemp(buf.data()) ? buf.data() : "");
  }
  MPI_Bcast(dir, sizeof(dir), MPI_CHAR, 0, MPI_COMM_WORLD);
  return dir;
}

// The reads of `paths`, cold then warm, collective then independent, one line each, and the
// collective/independent time ratio.
void printReads(const ProcessGrid& grid, const data::Subvolume& sub, Index S,
                const std::vector<std::string>& paths) {
  const int rank = rankOf(MPI_COMM_WORLD);
  if (rank == 0)
    std::printf("  %-12s %-5s %14s %16s %14s\n", "read", "cache", "ms/sample", "MB/s per rank",
                "MB/s total");
  ReadFigures fig[2][2];
  for (int cold = 1; cold >= 0; --cold)
    for (int m = 0; m < 2; ++m) {
      const data::ReadMode mode = m == 0 ? data::ReadMode::Collective : data::ReadMode::Independent;
      fig[m][cold] = measureReads(grid, sub, S, paths, mode, cold);
      if (rank == 0)
        std::printf("  %-12s %-5s %14.1f %16.0f %14.0f\n", m == 0 ? "collective" : "independent",
                    cold ? "cold" : "warm", 1e3 * fig[m][cold].secondsPerSample,
                    fig[m][cold].perRankMBs, fig[m][cold].totalMBs);
    }
  if (rank == 0)
    std::printf("  collective / independent time: cold %.2f, warm %.2f\n",
                fig[0][1].secondsPerSample / fig[1][1].secondsPerSample,
                fig[0][0].secondsPerSample / fig[1][0].secondsPerSample);
}

// The exposed I/O per step of one epoch over `paths`, without and with prefetch.
void printSteps(const ProcessGrid& grid, const data::Subvolume& sub, Index S,
                const std::vector<std::string>& paths, double compute) {
  const StepFigures off = measureSteps(grid, sub, S, paths, false, compute);
  const StepFigures on = measureSteps(grid, sub, S, paths, true, compute);
  if (rankOf(MPI_COMM_WORLD) == 0) {
    std::printf("  steps (cold files, compute %.0f ms, log1p preprocess %.1f ms):\n", 1e3 * compute,
                1e3 * off.preprocess);
    std::printf(
        "    exposed I/O per step (median of steps 2..n)  prefetch off: %.1f ms   on: %.1f ms"
        "   on/off %.3f   (first step with prefetch: %.1f ms)\n",
        1e3 * off.steadyExposed, 1e3 * on.steadyExposed, on.steadyExposed / off.steadyExposed,
        1e3 * on.firstExposed);
  }
}

// One sample size S: `samples` files written in the own layout, their reads and their steps
// with a compute step of `compute` seconds, then the files removed.
void measureSize(const std::string& dir, Index S, int samples, double compute) {
  const int rank = rankOf(MPI_COMM_WORLD);
  int P;
  MPI_Comm_size(MPI_COMM_WORLD, &P);
  const Int3 dims = autoSpatialGrid(P, {S, S, S});
  ProcessGrid grid(MPI_COMM_WORLD, dims);
  const data::Subvolume sub(BlockDecomposition({S, S, S}, dims), grid.coords(),
                            GhostWidths::uniform(1));
  const std::vector<std::string> paths = writeSamples(dir, S, samples);
  const double sampleMB = 4.0 * S * S * S * 2 / 1e6;
  if (rank == 0)
    std::printf("\n%ld^3 x 4 int16 (%.1f MB per sample), grid %s, ghosts 1\n", long(S), sampleMB,
                toString(dims).c_str());
  printReads(grid, sub, S, paths);
  printSteps(grid, sub, S, paths, compute);
  MPI_Barrier(MPI_COMM_WORLD);
  if (rank == 0)
    for (const std::string& p : paths) std::filesystem::remove(p);
}

}  // namespace

int main(int argc, char** argv) {
  if (const int rc = hybrid3d::initMpiWithThreads(&argc, &argv, "bench_io")) return rc;
  {
    Kokkos::ScopeGuard kokkos(argc, argv);
    const int samples = argc > 1 ? std::atoi(argv[1]) : 4;
    const double compute128 = (argc > 2 ? std::atof(argv[2]) : 40) / 1e3;
    const double compute256 = (argc > 3 ? std::atof(argv[3]) : 300) / 1e3;
    const std::string base = argc > 4 ? argv[4] : "/tmp";
    const Index formsSize = argc > 5 ? std::atol(argv[5]) : 512;
    const int rank = rankOf(MPI_COMM_WORLD);
    int P;
    MPI_Comm_size(MPI_COMM_WORLD, &P);

    const std::string dir = makeRunDir(base);
    if (rank == 0)
      std::printf(
          "bench_io: %d rank(s), %d samples per size, 4-channel int16 /full, files in %s\n"
          "cold = pages dropped with posix_fadvise(DONTNEED) before the pass; warm = "
          "page cache\n",
          P, samples, dir.c_str());
    for (const Index S : {Index(128), Index(256)}) {
      if (samples < 1) break;
      measureSize(dir, S, samples, S == 128 ? compute128 : compute256);
    }
    if (formsSize > 0) measureForms(dir, formsSize);
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) std::filesystem::remove_all(dir);
  }
  MPI_Finalize();
  return 0;
}
