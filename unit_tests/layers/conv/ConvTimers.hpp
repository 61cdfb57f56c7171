#pragma once
// Timers for Conv3d::Options::timer (engines/ConvTimings.hpp): the candidates' times given
// instead of measured, so that a test decides what auto takes.

#include <cmath>

#include <hybrid3d/engines/ConvTimings.hpp>

namespace hybrid3d::test {

// `favourite` the fastest of every pass it can run (1 s); the others slower, each its own time.
inline ConvTimer favouring(ConvCandidate favourite) {
  return [favourite](const ConvTimes& can) {
    ConvTimes t = noConvTimes();
    for (int p = 0; p < convPassCount; ++p)
      for (int c = 0; c < convCandidateCount; ++c)
        if (std::isfinite(can[p][c])) t[p][c] = c == int(favourite) ? 1.0 : 2.0 + c;
    return t;
  };
}

}  // namespace hybrid3d::test
