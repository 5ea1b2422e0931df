#!/usr/bin/env bash
# calibrate.sh: the harvesting simulator's CPU-throttle model
# (sim::throttleSpeed, sim/harvest/harvest_sim.h) against a real morpheus-nm.
#
# Starts, on loopback, a morpheus-rm, an NM for the AM (no primary tenant)
# and an NM sharing its 2 vcores with a synthetic primary tenant whose agent
# writes its usage to a file (nm.harvest.source: file, reserve 0,
# cpu-kill-after 1 h, so nothing is killed). The NM has 200 MiB: the 100 MiB
# task fits beside the primary's 50, the AM (256 MiB) never does, so the task
# is the NM's only secondary container and gets all the CPU left. For each primary load L it runs
# one CPU-bound task there (a fixed loop, python3): the task starts while the
# primary is idle, the load is raised to L, the NM throttles the container
# through the cgroup cpu controller it finds (v2 cpu.max or v1
# cpu.cfs_quota_us), then the loop runs and reports its wall and CPU time.
# The model's run time is W / throttleSpeed(2 - L, 1), W the loop's CPU
# time (median over the load-0 runs). On a shared machine no process gets a
# whole core: the load-0 runs measure the share s0 = CPU time / wall time the
# machine gives the task anyway, and the second model column is
# W / min(throttleSpeed, s0) (a cap above s0 cannot slow the task further).
# The table prints both models, the measured time, the error of the second,
# the quota the NM wrote (cpu.cfs_quota_us or cpu.max) and the kernel's
# nr_throttled as evidence the cgroup throttled. Ends with one JSON line.
#
# Usage: bench/harvest/calibrate.sh [--loads "0 1.5 1.7 1.8 1.9"] [--repeats 2]
#            [--iterations 20000000] [--bin build/bin] [--burn] [--interval 1s]
#   --interval: the NM's nm.harvest.interval (default 1s, the NM's default).
#   --burn: the synthetic primary also burns L cores (L busy loops, each
#           running that share of every 100 ms), so the task competes with
#           a real primary as well as being capped.
# Needs root for the cgroups (without them the NM only kills: the script says
# so and stops). Leaves nothing running; its files are under $TMPDIR.
set -euo pipefail
shopt -s inherit_errexit
cd "$(dirname "$0")/../.."
BIN=build/bin
LOADS="0 1.5 1.7 1.8 1.9"
REPEATS=2
ITER=20000000
BURN=0
INTERVAL=1s
while [ $# -gt 0 ]; do
  case "$1" in
    --loads) LOADS=$2; shift 2 ;;
    --repeats) REPEATS=$2; shift 2 ;;
    --iterations) ITER=$2; shift 2 ;;
    --bin) BIN=$2; shift 2 ;;
    --burn) BURN=1; shift ;;
    --interval) INTERVAL=$2; shift 2 ;;
    -h | --help) sed -n '2,/^set -euo/{/^#/s/^# \{0,1\}//p}' "$0"; exit 0 ;;
    *) echo "calibrate.sh: unknown option '$1' (see --help)" >&2; exit 2 ;;
  esac
done
for b in morpheus-rm morpheus-nm morpheusctl morpheus-dag-am; do
  [ -x "$BIN/$b" ] || { echo "calibrate.sh: --bin: no $BIN/$b (build it first)" >&2; exit 2; }
done
command -v python3 >/dev/null || { echo "calibrate.sh: python3 is needed for the task" >&2; exit 2; }
if [ "$(id -u)" != 0 ]; then
  echo "calibrate.sh: not root: the NM cannot create the cgroups it throttles containers in" >&2
  exit 3
fi
if [ ! -w /sys/fs/cgroup/cpu/cpu.cfs_quota_us ] && ! grep -qw cpu /sys/fs/cgroup/cgroup.controllers 2>/dev/null; then
  echo "calibrate.sh: no cgroup cpu controller (v1 /sys/fs/cgroup/cpu or v2 cgroup.controllers)" >&2
  exit 3
