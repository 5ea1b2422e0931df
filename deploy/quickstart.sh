#!/usr/bin/env bash
# README command (1): install dependencies, build (Release), start a local
# cluster on loopback (RM + inference + 3 NMs) and run the demo scenario
# (deploy/demo.sh, ~10 minutes): a periodic DAG job is learned, its SLO signed
# off, reserved, run next to an ad-hoc flood, and a slowed run rescued by DRA.
# Usage: deploy/quickstart.sh [--keep] [--no-demo]
#   --keep     leave the demo's cluster running afterwards (time-compressed:
#              plan step 5 s, LCM 15 min); stop it with deploy/local-cluster.sh stop
#   --no-demo  only start the cluster with the default options and show its
#              nodes; it keeps running
# MORPHEUS_BIN=DIR: use the binaries in DIR (e.g. build-test/bin) instead of building.
# Ctrl-C during the demo stops it and the cluster (nothing left running).
set -euo pipefail
cd "$(dirname "$0")/.."
KEEP=()
DEMO=1
for a in "$@"; do
  case "$a" in
    --keep) KEEP=(--keep) ;;
    --no-demo) DEMO=0 ;;
    *) echo "usage: $0 [--keep] [--no-demo]" >&2; exit 2 ;;
  esac
done
./deploy/install-deps.sh
if [ -n "${MORPHEUS_BIN:-}" ] && [ -x "$MORPHEUS_BIN/morpheus-rm" ]; then
  echo "quickstart: using the binaries in $MORPHEUS_BIN (MORPHEUS_BIN); not building"
else
  echo "quickstart: building (Release) into build-release/ ..."
  ./deploy/build.sh build-release Release -DMORPHEUS_BUILD_TESTS=OFF -DMORPHEUS_BUILD_BENCH=OFF
  export MORPHEUS_BIN=$(pwd)/build-release/bin
fi
if [ "$DEMO" = 1 ]; then
  exec ./deploy/demo.sh ${KEEP[@]+"${KEEP[@]}"}
fi
./deploy/local-cluster.sh start
echo
(. var/env && "$MORPHEUS_BIN/morpheusctl" cluster status)
echo
echo "The cluster keeps running in the background (data and logs under ./var)."
echo "  status:  ./deploy/local-cluster.sh status"
echo "  CLI:     source var/env; $MORPHEUS_BIN/morpheusctl --help"
echo "  web:     http://127.0.0.1:8088/"
echo "  stop:    ./deploy/local-cluster.sh stop"
