#!/usr/bin/env bash
# Configures and builds Tessera (Release) into build/ (or $TESSERA_BUILD_DIR). Binaries land in
# <build>/bin/.
# TESSERA_WERROR=ON (set by CI and the test command) turns warnings into errors.
set -euo pipefail
cd "$(dirname "$0")/.."
werror=${TESSERA_WERROR:-OFF}
build_dir=${TESSERA_BUILD_DIR:-build}
launcher=()
# ccache, when a developer has it, shares objects between build trees; CI runs without it.
if command -v ccache >/dev/null; then launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache); fi
cmake -S . -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=Release -DTESSERA_WERROR="$werror" "${launcher[@]}" >/dev/null
# Two cores: heavy translation units (gRPC stubs) want ~1.5 GiB each, which 24 GiB affords.
cmake --build "$build_dir" --parallel "$(nproc)"
