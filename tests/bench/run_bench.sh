#!/usr/bin/env bash
# The engine benchmark of docs/performance.md: builds, makes the zoo if needed, then runs
# Tessera's engines, OpenCV's DNN module and (where the build has oneDNN) oneDNN's int8
# convolutions on the same models, one after the other, on this machine, and prints them side by
# side with their ratios (tests/bench/bench_table.py).
# Usage: tests/bench/run_bench.sh [SECONDS_PER_CONFIG] [MODELS] [FAMILIES]
# MODELS: zoo models, comma-separated (default squeezenet1_1,resnet18,googlenet,mobilenet_v2,alexnet;
# "" for none). FAMILIES: torchvision families of tools/make_families.py (e.g.
# efficientnet_b0,mobilenet_v3_large), their opset-17 export, made into build/testdata/families.
set -euo pipefail
cd "$(dirname "$0")/../.."
seconds=${1:-3}
models=${2-squeezenet1_1,resnet18,googlenet,mobilenet_v2,alexnet}
families=${3:-}
targets=(tessera_bench)
if [ -f build/build.ninja ] && cmake --build build --target help | grep -q '^tessera_onednn_bench:'; then
  targets+=(tessera_onednn_bench)
fi
if [ -f build/build.ninja ]; then cmake --build build --target "${targets[@]}" >/dev/null; else tools/build.sh >/dev/null; fi
[ -z "$models" ] || /usr/bin/python3 tools/make_zoo.py --out build/testdata/zoo --models "$models" >/dev/null
if [ -n "$families" ]; then
  /usr/bin/python3 tools/make_families.py --out build/testdata/families --families "$families" >/dev/null
fi
names=$(echo "$models,$families" | sed 's/^,//; s/,$//')
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
echo "== Tessera ($(date -u +%F), $(nproc) cores) =="
build/bin/tessera_bench --zoo build/testdata/zoo --families build/testdata/families --bundled models/fashion-mnist --models "$names" \
  --seconds "$seconds" | tee "$out/tessera"
echo
echo "== OpenCV DNN =="
/usr/bin/python3 tests/bench/opencv_dnn_bench.py --zoo build/testdata/zoo --families build/testdata/families \
  --bundled models/fashion-mnist --models "$names" --seconds "$seconds" | tee "$out/opencv"
if [ -x build/bin/tessera_onednn_bench ] && [ -n "$models" ]; then
  echo
  echo "== oneDNN int8 convolutions (the models' conv shapes, u8 x s8 -> s32) =="
  # libgomp's waiting threads spin by default; on a shared machine a spinning team stalls whenever
  # one of its threads is descheduled (ResNet-18: 3.4 against ~120 images/s under load), so the
  # reference waits passively unless the caller says otherwise.
  OMP_WAIT_POLICY=${OMP_WAIT_POLICY:-passive} build/bin/tessera_onednn_bench --zoo build/testdata/zoo \
    --models "$models" --threads "$(nproc)" --seconds "$seconds" | tee "$out/onednn"  # zoo models only
elif [ -z "$models" ]; then
  echo
  echo "== oneDNN: it runs zoo models only, and none was named; no oneDNN column =="
else
  echo
  echo "== oneDNN: not in this build (cmake/find_onednn.cmake); no oneDNN column =="
fi
echo
echo "== Side by side (images/s; oneDNN times the convolutions only) =="
/usr/bin/python3 tests/bench/bench_table.py "$out/tessera" "$out/opencv" "$out/onednn"
