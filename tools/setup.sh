#!/usr/bin/env bash
# Installs the Debian packages Tessera builds, runs and tests with. Idempotent: it asks apt only
# for what is missing, and runs `apt-get update` at most once per call.
set -euo pipefail

packages=(
  # toolchain
  g++ cmake ninja-build pkg-config
  # kernels/Makefile: `make print-config` in the one-hardware-spec test (test_hardware_spec.cc)
  make
  # the house rules' checkers (tests/style: tools/lint.sh)
  clang-format clang-tidy shellcheck
  # the sanitizer trees and the fuzz targets (tools/sanitize.sh, tools/fuzz.sh): clang, libFuzzer
  clang-14 libclang-rt-14-dev
  # libraries (all Debian 12 packages; nothing is vendored)
  libgrpc++-dev protobuf-compiler-grpc libprotobuf-dev protobuf-compiler
  libboost-dev libspdlog-dev libgtest-dev libgmock-dev
  libturbojpeg0-dev libspng-dev libcli11-dev nlohmann-json3-dev libtomlplusplus-dev
  libxrt-dev zlib1g-dev libssl-dev
  # oneDNN: the fp32 host path's conv and the benchmarks' int8 reference (cmake/find_onednn.cmake);
  # optional in the build: the cross builds (armhf has no libdnnl) go without it. Debian builds it
  # with the OpenCL GPU runtime, so its CMake config requires OpenCL's headers and libOpenCL.so
  # (find_package(OpenCL REQUIRED)), which libdnnl-dev does not depend on
  libdnnl-dev ocl-icd-opencl-dev
  # the /metrics registry and exposition (the daemon links only its core library)
  prometheus-cpp-dev
  # TLS certificates for the tests (the openssl CLI)
  openssl
  # the real Prometheus server and promtool, which check the /metrics exposition
  prometheus
  # deploy checks (tests/deploy): YAML of compose/k8s/rules, systemd-analyze verify of the unit
  python3-yaml systemd
  # reference models and data for tests (PyTorch, ONNX, OpenCV live under /usr/bin/python3)
  python3 python3-torch python3-torchvision python3-onnx python3-numpy python3-opencv python3-pil
  dataset-fashion-mnist
  # the browser the web UI's tests drive (tests/browser, through playwright-core from npm)
  chromium
  # gRPC from Python for the measuring scripts (tests/bench/hardening_memory.py)
  python3-grpcio
)
# Node.js and npm build the web UI's libraries (web/package-lock.json) and run the browser test.
# Debian's nodejs + npm serve; a machine that already has node and npm (e.g. NodeSource's nodejs,
# which carries npm) keeps them.
if ! command -v node >/dev/null || ! command -v npm >/dev/null; then packages+=(nodejs npm); fi

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "setup: all ${#packages[@]} packages present"
  exit 0
fi

echo "setup: installing ${missing[*]}"
sudo_cmd=()
if [ "$(id -u)" -ne 0 ]; then sudo_cmd=(sudo); fi
export DEBIAN_FRONTEND=noninteractive
"${sudo_cmd[@]}" apt-get update -q
"${sudo_cmd[@]}" apt-get install -y -q --no-install-recommends "${missing[@]}"
