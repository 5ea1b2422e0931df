#!/usr/bin/env bash
# Configures and builds Morpheus. Usage: deploy/build.sh BUILD_DIR BUILD_TYPE [cmake args...]
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${1:-build-release}
type=${2:-Release}
shift 2 || true
cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE="$type" "$@" >/dev/null
cmake --build "$dir" -j "$(nproc)"
