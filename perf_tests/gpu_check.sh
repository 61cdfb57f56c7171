#!/usr/bin/env bash
# The GPU check (issue 10): on a machine with an NVIDIA GPU, build Kokkos 4 + Kokkos-Kernels and
# hybrid3d for that GPU, run the unit tests and the layer and step benchmarks, print one summary
# table. GPU time is scarce, so everything runs inside a time budget (default 600 s): a step that
# would start after it is spent is reported as skipped, never silently left out.
#
#   perf_tests/gpu_check.sh KOKKOS_GIT KERNELS_GIT [WORK]   build Kokkos and Kokkos-Kernels first
#   perf_tests/gpu_check.sh --prefix PREFIX [WORK]          use an installed Kokkos CUDA + Kernels
#
# KOKKOS_GIT / KERNELS_GIT: git directories (a clone's .git or a bare mirror) of
# github.com/kokkos/kokkos and github.com/kokkos/kokkos-kernels. WORK (default
# ./gpu-check) holds sources, prefix, build, logs and summary.txt.
# Environment: CUDA_HOME (default /usr/local/cuda); KOKKOS_TAG (4.6.01), KERNELS_TAG (4.6.02);
# KOKKOS_PATCH, a patch applied to the Kokkos sources (Kokkos 4.6.01 needs the team's
# kokkos-4.6.01-cuda13.patch for CUDA 13; looked for in ../shared/tools beside the project when
# unset); KOKKOS_ARCH (default: from the GPU's compute capability, HOPPER90 without a GPU);
# JOBS (default: number of cores); BUDGET (seconds, default 600).
#
# What it needs besides CUDA: the project's Debian dependencies (cmake/setup-debian.sh installs
# them: MPI, parallel HDF5, FFTW-MPI, BLAS, GoogleTest). Kokkos-Kernels is built without explicit
# instantiations (Kokkos-Kernels' ETI): its library then takes a minute instead of 25, and the
# few gemm/gemv instantiations the project uses compile in its own sources. Without a GPU it
# still builds everything (a compile-and-link check) and marks the runs "not run".
set -uo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
prefix="" kgit="" kkgit=""
if [ "${1:-}" = --prefix ]; then
  prefix="${2:?--prefix needs the install prefix of Kokkos (CUDA) and Kokkos-Kernels}"
  shift 2
elif [ "${1:-}" = -h ] || [ "${1:-}" = --help ] || [ $# -lt 2 ]; then
  sed -n '2,24p' "${BASH_SOURCE[0]}"
  [ $# -lt 2 ] && [ "${1:-}" != -h ] && [ "${1:-}" != --help ] && exit 2
  exit 0
else
  kgit="$1" kkgit="$2"
  shift 2
fi
work="$(mkdir -p "${1:-gpu-check}" && cd "${1:-gpu-check}" && pwd)"
logs="$work/logs"
mkdir -p "$logs"
export CUDA_HOME="${CUDA_HOME:-/usr/local/cuda}"
export PATH="$CUDA_HOME/bin:$PATH"
jobs="${JOBS:-$(nproc)}"
budget="${BUDGET:-600}"
ktag="${KOKKOS_TAG:-4.6.01}" kktag="${KERNELS_TAG:-4.6.02}"
start=$SECONDS
summary="$work/summary.txt"
: > "$summary"

# One row of the summary: step, result, seconds, detail.
row() { printf '%-22s %-9s %6s  %s\n' "$1" "$2" "$3" "$4" | tee -a "$summary"; }
left() { echo $((budget - (SECONDS - start))); }
# Runs a step (a shell function) unless the budget is spent; its status decides the result.
step() {
  local name="$1" fn="$2" t0=$SECONDS
  if [ "$(left)" -le 0 ]; then row "$name" skipped 0 "time budget of ${budget} s spent"; return 1; fi
  detail=""
  if "$fn"; then row "$name" ok $((SECONDS - t0)) "$detail"; return 0; fi
  row "$name" FAILED $((SECONDS - t0)) "$detail"
  return 1
}

# The GPU, and the Kokkos architecture that matches its compute capability.
gpu="" arch="${KOKKOS_ARCH:-}"
probe_gpu() {
  if ! command -v nvidia-smi > /dev/null || ! nvidia-smi -L > /dev/null 2>&1; then
    detail="no NVIDIA GPU visible: builds only, runs skipped"
    arch="${arch:-HOPPER90}"
    return 0
  fi
  gpu="$(nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader | head -1)"
  local cc
  cc="$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader | head -1 | tr -d ' ')"
  case "$cc" in
    7.0) a=VOLTA70 ;; 7.2) a=VOLTA72 ;; 7.5) a=TURING75 ;; 8.0) a=AMPERE80 ;; 8.6) a=AMPERE86 ;;
    8.7) a=AMPERE87 ;; 8.9) a=ADA89 ;; 9.0) a=HOPPER90 ;; 10.0) a=BLACKWELL100 ;;
    12.0) a=BLACKWELL120 ;; *) a="" ;;
  esac
  arch="${arch:-$a}"
  detail="$gpu, compute capability $cc -> Kokkos_ARCH_${arch:-?}; $(nvcc --version | grep -o 'release [0-9.]*')"
  [ -n "$arch" ]
}

