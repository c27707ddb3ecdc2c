#!/usr/bin/env bash
# Builds the libFuzzer targets of tests/fuzz in the ASan + UBSan tree (build-asan/, configured by
# tools/sanitize.sh asan: clang-14, -DTESSERA_FUZZ=ON, coverage on the parsing layers), writes
# their seed corpora (tools/make_fuzz_corpus.py) and runs each target for --time seconds (default
# 10), one after the other under `nice`. Prints per target the executions, CPU time and whether it
# crashed; crash inputs land in build-asan/fuzz-crashes/<target>/, new inputs in
# build-asan/fuzz-corpus/<target>/ (shared with the smoke runs, `ctest -L fuzz` in that tree).
# Exits non-zero when any target crashed (or a sanitizer reported).
#
#   tools/fuzz.sh [--time SECONDS] [--build-only | --no-build] [TARGET...]   (default: every target)
#
# --no-build runs the targets as they are built (while another build runs in the same tree).
# TESSERA_FUZZ_NICE: the targets' niceness (default 10, polite to the machine; 0 for a CPU-hour run
# beside other work).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
seconds=10
build_only=0
no_build=0
targets=()
while [ $# -gt 0 ]; do
  case "$1" in
    --time) seconds=$2; shift 2 ;;
    --time=*) seconds=${1#--time=}; shift ;;
    --build-only) build_only=1; shift ;;
    --no-build) no_build=1; shift ;;
    -h|--help) sed -n 2,14p "$0"; exit 0 ;;
    *) targets+=("$1"); shift ;;
  esac
done
all_targets=(fuzz_image_decode fuzz_multipart fuzz_url_query fuzz_http_routes fuzz_kserve_json fuzz_kserve_proto
             fuzz_onnx_import fuzz_caffe_import fuzz_model_toml fuzz_daemon_config fuzz_emu_program fuzz_fleet_rows)
if [ ${#targets[@]} -eq 0 ]; then targets=("${all_targets[@]}"); fi

build=${TESSERA_ASAN_BUILD_DIR:-$root/build-asan}
if [ "$no_build" -eq 0 ]; then
  tools/sanitize.sh asan --configure-only
  cmake --build "$build" --parallel "${TESSERA_SANITIZE_JOBS:-$(nproc)}" --target "${targets[@]}"
fi
[ "$build_only" -eq 1 ] && exit 0

/usr/bin/python3 tools/make_fuzz_corpus.py "$build/fuzz-seeds"

failed=0
for t in "${targets[@]}"; do
  corpus=$build/fuzz-corpus/$t
  crashes=$build/fuzz-crashes/$t
  mkdir -p "$corpus" "$crashes"
  dict=()
  [ -f "tests/fuzz/dict/$t.dict" ] && dict=(-dict="$root/tests/fuzz/dict/$t.dict")
  log=$build/fuzz-logs/$t.log
  mkdir -p "$(dirname "$log")"
  start=$(date +%s)
  status=0
  # The committed seeds (tests/fuzz/corpus/<target>: also every crash input fixed so far) and the
  # generated ones are read; new inputs go to the first folder only.
  seeds=("$build/fuzz-seeds/$t")
  [ -d "tests/fuzz/corpus/$t" ] && seeds+=("$root/tests/fuzz/corpus/$t")
  TIMEFORMAT='%U %S'
  { time (cd "$crashes" && nice -n "${TESSERA_FUZZ_NICE:-10}" "$build/bin/$t" -max_total_time="$seconds" -timeout=25 -rss_limit_mb=4096 \
     -print_final_stats=1 -artifact_prefix="$crashes/" "${dict[@]}" "$corpus" "${seeds[@]}" >"$log" 2>&1); } \
    2>"$log.cpu" || status=$?
  cpu=$(awk '{printf "%.1f", $1 + $2}' "$log.cpu")
  wall=$(( $(date +%s) - start ))
  execs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' || echo "?")
  if [ "$status" -ne 0 ]; then
    failed=1
    echo "$t: CRASH after ${execs} execs (${wall} s, ${cpu} s CPU); $(ls "$crashes" | head -3 | tr '\n' ' ') log: $log"
    grep -m3 -E 'ERROR: (AddressSanitizer|libFuzzer|UndefinedBehavior)|runtime error' "$log" | sed 's/^/    /' || true
  else
    echo "$t: ${execs} execs in ${wall} s (${cpu} s CPU), no crash (corpus $(ls "$corpus" | wc -l) files)"
  fi
done
exit "$failed"
