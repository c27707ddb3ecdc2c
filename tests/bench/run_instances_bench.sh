#!/usr/bin/env bash
# Device instances (--devices): tesserad on 1, 2 and 4 emulator instances, each loaded by
# `tessera bench` (unary, closed loop, concurrency 32, 2 s warmup) RUNS times on a fresh daemon;
# prints every run (images/s, client p50/p99 ms, the daemon's mean power, the 1-minute load
# average at its start) and the median per instance count. Bundled model (fashion-mnist, int8 on
# the emulator, default batching: 8 images or 2000 us). Client and daemon share this machine's
# cores. Bounded: every step has a timeout; the daemons are killed on exit.
# Usage: tests/bench/run_instances_bench.sh [RUNS] [SECONDS_PER_RUN]   (defaults 3 and 10)
set -euo pipefail
cd "$(dirname "$0")/../.."
runs=${1:-3}
seconds=${2:-10}
build=${TESSERA_BUILD_DIR:-build}
if [ -f "$build/build.ninja" ]; then
  cmake --build "$build" --target tesserad tessera >/dev/null
else
  tools/build.sh >/dev/null
fi

work=$(mktemp -d /tmp/tessera-instances-bench.XXXXXX)
source tests/bench/daemon.sh
cleanup() {
  stop_daemons
  rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# The median of the numbers on stdin.
median() { sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

echo "== device instances ($(date -u '+%F %H:%M') UTC, $(nproc) cores, $runs runs x ${seconds} s, concurrency 32) =="
printf '%-9s %4s %10s %8s %8s %8s %6s\n' "devices" "run" "images/s" "p50 ms" "p99 ms" "watts" "load"
summary=()
for devices in 0 0,1 0,1,2,3; do
  : >"$work/ips"
  for run in $(seq "$runs"); do
    start_daemon instances --plan-cache "" --device emu --devices "$devices"
    load=$(cut -d' ' -f1 /proc/loadavg)
    timeout $((seconds + 60)) "$build/bin/tessera" bench --server "$address" --concurrency 32 --warmup 2 \
      --duration "$seconds" --json >"$work/report.json" 2>"$work/bench.err" || { cat "$work/bench.err" >&2; exit 1; }
    stop_daemon
    read -r ips p50 p99 watts failed < <(/usr/bin/python3 -c 'import json, sys; r = json.load(open(sys.argv[1]))
print(round(r["throughput_ips"]), round(r["latency_ms"]["p50"], 1), round(r["latency_ms"]["p99"], 1),
      round(r["power"]["mean_power_w"], 2), r["requests"]["failed"])' "$work/report.json")
    [ "$failed" = 0 ] || echo "$failed requests failed" >&2
    printf '%-9s %4s %10s %8s %8s %8s %6s\n' "$devices" "$run" "$ips" "$p50" "$p99" "$watts" "$load"
    echo "$ips" >>"$work/ips"
  done
  summary+=("$(printf '%-9s median %s images/s' "$devices" "$(median <"$work/ips")")")
done
printf '%s\n' "${summary[@]}"
