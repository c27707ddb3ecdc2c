#!/usr/bin/env bash
# Soak test (issue 15, point 4): starts tesserad from a build tree, measures its capacity with
# `tessera bench` (closed loop), then drives it open-loop at --load x capacity for --minutes,
# sampling the daemon's RSS every 10 s and the client's p99 per 5 s window. Passes (exit 0) when
# no request was lost (every one answered OK), RSS grew less than 5% from the end of the warm-up
# (the first fifth, at least 30 s) to the end, and p99 stayed flat (the median window p99 of the
# last third is at most twice that of the first third after warm-up, or at most 20 ms above it).
# Traffic stays on loopback.
#
#   tools/soak.sh --minutes 30                 # the issue's figure; results in build/soak/
#   tools/soak.sh --minutes 2 --build build    # what CTest runs (soak_2min, label slow)
set -euo pipefail
cd "$(dirname "$0")/.."

minutes=30
load=0.8
build=build
out=""
while [ $# -gt 0 ]; do
  case "$1" in
    --minutes) minutes=$2; shift 2 ;;
    --load) load=$2; shift 2 ;;
    --build) build=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    *) echo "usage: tools/soak.sh [--minutes N] [--load 0.8] [--build DIR] [--out DIR]" >&2; exit 2 ;;
  esac
done
out=${out:-$build/soak}
images=$build/testdata/fmnist_images
for f in "$build/bin/tesserad" "$build/bin/tessera"; do
  [ -x "$f" ] || { echo "soak: $f missing (tools/build.sh)" >&2; exit 2; }
done
[ -d "$images" ] || { echo "soak: no images in $images (ctest -R make_fmnist_images)" >&2; exit 2; }
mkdir -p "$out"

"$build/bin/tesserad" --models models --web-root "$build/share/tessera/web" --grpc-port 0 --http-port 0 --device emu \
  >"$out/daemon.out" 2>"$out/daemon.log" &
daemon=$!
bench_pid=""
cleanup() {
  if [ -n "$bench_pid" ]; then kill "$bench_pid" 2>/dev/null || true; fi
  kill -TERM "$daemon" 2>/dev/null || true
  wait "$daemon" 2>/dev/null || true
}
trap cleanup EXIT
for _ in $(seq 600); do
  grep -q '^tesserad: listening' "$out/daemon.out" 2>/dev/null && break
  kill -0 "$daemon" 2>/dev/null || { echo "soak: tesserad exited; its log:" >&2; cat "$out/daemon.log" >&2; exit 1; }
  sleep 0.1
done
server=$(sed -n 's/^tesserad: listening grpc=\([^ ]*\) .*/\1/p' "$out/daemon.out")
[ -n "$server" ] || { echo "soak: tesserad did not start" >&2; exit 1; }

"$build/bin/tessera" bench --server "$server" --images "$images" --concurrency 16 --warmup 2 --duration 10 --json \
  >"$out/capacity.json"
rate=$(/usr/bin/python3 -c "import json,sys; print(round(json.load(open(sys.argv[1]))['throughput_ips'] * $load, 1))" \
  "$out/capacity.json")
seconds=$((minutes * 60))
echo "soak: capacity $(/usr/bin/python3 -c "import json,sys; print(round(json.load(open(sys.argv[1]))['throughput_ips']))" \
  "$out/capacity.json") images/s; ${minutes} min at $rate/s (load $load) against $server; results in $out/"

"$build/bin/tessera" bench --server "$server" --images "$images" --rate "$rate" --duration "$seconds" \
  --max-seconds "$((seconds + 60))" --max-outstanding 4096 --window 5 --csv "$out/windows.csv" --json >"$out/report.json" &
bench_pid=$!
echo "time_s,rss_kb" >"$out/rss.csv"
start=$(date +%s)
while kill -0 "$bench_pid" 2>/dev/null; do
  echo "$(($(date +%s) - start)),$(awk '/^VmRSS:/ {print $2}' "/proc/$daemon/status")" >>"$out/rss.csv"
  sleep 10
done
wait "$bench_pid" || echo "soak: tessera bench exited with status $?"
bench_pid=""

/usr/bin/python3 - "$out" "$seconds" <<'PY'
import csv, json, statistics, sys
out, seconds = sys.argv[1], int(sys.argv[2])
report = json.load(open(f"{out}/report.json"))
n = report["requests"]
# Lost: sent and not answered OK. Dropped: arrivals the client did not send because 4096 were in
# flight (the daemon fell far behind the offered load); reported, and a failure too.
lost = n["sent"] - n["ok"] + n["not_sent"]
warmup = max(30, seconds // 5)
rss = [(int(r["time_s"]), int(r["rss_kb"])) for r in csv.DictReader(open(f"{out}/rss.csv")) if r["rss_kb"]]
after = [kb for t, kb in rss if t >= warmup] or [kb for _, kb in rss]
growth = (after[-1] - after[0]) / after[0] if after and after[0] else 0.0
windows = [float(r["p99_ms"]) for r in csv.DictReader(open(f"{out}/windows.csv")) if float(r["time_s"]) > warmup]
# 5 s windows: the 2-minute run has 18 after its warm-up, so each third's median outlasts a
# 10-15 s stall of a shared machine (with 10 s windows, benchmarks run beside a clean-clone run
# moved it from 8.0 to 21.4 ms).
third = max(1, len(windows) // 3)
first, last = (statistics.median(windows[:third]), statistics.median(windows[-third:])) if windows else (0, 0)
summary = {"minutes": seconds / 60, "rate": report["config"]["rate"], "sent": n["sent"], "ok": n["ok"], "lost": lost,
           "dropped": n["dropped"],
           "errors": report["errors"], "p99_ms": report["latency_ms"]["p99"], "p99_first_third_ms": first,
           "p99_last_third_ms": last, "rss_kb_after_warmup": after[0] if after else 0,
           "rss_kb_end": after[-1] if after else 0, "rss_growth": round(growth, 4)}
json.dump(summary, open(f"{out}/summary.json", "w"), indent=1)
print("soak:", json.dumps(summary))
failures = []
if lost:
    failures.append(f"{lost} requests lost or failed ({report['errors']})")
if n["dropped"]:
    failures.append(f"{n['dropped']} arrivals dropped: the daemon fell behind {report['config']['rate']}/s")
if growth >= 0.05:
    failures.append(f"RSS grew {growth:.1%} after warm-up")
# A rise counts when p99 doubled and by more than 20 ms: a backlog or a leak's slow-down grows
# without bound, while a few ms either way is a shared 2-core machine's noise (3.7 -> 7.9 ms at
# 60% load while other tests ran beside it, 2026-11-27).
if first and last > max(2 * first, first + 20):
    failures.append(f"p99 rose from {first:.1f} to {last:.1f} ms")
for f in failures:
    print("soak: FAILED:", f)
print("soak: passed" if not failures else "soak: failed")
sys.exit(1 if failures else 0)
PY
