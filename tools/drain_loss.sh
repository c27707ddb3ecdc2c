#!/usr/bin/env bash
# SIGTERM under load (issue 24, item 5): runs DrainUnderLoad.SigtermLosesNoHttpOrGrpcRequest for
# --runs rounds (default 5), each a fresh tesserad with 8 HTTP keep-alive and 8 gRPC clients at
# full rate and a SIGTERM mid-load, and prints each round's figures and the sums: requests
# answered, refused cleanly (503 + Connection: close, UNAVAILABLE before admission, connection
# refused), lost (EOF/reset on a reused connection, CANCELLED, cut calls), and 503s that kept the
# connection open. Needs the build's integration_tests and the make_fmnist_images fixture's images.
#
#   tools/drain_loss.sh [--runs 5] [--build build]
set -euo pipefail
cd "$(dirname "$0")/.."

runs=5
build=build
while [ $# -gt 0 ]; do
  case "$1" in
    --runs) runs=$2; shift 2 ;;
    --build) build=$2; shift 2 ;;
    *) echo "usage: tools/drain_loss.sh [--runs N] [--build DIR]" >&2; exit 2 ;;
  esac
done

out=$(mktemp)
trap 'rm -f "$out"' EXIT
status=0
TESSERA_DRAIN_ROUNDS=$runs "$build/bin/integration_tests" \
  --gtest_filter=DrainUnderLoad.SigtermLosesNoHttpOrGrpcRequest >"$out" 2>&1 || status=$?
grep -E '^(round |  )' "$out" || true
awk '/^round / { ok += $3; refused += $8; lost += $11; noclose += $13; n++ }
     END { printf "%d rounds: %d answered, %d refused cleanly, %d lost, %d HTTP 503 without Connection: close\n",
                  n, ok, refused, lost, noclose }' "$out"
if [ "$status" -ne 0 ]; then
  echo "the test failed (exit $status); its output:" >&2
  tail -n 60 "$out" >&2
fi
exit "$status"