fi
BIN=$(cd "$BIN" && pwd)
DIR=$(mktemp -d "${TMPDIR:-/tmp}/harvest-calibrate.XXXXXX")
chmod 755 "$DIR"
PIDS=()
cleanup() {
  for p in "${BURNERS[@]:-}"; do [ -n "$p" ] && kill "$p" 2>/dev/null || true; done
  # A task still running (containers outlive a stopped NM by design).
  for f in "$DIR"/out/*.ready; do
    [ -s "$f" ] && kill "$(cat "$f")" 2>/dev/null || true
  done
  for ((i = ${#PIDS[@]} - 1; i >= 0; i--)); do kill -TERM "${PIDS[$i]}" 2>/dev/null || true; done
  for p in "${PIDS[@]:-}"; do
    for _ in $(seq 1 100); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$p" 2>/dev/null || true
  done
}
trap cleanup EXIT
trap "exit 130" INT TERM
BURNERS=()

token() { od -An -N16 -tx1 /dev/urandom | tr -d ' \n'; }
OP=$(token); NMA=$(token); NMH=$(token)
(umask 077; printf '%s operator admin\n%s nma node\n%s nmh node\n' "$OP" "$NMA" "$NMH" >"$DIR/tokens"
 echo "$NMA" >"$DIR/nma.token"; echo "$NMH" >"$DIR/nmh.token")

endpoint() {  # endpoint DIR COMPONENT
  for _ in $(seq 1 300); do
    if [ -s "$1/$2.endpoints.json" ]; then
      python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["grpc"])' "$1/$2.endpoints.json" && return 0
    fi
    sleep 0.1
  done
  echo "calibrate.sh: $2 did not start; see $1/../*.log" >&2
  exit 1
}

usage() {  # the primary tenant's agent: temp file, then rename
  printf 'cpu_vcores %s\nmemory_mib 50\n' "$1" >"$DIR/usage.tmp"
  mv "$DIR/usage.tmp" "$DIR/usage"
}
usage 0

mkdir -p "$DIR/rm" "$DIR/nma" "$DIR/nmh" "$DIR/out"
chmod 777 "$DIR/out"
"$BIN/morpheus-rm" --data-dir "$DIR/rm" --grpc-port 0 --http-port 0 \
  --set "rm.token-file=$DIR/tokens" >"$DIR/rm.log" 2>&1 &
PIDS+=($!)
RM=$(endpoint "$DIR/rm" rm)
common=(--rm "$RM" --grpc-port 0 --http-port 0 --set nm.run-as=nm-user
        --set nm.allow-root-containers=true --set nm.heartbeat-interval=300ms)
"$BIN/morpheus-nm" "${common[@]}" --data-dir "$DIR/nma" --node-id nma \
  --resources memory=4096,vcores=4 --set "nm.token-file=$DIR/nma.token" \
  --set nm.attributes=role=am >"$DIR/nma.log" 2>&1 &
PIDS+=($!)
"$BIN/morpheus-nm" "${common[@]}" --data-dir "$DIR/nmh" --node-id nmh \
  --resources memory=200,vcores=2 --set "nm.token-file=$DIR/nmh.token" \
  --set nm.attributes=role=harvest --set nm.harvest.source=file \
  --set "nm.harvest.file=$DIR/usage" --set nm.harvest.tenant=web \
  --set nm.harvest.reserve=memory=0,vcores=0 --set "nm.harvest.interval=$INTERVAL" \
  --set nm.harvest.cpu-kill-after=1h >"$DIR/nmh.log" 2>&1 &
PIDS+=($!)
endpoint "$DIR/nma" nm >/dev/null
endpoint "$DIR/nmh" nm >/dev/null
sleep 1
THROTTLE=$(grep -o 'CPU-throttled through [^"]*' "$DIR/nmh.log" | head -n 1 || true)
if [ -z "$THROTTLE" ]; then
  echo "calibrate.sh: the NM found no cgroup cpu controller to throttle with:" >&2
  grep -i 'harvest' "$DIR/nmh.log" >&2 || true
  exit 3
fi
echo "NM: $THROTTLE" >&2
ctl() { "$BIN/morpheusctl" --rm "$RM" --token "$OP" "$@"; }

# The task: ready, wait for go, then the loop; prints "wall cpu".
cat >"$DIR/out/task.py" <<PY
import os, sys, time
out = sys.argv[1]
with open(out + ".ready", "w") as f:
    f.write(str(os.getpid()))
while not os.path.exists(out + ".go"):
    time.sleep(0.02)
t0, c0 = time.monotonic(), time.process_time()
x = 0
for i in range($ITER):
    x += i * i
with open(out + ".tmp", "w") as f:
    f.write("%.4f %.4f\n" % (time.monotonic() - t0, time.process_time() - c0))
os.rename(out + ".tmp", out)
PY

burn() {  # burn LOAD: the synthetic primary's CPU, in busy loops
  local left=$1
  while python3 -c "import sys; sys.exit(0 if $left > 0.001 else 1)"; do
    local share
    share=$(python3 -c "print(min(1.0, $left))")
    python3 - "$share" <<'PY' &
import sys, time
share = float(sys.argv[1])
while True:
    t = time.monotonic()
    while time.monotonic() - t < 0.1 * share:
        pass
    time.sleep(max(0.0, 0.1 * (1 - share)))
PY
    BURNERS+=($!)
    left=$(python3 -c "print($left - $share)")
  done
}

quota() {  # the quota the NM wrote for the running container (cgroup v1), or "-"
  local f
  for f in /sys/fs/cgroup/cpu/morpheus-harvest-web-*/*/cpu.cfs_quota_us; do
    [ -e "$f" ] && { cat "$f"; return 0; }
  done
  echo -
}

