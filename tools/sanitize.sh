#!/usr/bin/env bash
# The sanitizer suites (issue 15): one clang-14 tree per sanitizer, its libraries built with -O1
# and line tables only (cheap to build, stacks still name file:line), the tests' own code with -O0
# (tests/CMakeLists.txt), only the targets its suite runs.
#
#   tools/sanitize.sh asan [CTEST ARGS...]   build-asan/: ASan + UBSan (TESSERA_SANITIZE=address,undefined)
#                                            and the libFuzzer targets (TESSERA_FUZZ=ON); the unit,
#                                            bit-exact, integration and fleet tests and the fuzz
#                                            smoke runs (label fuzz, 5 s per target).
#   tools/sanitize.sh tsan [CTEST ARGS...]   build-tsan/: TSan; the server's concurrency tests, the only
#                                            ones that tree builds (tests/integration/CMakeLists.txt:
#                                            batcher, streams, drain, telemetry, fleet, instance
#                                            groups, device faults, model repository) and the
#                                            canary (label tsan: a race TSan must still report).
#   tools/sanitize.sh asan|tsan --build-only | --configure-only
#
# CTEST ARGS replace the suite's selection (e.g. -R InferenceQueueTest). Every test's processes,
# the tesserad and tessera the integration tests start included, inherit the options below: the
# first report ends the process with a failure, and the test helpers fail a test whose daemon or
# CLI wrote a report (tests/integration/subprocess.h). Exits non-zero when a test failed.
# TESSERA_SANITIZE_JOBS sets the build's and the suite's parallelism (default: nproc).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
kind=${1:-}
[ $# -gt 0 ] && shift
common_targets=(tesserad tessera unit_tests integration_tests)
# Left out of both suites, and run in the Release tree instead (tools/test.sh): the regexes of
# tools/sanitizer/left-out, each with its reason.
left_out=$(grep -v '^#' "$root/tools/sanitizer/left-out" | paste -sd'|')
case "$kind" in
  asan)
    sanitize=address,undefined
    build=${TESSERA_ASAN_BUILD_DIR:-$root/build-asan}
    configure=(-DTESSERA_FUZZ=ON)
    targets=("${common_targets[@]}" fleet_tests web_deps emulator_bitexact_tests fuzz_targets)
    # deploy_* are Python checks of deploy/; the label also holds fleet_tests (the Prometheus fleet).
    # Also left out here: the planner's tile search and cost model (TileSearch, ModelPlan: integer
    # and double loops over no buffer, 10x slower instrumented; they run in the Release and qemu
    # suites). The bit-exact suites check every kernel path and suite on an eighth of their random
    # cases (TESSERA_BITEXACT_DIVISOR; 50 convolutions, 18 depthwise, ... per path; a quarter took
    # 185 CPU-s here): the memory errors of a path show on any of its shapes' edges, and the
    # Release suite compares all of them.
    selection=(-L 'unit|integration|deploy|fuzz' -E "^deploy_|^TileSearch\.|^ModelPlan\.|$left_out")
    export TESSERA_BITEXACT_DIVISOR=8
    ;;
  tsan)
    sanitize=thread
    build=${TESSERA_TSAN_BUILD_DIR:-$root/build-tsan}
    configure=(-DTESSERA_FUZZ=OFF)
    # ccache does not read -fsanitize-ignorelist's file: make it part of every object's key.
    export CCACHE_EXTRAFILES=$root/tools/sanitizer/tsan.ignorelist
    targets=("${common_targets[@]}" tsan_race_canary)
    selection=(-L 'unit|integration|tsan' -E "$left_out")
    ;;
  *)
    sed -n 2,20p "$0" >&2
    exit 2
    ;;
esac
build_only=0
configure_only=0
case "${1:-}" in
  --build-only) build_only=1; shift ;;
  --configure-only) configure_only=1; shift ;;
esac
[ $# -gt 0 ] && selection=("$@")

launcher=()
if command -v ccache >/dev/null; then launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache); fi
# RelWithDebInfo with its flags replaced: -O1 (ASan's and TSan's recommended level: -O0 is
# twice as slow to run, -O2 slower to build) and -gline-tables-only (file:line in stacks, a
# fraction of -g's object size and link time). No -DNDEBUG: assertions stay on. Configured on
# every run (a few seconds) so a tree made by an older version of this script gets today's options.
# Without oneDNN (cmake/find_onednn.cmake): it is an uninstrumented binary library on libgomp,
# which clang would pair with its own libomp; the sanitizers check the host's own conv instead.
compilers=()
[ -f "$build/CMakeCache.txt" ] || compilers=(-DCMAKE_C_COMPILER=clang-14 -DCMAKE_CXX_COMPILER=clang++-14)
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo "${compilers[@]}" \
  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -gline-tables-only" -DCMAKE_C_FLAGS_RELWITHDEBINFO="-O1 -gline-tables-only" \
  -DTESSERA_SANITIZE="$sanitize" -DTESSERA_XRT=OFF -DTESSERA_ONEDNN=OFF -DTESSERA_WERROR="${TESSERA_WERROR:-ON}" \
  "${configure[@]}" "${launcher[@]}" >/dev/null
[ "$configure_only" -eq 1 ] && exit 0
cmake --build "$build" --parallel "${TESSERA_SANITIZE_JOBS:-$(nproc)}" --target "${targets[@]}"
[ "$build_only" -eq 1 ] && exit 0

supp=$root/tools/sanitizer
# halt_on_error: the first report ends the process with a non-zero status (its test fails).
export ASAN_OPTIONS=halt_on_error=1:detect_leaks=1:strict_init_order=1:check_initialization_order=1
export LSAN_OPTIONS=suppressions=$supp/lsan.supp:print_suppressions=0
export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1:suppressions=$supp/ubsan.supp
# ignore_noninstrumented_modules: the libc calls of the libraries not built with TSan (Debian's
# gRPC, abseil, protobuf) are not checked either (tools/sanitizer/tsan.supp explains).
export TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1:ignore_noninstrumented_modules=1:suppressions=$supp/tsan.supp:print_suppressions=0
cd "$build"
ctest --output-on-failure --timeout 900 -j "${TESSERA_SANITIZE_JOBS:-$(nproc)}" "${selection[@]}"
