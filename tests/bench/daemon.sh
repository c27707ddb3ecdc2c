# shellcheck shell=bash disable=SC2154,SC2034  # $build, $work in; $address out
# Sourced by the bench scripts (tests/bench/run_*_bench.sh): a tesserad on free loopback ports.
# Needs $build (the build tree) and $work (a scratch directory); the caller's cleanup stops every
# pid in $daemon_pids.
daemon_pids=()

# start_daemon NAME ARGS...: starts tesserad (ARGS after the loopback and bundled-model options),
# waits at most 60 s for its startup line and sets $address to its gRPC HOST:PORT. Its stdout and
# log are $work/NAME.out and $work/NAME.log.
start_daemon() {
  local name=$1
  shift
  "$build/bin/tesserad" --listen 127.0.0.1 --grpc-port 0 --http-port 0 --models models "$@" \
    >"$work/$name.out" 2>"$work/$name.log" &
  daemon_pids+=($!)
  local line=""
  for _ in $(seq 600); do
    line=$(grep -m1 '^tesserad: listening' "$work/$name.out" || true)
    [ -n "$line" ] && break
    kill -0 "${daemon_pids[-1]}" 2>/dev/null || { echo "tesserad ($name) exited:" >&2; cat "$work/$name.log" >&2; exit 1; }
    sleep 0.1
  done
  [ -n "$line" ] || { echo "tesserad ($name) did not start in 60 s" >&2; exit 1; }
  address=$(sed -E 's/.*grpc=([^ ]+).*/\1/' <<<"$line")
}

# stop_daemon: stops the daemon started last.
stop_daemon() {
  kill "${daemon_pids[-1]}" 2>/dev/null || true
  wait "${daemon_pids[-1]}" 2>/dev/null || true
  unset 'daemon_pids[-1]'
}

# stop_daemons: stops all (the scripts' EXIT trap).
stop_daemons() {
  local pid
  for pid in "${daemon_pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  for pid in "${daemon_pids[@]}"; do wait "$pid" 2>/dev/null || true; done
  daemon_pids=()
}
