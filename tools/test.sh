#!/usr/bin/env bash
# Fresh machine -> the whole test suite: installs, builds (warnings are errors), runs CTest.
# Exits non-zero on any failure. TESSERA_BUILD_DIR picks another build tree (default build/).
set -euo pipefail
cd "$(dirname "$0")/.."
tools/setup.sh
TESSERA_WERROR=ON tools/build.sh
cd "${TESSERA_BUILD_DIR:-build}"
ctest --output-on-failure --timeout 1800 "$@"
