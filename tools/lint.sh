#!/usr/bin/env bash
# The house rules that a compiler does not check, run by CTest (label style) and by hand:
#   tools/lint.sh format [--fix]   every C++ file as .clang-format says (--fix rewrites them)
#   tools/lint.sh sizes            no source file over 600 lines (generated code is in build/),
#                                  no GoogleTest body over 80 lines
#   tools/lint.sh tidy BUILD_DIR   .clang-tidy's checks on every C++ source of the build, among
#                                  them no function over 80 lines (readability-function-size);
#                                  with --changed, only on the units that include a file changed
#                                  since tests/style/tidy-clean-at (update it after a clean full run,
#                                  or to a commit whose CI run passed: docs/testing.md)
#   tools/lint.sh shell            shellcheck (warnings and errors) on every shell script
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

# Every shell script: the *.sh files and CI's entry point (.ci/run).
shell_files() {
  {
    find tools tests deploy docker -type f -name '*.sh' -not -path '*/node_modules/*'
    echo .ci/run
  } | sort -u
}

check_shell() {
  local files
  mapfile -t files < <(shell_files)
  shellcheck -S warning "${files[@]}"
  echo "shell: ${#files[@]} scripts, no shellcheck warning"
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

# A commit whose full `tools/lint.sh tidy BUILD_DIR` findings all lie in files changed since (in
# practice: the commit of the last clean full run), so a clean --changed run means a clean tree.
readonly kTidyCleanAt=tests/style/tidy-clean-at

# Sources (absolute paths) of the translation units that include any of the files given
# (relative to the project root), read from the dependencies ninja recorded in the last build.
# Staged headers (BUILD_DIR/layers/<lib>/...) are symlinks: they count as the files they name.
units_including() {
  local build_dir=$1
  shift
  local abs_build
  abs_build=$(cd "$build_dir" && pwd)
  (cd "$build_dir" && find layers -type l -printf '%p\t%l\n') >"$build_dir/tidy-links.tsv"
  printf '%s\n' "$@" | sed "s|^|$PWD/|" >"$build_dir/tidy-changed.txt"
  ninja -C "$build_dir" -t deps | awk -v bdir="$abs_build" -v links="$build_dir/tidy-links.tsv" \
    -v changed="$build_dir/tidy-changed.txt" '
    function normal(path) {
      if (path in link) path = link[path]
      if (path !~ /^\//) path = bdir "/" path
      while (sub(/\/[^\/]+\/\.\.\//, "/", path)) {}
      return path
    }
    BEGIN {
      FS = "\t"
      while ((getline line < links) > 0) { split(line, f, "\t"); link[f[1]] = f[2] }
      while ((getline line < changed) > 0) hit[line] = 1
      FS = " "
    }
    /^[^ ]/ { source = ""; next }
    {
      dep = normal($1)
      if (source == "") source = dep
      if (dep in hit && !(source in done)) {
        done[source] = 1
        # A unity unit (Unity/unity_unit_N_cxx.cxx of a unity build, cmake/tessera_unity.cmake) stands for the sources it includes.
        if (source ~ /\/Unity\/unity_[A-Za-z0-9_]+_cxx\.cxx$/) {
          while ((getline line < source) > 0) if (line ~ /^#include "/) { gsub(/^#include "|"$/, "", line); print line }
          close(source)
        } else print source
      }
    }'
}

check_tidy() {
  local build_dir=${1:?usage: tools/lint.sh tidy BUILD_DIR [--changed]}
  local runner
  runner=$(command -v run-clang-tidy-14 || command -v run-clang-tidy || true)
  if [ -z "$runner" ]; then
    echo "tidy: run-clang-tidy not found (Debian package clang-tidy; tools/setup.sh installs it)" >&2
    return 1
  fi
  # Our sources only: the regex is matched against compile_commands.json's file names.
  local units="$PWD/(accel|client|kernels|server|tests)/.*\.(cc|cpp)$"
  if [ "${2:-}" = "--changed" ]; then
    # Only the units that include a file changed since the last clean full run: the full run
    # costs ~33 CPU-minutes here (~17 min on CI's 2 cores), this one seconds to minutes.
    local since changed
    since=$(cat "$kTidyCleanAt")
    if ! git cat-file -e "$since^{commit}" 2>/dev/null; then
      echo "tidy: $kTidyCleanAt names $since, not in this clone's history (shallow?): checking every unit"
      check_tidy "$build_dir"
      return
    fi
    if ! git diff --quiet "$since" -- .clang-tidy; then
      echo "tidy: .clang-tidy changed since $since: checking every unit"
      check_tidy "$build_dir"
      return
    fi
    mapfile -t changed < <(git diff --name-only "$since" -- accel client kernels server tests)
    mapfile -t changed < <(printf '%s\n' "${changed[@]}" | grep -v '^$' | while read -r f; do [ -f "$f" ] && echo "$f"; done)
    if [ "${#changed[@]}" -eq 0 ]; then
      echo "tidy: no C++ file changed since $since ($kTidyCleanAt)"
      return 0
    fi
    mapfile -t picked < <(units_including "$build_dir" "${changed[@]}" | grep -E "$units" || true)
    echo "tidy: ${#changed[@]} files changed since $since; ${#picked[@]} translation units include them"
    [ "${#picked[@]}" -eq 0 ] && return 0
    units=$(printf '%s\n' "${picked[@]}" | sed 's/[.+]/\\&/g' | paste -sd'|')
    units="^($units)$"
  fi
  # clang-tidy is clang and cannot read GCC's precompiled headers (cmake/tessera_pch.cmake): it
  # reads a copy of the compile database without them, so every unit parses its own includes,
  # which also checks that each includes what it uses (the build's -include hides a missing one).
  # A unity build's unit (CMake's Unity/unity_unit_N_cxx.cxx) becomes one entry per source it includes.
  mkdir -p "$build_dir/tidy-db"
  /usr/bin/python3 - "$build_dir" <<'PY'
import json, re, sys
build = sys.argv[1]
entries = []
for e in json.load(open(f"{build}/compile_commands.json")):
    e["command"] = re.sub(r" -Winvalid-pch -include \S*/cmake_pch\.hxx", "", e["command"])
    if re.search(r"/Unity/unity_\w+_cxx\.cxx$", e["file"]):
        for source in re.findall(r'^#include "(.+)"$', open(e["file"]).read(), re.M):
            entries.append(dict(e, file=source, command=e["command"].replace(e["file"], source)))
    else:
        entries.append(e)
json.dump(entries, open(f"{build}/tidy-db/compile_commands.json", "w"), indent=1)
PY
  "$runner" -quiet -p "$build_dir/tidy-db" -j "$(nproc)" "$units" >"$build_dir/clang-tidy.log" 2>&1 || true
  if grep -E 'warning:|error:' "$build_dir/clang-tidy.log"; then
    echo "tidy: the findings above (whole log: $build_dir/clang-tidy.log)"
    return 1
  fi
  echo "tidy: clean ($(grep -c '^clang-tidy' "$build_dir/clang-tidy.log") translation units checked)"
}

case "${1:-}" in
  format) check_format "${2:-}" ;;
  sizes) check_sizes ;;
  tidy) check_tidy "${2:-}" "${3:-}" ;;
  shell) check_shell ;;
  *)
    echo "usage: tools/lint.sh format [--fix] | sizes | shell | tidy BUILD_DIR [--changed]" >&2
    exit 2
    ;;
esac
