#!/usr/bin/env bash
# The house rules that a compiler does not check, run by CTest (label style) and by hand:
#   tools/lint.sh format [--fix]   every C++ file as .clang-format says (--fix rewrites them)
#   tools/lint.sh sizes            no source file over 600 lines (generated code is in build/),
#                                  no GoogleTest body over 80 lines
#   tools/lint.sh tidy BUILD_DIR   .clang-tidy's checks on every C++ source of the build, among
#                                  them no function over 80 lines (readability-function-size)
# Exits non-zero naming each offender.
set -euo pipefail
cd "$(dirname "$0")/.."

# The project's C++ files (sources and headers), never generated ones or npm's.
cxx_files() {
  find accel client kernels server tests -type f \( -name '*.cc' -o -name '*.cpp' -o -name '*.h' \) | sort
}

# Every file a person writes: C++, Python, shell, JavaScript, CMake, protobuf schemas.
source_files() {
  find accel client kernels server tests tools web proto cmake deploy docker -type f \
    \( -name '*.cc' -o -name '*.cpp' -o -name '*.h' -o -name '*.py' -o -name '*.sh' -o -name '*.js' \
    -o -name '*.mjs' -o -name '*.cmake' -o -name 'CMakeLists.txt' -o -name '*.proto' \) \
    -not -path '*/node_modules/*' | sort
}

check_format() {
  local mode=(--dry-run -Werror)
  if [ "${1:-}" = "--fix" ]; then mode=(-i); fi
  cxx_files | xargs clang-format "${mode[@]}"
  echo "format: $(cxx_files | wc -l) files as .clang-format says"
}

# The schemas of formats we read (caffe.proto, onnx.proto) are the formats' own and kept whole.
readonly kSizeExempt='^accel/import/(caffe/caffe|onnx/onnx)\.proto$'

check_sizes() {
  local over=0
  while read -r file; do
    [[ "$file" =~ $kSizeExempt ]] && continue
    local lines
    lines=$(wc -l <"$file")
    if [ "$lines" -gt 600 ]; then
      echo "sizes: $file has $lines lines (at most 600)"
      over=1
    fi
  done < <(source_files)
  [ "$over" -eq 0 ] && echo "sizes: $(source_files | wc -l) files, none over 600 lines"
  check_test_bodies || over=1
  return "$over"
}

# clang-tidy's readability-function-size does not see GoogleTest bodies (they come from a macro),
# so they are counted here the way it counts: closing-brace line minus opening-brace line.
check_test_bodies() {
  local long
  long=$(find tests -name '*.cc' -print0 | xargs -0 awk '
    /^(TEST|TEST_F|TEST_P)\(/ { start = FNR; name = $0 }
    start && /^}/ { if (FNR - start > 80) printf "%s:%d: %d lines: %s\n", FILENAME, start, FNR - start, name; start = 0 }')
  if [ -n "$long" ]; then
    echo "$long"
    echo "sizes: the tests above are over 80 lines"
    return 1
  fi
  echo "sizes: no test body over 80 lines"
}

check_tidy() {
  local build_dir=${1:?usage: tools/lint.sh tidy BUILD_DIR}
  local runner
  runner=$(command -v run-clang-tidy-14 || command -v run-clang-tidy || true)
  if [ -z "$runner" ]; then
    echo "tidy: run-clang-tidy not found (Debian package clang-tidy; tools/setup.sh installs it)" >&2
    return 1
  fi
  # Our sources only: the regex is matched against compile_commands.json's file names.
  "$runner" -quiet -p "$build_dir" -j "$(nproc)" \
    "$PWD/(accel|client|kernels|server|tests)/.*\.(cc|cpp)$" >"$build_dir/clang-tidy.log" 2>&1 || true
  if grep -E 'warning:|error:' "$build_dir/clang-tidy.log"; then
    echo "tidy: the findings above (whole log: $build_dir/clang-tidy.log)"
    return 1
  fi
  echo "tidy: clean ($(grep -c '"file"' "$build_dir/compile_commands.json") translation units in the build)"
}

case "${1:-}" in
  format) check_format "${2:-}" ;;
  sizes) check_sizes ;;
  tidy) check_tidy "${2:-}" ;;
  *)
    echo "usage: tools/lint.sh format [--fix] | sizes | tidy BUILD_DIR" >&2
    exit 2
    ;;
esac
