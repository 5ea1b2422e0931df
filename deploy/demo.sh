#!/usr/bin/env bash
# The Morpheus demo (docs/getting-started.md): starts a local
# cluster (deploy/local-cluster.sh) with time-compressed planning options and
# runs deploy/demo.py, which drives it with morpheusctl exactly as a job's
# owner and an operator would: a periodic DAG job is learned, its SLO signed
# off, reserved, run inside its reservation next to an ad-hoc flood, and one
# deliberately slowed run gets dynamic reprovisioning; then the owner sets the
# reservation's DRA budget to 0 and the same slowed job runs again without
# DRA and misses its deadline (the counterfactual).
#
# Usage: deploy/demo.sh [--keep] [--profile demo|ci] [--var DIR] [--ports fixed|auto]
#   --keep          leave the cluster running (stop: local-cluster.sh stop --var DIR)
#   --profile       demo (default): plan step 5 s, a run every 90 s, ~10 min;
#                   ci: plan step 2 s, a run every minute, ~6 min (the integration test)
#   --var DIR       the demo cluster's data, logs and tokens (default ./var/demo, apart
#                   from the plain local cluster's ./var); the previous demo's state in
#                   DIR is removed first, so every run learns from scratch
#   --ports         fixed (default: the RM on 8030, web page on 8088) or auto (free ports)
# Ctrl-C stops the scenario and the cluster (applications killed, no daemon or
# container left), unless --keep. Exit code 0 when every step happened, the
# slowed run met its deadline with DRA grants and the same slowed run, with
# DRA budget 0 and no grant, missed it; 1 otherwise, 2 on bad usage.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
KEEP=0
PROFILE=demo
VAR=$ROOT/var/demo
PORTS=fixed
usage() { sed -n '11,22p' "$0" >&2; exit 2; }
while [ $# -gt 0 ]; do
  case "$1" in
    --keep) KEEP=1; shift ;;
    --profile) PROFILE=${2:-}; shift 2 || usage ;;
    --var) VAR=${2:-}; shift 2 || usage ;;
    --ports) PORTS=${2:-}; shift 2 || usage ;;
    -h | --help) usage ;;
    *) echo "demo: unknown option '$1'" >&2; usage ;;
  esac
done

# Time-compressed options (every key is documented in deploy/*.yaml). The
# plan's LCM ("day") is 10 periods of the job (4 in ci); DRA reviews every
# second (dra.interval, default: the plan step), a grant lasts T = 2 plan
# steps and its cap looks back R_recent = 2 steps (Morpheus §7's 60 s / 2 min
# at a 60 s step) and may reach rho = 6 times the recent plan (default 2):
# the plan holds the job's skyline as fitted from its unslowed runs, where
# the slowed run's transform needs its 6 tasks at once for twice as long.
# Preemption grace and the NM's kill grace shrink likewise, so that a
# reserved run follows its plan closely. The inference service refits every
# plan step instead of once a day, with the same LCM and step as the RM, and
# proposes a reprovisioning budget of 10 times the skyline's area (default
# 20%): a grant is charged for its whole T, so that DRA, not the budget,
# decides the slowed run. Dispersion counts as problematic only from 2
# MAD/median (default 0.5): at these time scales a second of process-start
# jitter reads as dispersion, and the planner would centre the job's skyline
# in its window (Morpheus §6's alignment penalty), leaving the slowed run
# waiting behind the flood until mid-window. The ad-hoc queues:
# root.default (weight 3: where the jobs run before sign-off) and
# root.adhoc (weight 1: the flood, whose tasks outlast the demo).
case "$PROFILE" in
  demo) STEP=5s LCM=15m HB=500ms GRACE=500ms ;;
  ci) STEP=2s LCM=4m HB=300ms GRACE=500ms ;;
  *) echo "demo: --profile: '$PROFILE' is not demo or ci" >&2; exit 2 ;;
esac
mkdir -p "$VAR"
VAR=$(cd "$VAR" && pwd)
CLUSTER=("$ROOT/deploy/local-cluster.sh")
CLUSTER_OPTS=(--var "$VAR" --ports "$PORTS")
for f in "$VAR"/run/*.pid; do
  if [ -f "$f" ] && kill -0 "$(cat "$f")" 2>/dev/null; then
    echo "demo: a cluster already runs in $VAR (e.g. a demo left by --keep); stop it first:" >&2
    echo "  ./deploy/local-cluster.sh stop --var $VAR" >&2
    exit 1
  fi
done
# A fresh start: the previous demo's reservations, history and containers go.
rm -rf "$VAR/rm" "$VAR/inference" "$VAR"/nm[0-9]* "$VAR/log" "$VAR/run" "$VAR/scenario" "$VAR/cluster.env" \
  "$VAR/env"

started=0
cleanup() {
  local rc=$?
  trap - INT TERM EXIT
  if [ "$started" = 1 ] && [ "$KEEP" = 0 ]; then
    echo
    echo "demo: stopping the cluster (--keep leaves it running)"
    "${CLUSTER[@]}" stop "${CLUSTER_OPTS[@]}" || true
  elif [ "$started" = 1 ]; then
    echo
    echo "demo: the cluster keeps running (--keep); web page: http://$(. "$VAR/cluster.env"; echo "$RM_HTTP")/"
    echo "  morpheusctl:  source $VAR/env   (MORPHEUS_RM, MORPHEUS_INFERENCE, MORPHEUS_TOKEN)"
    echo "  stop it with: ./deploy/local-cluster.sh stop --var $VAR"
  fi
  exit "$rc"
}
trap 'exit 130' INT
trap 'exit 143' TERM
trap cleanup EXIT

started=1
"${CLUSTER[@]}" start "${CLUSTER_OPTS[@]}" \
  --rm-set "planner.step=$STEP" --rm-set "planner.lcm=$LCM" \
  --rm-set "rm.heartbeat-interval=$HB" --rm-set "rm.preemption-grace=$GRACE" \
  --rm-set "dra.extension=$((2 * ${STEP%s}))s" --rm-set "dra.recent=$((2 * ${STEP%s}))s" \
  --rm-set "dra.rho=6" --rm-set "dra.interval=1s" \
  --rm-set "scheduler.queues=root.default=3,root.adhoc=1" \
  --inference-set "skyline.step=$STEP" --inference-set "slo.lcm=$LCM" \
  --inference-set "inference.refit-interval=$STEP" --inference-set "proposal.budget-fraction=10" \
  --inference-set "slo.problematic-cv=2" \
  --nm-set "nm.heartbeat-interval=$HB" --nm-set "nm.kill-grace=1s"
python3 "$ROOT/deploy/demo.py" --var "$VAR" --profile "$PROFILE" --jobs "$ROOT/examples/demo"