build_kokkos() {
  local src="$work/src"
  rm -rf "$src" && mkdir -p "$src"
  git --git-dir="$kgit" archive --prefix=kokkos/ "$ktag" | tar -x -C "$src" || return 1
  local patch="${KOKKOS_PATCH:-}"
  [ -z "$patch" ] && [ -f "$root/../shared/tools/kokkos-$ktag-cuda13.patch" ] &&
    nvcc --version | grep -q "release 1[3-9]" && patch="$root/../shared/tools/kokkos-$ktag-cuda13.patch"
  if [ -n "$patch" ]; then
    (cd "$src/kokkos" && patch -p1 < "$patch" > "$logs/kokkos-patch.log") || return 1
  fi
  cmake -S "$src/kokkos" -B "$work/build-kokkos" -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_INSTALL_PREFIX="$prefix" -DCMAKE_CXX_STANDARD=17 -DKokkos_ENABLE_SERIAL=ON \
    -DKokkos_ENABLE_CUDA=ON "-DKokkos_ARCH_$arch=ON" \
    -DCMAKE_CXX_COMPILER="$src/kokkos/bin/nvcc_wrapper" > "$logs/kokkos.log" 2>&1 &&
    cmake --build "$work/build-kokkos" -j "$jobs" >> "$logs/kokkos.log" 2>&1 &&
    cmake --install "$work/build-kokkos" >> "$logs/kokkos.log" 2>&1 || {
    detail="see $logs/kokkos.log"
    return 1
  }
  detail="Kokkos $ktag (CUDA + Serial, $arch)${patch:+, patched with $(basename "$patch")}"
}

build_kernels() {
  local src="$work/src"
  git --git-dir="$kkgit" archive --prefix=kokkos-kernels/ "$kktag" | tar -x -C "$src" || return 1
  cmake -S "$src/kokkos-kernels" -B "$work/build-kernels" -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_INSTALL_PREFIX="$prefix" -DKokkos_ROOT="$prefix" \
    -DCMAKE_CXX_COMPILER="$prefix/bin/nvcc_wrapper" \
    -DKokkosKernels_ENABLE_ALL_COMPONENTS=OFF -DKokkosKernels_ENABLE_COMPONENT_BLAS=ON \
    -DKokkosKernels_ENABLE_TPL_BLAS=ON -DKokkosKernels_ENABLE_TPL_CUBLAS=ON \
    -DKokkosKernels_ADD_DEFAULT_ETI=OFF > "$logs/kernels.log" 2>&1 &&
    cmake --build "$work/build-kernels" -j "$jobs" >> "$logs/kernels.log" 2>&1 &&
    cmake --install "$work/build-kernels" >> "$logs/kernels.log" 2>&1 || {
    detail="see $logs/kernels.log"
    return 1
  }
  detail="Kokkos-Kernels $kktag (BLAS, cuBLAS + host BLAS, no ETI)"
}

