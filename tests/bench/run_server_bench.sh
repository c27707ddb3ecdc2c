#!/usr/bin/env bash
# tesserad over gRPC against the bare engine, in one run, on the bundled model (fashion-mnist,
# int8 on the emulated fabric, batches of up to 8):
#   1. a latency daemon (--max-queue-delay-us 0: a batch leaves as soon as a worker is free) and
#   2. a throughput daemon (default batching: 8 images or 2000 us),
# each loaded by `tessera bench` (unary, closed loop) at concurrency 1, 8 and 32; then
#   3. tessera_bench, the engine without the server, on the same model at batch 1 and 8;
#   4. with TESSERA_BENCH_ZOO=DIR (the zoo of tools/make_zoo.py; it needs resnet18): ResNet-18
#      served from a model folder made here (the zoo's ONNX file, its two input images as JPEGs
#      for calibration and as the client's images), default batching, concurrency 16, against
#      tessera_bench --only resnet18 (batch 8, two callers, pipelined) on the same cores.
# Client, daemon and engine share this machine's cores: the numbers are for comparing with each
# other, not absolute. Bounded: every step has a timeout; the daemons are killed on exit.
# Usage: tests/bench/run_server_bench.sh [SECONDS_PER_RUN]   (default 5)
# TESSERA_BUILD_DIR=DIR: the binaries of DIR/bin; TESSERA_BENCH_NO_BUILD=1 runs them as they are
# (another tree's, e.g. a baseline's bin/ copied aside) instead of building them first.
set -euo pipefail
cd "$(dirname "$0")/../.."
seconds=${1:-5}
build=${TESSERA_BUILD_DIR:-build}
if [ "${TESSERA_BENCH_NO_BUILD:-0}" = 1 ]; then
  [ -x "$build/bin/tesserad" ] || { echo "no $build/bin/tesserad" >&2; exit 1; }
elif [ -f "$build/build.ninja" ]; then
  cmake --build "$build" --target tesserad tessera tessera_bench >/dev/null
else
  tools/build.sh >/dev/null
fi

