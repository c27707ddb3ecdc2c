#!/usr/bin/env bash
# Fresh machine -> the whole test suite: installs, builds (warnings are errors), runs CTest, then
# the board builds: tools/cross.sh per architecture (cross build + its tests under qemu-user, label
# `cross`), then the sanitizer trees: tools/sanitize.sh asan (unit, bit-exact, integration and
# fleet tests under ASan + UBSan, and the fuzz smoke runs) and tools/sanitize.sh tsan (the server's
# concurrency tests under TSan).
# Exits non-zero on any failure. TESSERA_BUILD_DIR picks another build tree (default
# build/). Arguments go to the x86_64 ctest and leave the cross part out (a chosen selection);
# `tools/test.sh --quick [ctest args]` is the quick check: the unit and integration labels only.
#
# TESSERA_TEST_CROSS: the architectures to cross-build and test, default "aarch64" (ZynqMP);
# "aarch64 armhf" adds Zynq-7000; "none" leaves them out, and the run says so. A cross part that
# cannot run (qemu-user, the cross compiler or the :arm64 libraries missing and not installable)
# fails: tools/cross.sh installs them or exits non-zero, and every `cross` test requires
# tests/cross/check_environment.py, which fails with the reason.
#
# TESSERA_TEST_SANITIZE: the sanitizer suites to run, default "asan tsan"; "asan" or "tsan" runs
# one, "none" leaves them out.
#
# Cost on a 2-core Debian 12 (CI's kind): each part is printed with its wall time at the end of a
# run; docs/testing.md has the measured figures.
set -euo pipefail
cd "$(dirname "$0")/.."
# CI stops a run at 90 minutes, and a run past that does not land: past 75 the run says so after
# each part, so the next submission sees it coming (docs/testing.md has each part's budget).
readonly kGuardSeconds=$((75 * 60))
guard_said=0
guard() {
  if [ "$guard_said" -eq 0 ] && [ "$SECONDS" -gt "$kGuardSeconds" ]; then
    guard_said=1
    echo "test: GUARD: $((SECONDS / 60)) min so far, past the 75-minute guard of CI's 90: the budget in docs/testing.md no longer holds"
  fi
}
start=$SECONDS
tools/setup.sh
parts=("setup (packages) took $((SECONDS - start)) s")
start=$SECONDS
TESSERA_WERROR=ON tools/build.sh
parts+=("x86_64 build took $((SECONDS - start)) s")
# Left out, each with its own label to run by hand: "tidy" (clang-tidy over the whole tree, ~33
# CPU-minutes; the default run has style.clang_tidy_changed, the units that include a file changed
# since tests/style/tidy-clean-at) and "families_large" (the torchvision families the default
# run's six do not cover: exports of hundreds of MB and many CPU-minutes, tests/reference). Label
# "fuzz" lives in the ASan tree (below).
run_cross=1
if [ "${1:-}" = --quick ]; then
  # The quick check (README): the unit and integration labels of the x86_64 tree, no reference
  # models, browser, cross or sanitizer parts.
  shift
  set -- -L 'unit|integration' "$@"
  run_cross=0
elif [ $# -eq 0 ]; then
  set -- -LE 'tidy|families_large'
else
  run_cross=0
fi
sanitizers=${TESSERA_TEST_SANITIZE:-asan tsan}
# Each integration test runs once in a full run, in the strictest tree that runs it: when the ASan +
# UBSan part runs (it runs every integration test at -O1 under both sanitizers, with the Release
# tree's timeouts), the x86_64 tree runs only those it leaves out (tools/sanitizer/left-out: they
# measure RSS, or need the PyTorch zoo, or take minutes instrumented) and those it cannot build (the
# XRT backend's daemon tests: the ASan tree has no XRT). 2026-11-29, Xeon: the 240 others took
# ~210 s of the x86_64 part's 505. `ctest` in build/ still runs them all.
integration_once=0
if [ "$run_cross" -eq 1 ] && [ $# -eq 2 ] && [[ " $sanitizers " == *" asan "* ]]; then
  integration_once=1
  set -- -LE 'tidy|families_large|integration'
fi
status=0
# CI keeps only the tail of a run: each failed part names its failed tests in the closing report,
# read from the ctest log its tree wrote during this run.
marker=$(mktemp)
trap 'rm -f "$marker"' EXIT
failed_tests() {
  local log=$1/Testing/Temporary/LastTestsFailed.log
  if [ -f "$log" ] && [ "$log" -nt "$marker" ]; then
    printf '%s' "; failed: $(cut -d: -f2- "$log" | paste -sd, | sed 's/,/, /g')"
  fi
}
start=$SECONDS
# In parallel: the tests that measure time or load, or want the machine to themselves (soak,
# overload, drain, the bench CLI, clang-tidy), are RUN_SERIAL in their CMakeLists.txt.
x86_64_failed=""
x86_64_tests() {
  if ! (cd "${TESSERA_BUILD_DIR:-build}" && ctest --output-on-failure --timeout 1800 -j "$(nproc)" "$@"); then
    x86_64_failed+=$(failed_tests "${TESSERA_BUILD_DIR:-build}")
    [ -n "$x86_64_failed" ] || x86_64_failed=" "
  fi
}
x86_64_tests "$@"
if [ "$integration_once" -eq 1 ]; then
  x86_64_tests -L integration -R "$(grep -v '^#' tools/sanitizer/left-out | paste -sd'|')|^xrt_emu_daemon_tests$"
fi
if [ -z "$x86_64_failed" ]; then
  parts+=("x86_64 tests passed in $((SECONDS - start)) s")
else
  parts+=("x86_64 tests FAILED after $((SECONDS - start)) s${x86_64_failed% }")
  status=1
fi
guard
report() {
  printf 'test: %s\n' "${parts[@]}" "$@"
  printf 'test: all parts took %d s (%d min)\n' "$SECONDS" $((SECONDS / 60))
  guard
  exit "$status"
}

if [ "$run_cross" -eq 0 ]; then
  report "cross builds and sanitizer suites not run (a ctest selection was given)"
fi
arches=${TESSERA_TEST_CROSS:-aarch64}
[ "$arches" = none ] && { parts+=("cross builds not run (TESSERA_TEST_CROSS=none)"); arches=; }
for arch in $arches; do
  start=$SECONDS
  # tools/cross.sh runs its qemu tests nproc at a time: each is single-threaded and none measures speed.
  if tools/cross.sh "$arch"; then
    parts+=("$arch cross build and qemu tests passed in $((SECONDS - start)) s")
  else
    parts+=("$arch cross build or its qemu tests FAILED after $((SECONDS - start)) s$(failed_tests "build-$arch")")
    status=1
  fi
  guard
done
[ "$sanitizers" = none ] && { parts+=("sanitizer suites not run (TESSERA_TEST_SANITIZE=none)"); sanitizers=; }
for kind in $sanitizers; do
  tree_var=TESSERA_${kind^^}_BUILD_DIR
  start=$SECONDS
  if tools/sanitize.sh "$kind"; then
    parts+=("$kind build and suite passed in $((SECONDS - start)) s")
  else
    parts+=("$kind build or suite FAILED after $((SECONDS - start)) s$(failed_tests "${!tree_var:-build-$kind}")")
    status=1
  fi
  guard
done
report
