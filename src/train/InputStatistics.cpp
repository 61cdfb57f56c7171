#include <hybrid3d/data/ChannelStatisticsCache.hpp>
#include <hybrid3d/train/InputStatistics.hpp>

#include <cstdio>
#include <string>

namespace hybrid3d {

namespace {

std::string listText(const std::vector<double>& v) {
  std::string out;
  char buf[40];
  for (double x : v) {
    std::snprintf(buf, sizeof buf, "%s%.6g", out.empty() ? "" : ", ", x);
    out += buf;
  }
  return "{" + out + "}";
}

}  // namespace

data::PreprocessOptions preprocessOptions(MPI_Comm world, const DataConfig& config,
                                          const data::Dataset& train,
                                          const data::SampleSpec& spec) {
  data::PreprocessOptions po;
  po.log1p = config.log1p;
  po.channelScale = config.channelScale;
  po.channelOffset = config.channelOffset;
  if (!config.channelOffsetAuto && !config.channelScaleAuto) return po;
  // The cache sits beside a training set named by a path; files given one by one have none.
  const std::string cache = config.trainFiles.empty()
                                ? data::channelStatisticsCachePath(config.train, config.log1p)
                                : std::string();
  const double start = MPI_Wtime();
  const data::CachedStatistics s =
      data::cachedChannelStatistics(world, train, spec, config.log1p, cache);
  if (config.channelOffsetAuto) po.channelOffset = s.statistics.offsets();
  if (config.channelScaleAuto) po.channelScale = s.statistics.scales();
  int rank = 0;
  MPI_Comm_rank(world, &rank);
  if (rank == 0)
    std::printf(
        "hybrid3d: channel statistics of the %lld training samples%s in %.2f s (%s): mean %s, "
        "std %s; channel offset %s, channel scale %s\n",
        static_cast<long long>(s.statistics.samples), config.log1p ? " after log1p" : "",
        MPI_Wtime() - start, s.note.c_str(), listText(s.statistics.mean).c_str(),
        listText(s.statistics.std).c_str(), config.channelOffsetAuto ? "auto" : "from the deck",
        config.channelScaleAuto ? "auto" : "from the deck");
  return po;
}

}  // namespace hybrid3d
