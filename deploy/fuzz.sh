#!/usr/bin/env bash
# Builds the libFuzzer targets (tests/fuzz, clang + ASan/UBSan) in build-fuzz
# and runs each for a bounded time, starting from the seed corpus in
# tests/fuzz/corpus/<target>/ (never modified: new inputs go to
# build-fuzz/corpus/<target>/).
#
# Usage: deploy/fuzz.sh [SECONDS_PER_TARGET] [TARGET...]
#   SECONDS_PER_TARGET  default 60 (or $FUZZ_SECONDS)
#   TARGET              default all: yarn_json config history_native
#                       history_jsonl dag_yaml rm_grpc
# Dictionaries: tests/fuzz/dict/<target>.dict when present.
# Environment: FUZZ_TIMEOUT (s per input, default 10), FUZZ_RSS_MB (default
# 2048), FUZZ_MAX_LEN (bytes per input, default 8192), FUZZ_BUILD_DIR
# (default build-fuzz), FUZZ_JOBS (ninja -j, default 2), FUZZ_PARALLEL
# (targets fuzzed at once, default the number of cores: the time per target
# stays SECONDS_PER_TARGET, the whole run takes about
# ceil(targets / FUZZ_PARALLEL) x SECONDS_PER_TARGET), FUZZ_BUILD_ONLY=1
# (build the targets and stop: deploy/test.sh builds them while the tests
# run, then fuzzes).
#
# Prints per target: execs, exec/s, final coverage (cov, ft), corpus size and
# crashes; ends with one JSON line of the figures. Exits 1 when any target
# crashed, leaked, timed out or ran out of memory (printing the reproducer:
# rerun it with build-fuzz/bin/fuzz_<target> <file>), 2 on a build failure.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)

seconds=${1:-${FUZZ_SECONDS:-60}}
shift || true
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
  targets=(yarn_json config history_native history_jsonl dag_yaml rm_grpc)
fi
timeout_s=${FUZZ_TIMEOUT:-10}
rss_mb=${FUZZ_RSS_MB:-2048}
max_len=${FUZZ_MAX_LEN:-8192}
dir=${FUZZ_BUILD_DIR:-build-fuzz}
jobs=${FUZZ_JOBS:-2}
parallel=${FUZZ_PARALLEL:-$(nproc)}

clangxx=$(command -v clang++-14 || command -v clang++ || true)
clangc=$(command -v clang-14 || command -v clang || true)
if [ -z "$clangxx" ] || [ -z "$clangc" ]; then
  echo "fuzz: clang not found (deploy/install-deps.sh installs clang-14)" >&2
  exit 2
fi
launcher=()
if command -v ccache >/dev/null 2>&1; then
  launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache)
fi

build_start=$(date +%s)
# -O1 and line tables only: libFuzzer's recommended trade-off (fast enough,
# symbolised stacks) and a quicker build than RelWithDebInfo's -O2 -g.
cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_C_COMPILER="$clangc" -DCMAKE_CXX_COMPILER="$clangxx" "${launcher[@]}" \
  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -gline-tables-only" \
  -DCMAKE_C_FLAGS_RELWITHDEBINFO="-O1 -gline-tables-only" \
  -DMORPHEUS_FUZZ=ON -DMORPHEUS_BUILD_TESTS=OFF -DMORPHEUS_BUILD_BENCH=OFF \
  -DMORPHEUS_WERROR=ON >/dev/null || exit 2
ninja_targets=()
for t in "${targets[@]}"; do ninja_targets+=("fuzz_$t"); done
# This is the CI's clang build: it also compiles the daemons' libraries the
# fuzz targets do not link, so clang's lock checks (-Werror=thread-safety,
# common/thread_annotations.h) cover every component.
ninja_targets+=(morpheus_nm morpheus_inference_core morpheus_cli morpheus_provenance_store
  morpheus_state_store morpheus_rm_services morpheus_rm_ha morpheus_rm_web_ui)
if ! ninja -C "$dir" -j "$jobs" "${ninja_targets[@]}" >"$dir/fuzz-build.log" 2>&1; then
  tail -n 40 "$dir/fuzz-build.log" >&2
  echo "fuzz: build failed (log: $dir/fuzz-build.log)" >&2
  exit 2