nr_throttled() {
  local sum=0 f
  for f in /sys/fs/cgroup/cpu/morpheus-harvest-web-*/*/cpu.stat; do
    [ -e "$f" ] && sum=$((sum + $(awk '$1 == "nr_throttled" {print $2}' "$f")))
  done
  echo "$sum"
}

run_one() {  # run_one LOAD N -> "wall cpu throttled_periods"
  local load=$1 n=$2 out="$DIR/out/r-$1-$2"
  cat >"$DIR/job.yaml" <<YAML
name: calibrate
stages:
  - name: spin
    tasks: 1
    command: "python3 $DIR/out/task.py $out"
    resources: {memory_mib: 100, vcores: 1}
    max_attempts: 1
    constraints:
      - {key: role, values: [harvest], hard: true}
YAML
  usage 0
  local id
  id=$(ctl app submit "$DIR/job.yaml" 2>&1 | head -n 1)
  case "$id" in application_*) ;; *) echo "calibrate.sh: submit failed: $id" >&2; exit 1 ;; esac
  for _ in $(seq 1 600); do [ -e "$out.ready" ] && break; sleep 0.1; done
  [ -e "$out.ready" ] || { echo "calibrate.sh: task of $id did not start; $DIR/*.log" >&2; exit 1; }
  usage "$load"
  [ "$BURN" = 1 ] && burn "$load"
  sleep 2.5  # two NM passes at the default interval: the cap is in place
  local before q
  before=$(nr_throttled)
  q=$(quota)
  touch "$out.go"
  for _ in $(seq 1 3000); do [ -e "$out" ] && break; sleep 0.1; done
  local after
  after=$(nr_throttled)
  for p in "${BURNERS[@]:-}"; do [ -n "$p" ] && kill "$p" 2>/dev/null || true; done
  BURNERS=()
  usage 0
  [ -e "$out" ] || { echo "calibrate.sh: task of $id did not finish in 300 s" >&2; exit 1; }
  for _ in $(seq 1 100); do
    ctl app status "$id" 2>/dev/null | grep -q 'FINISHED\|FAILED\|KILLED' && break
    sleep 0.2
  done
  echo "$(cat "$out") $((after - before)) $q"
}

RESULTS="$DIR/results.tsv"
: >"$RESULTS"
for r in $(seq 1 "$REPEATS"); do
  for load in $LOADS; do
    line=$(run_one "$load" "$r")
    echo "load $load repeat $r: wall cpu nr_throttled = $line" >&2
    echo "$load $line" >>"$RESULTS"
  done
done
python3 - "$RESULTS" "$THROTTLE" "$BURN" <<'PY'
import json, statistics, sys
rows = [l.split() for l in open(sys.argv[1]) if l.strip()]
by = {}
quotas = {}
for load, wall, cpu, thr, q in rows:
    by.setdefault(float(load), []).append((float(wall), float(cpu), int(thr)))
    quotas[float(load)] = q
def speed(cpu_left, tasks=1):  # sim::throttleSpeed
    if tasks <= 0 or tasks <= cpu_left:
        return 1.0
    return min(1.0, max(0.01, max(0.0, cpu_left) / tasks))
low = min(by)
base = statistics.median(c for _, c, _ in by[low])
s0 = statistics.median(c / w for w, c, _ in by[low])
print("capacity 2 vcores, reserve 0; W (CPU time of the loop, load %.2f) = %.2f s; the machine "
      "gives an uncapped task s0 = %.2f core" % (low, base, s0))
print("%6s %8s %8s %10s %12s %10s %8s %10s %12s" % ("load", "cpu left", "speed", "W/speed s",
      "W/min(.,s0) s", "measured s", "error", "quota us", "nr_throttled"))
points, worst = [], 0.0
for load in sorted(by):
    wall = statistics.median(w for w, _, _ in by[load])
    thr = sum(t for _, _, t in by[load])
    s = speed(2 - load)
    pure = base / s
    model = base / min(s, s0)
    err = wall / model - 1
    worst = max(worst, abs(err))
    print("%6.2f %8.2f %8.3f %10.2f %12.2f %10.2f %+7.1f%% %10s %12d" % (load, 2 - load, s, pure,
          model, wall, 100 * err, quotas[load], thr))
    points.append({"load": load, "cpu_left": 2 - load, "speed": s, "model_s": pure,
                   "model_shared_s": model, "measured_s": wall, "error": err,
                   "quota": quotas[load], "nr_throttled": thr,
                   "runs": [{"wall_s": w, "cpu_s": c} for w, c, _ in by[load]]})
print("worst |error| %.1f%% (target <= 15%%)" % (100 * worst))
print(json.dumps({"bench": "harvest_calibrate", "figures": {"throttle": sys.argv[2],
      "burn": sys.argv[3] == "1", "work_cpu_s": base, "share_uncapped": s0, "points": points, "worst_error": worst},
      "targets": {"worst_error_max": 0.15}}))
PY
