#pragma once
/// \file
/// A distributed, in-place, real <-> complex 3D FFT of a periodic S^3 box through FFTW's MPI
/// interface: slabs of D-planes in real space, slabs of H-wavenumber planes in Fourier space
/// (FFTW_MPI_TRANSPOSED_OUT/IN: the generators only multiply modes by a function of |k|, so the
/// transposed Fourier layout saves the two global transposes that restoring [kd][kh][kw]
/// would cost).
///
/// Plans use FFTW_ESTIMATE: measured planning could pick different algorithms from run to run,
/// and the generators promise bit-identical samples for a seed. With ESTIMATE the transform of
/// the same data is bit-identical on every rank count (checked for S = 16..128 on 1..8 ranks,
/// and by the generator tests).
///
/// FFTW distributes planes in blocks of ceil(S/P), so trailing ranks may own fewer planes (or
/// none); every rank still takes part in every transform.

#include <cstddef>
#include <vector>

#include <fftw3-mpi.h>
#include <mpi.h>

#include <hybrid3d/core/Types.hpp>

namespace hybrid3d::generate {

class SlabFft {
public:
  /// Plans the transforms of an S^3 box over the ranks of `comm` (collective).
  SlabFft(MPI_Comm comm, Index size);
  ~SlabFft();
  SlabFft(const SlabFft&) = delete;
  SlabFft& operator=(const SlabFft&) = delete;

  MPI_Comm comm() const { return comm_; }
  Index size() const { return size_; }

  /// Real space: this rank owns the D-planes [realFirst(), realFirst() + realPlanes()); a plane
  /// is S rows of paddedWidth() doubles, of which the first S are the voxels.
  Index realFirst() const { return realFirst_; }
  Index realPlanes() const { return realPlanes_; }
  Index paddedWidth() const { return 2 * (size_ / 2 + 1); }
  Index realOffset(Index localD, Index h, Index w) const {
    return (localD * size_ + h) * paddedWidth() + w;
  }
  double* real() { return data_; }
  const double* real() const { return data_; }

  /// Fourier space (after forward()): this rank owns the kh-planes [modeFirst(), +modePlanes());
  /// each holds [kd][kw] with kd in [0, S) and kw in [0, S/2] (the other half is Hermitian).
  Index modeFirst() const { return modeFirst_; }
  Index modePlanes() const { return modePlanes_; }
  Index modeWidth() const { return size_ / 2 + 1; }
  Index modeOffset(Index localKh, Index kd, Index kw) const {
    return (localKh * size_ + kd) * modeWidth() + kw;
  }
  fftw_complex* modes() { return reinterpret_cast<fftw_complex*>(data_); }
  const fftw_complex* modes() const { return reinterpret_cast<const fftw_complex*>(data_); }

  /// The signed integer frequency of index i along a full (kd or kh) axis.
  Index frequency(Index i) const { return i <= size_ / 2 ? i : i - size_; }
  /// How many modes of the full complex grid the stored mode with this kw stands for (1 or 2).
  double hermitianWeight(Index kw) const {
    return (kw == 0 || (size_ % 2 == 0 && kw == size_ / 2)) ? 1.0 : 2.0;
  }

  void forward();   // real -> modes, unnormalised
  void backward();  // modes -> real, unnormalised: backward(forward(x)) = S^3 x

private:
  MPI_Comm comm_;
  Index size_;
  Index realFirst_ = 0, realPlanes_ = 0, modeFirst_ = 0, modePlanes_ = 0;
  double* data_ = nullptr;
  fftw_plan forward_ = nullptr;
  fftw_plan backward_ = nullptr;
};

/// The sum over all planes of a slab-distributed quantity, the same bits on every rank count:
/// each rank gives the sums of its own planes (computed in a fixed order inside the plane), and
/// every rank adds all planes in global order. An MPI_Allreduce would add in an order that
/// depends on the number of ranks.
double sumOverPlanes(MPI_Comm comm, const std::vector<double>& localPlaneSums, Index totalPlanes);

}  // namespace hybrid3d::generate
