#!/usr/bin/env bash
# The engine benchmark of docs/performance.md: builds, makes the zoo if needed,
# then runs Tessera's engines and OpenCV's DNN module on the same models, one after the other,
# on this machine. Usage: tests/bench/run_bench.sh [SECONDS_PER_CONFIG]
set -euo pipefail
cd "$(dirname "$0")/../.."
seconds=${1:-3}
if [ -f build/build.ninja ]; then cmake --build build --target tessera_bench >/dev/null; else tools/build.sh >/dev/null; fi
/usr/bin/python3 tools/make_zoo.py --out build/testdata/zoo --models squeezenet1_1,resnet18 >/dev/null
echo "== Tessera ($(date -u +%F), $(nproc) cores) =="
build/bin/tessera_bench --zoo build/testdata/zoo --bundled models/fashion-mnist --seconds "$seconds"
echo
echo "== OpenCV DNN =="
/usr/bin/python3 tests/bench/opencv_dnn_bench.py --zoo build/testdata/zoo --bundled models/fashion-mnist --seconds "$seconds"