build_project() {
  JOBS="$jobs" "$root/cmake/check-cuda-build.sh" "$prefix" "$work/build" > "$logs/project.log" 2>&1
  local status=$?
  detail="$(grep -o '[0-9]* of [0-9]* targets compiled and linked' "$logs/project.log" || echo "see $logs/project.log")"
  return $status
}

# The unit tests (MPI tests share the one GPU), stopped where the budget ends. A CUDA build
# also builds the per-backend tests for its host backends (the NAME_serial / NAME_openmp
# executables, CTest labels serial and openmp): they run no GPU code and have their own CPU
# runs, so GPU time goes to the device backend's tests and the single-backend ones only.
host_backends='^(serial|openmp)$'
unit_tests() {
  [ -n "$gpu" ] || { detail="not run: no GPU"; return 1; }
  local seconds=$(( $(left) - 150 ))  # keep time for the benchmarks
  [ "$seconds" -gt 30 ] || { detail="not run: under 3 minutes left"; return 1; }
  OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 timeout "$seconds" \
    ctest --test-dir "$work/build" -LE "$host_backends" -j "$(( jobs < 8 ? jobs : 8 ))" \
    --timeout "$seconds" --output-on-failure > "$logs/ctest.log" 2>&1
  local status=$?
  detail="$(grep -E '[0-9]+% tests passed' "$logs/ctest.log" || echo "stopped after ${seconds} s (see $logs/ctest.log)")"
  detail="$detail (host backends' tests left out)"
  local failed
  failed="$(sed -n 's/^ *[0-9]* - \([^ ]*\) .*/\1/p' "$logs/ctest.log" | tr '\n' ' ')"
  [ -n "$failed" ] && detail="$detail; failed: $failed"
  return $status
}

conv_layers() {
  [ -n "$gpu" ] || { detail="not run: no GPU"; return 1; }
  timeout 120 "$work/build/bin/bench_conv_layers" --sizes 64,128 --reps 5 \
    > "$logs/bench_conv_layers.txt" 2>&1
  local status=$?
  detail="$(grep -E '^total' "$logs/bench_conv_layers.txt" | tr -s ' ' | paste -sd';' -)"
  return $status
}

train_step() {
  [ -n "$gpu" ] || { detail="not run: no GPU"; return 1; }
  local out="$logs/bench_train_step.txt" status=0
  : > "$out"
  for config in cosmoflow:128 unet3d:64; do
    OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 timeout 90 \
      mpirun -n 1 "$work/build/bin/bench_train_step" --model "${config%:*}" \
      --size "${config#*:}" --steps 5 --warmup 2 >> "$out" 2>&1 || status=1
  done
  detail="$(awk '/^RESULT /{m="";s="";t=""; for(i=2;i<=NF;i++){split($i,kv,"=");
    if(kv[1]=="model")m=kv[2]; if(kv[1]=="size")s=kv[2]; if(kv[1]=="median_ms")t=kv[2]}
    printf "%s%s %s: %s ms/step", sep, m, s, t; sep="; "}' "$out")"
  return $status
}

echo "== hybrid3d GPU check: work in $work, budget ${budget} s, $jobs jobs"
printf '%-22s %-9s %6s  %s\n' step result s detail | tee -a "$summary"
step "GPU" probe_gpu
ready=1
if [ -z "$prefix" ]; then
  prefix="$work/kokkos"
  step "Kokkos" build_kokkos && step "Kokkos-Kernels" build_kernels || ready=0
fi
if [ $ready = 1 ] && step "hybrid3d build" build_project; then
  step "unit tests" unit_tests
  step "bench_conv_layers" conv_layers
  step "bench_train_step" train_step
fi
echo "== $((SECONDS - start)) s in all; summary in $summary, logs in $logs"
! grep -q -E ' (FAILED|skipped) ' "$summary"