work=$(mktemp -d /tmp/tessera-server-bench.XXXXXX)
source tests/bench/daemon.sh
cleanup() {
  stop_daemons
  rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

summary=()
# bench_runs LABEL: tessera bench at concurrency 1, 8, 32 against $address.
bench_runs() {
  local label=$1
  for c in 1 8 32; do
    echo "--- $label, unary, concurrency $c, ${seconds} s (+1 s warmup) ---"
    timeout $((seconds + 60)) "$build/bin/tessera" bench --server "$address" --mode unary --concurrency "$c" \
      --duration "$seconds" --warmup 1 2>/dev/null | tee "$work/report.txt"
    echo
    local ips p50 p99
    ips=$(sed -nE 's/^throughput: +([0-9.]+) images\/s/\1/p' "$work/report.txt")
    p50=$(sed -nE 's/^latency: +p50 ([0-9.]+).*/\1/p' "$work/report.txt")
    p99=$(sed -nE 's/^latency: .*p99 ([0-9.]+) +max.*/\1/p' "$work/report.txt")
    summary+=("$(printf '%-26s %4s %12s %10s %10s' "gRPC $label" "$c" "$ips" "$p50" "$p99")")
  done
}

echo "== tesserad over gRPC vs the bare engine ($(date -u +%F), $(nproc) cores, ${seconds} s per run) =="
echo
start_daemon latency --max-queue-delay-us 0
echo "== latency daemon ($address): --max-queue-delay-us 0 =="
bench_runs "max-queue-delay 0"
stop_daemon

start_daemon throughput
echo "== throughput daemon ($address): default batching (max 8 images, 2000 us) =="
bench_runs "default batching"
stop_daemon

echo "== bare engine (tessera_bench --only fashion-mnist): no gRPC, no decode, no queue =="
timeout $((seconds * 8 + 120)) "$build/bin/tessera_bench" --bundled models/fashion-mnist --only fashion-mnist \
  --seconds "$seconds" | tee "$work/engine.txt"
echo

echo "== summary: images/s (client latency ms) =="
printf '%-26s %4s %12s %10s %10s\n' "path" "conc" "images/s" "p50 ms" "p99 ms"
for row in "${summary[@]}"; do echo "$row"; done
sed -nE 's/^fashion-mnist +int8-emu +([0-9]+) +([0-9.]+).*/\1 \2/p' "$work/engine.txt" | while read -r batch ips; do
  printf '%-26s %4s %12s %10s %10s\n' "engine int8 batch $batch" "1" "$ips" "-" "-"
done
sed -nE 's/^fashion-mnist +([0-9.]+) +([0-9.]+)$/\1 \2/p' "$work/engine.txt" | while read -r _ pipe; do
  printf '%-26s %4s %12s %10s %10s\n' "engine int8 b8 pipelined" "2" "$pipe" "-" "-"
done

zoo=${TESSERA_BENCH_ZOO:-}
[ -n "$zoo" ] || exit 0
[ -f "$zoo/resnet18/model.onnx" ] || { echo "no resnet18 in $zoo (tools/make_zoo.py --models resnet18)" >&2; exit 1; }
# A ResNet-18 model folder: the zoo's two (ImageNet-normalised) inputs back as 224x224 JPEGs.
mkdir -p "$work/models/resnet18/calibration"
cp "$zoo/resnet18/model.onnx" "$work/models/resnet18/model.onnx"  # a link out of the folder is refused
for i in $(seq 1000); do echo "class$i"; done >"$work/models/resnet18/labels.txt"
cat >"$work/models/resnet18/model.toml" <<'TOML'
name = "resnet18"
file = "model.onnx"
labels = "labels.txt"
[input]
width = 224
height = 224
channels = 3
scale = 255.0
mean = [0.485, 0.456, 0.406]
std = [0.229, 0.224, 0.225]
[quantization]
calibration = "calibration"
TOML
/usr/bin/python3 - "$zoo/resnet18/input.f32" "$work/models/resnet18/calibration" <<'PY'
import sys
import cv2
import numpy as np
x = np.fromfile(sys.argv[1], dtype=np.float32).reshape(2, 3, 224, 224)
mean = np.array([0.485, 0.456, 0.406], np.float32).reshape(3, 1, 1)
std = np.array([0.229, 0.224, 0.225], np.float32).reshape(3, 1, 1)
for i, image in enumerate(x):
    rgb = np.clip((image * std + mean) * 255, 0, 255).astype(np.uint8).transpose(1, 2, 0)
    cv2.imwrite(f"{sys.argv[2]}/{i}.jpg", cv2.cvtColor(rgb, cv2.COLOR_RGB2BGR))
PY
# start_daemon serves ./models: from $work, that is the folder above.
build=$(realpath "$build")
pushd "$work" >/dev/null
start_daemon resnet18 --plan-cache ""
popd >/dev/null
echo "== ResNet-18 daemon ($address): default batching, concurrency 16 =="
timeout $((seconds + 120)) "$build/bin/tessera" bench --server "$address" --model resnet18 --mode unary \
  --images "$work/models/resnet18/calibration" --concurrency 16 --duration "$seconds" --warmup 2 2>/dev/null |
  tee "$work/resnet.txt"
stop_daemon
echo "== bare engine (tessera_bench --only resnet18) =="
timeout $((seconds * 8 + 300)) "$build/bin/tessera_bench" --zoo "$zoo" --bundled models/fashion-mnist \
  --only resnet18 --seconds "$seconds" | tee "$work/resnet_engine.txt"
served=$(sed -nE 's/^throughput: +([0-9.]+) images\/s/\1/p' "$work/resnet.txt")
bare=$(sed -nE 's/^resnet18 +[0-9.]+ +([0-9.]+)$/\1/p' "$work/resnet_engine.txt")
echo "ResNet-18: served (concurrency 16) $served images/s, bare engine (b8 pipelined) $bare images/s"
