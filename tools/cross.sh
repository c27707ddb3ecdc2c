#!/usr/bin/env bash
# Cross build for the boards: tools/cross.sh aarch64|armhf [ctest args]
#   aarch64: ZynqMP (ZCU102/ZCU104, Cortex-A53)   armhf: Zynq-7000 (ZC702/ZC706, Cortex-A9)
# Installs what is missing (Debian multiarch: the cross compilers, qemu-user and the libraries as
# :arm64/:armhf packages), builds tesserad, tessera and the cross test selection into
# build-<arch>/ (warnings are errors) and runs the tests labelled `cross` under qemu-user.
# Extra arguments go to ctest (e.g. -R Requant). TESSERA_CROSS_NO_TEST=1 only builds.
set -euo pipefail
cd "$(dirname "$0")/.."

arch=${1:-}
case "$arch" in
  aarch64) deb_arch=arm64 ;;
  armhf) deb_arch=armhf ;;
  *)
    echo "usage: tools/cross.sh aarch64|armhf [ctest args]" >&2
    exit 2
    ;;
esac
shift

# The project's libraries for the target (CLI11 and nlohmann-json are arch-all headers: the build
# machine's copies serve), and the build machine's tools: the cross compiler, qemu-user for the
# tests, protoc and grpc_cpp_plugin (they run on the build machine, so they are amd64).
# prometheus-cpp-dev cannot be installed for two archs at once (it depends on the civetweb program,
# which is not Multi-Arch), so the target gets only the runtime library and the headers (the same on
# every arch) come from the build machine's prometheus-cpp-dev (cmake/find_prometheus_cpp.cmake).
target_libs=(libgrpc++-dev libprotobuf-dev libspdlog-dev libgtest-dev libgmock-dev libturbojpeg0-dev
  libspng-dev libtomlplusplus-dev libssl-dev zlib1g-dev libboost-dev libprometheus-cpp-core1.0)
host_tools=("crossbuild-essential-$deb_arch" qemu-user cmake ninja-build pkg-config
  protobuf-compiler protobuf-compiler-grpc libcli11-dev nlohmann-json3-dev prometheus-cpp-dev python3)

sudo_cmd=()
if [ "$(id -u)" -ne 0 ]; then sudo_cmd=(sudo); fi
export DEBIAN_FRONTEND=noninteractive

installed() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q "install ok installed"; }

# `apt-get update` at most once per call. A mirror caught mid-sync fails one index ("File has
# unexpected size ... Mirror sync in progress?"): retry once, then go on with the indexes there are
# (pin_common_versions below copes with a foreign-arch index that lags the amd64 one).
updated=0
apt_update() {
  [ "$updated" -eq 0 ] || return 0
  updated=1
  "${sudo_cmd[@]}" apt-get update -q || { sleep 5 && "${sudo_cmd[@]}" apt-get update -q; } ||
    echo "cross: apt-get update failed partly; going on with the indexes there are" >&2
}

# Multi-Arch: same packages (libssl3, linux-libc-dev, ...) must have one version on amd64 and on
# the foreign arch. When the amd64 side (installed, or its candidate from an index the foreign arch
# lacks) differs from what the foreign index offers, apt refuses with "held broken packages".
# Picks the highest version both archs' indexes offer and names it for both, e.g.
# `libssl3=V libssl3:arm64=V` (a downgrade of the amd64 side is allowed when only that matches).
common_version() {
  local pkg=$1 native foreign
  native=$(apt-cache madison "$pkg" 2>/dev/null | awk -F'|' '{gsub(/ /,"",$2); print $2}' | sort -u)
  foreign=$(apt-cache madison "$pkg:$deb_arch" 2>/dev/null | awk -F'|' '{gsub(/ /,"",$2); print $2}' | sort -u)
  comm -12 <(echo "$native") <(echo "$foreign") | grep . | sort -V | tail -n 1
}

# The packages apt cannot install side by side: those it names as not installable ("Depends:
# libssl3:arm64 ... but it is not going to be installed") and the amd64 ones it would rather remove
# ("Remv libssl-dev [3.0.19...]": an installed amd64 -dev package whose :arm64 twin needs another
# version), by their base name.
conflicting_names() {
  grep -oE "(^ [^ ]+ : |Depends: |^Remv )[a-z0-9][a-z0-9.+-]*(:[a-z0-9]+)?" |
    sed -E 's/^ //; s/ : $//; s/^Depends: //; s/^Remv //; s/:.*//' | sort -u
}

multi_arch_same() { apt-cache show "$1" 2>/dev/null | grep -qx "Multi-Arch: same"; }

