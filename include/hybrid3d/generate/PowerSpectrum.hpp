#pragma once
/// \file
/// The power spectrum of the synthetic cosmology: the model the generator imposes, and the
/// measurement (shell averages) that checks a field against it.
///
/// Wavenumbers are in units of the Nyquist wavenumber: an integer mode m = (md, mh, mw) of the
/// S^3 box has k = |m| / (S/2), so the parameters mean the same thing at every box size.

#include <vector>

#include <hybrid3d/core/Types.hpp>
#include <hybrid3d/generate/CosmologyParameters.hpp>

namespace hybrid3d::generate {

class SlabFft;

/// Shape of P(k), up to the normalisation that fixes the field's variance:
/// k^slope * exp(-(k / cutoff)^8), and 0 at k = 0 (the mean density is set separately).
double spectrumShape(const CosmologyParameters& p, double k);

/// The spectrum shape for every integer |m|^2 of an S-box, 0 .. 3 (S/2)^2. The Gaussian field
/// looks modes up here instead of calling pow and exp per mode.
std::vector<double> spectrumShapeTable(const CosmologyParameters& p, Index size);

struct ShellPower {
  double k = 0;      // mean |m| / (S/2) of the modes in the shell
  double power = 0;  // mean |FFT(x)(m)|^2 / S^3 over the shell
  double modes = 0;  // number of modes of the full complex grid in the shell
};

/// Shells of width one fundamental mode (shell i holds round(|m|) == i), from 0 to S/2.
/// Collective over fft.comm(); transforms fft.real() in place (its content is lost).
std::vector<ShellPower> measurePowerSpectrum(SlabFft& fft);

}  // namespace hybrid3d::generate
