#include <hybrid3d/core/Error.hpp>
#include <hybrid3d/generate/SlabFft.hpp>

namespace hybrid3d::generate {

SlabFft::SlabFft(MPI_Comm comm, Index size) : comm_(comm), size_(size) {
  if (size < 2) fail("SlabFft: box size ", size, " is too small (need >= 2)");
  fftw_mpi_init();  // idempotent
  const ptrdiff_t n = static_cast<ptrdiff_t>(size);
  ptrdiff_t n0 = 0, s0 = 0, n1 = 0, s1 = 0;
  // For r2c the last dimension of the complex array is n/2 + 1 (FFTW manual, 6.5).
  const ptrdiff_t alloc =
      fftw_mpi_local_size_3d_transposed(n, n, n / 2 + 1, comm, &n0, &s0, &n1, &s1);
  realFirst_ = s0;
  realPlanes_ = n0;
  modeFirst_ = s1;
  modePlanes_ = n1;
  // alloc counts complex numbers; at least one so that planning has a valid pointer.
  data_ = fftw_alloc_real(2 * static_cast<std::size_t>(alloc > 0 ? alloc : 1));
  if (!data_) fail("SlabFft: cannot allocate the ", size, "^3 FFT slab");
  forward_ = fftw_mpi_plan_dft_r2c_3d(n, n, n, data_, modes(), comm,
                                      FFTW_ESTIMATE | FFTW_MPI_TRANSPOSED_OUT);
  backward_ = fftw_mpi_plan_dft_c2r_3d(n, n, n, modes(), data_, comm,
                                       FFTW_ESTIMATE | FFTW_MPI_TRANSPOSED_IN);
  if (!forward_ || !backward_) fail("SlabFft: FFTW cannot plan a ", size, "^3 MPI transform");
}

SlabFft::~SlabFft() {
  if (forward_) fftw_destroy_plan(forward_);
  if (backward_) fftw_destroy_plan(backward_);
  fftw_free(data_);
}

void SlabFft::forward() { fftw_execute(forward_); }
void SlabFft::backward() { fftw_execute(backward_); }

double sumOverPlanes(MPI_Comm comm, const std::vector<double>& localPlaneSums, Index totalPlanes) {
  int ranks = 1;
  MPI_Comm_size(comm, &ranks);
  const int mine = static_cast<int>(localPlaneSums.size());
  std::vector<int> counts(ranks), displs(ranks);
  MPI_Allgather(&mine, 1, MPI_INT, counts.data(), 1, MPI_INT, comm);
  int total = 0;
  for (int r = 0; r < ranks; ++r) {
    displs[r] = total;
    total += counts[r];
  }
  if (total != totalPlanes)
    fail("sumOverPlanes: ranks hold ", total, " planes, expected ", totalPlanes);
  // Planes are distributed in rank order, so the gathered vector is in global plane order.
  std::vector<double> all(static_cast<std::size_t>(total));
  MPI_Allgatherv(localPlaneSums.data(), mine, MPI_DOUBLE, all.data(), counts.data(), displs.data(),
                 MPI_DOUBLE, comm);
  double sum = 0.0;
  for (double v : all) sum += v;
  return sum;
}

}  // namespace hybrid3d::generate
