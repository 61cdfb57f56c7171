#!/usr/bin/env bash
# Checks that hybrid3d compiles and links for a GPU backend of Kokkos. No GPU is needed (nothing
# is run): it configures the whole project against a Kokkos built for that backend, with the
# backend's compiler and the Teuchos decks off, builds every target, and prints which targets
# compiled and linked. Exit status 0 only when all of them did.
#   cmake/check-gpu-build.sh cuda|hip [KOKKOS_PREFIX [BUILD_DIR]]
# (cmake/check-cuda-build.sh and cmake/check-hip-build.sh call it with their backend.)
# KOKKOS_PREFIX (or $KOKKOS_CUDA_ROOT / $KOKKOS_HIP_ROOT): install prefix of Kokkos 4 built with
# that backend. $KOKKOSKERNELS_CUDA_ROOT / $KOKKOSKERNELS_HIP_ROOT: Kokkos-Kernels' prefix, if
# not the same one. BUILD_DIR (or $BUILD_DIR): default build-cuda / build-hip in the source tree.
# cuda: the prefix's nvcc_wrapper compiles, with nvcc from $CUDA_HOME (default /usr/local/cuda).
# hip: $HIPCC (default: hipcc from PATH) compiles.
# $JOBS (default: number of cores) and $CMAKE_ARGS (extra configure arguments) may be set. Uses
# ccache when it is installed. Known to work: docs/building.md, "CUDA" and "HIP".
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
backend="${1:-}"
case "$backend" in
  cuda) BACKEND=CUDA ;;
  hip) BACKEND=HIP ;;
  *) echo "usage: $0 cuda|hip [KOKKOS_PREFIX [BUILD_DIR]]" >&2; exit 2 ;;
esac
shift
me="check-$backend-build"
kokkos_var="KOKKOS_${BACKEND}_ROOT" kernels_var="KOKKOSKERNELS_${BACKEND}_ROOT"
kokkos="${1:-${!kokkos_var:-}}"
kernels="${!kernels_var:-$kokkos}"
build="${2:-${BUILD_DIR:-$root/build-$backend}}"
jobs="${JOBS:-$(nproc 2>/dev/null || echo 2)}"
export CUDA_HOME="${CUDA_HOME:-/usr/local/cuda}"

howto() {
  if [ "$backend" = cuda ]; then
    cat >&2 <<EOF
Make one with the team's build-kokkos4.sh (the team's shared tools folder), from git
clones or mirrors of github.com/kokkos/kokkos and github.com/kokkos/kokkos-kernels:
  CUDA_HOME=$CUDA_HOME build-kokkos4.sh KOKKOS_GIT KERNELS_GIT PREFIX cuda
(Kokkos 4.6.01 + Kokkos-Kernels 4.6.02 with cuBLAS, sm_90 unless KOKKOS_ARCH is set; about
25 minutes on 2 cores, mostly Kokkos-Kernels' float/double instantiations), then
  cmake/$me.sh PREFIX
EOF
  else
    cat >&2 <<EOF
Build Kokkos 4 with hipcc (-DKokkos_ENABLE_HIP=ON -DKokkos_ARCH_AMD_GFX90A=ON or your GPU's
architecture) and Kokkos-Kernels with the same hipcc into one prefix: docs/building.md, "HIP",
has the configure lines. Then
  cmake/$me.sh PREFIX
EOF
  fi
  exit 2
}
if [ -z "$kokkos" ]; then
  echo "$me: give the Kokkos $BACKEND prefix (argument or $kokkos_var)." >&2
  howto
fi
if [ "$backend" = cuda ]; then
  compiler="$kokkos/bin/nvcc_wrapper"
  if [ ! -x "$compiler" ]; then
    echo "$me: no Kokkos with nvcc_wrapper in '$kokkos'." >&2
    howto
  fi
else
  compiler="$(command -v "${HIPCC:-hipcc}" || true)"
  if [ -z "$compiler" ]; then
    echo "$me: no hipcc on PATH (or set HIPCC; Debian 12: apt-get install hipcc)." >&2
    exit 2
  fi
fi
# Kokkos lists its backends and architectures in its package configuration (lib or lib64).
kconfig="" kkconfig=""
for f in "$kokkos"/lib*/cmake/Kokkos/KokkosConfigCommon.cmake; do [ -f "$f" ] && kconfig="$f"; done
for f in "$kernels"/lib*/cmake/KokkosKernels/KokkosKernelsConfig.cmake; do [ -f "$f" ] && kkconfig="$f"; done
if [ -z "$kconfig" ] || ! grep -q "Kokkos_DEVICES.*$BACKEND" "$kconfig"; then
  echo "$me: the Kokkos in '$kokkos' was not built with $BACKEND." >&2
  howto
fi
if [ -z "$kkconfig" ]; then
  echo "$me: no Kokkos-Kernels in '$kernels' (set $kernels_var)." >&2
  howto
fi
if [ "$backend" = cuda ]; then
  if [ ! -x "$CUDA_HOME/bin/nvcc" ]; then
    echo "$me: no nvcc in CUDA_HOME=$CUDA_HOME." >&2
    exit 2
  fi
  # nvcc_wrapper calls nvcc from PATH.
  export PATH="$CUDA_HOME/bin:$PATH"
  version="$(nvcc --version | grep -o 'release [0-9.]*')"
else
  # Given no GPU target, hipcc asks rocm_agent_enumerator for this machine's GPUs (a Python
  # traceback where there is none): name the Kokkos's AMD architecture instead (gfx90a, ...).
  arch="$(grep -o 'AMD_GFX[0-9A-Z]*' "$kconfig" | head -n 1 | sed 's/AMD_GFX/gfx/' | tr '[:upper:]' '[:lower:]')"
  [ -n "$arch" ] && export HCC_AMDGPU_TARGET="${HCC_AMDGPU_TARGET:-$arch}"
  version="$("$compiler" --version 2> /dev/null | grep -o 'HIP version: [0-9.]*' || true)"
fi

launcher=()
command -v ccache > /dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
# Ask CMake's file API for the target list (names, types and artifacts) of this configuration.
mkdir -p "$build/.cmake/api/v1/query"
touch "$build/.cmake/api/v1/query/codemodel-v2"
log="$build/$me.log"
echo "$me: configuring $build against $kokkos ($version)"
# shellcheck disable=SC2086
cmake -S "$root" -B "$build" -DCMAKE_CXX_COMPILER="$compiler" \
  -DKokkos_ROOT="$kokkos" -DKokkosKernels_ROOT="$kernels" -DHYBRID3D_ENABLE_DECKS=OFF \
  "${launcher[@]}" ${CMAKE_ARGS:-} > "$log" 2>&1 || {
  tail -n 30 "$log"
  echo "$me: configure failed (log: $log)"
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
echo "$me: building every target (-j $jobs; log: $log)"
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
echo "$me: $built of $((built + failed)) targets compiled and linked for $BACKEND"
warnings="$(grep -c -E 'warning( #[0-9A-Z-]+)?:' "$log" || true)"
[ "$warnings" -gt 0 ] && echo "$me: $warnings compiler warnings (log: $log)"
if [ "$failed" -gt 0 ] || [ "$status" -ne 0 ]; then
  echo "First errors (full log: $log):"
  grep -m 20 -E 'error( #[0-9A-Z-]+)?:|undefined reference|\*\*\*' "$log" || true
  exit 1
fi
