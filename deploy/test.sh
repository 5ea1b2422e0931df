#!/usr/bin/env bash
# README command (2): install dependencies, build, run every test with ctest.
# CI (.ci/run) runs exactly this. Warnings are errors here.
set -euo pipefail
cd "$(dirname "$0")/.."
./deploy/install-deps.sh
./deploy/build.sh build-test RelWithDebInfo -DMORPHEUS_WERROR=ON
cd build-test
ctest --output-on-failure -j 2 --timeout 600
cd ..
# Fuzzing: each libFuzzer target for a bounded time (FUZZ_SECONDS,
# default 30 s; six targets) from the seed corpus; any crash fails the run.
./deploy/fuzz.sh "${FUZZ_SECONDS:-30}"
