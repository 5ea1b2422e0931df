#!/usr/bin/env bash
# README command (2): install dependencies, build, run every test with ctest.
# CI (.ci/run) runs exactly this. Warnings are errors here.
#
# Usage: deploy/test.sh [--quick]
#   --quick  the edit-test loop: build what changed, then only the unit tests
#            and the static checks (ctest labels unit and static: no daemons,
#            no fuzzing, no dependency install); docs/development.md.
set -euo pipefail
cd "$(dirname "$0")/.."
quick=0
for a in "$@"; do
  case "$a" in
    --quick) quick=1 ;;
    *) echo "usage: $0 [--quick]" >&2; exit 2 ;;
  esac
done
# -g1: line tables and function names (backtraces, sanitizer reports), no
# variable info: a quarter to two fifths less compile time than -g and a much
# smaller link (docs/development.md).
build_flags=(-DMORPHEUS_WERROR=ON -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O2 -g1 -DNDEBUG"
             -DCMAKE_C_FLAGS_RELWITHDEBINFO="-O2 -g1 -DNDEBUG")
if [ "$quick" = 1 ]; then
  ./deploy/build.sh build-test RelWithDebInfo "${build_flags[@]}"
  cd build-test
  exec ctest --output-on-failure -j "$(nproc)" --timeout 600 -L 'unit|static'
fi
./deploy/install-deps.sh
start=$(date +%s)
./deploy/build.sh build-test RelWithDebInfo "${build_flags[@]}"
built=$(date +%s)
cd build-test
ctest --output-on-failure -j 2 --timeout 600
tested=$(date +%s)
cd ..
# Fuzzing: each libFuzzer target for a bounded time (FUZZ_SECONDS, default
# 30 s) from the seed corpus, as many at once as there are cores (six targets:
# about 90 s on 2 cores after the fuzz build); any crash fails the run.
./deploy/fuzz.sh "${FUZZ_SECONDS:-30}"
fuzzed=$(date +%s)
echo "test.sh: build $((built - start)) s, ctest $((tested - built)) s, fuzz $((fuzzed - tested)) s"
