#!/usr/bin/env bash
# Fresh machine -> tesserad serving the bundled model: installs, builds, starts the daemon.
set -euo pipefail
cd "$(dirname "$0")/.."
tools/setup.sh
tools/build.sh
echo
echo "tesserad: web UI   http://127.0.0.1:8080/"
echo "          gRPC     127.0.0.1:50051   (try: build/bin/tessera classify --server 127.0.0.1:50051 IMAGE)"
echo
exec build/bin/tesserad --models models --grpc-port 50051 --http-port 8080 --listen 127.0.0.1 "$@"
