#!/usr/bin/env bash
# Fresh machine -> the whole test suite: installs, builds (warnings are errors), runs CTest.
# Exits non-zero on any failure.
set -euo pipefail
cd "$(dirname "$0")/.."
tools/setup.sh
TESSERA_WERROR=ON tools/build.sh
cd build
ctest --output-on-failure --timeout 1800 "$@"
