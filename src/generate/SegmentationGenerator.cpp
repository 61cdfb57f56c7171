#include <hybrid3d/generate/CounterHash.hpp>
#include <hybrid3d/generate/SampleWriter.hpp>
#include <hybrid3d/generate/SegmentationGenerator.hpp>

#include <algorithm>
#include <cmath>

#include <Kokkos_Core.hpp>

namespace hybrid3d::generate {

namespace {

constexpr double kTwoPi = 6.283185307179586476925;

// A soft inside indicator: 1 deep inside (level << 0), 1/2 on the surface, 0 outside.
double softInside(double level, double width) { return 1.0 / (1.0 + std::exp(level / width)); }

// Counters of the Shapes stream, by purpose, so that adding a draw to one never shifts another.
constexpr std::uint64_t kOrganCounters = 0;
constexpr std::uint64_t kOrganNoiseCounters = 1000;
constexpr std::uint64_t kBiasNoiseCounters = 2000;
constexpr std::uint64_t kLesionCounters = 1u << 20;  // + 2^16 per lesion

}  // namespace

double SmoothNoise::operator()(const std::array<double, 3>& x) const {
  double v = 0.0;
  for (int j = 0; j < kWaves; ++j)
    v += weight[j] * std::sin(kTwoPi * (frequency[j][0] * x[0] + frequency[j][1] * x[1] +
                                        frequency[j][2] * x[2]) +
                              phase[j]);
  return v;
}

SmoothNoise SmoothNoise::draw(std::uint64_t key, std::uint64_t counter, int maxFrequency) {
  SmoothNoise n;
  double total = 0.0;
  for (int j = 0; j < kWaves; ++j) {
    bool zero = true;
    for (int a = 0; a < 3; ++a) {
      const auto r = static_cast<int>(randomWord(key, counter++) % (2 * maxFrequency + 1));
      n.frequency[j][a] = r - maxFrequency;
      zero = zero && r == maxFrequency;
    }
    if (zero) n.frequency[j][j % 3] = 1;  // a constant wave would only shift the level
    n.phase[j] = kTwoPi * uniform01(key, counter++);
    n.weight[j] = 0.5 + 0.5 * uniform01(key, counter++);
    total += n.weight[j];
  }
  for (double& w : n.weight) w /= total;
  return n;
}

double SegmentationScene::organLevel(const std::array<double, 3>& x) const {
  double q = 0.0;
  for (int a = 0; a < 3; ++a) {
    double along = 0.0;  // coordinate along the organ's axis a
    for (int b = 0; b < 3; ++b) along += organRotation[a][b] * (x[b] - organCenter[b]);
    along /= organRadii[a];
    q += along * along;
  }
  return std::sqrt(q) - 1.0 + organDeformation * organNoise(x);
}

double SegmentationScene::lesionLevel(const Lesion& l, const std::array<double, 3>& x) const {
  double q = 0.0;
  for (int a = 0; a < 3; ++a) {
    const double t = (x[a] - l.center[a]) / l.radii[a];
    q += t * t;
  }
  return std::sqrt(q) - 1.0;
}

int SegmentationScene::label(const std::array<double, 3>& x) const {
  if (organLevel(x) >= 0.0) return 0;
  for (const Lesion& l : lesions)
    if (lesionLevel(l, x) < 0.0) return 2;
  return 1;
}

double SegmentationScene::intensity(const std::array<double, 3>& x) const {
  // Edge widths of about half a voxel: the level changes by about 1 / (radius * S) per voxel.
  const double S = static_cast<double>(size);
  const double organWidth = 0.5 / (S * (organRadii[0] + organRadii[1] + organRadii[2]) / 3.0);
  const double inOrgan = softInside(organLevel(x), organWidth);
  double inLesion = 0.0;
  for (const Lesion& l : lesions) {
    const double width = 0.5 / (S * (l.radii[0] + l.radii[1] + l.radii[2]) / 3.0);
    inLesion = std::max(inLesion, softInside(lesionLevel(l, x), width));
  }
  const double clean = classIntensity[0] + (classIntensity[1] - classIntensity[0]) * inOrgan +
                       (classIntensity[2] - classIntensity[1]) * inOrgan * inLesion;
  return clean * (1.0 + biasStrength * biasNoise(x));
}

SegmentationScene drawSegmentationScene(Index size, std::uint64_t seed, std::uint64_t sample) {
  const std::uint64_t key = sampleKey(seed, sample, Stream::Shapes);
  SegmentationScene s;
  s.size = size;
  std::uint64_t c = kOrganCounters;
  for (int a = 0; a < 3; ++a) s.organCenter[a] = 0.42 + 0.16 * uniform01(key, c++);
  for (int a = 0; a < 3; ++a)
    s.organRadii[a] = kOrganRadiusLo + (kOrganRadiusHi - kOrganRadiusLo) * uniform01(key, c++);
  // Rotation Rz(alpha) Ry(beta) Rx(gamma).
  const double al = kTwoPi * uniform01(key, c++), be = kTwoPi * uniform01(key, c++),
               ga = kTwoPi * uniform01(key, c++);
  const double ca = std::cos(al), sa = std::sin(al), cb = std::cos(be), sb = std::sin(be),
               cg = std::cos(ga), sg = std::sin(ga);
  s.organRotation = {{{ca * cb, ca * sb * sg - sa * cg, ca * sb * cg + sa * sg},
                      {sa * cb, sa * sb * sg + ca * cg, sa * sb * cg - ca * sg},
                      {-sb, cb * sg, cb * cg}}};
  // Frequencies up to 2 cycles per box: lobes the size of the organ, not ripples.
  s.organNoise = SmoothNoise::draw(key, kOrganNoiseCounters, 2);
  s.biasNoise = SmoothNoise::draw(key, kBiasNoiseCounters, 1);

  const int lesionCount =
      kMinLesions + static_cast<int>(randomWord(key, c++) % (kMaxLesions - kMinLesions + 1));
  const double voxel = 1.0 / static_cast<double>(size);
  for (int l = 0; l < lesionCount; ++l) {
    std::uint64_t lc = kLesionCounters + (static_cast<std::uint64_t>(l) << 16);
    Lesion lesion;
    // Radius 0.03..0.07 of the box, at least 1.5 voxels so a lesion covers several voxels.
    const double radius = std::max(0.03 + 0.04 * uniform01(key, lc++), 1.5 * voxel);
    for (int a = 0; a < 3; ++a) lesion.radii[a] = radius * (0.8 + 0.4 * uniform01(key, lc++));
    // Centre: the first candidate voxel centre well inside the organ (rejection sampling with
    // counter-keyed candidates: the same on every rank). The organ centre is the fallback.
    bool placed = false;
    for (int attempt = 0; attempt < 1000 && !placed; ++attempt) {
      std::array<double, 3> x{};
      for (int a = 0; a < 3; ++a) {
        const double t = s.organCenter[a] + 0.4 * (2.0 * uniform01(key, lc++) - 1.0);
        const Index i = std::clamp<Index>(static_cast<Index>(std::floor(t * size)), 0, size - 1);
        x[a] = s.coordinate(i);
      }
      if (s.organLevel(x) < -0.35) {
        lesion.center = x;
        placed = true;
      }
    }
    if (!placed)
      for (int a = 0; a < 3; ++a)
        lesion.center[a] = s.coordinate(std::clamp<Index>(
            static_cast<Index>(std::floor(s.organCenter[a] * size)), 0, size - 1));
    s.lesions.push_back(lesion);
  }
  return s;
}

void writeSegmentationSample(MPI_Comm comm, const SegmentationSpec& spec, std::uint64_t seed,
                             std::uint64_t sample, const std::string& path) {
  using HostExec = Kokkos::DefaultHostExecutionSpace;
  const Index S = spec.size;
  int rank = 0, ranks = 1;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &ranks);
  // Block decomposition of the D-planes, as everywhere in hybrid3d: the first S % P ranks own
  // one plane more.
  const Index base = S / ranks, rem = S % ranks;
  const Index planes = base + (rank < rem ? 1 : 0);
  const Index first = rank * base + std::min<Index>(rank, rem);

