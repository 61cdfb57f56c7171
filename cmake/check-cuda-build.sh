#!/usr/bin/env bash
# Checks that hybrid3d compiles and links for CUDA. No GPU is needed (nothing is run): it
# configures the whole project against a Kokkos built for CUDA, with that Kokkos's nvcc_wrapper
# as the C++ compiler and the Teuchos decks off, builds every target, and prints which targets
# compiled and linked. Exit status 0 only when all of them did.
#   cmake/check-cuda-build.sh [KOKKOS_PREFIX [BUILD_DIR]]
# KOKKOS_PREFIX (or $KOKKOS_CUDA_ROOT): install prefix of Kokkos 4 built with CUDA.
# $KOKKOSKERNELS_CUDA_ROOT: Kokkos-Kernels' prefix, if not the same one.
# BUILD_DIR (or $BUILD_DIR): default build-cuda in the source tree.
# $CUDA_HOME (default /usr/local/cuda), $JOBS (default: number of cores), $CMAKE_ARGS (extra
# configure arguments) may be set. Uses ccache when it is installed.
# Known to work: Kokkos 4.6.01 (with the team's CUDA 13 patch) + Kokkos-Kernels 4.6.02 (cuBLAS),
# CUDA 13.0, sm_90; see README.md, "Checking a CUDA build".
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
kokkos="${1:-${KOKKOS_CUDA_ROOT:-}}"
kernels="${KOKKOSKERNELS_CUDA_ROOT:-$kokkos}"
build="${2:-${BUILD_DIR:-$root/build-cuda}}"
export CUDA_HOME="${CUDA_HOME:-/usr/local/cuda}"
jobs="${JOBS:-$(nproc 2>/dev/null || echo 2)}"

howto() {
  cat >&2 <<EOF
Make one with the team's build-kokkos4.sh (shared tools folder, next to DESIGN.md), from git
clones or mirrors of github.com/kokkos/kokkos and github.com/kokkos/kokkos-kernels:
  CUDA_HOME=$CUDA_HOME build-kokkos4.sh KOKKOS_GIT KERNELS_GIT PREFIX cuda
(Kokkos 4.6.01 + Kokkos-Kernels 4.6.02 with cuBLAS, sm_90 unless KOKKOS_ARCH is set; about
25 minutes on 2 cores, mostly Kokkos-Kernels' float/double instantiations), then
  $0 PREFIX
EOF
  exit 2
}
if [ -z "$kokkos" ]; then
  echo "check-cuda-build: give the Kokkos CUDA prefix (argument or KOKKOS_CUDA_ROOT)." >&2
  howto
fi
if [ ! -x "$kokkos/bin/nvcc_wrapper" ]; then
  echo "check-cuda-build: no Kokkos with nvcc_wrapper in '$kokkos'." >&2
  howto
fi
# Kokkos lists its backends in its package configuration (lib or lib64).
kconfig="" kkconfig=""
for f in "$kokkos"/lib*/cmake/Kokkos/KokkosConfigCommon.cmake; do [ -f "$f" ] && kconfig="$f"; done
for f in "$kernels"/lib*/cmake/KokkosKernels/KokkosKernelsConfig.cmake; do [ -f "$f" ] && kkconfig="$f"; done
if [ -z "$kconfig" ] || ! grep -q 'Kokkos_DEVICES.*CUDA' "$kconfig"; then
  echo "check-cuda-build: the Kokkos in '$kokkos' was not built with CUDA." >&2
  howto
fi
if [ -z "$kkconfig" ]; then
  echo "check-cuda-build: no Kokkos-Kernels in '$kernels' (set KOKKOSKERNELS_CUDA_ROOT)." >&2
  howto
fi
if [ ! -x "$CUDA_HOME/bin/nvcc" ]; then
  echo "check-cuda-build: no nvcc in CUDA_HOME=$CUDA_HOME." >&2
  exit 2
fi
# nvcc_wrapper calls nvcc from PATH.
export PATH="$CUDA_HOME/bin:$PATH"

launcher=()
command -v ccache > /dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
# Ask CMake's file API for the target list (names, types and artifacts) of this configuration.
mkdir -p "$build/.cmake/api/v1/query"
touch "$build/.cmake/api/v1/query/codemodel-v2"
log="$build/check-cuda-build.log"
echo "check-cuda-build: configuring $build against $kokkos ($(nvcc --version | grep -o 'release [0-9.]*'))"
# shellcheck disable=SC2086
cmake -S "$root" -B "$build" -DCMAKE_CXX_COMPILER="$kokkos/bin/nvcc_wrapper" \
  -DKokkos_ROOT="$kokkos" -DKokkosKernels_ROOT="$kernels" -DHYBRID3D_ENABLE_DECKS=OFF \
  "${launcher[@]}" ${CMAKE_ARGS:-} > "$log" 2>&1 || {
  tail -n 30 "$log"
  echo "check-cuda-build: configure failed (log: $log)"
  exit 1
}

# name, type and first artifact of every target that makes a file.
targets="$(python3 - "$build" <<'EOF'
import glob, json, os, sys
reply = os.path.join(sys.argv[1], ".cmake", "api", "v1", "reply")
index = json.load(open(sorted(glob.glob(os.path.join(reply, "index-*.json")))[-1]))
model = next(o for o in index["objects"] if o["kind"] == "codemodel")
code = json.load(open(os.path.join(reply, model["jsonFile"])))
for t in code["configurations"][0]["targets"]:
    info = json.load(open(os.path.join(reply, t["jsonFile"])))
    if info.get("artifacts"):
        path = info["artifacts"][0]["path"]
        if not os.path.isabs(path):
            path = os.path.join(sys.argv[1], path)
        print(info["name"], info["type"], path)
EOF
)"

# Remove the artifacts first (libraries, executables, an object library's first object), so that
# each one found afterwards was made by this build; the other objects stay, so an unchanged
# source is not compiled again.
while read -r _ _ path; do rm -f "$path"; done <<< "$targets"
# Keep going past errors, so that every target that can build does.
generator="$(sed -n 's/^CMAKE_GENERATOR:INTERNAL=//p' "$build/CMakeCache.txt")"
case "$generator" in
  Ninja*) keep=(-k 0) ;;
  *) keep=(-k) ;;
esac
echo "check-cuda-build: building every target (-j $jobs; log: $log)"
status=0
cmake --build "$build" -j "$jobs" -- "${keep[@]}" >> "$log" 2>&1 || status=$?

built=0 failed=0
while read -r name type path; do
  if [ -f "$path" ]; then
    printf '  built   %-28s %s\n' "$name" "$type"
    built=$((built + 1))
  else
    printf '  FAILED  %-28s %s\n' "$name" "$type"
    failed=$((failed + 1))
  fi
done <<< "$targets"
echo "check-cuda-build: $built of $((built + failed)) targets compiled and linked for CUDA"
warnings="$(grep -c -E 'warning( #[0-9A-Z-]+)?:' "$log" || true)"
[ "$warnings" -gt 0 ] && echo "check-cuda-build: $warnings compiler warnings (log: $log)"
if [ "$failed" -gt 0 ] || [ "$status" -ne 0 ]; then
  echo "First errors (full log: $log):"
  grep -m 20 -E 'error( #[0-9A-Z-]+)?:|undefined reference|\*\*\*' "$log" || true
  exit 1
fi
