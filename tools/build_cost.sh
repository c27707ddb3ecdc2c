#!/usr/bin/env bash
# What a build tree costs to compile, per target and per translation unit, in CPU seconds (user +
# sys of each compiler and linker process: unlike ninja's wall times, not inflated by other work
# sharing the cores). The figures in docs/testing.md's budget table come from it.
#
#   tools/build_cost.sh build BUILD_DIR [--resume] [cmake --build args...]
#       a cold build of an already configured tree: cleans it (not with --resume, which goes on
#       after a failed or stopped run), builds with this script as the compiler launcher (ccache
#       off), writes BUILD_DIR/build-cost.tsv, prints the report
#   tools/build_cost.sh report BUILD_DIR [N]
#       the report of an earlier run: CPU per target, the N heaviest units (default 25)
#
# As a launcher (CMAKE_<LANG>_COMPILER_LAUNCHER, set by `build`) it runs the compiler under
# /usr/bin/time and appends "cpu_seconds<TAB>max_rss_kb<TAB>output" to $TESSERA_BUILD_COST_LOG.
set -euo pipefail

if [ "${1:-}" != build ] && [ "${1:-}" != report ] && [ $# -gt 1 ]; then
  # Launcher: a tree measured once keeps this script as its launcher; without a log it only runs.
  [ -n "${TESSERA_BUILD_COST_LOG:-}" ] || exec "$@"
  out=unknown prev=
  for arg in "$@"; do
    [ "$prev" = -o ] && out=$arg
    prev=$arg
  done
  exec /usr/bin/time -a -o "$TESSERA_BUILD_COST_LOG" -f "%U %S %M $out" "$@"
fi

report() {
  local log=$1/build-cost.tsv heaviest=${2:-25}
  [ -f "$log" ] || { echo "build_cost: no $log (run: tools/build_cost.sh build $1)" >&2; exit 2; }
  # An output built twice (a --resume after a change) counts once, with its last run.
  awk -F'\t' -v heaviest="$heaviest" '
    { last[$3] = $1 }
    END {
      for (out in last) {
        target = out
        if (target ~ /CMakeFiles\//) { sub(/^.*CMakeFiles\//, "", target); sub(/\.dir\/.*$/, "", target) }
        else { target = "(links) " target }
        cpu[target] += last[out]; units[target]++; total += last[out]; n++
      }
      printf "%d compiler/linker runs, %.1f CPU-min\n", n, total / 60
      for (t in cpu) printf "%8.1f s %4d  %s\n", cpu[t], units[t], t | "sort -rn | head -40"
    }' "$log"
  echo "heaviest units:"
  sort -t$'\t' -k1,1 -rn "$log" | head -n "$heaviest" | awk -F'\t' '{ printf "%8.1f s %6.0f MB  %s\n", $1, $2 / 1024, $3 }'
}

case "${1:-}" in
  build)
    dir=${2:?usage: tools/build_cost.sh build BUILD_DIR [cmake --build args...]}
    shift 2
    [ -f "$dir/CMakeCache.txt" ] || { echo "build_cost: $dir is not a configured tree" >&2; exit 2; }
    self=$(realpath "$0")
    cmake "$dir" -DCMAKE_CXX_COMPILER_LAUNCHER="$self" -DCMAKE_C_COMPILER_LAUNCHER="$self" \
      -DCMAKE_CXX_LINKER_LAUNCHER="$self" >/dev/null
    raw=$(realpath "$dir")/build-cost.raw
    if [ "${1:-}" = --resume ]; then
      shift
    else
      cmake --build "$dir" --target clean >/dev/null
      rm -f "$raw"
    fi
    start=$SECONDS
    TESSERA_BUILD_COST_LOG=$raw CCACHE_DISABLE=1 cmake --build "$dir" --parallel "$(nproc)" "$@"
    echo "build_cost: $((SECONDS - start)) s wall"
    # time(1) writes one line per run: "user sys maxrss output"; CPU = user + sys.
    awk '{ printf "%.2f\t%d\t%s\n", $1 + $2, $3, $4 }' "$raw" >"$dir/build-cost.tsv"
    report "$dir"
    ;;
  report) report "${2:?usage: tools/build_cost.sh report BUILD_DIR [N]}" "${3:-}" ;;
  *)
    sed -n 2,14p "$0" >&2
    exit 2
    ;;
esac