fi
build_seconds=$(($(date +%s) - build_start))
if [ "${FUZZ_BUILD_ONLY:-0}" = 1 ]; then
  echo "fuzz: built ${#targets[@]} target(s) in ${build_seconds}s (FUZZ_BUILD_ONLY: not fuzzing)"
  exit 0
fi
echo "fuzz: built ${#targets[@]} target(s) in ${build_seconds}s; ${seconds}s each, $parallel at once"

export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1:symbolize=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}

# field NAME LOG: the last "NAME: value" of libFuzzer's status lines.
# Both print nothing when the value is missing (e.g. a crash before the first
# status line).
field() { { grep -oE "$1: [0-9]+" "$2" || true; } | tail -n 1 | awk '{print $2}'; }
# final_stat NAME LOG: a -print_final_stats value.
final_stat() { { grep -E "^stat::$1:" "$2" || true; } | tail -n 1 | awk '{print $2}'; }

# run_target T: fuzzes T for the time given; its output goes to its log and
# its exit code to $dir/fuzz-T.rc.
run_target() {
  local t=$1 bin=$dir/bin/fuzz_$1 seeds=$root/tests/fuzz/corpus/$1 work=$dir/corpus/$1
  local artifacts=$dir/artifacts/$1 dict=() rc
  mkdir -p "$work" "$artifacts"
  rm -f "$artifacts"/*
  [ -f "$root/tests/fuzz/dict/$t.dict" ] && dict=(-dict="$root/tests/fuzz/dict/$t.dict")
  set +e
  "$bin" "$work" "$seeds" "${dict[@]}" -max_total_time="$seconds" -timeout="$timeout_s" \
    -rss_limit_mb="$rss_mb" -max_len="$max_len" -print_final_stats=1 \
    -artifact_prefix="$artifacts/" >"$dir/fuzz-$t.log" 2>&1
  rc=$?
  set -e
  echo "$rc" >"$dir/fuzz-$t.rc"
}

# At most $parallel targets at once; each keeps its own time budget.
running=()
for t in "${targets[@]}"; do
  if [ "${#running[@]}" -ge "$parallel" ]; then
    wait "${running[0]}"
    running=("${running[@]:1}")
  fi
  run_target "$t" &
  running+=($!)
done
wait

failed=0
json_targets=()
printf '%-15s %10s %8s %7s %7s %7s %8s  %s\n' target execs exec/s cov ft corpus crashes status
for t in "${targets[@]}"; do
  bin=$dir/bin/fuzz_$t
  work=$dir/corpus/$t
  artifacts=$dir/artifacts/$t
  log=$dir/fuzz-$t.log
  rc=$(cat "$dir/fuzz-$t.rc" 2>/dev/null || echo 1)
  execs=$(final_stat number_of_executed_units "$log")
  eps=$(final_stat average_exec_per_sec "$log")
  cov=$(field cov "$log")
  ft=$(field ft "$log")
  corpus=$(find "$work" -type f | wc -l)
  mapfile -t found < <(find "$artifacts" -type f | sort)
  crashes=${#found[@]}
  status=ok
  if [ "$rc" -ne 0 ] || [ "$crashes" -gt 0 ]; then
    status=failed
    failed=$((failed + 1))
    [ "$crashes" -eq 0 ] && crashes=1
  fi
  printf '%-15s %10s %8s %7s %7s %7s %8s  %s\n' "$t" "${execs:-0}" "${eps:-0}" "${cov:-0}" \
    "${ft:-0}" "$corpus" "$crashes" "$status"
  if [ "$status" != ok ]; then
    echo "fuzz: $t failed (exit $rc); log: $log" >&2
    grep -E "^==[0-9]+==ERROR|^SUMMARY|fuzz property failed|runtime error|ALARM|out-of-memory" \
      "$log" | head -n 5 >&2 || true
    for f in "${found[@]}"; do
      echo "fuzz: reproducer: $f  (rerun: $bin $f)" >&2
    done
  fi
  json_targets+=("{\"target\":\"$t\",\"execs\":${execs:-0},\"exec_per_sec\":${eps:-0},\"cov\":${cov:-0},\"ft\":${ft:-0},\"corpus\":$corpus,\"crashes\":$crashes,\"status\":\"$status\"}")
done

joined=$(IFS=,; echo "${json_targets[*]}")
echo "{\"fuzz\":{\"seconds_per_target\":$seconds,\"build_seconds\":$build_seconds,\"failed\":$failed,\"targets\":[$joined]}}"
[ "$failed" -eq 0 ]
