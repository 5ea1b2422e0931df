#!/usr/bin/env bash
# README command (2): install dependencies, build, run every test with ctest,
# then fuzz. CI (.ci/run) runs exactly this. Warnings are errors here.
#
# Usage: deploy/test.sh [--quick]
#   --quick  the edit-test loop: build what changed, then only the unit tests
#            and the static checks (ctest labels unit and static: no daemons,
#            no fuzzing, no dependency install); docs/development.md.
#
# Environment: MORPHEUS_CCACHE=0 builds without the compiler cache (below);
# FUZZ_SECONDS (default 30) is each fuzz target's time.
#
# Where the time goes (docs/development.md "CI time"): the build, then ctest
# with the demo test (DemoIT, about 6 minutes of mostly waiting) in a slot of
# its own beside two others, while the fuzz targets build at the lowest CPU
# priority in the cycles the tests leave idle; then fuzzing.
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

# The compiler cache: ccache (installed by install-deps.sh) in its default
# place (~/.cache/ccache), so a machine that keeps its home between runs
# rebuilds only what changed, from any checkout directory: paths are hashed
# relative to the checkout (CCACHE_BASEDIR), the working directory is not
# (CCACHE_NOHASHDIR), and no compile flag carries a checkout path
# (tests/support/test_paths.h). A cold cache costs nothing but its disk.
# fuzz.sh uses ccache too whenever it is installed.
if [ "${MORPHEUS_CCACHE:-1}" != 0 ] && command -v ccache >/dev/null 2>&1; then
  build_flags+=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache)
  export CCACHE_BASEDIR=$PWD CCACHE_NOHASHDIR=1
  mkdir -p build-test
  export CCACHE_STATSLOG=$PWD/build-test/ccache-stats.log
  rm -f "$CCACHE_STATSLOG"
else
  build_flags+=(-DCMAKE_CXX_COMPILER_LAUNCHER= -DCMAKE_C_COMPILER_LAUNCHER=)
fi

start=$(date +%s)
./deploy/build.sh build-test RelWithDebInfo "${build_flags[@]}"
built=$(date +%s)
if [ -n "${CCACHE_STATSLOG:-}" ] && [ -f "$CCACHE_STATSLOG" ]; then
  # The first Hits and Misses lines are this build's calls (the next two are
  # the storage's).
  hits=$(ccache --show-log-stats -v 2>/dev/null | grep -m 2 -E '^ *(Hits|Misses):' | tr -s ' ' | tr '\n' ' ')
  echo "test.sh: compiler cache: ${hits:-no statistics}"
fi

# The fuzz build in the background at nice 19: it takes only the cycles the
# tests leave idle (the integration tests mostly wait on daemons), so it costs
# the tests nothing but a loaded machine, which they must stand anyway.
# It runs in a session of its own so that it and its compilers stop with this
# script, whatever ends it.
fuzz_build_log=$PWD/build-test/fuzz-build.log
rm -f "$fuzz_build_log.rc"
setsid bash -c 'FUZZ_BUILD_ONLY=1 nice -n 19 ./deploy/fuzz.sh >"$1" 2>&1; echo $? >"$1.rc"' \
  fuzz-build "$fuzz_build_log" &
fuzz_build=$!
trap 'kill -- -"$fuzz_build" 2>/dev/null || true' EXIT

cd build-test
# Three slots on two cores: DemoIT (COST in tests/integration/CMakeLists.txt
# starts it first) spends its six minutes mostly waiting on its periods, so it
# holds a slot without holding a core.
set +e
ctest --output-on-failure -j 3 --timeout 600
ctest_rc=$?
set -e
tested=$(date +%s)
cd ..

if [ "$ctest_rc" != 0 ]; then
  echo "test.sh: ctest failed (exit $ctest_rc)" >&2
  exit "$ctest_rc"  # the EXIT trap stops the fuzz build
fi
wait "$fuzz_build" || true
trap - EXIT
if [ "$(cat "$fuzz_build_log.rc" 2>/dev/null || echo 1)" != 0 ]; then
  cat "$fuzz_build_log" >&2
  echo "test.sh: the fuzz build failed" >&2
  exit 2
fi
fuzz_built=$(date +%s)
# Fuzzing: each libFuzzer target for a bounded time (FUZZ_SECONDS, default
# 30 s) from the seed corpus, as many at once as there are cores (six targets:
# about 90 s on 2 cores); any crash fails the run.
./deploy/fuzz.sh "${FUZZ_SECONDS:-30}"
fuzzed=$(date +%s)
echo "test.sh: build $((built - start)) s, ctest $((tested - built)) s (fuzz build beside it," \
  "then $((fuzz_built - tested)) s more), fuzz $((fuzzed - fuzz_built)) s; total $((fuzzed - start)) s"