  const SegmentationScene scene = drawSegmentationScene(S, seed, sample);
  const std::uint64_t noiseKey = sampleKey(seed, sample, Stream::ImageNoise);
  std::vector<float> volume(static_cast<std::size_t>(planes * S * S));
  std::vector<std::uint8_t> labels(volume.size());
  float* vol = volume.data();
  std::uint8_t* lab = labels.data();
  const SegmentationScene* sc = &scene;
  Kokkos::parallel_for(
      "hybrid3d::generate::segmentationVoxels",
      Kokkos::MDRangePolicy<HostExec, Kokkos::Rank<2>>(HostExec(), {0, 0}, {planes, S}),
      [=](Index d, Index h) {
        for (Index w = 0; w < S; ++w) {
          const std::array<double, 3> x{sc->coordinate(first + d), sc->coordinate(h),
                                        sc->coordinate(w)};
          const Index local = (d * S + h) * S + w;
          const auto voxel = static_cast<std::uint64_t>(((first + d) * S + h) * S + w);
          vol[local] = static_cast<float>(sc->intensity(x) +
                                          sc->noiseSigma * standardNormal(noiseKey, voxel));
          lab[local] = static_cast<std::uint8_t>(sc->label(x));
        }
      });

  SampleWriter file(comm, path);
  file.writeSlab("volume", {1, S, S, S}, 1, first, planes, vol);
  file.writeSlab("segmentation", {S, S, S}, 0, first, planes, lab);
  file.attribute("generator", "hybrid3d generate segmentation");
  file.attribute("seed", std::to_string(seed));
  file.attribute("sample", static_cast<double>(sample));
  file.attribute("lesions", static_cast<double>(scene.lesions.size()));
  file.commit();
}

}  // namespace hybrid3d::generate
