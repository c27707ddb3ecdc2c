#!/usr/bin/env bash
# Configures and builds Tessera (Release) into build/. Binaries land in build/bin/.
# TESSERA_WERROR=ON (set by CI and the test command) turns warnings into errors.
set -euo pipefail
cd "$(dirname "$0")/.."
werror=${TESSERA_WERROR:-OFF}
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DTESSERA_WERROR="$werror" >/dev/null
# Two cores: heavy translation units (gRPC stubs) want ~1.5 GiB each, which 24 GiB affords.
cmake --build build --parallel "$(nproc)"
