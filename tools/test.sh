#!/usr/bin/env bash
# Fresh machine -> the whole test suite: installs, builds (warnings are errors), runs CTest, then
# the board builds: tools/cross.sh per architecture (cross build + its tests under qemu-user, label
# `cross`). Exits non-zero on any failure. TESSERA_BUILD_DIR picks another build tree (default
# build/). Arguments go to the x86_64 ctest and leave the cross part out (a chosen selection).
#
# TESSERA_TEST_CROSS: the architectures to cross-build and test, default "none" for now (below);
# "aarch64" (ZynqMP), "aarch64 armhf" adds Zynq-7000; "none" leaves them out, and the run says so. A cross part that
# cannot run (qemu-user, the cross compiler or the :arm64 libraries missing and not installable)
# fails: tools/cross.sh installs them or exits non-zero, and every `cross` test requires
# tests/cross/check_environment.py, which fails with the reason.
#
# Cost, 2-core Debian 12 (CI's kind): x86_64 ~15 min cold build + ~5 min tests. aarch64, measured
# 2026-11-25 on the shared development machine (load average 7-12 from other builds, so these are
# upper bounds): the cross build ~24 min wall from a stale tree with ccache (61% hits; it also
# rebuilt 87 steps of the x86_64 client), and `ctest -L cross` 42 min wall, of which 30 min is the
# int8 accuracy test's timeout (10,000 images fp32 + int8 under qemu, starved to ~35% of a core),
# 5.3 min BitexactTest.PlannedTilesNeverChangeTheResult, 9 min the 331 unit/bit-exact tests, ~1 min
# each the daemon and install-tree tests. Run alone, the accuracy test passed in 24 min wall,
# 14.7 min CPU: it is most of the qemu time (trim its fp32 pass first if CI is short). Not yet
# measured on an idle machine. Estimate for CI: aarch64 ~15 min build + ~25 min tests, so
# x86_64 + aarch64 ~60 min of the 90. armhf costs about
# as much again, so it is not in the default run: give it its own CI job (TESSERA_TEST_CROSS=armhf).
set -euo pipefail
cd "$(dirname "$0")/.."
tools/setup.sh
TESSERA_WERROR=ON tools/build.sh
# Left out, each with its own label to run by hand: "tidy" (clang-tidy over the whole tree, ~33
# CPU-minutes; the default run has style.clang_tidy_changed, the units that include a file changed
# since tests/style/tidy-clean-at) and "fuzz" (tools/fuzz.sh builds a second, clang + sanitizer
# tree first; its cold cost on CI is not measured yet: issue 15).
run_cross=1
if [ $# -eq 0 ]; then set -- -LE 'tidy|fuzz'; else run_cross=0; fi
status=0
(cd "${TESSERA_BUILD_DIR:-build}" && ctest --output-on-failure --timeout 1800 "$@") || status=1

if [ "$run_cross" -eq 0 ]; then
  echo "test: cross builds not run (a ctest selection was given)"
  exit "$status"
fi
# The default stays "none" until the aarch64 qemu suite has passed whole on an idle 2-core machine
# inside CI's budget (not yet: its int8 accuracy test timed out CPU-starved; issue 13).
arches=${TESSERA_TEST_CROSS:-none}
if [ "$arches" = none ]; then
  echo "test: cross builds not run (TESSERA_TEST_CROSS=none)"
  exit "$status"
fi
for arch in $arches; do
  start=$SECONDS
  if tools/cross.sh "$arch"; then
    echo "test: $arch cross build and qemu tests passed in $((SECONDS - start)) s"
  else
    echo "test: $arch cross build or its qemu tests FAILED after $((SECONDS - start)) s" >&2
    status=1
  fi
done
exit "$status"