install_missing() {
  # The libraries for amd64 too: the cross test's client (build/bin/tessera) is an x86_64 build,
  # and naming both arches in one apt-get call keeps Multi-Arch: same pairs at one version.
  local wanted=("${host_tools[@]}" "${target_libs[@]}") missing=() p
  for p in "${target_libs[@]}"; do wanted+=("$p:$deb_arch"); done
  for p in "${wanted[@]}"; do installed "$p" || missing+=("$p"); done
  if [ ${#missing[@]} -eq 0 ]; then
    echo "cross: all ${#wanted[@]} packages for $arch present"
    return 0
  fi
  echo "cross: installing ${missing[*]}"
  if ! dpkg --print-foreign-architectures | grep -qx "$deb_arch"; then
    "${sudo_cmd[@]}" dpkg --add-architecture "$deb_arch"
    updated=0
  fi
  apt_update
  # Up to four rounds: simulate; pin the version-skewed Multi-Arch: same pairs apt complains about
  # (or would resolve by removing the amd64 package); simulate again. Then install for real in one
  # apt-get call that may not remove anything (--no-remove): the amd64 build must keep working.
  local pins=() round out name v
  for round in 1 2 3 4; do
    out=$(apt-get install -s -q --no-install-recommends --allow-downgrades "${missing[@]}" "${pins[@]}" 2>&1) || true
    if ! echo "$out" | grep -qE "^Remv |unmet dependencies|broken packages"; then break; fi
    local added=0
    for name in $(echo "$out" | conflicting_names); do
      [[ " ${pins[*]} " == *" $name="* ]] && continue
      v=$(common_version "$name") || true
      [ -n "$v" ] || continue
      # The foreign twin only where the two can be installed side by side: a package that is not
      # Multi-Arch: same (libpq-dev, libxmlsec1-dev, ...) came up only because the amd64 side needs
      # the common version too; naming its twin would ask apt for two that conflict.
      pins+=("$name=$v")
      if multi_arch_same "$name"; then pins+=("$name:$deb_arch=$v"); fi
      added=1
    done
    if [ "$added" -eq 0 ]; then
      echo "$out" >&2
      echo "cross: apt cannot install the $arch packages without removing others (see above)" >&2
      exit 1
    fi
    echo "cross: round $round: pinning Multi-Arch: same pairs to common versions: ${pins[*]}"
  done
  "${sudo_cmd[@]}" apt-get install -y -q --no-install-recommends --allow-downgrades --no-remove "${missing[@]}" "${pins[@]}"
}

install_missing
[ "${TESSERA_CROSS_INSTALL_ONLY:-0}" = 1 ] && exit 0

build_dir=build-$arch
launcher=()
# ccache, when a developer has it, shares objects between builds; CI runs without it.
if command -v ccache >/dev/null; then launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache); fi
# The build machine's client for the integration test (tests/cross): the x86_64 `tessera` of the
# x86_64 build tree (TESSERA_BUILD_DIR, default build/, as tools/build.sh).
host_build=${TESSERA_BUILD_DIR:-build}
cmake -S . -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=Release -DTESSERA_WERROR=ON \
  -DCMAKE_TOOLCHAIN_FILE="$PWD/cmake/toolchain-$arch.cmake" -DTESSERA_HOST_CLI="$(realpath -m "$host_build")/bin/tessera" \
  "${launcher[@]}" >/dev/null
# Only what runs on the board and the cross test selection (tests/CMakeLists.txt, label `cross`).
cmake --build "$build_dir" --parallel "$(nproc)" --target tesserad tessera tessera_cross_tests

# That client, configured like tools/build.sh does when its tree is not there yet.
if [ ! -f "$host_build/build.ninja" ]; then
  cmake -S . -B "$host_build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DTESSERA_WERROR=ON "${launcher[@]}" >/dev/null
fi
cmake --build "$host_build" --parallel "$(nproc)" --target tessera

[ "${TESSERA_CROSS_NO_TEST:-0}" = 1 ] && exit 0
cd "$build_dir"
# What only the board's architecture can show runs here: the NEON and sdot kernels in every
# bit-exact suite, the host's NEON loops, the parsers with an unsigned char, the daemon and the
# int8 accuracy under qemu, the install tree. Left out, because the same C++ runs in the x86_64
# suite (docs/testing.md's budget: 300 of the 930 CPU-seconds these tests took under qemu): the
# portable (`scalar`) kernel path's copies of the emulator suites (it is also the armhf build's
# path without NEON, `TESSERA_TEST_CROSS="aarch64 armhf"`), and the planner's search and cost
# model (TileSearch, ModelPlan, PlanCache: integer and double arithmetic with no SIMD; the daemon
# test plans the bundled model on the board's code). Extra arguments replace this selection.
[ $# -gt 0 ] || set -- -E '/scalar$|^TileSearch\.|^ModelPlan\.|^PlanCacheTest\.'
# The NEON and sdot paths' bit-exact suites compare a quarter of each suite's random cases (the
# first quarter: the same every run; 100 convolutions, 37 depthwise, ...) under qemu: all of them
# were 523 of the 792 CPU-seconds these tests took, half 314 of 602; the x86_64 suite compares
# every case on its own paths. TESSERA_BITEXACT_DIVISOR=1 runs all.
export TESSERA_BITEXACT_DIVISOR=${TESSERA_BITEXACT_DIVISOR:-4}
ctest --output-on-failure --timeout 1800 -j "$(nproc)" -L cross "$@"
