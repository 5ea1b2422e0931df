#!/usr/bin/env bash
# A local Morpheus cluster on loopback: RM + inference + 3 NMs.
# Usage: deploy/local-cluster.sh start|stop|status
# Data under ./var/<daemon>, logs under ./var/log, pids under ./var/run.
# Binaries from $MORPHEUS_BIN (default: build-release/bin, else build/bin).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
VAR=$ROOT/var
BIN=${MORPHEUS_BIN:-}
if [ -z "$BIN" ]; then
  for d in build-release/bin build/bin build-test/bin; do
    if [ -x "$d/morpheus-rm" ]; then BIN=$ROOT/$d; break; fi
  done
fi
RM_GRPC=8030
RM_HTTP=8088
NODES=(nm1 nm2 nm3)

die() { echo "local-cluster: $*" >&2; exit 1; }

running() { [ -f "$VAR/run/$1.pid" ] && kill -0 "$(cat "$VAR/run/$1.pid")" 2>/dev/null; }

launch() {
  local name=$1; shift
  if running "$name"; then echo "local-cluster: $name already running (pid $(cat "$VAR/run/$name.pid"))"; return; fi
  "$@" >>"$VAR/log/$name.log" 2>&1 &
  echo $! >"$VAR/run/$name.pid"
  echo "local-cluster: started $name (pid $!, log var/log/$name.log)"
}

start() {
  [ -n "$BIN" ] && [ -x "$BIN/morpheus-rm" ] || die "no binaries found; build first (deploy/build.sh) or set MORPHEUS_BIN"
  mkdir -p "$VAR/log" "$VAR/run"
  # Sign-off identities for the inference service: one admin token for the
  # local operator, made once (README: "Signing off SLOs").
  if [ ! -f "$VAR/tokens" ]; then
    (umask 077; printf '%s %s admin\n' "$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')" \
      "${USER:-operator}" >"$VAR/tokens")
  fi
  # The RM's callers (rm.token-file): the operator's admin token and one node
  # token per NM (role node, user = node id); each NM reads its own from
  # var/<node>.token (nm.token-file). Made once.
  if [ ! -f "$VAR/rm-tokens" ]; then
    (umask 077
      cp "$VAR/tokens" "$VAR/rm-tokens.tmp"
      for n in "${NODES[@]}"; do
        t=$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')
        printf '%s %s node\n' "$t" "$n" >>"$VAR/rm-tokens.tmp"
        printf '%s\n' "$t" >"$VAR/$n.token"
      done
      mv "$VAR/rm-tokens.tmp" "$VAR/rm-tokens")
  fi
  launch rm "$BIN/morpheus-rm" --config "$ROOT/deploy/rm.yaml" --data-dir "$VAR/rm" \
    --grpc-port $RM_GRPC --http-port $RM_HTTP --set rm.inference-address=127.0.0.1:8050 \
    --set rm.token-file="$VAR/rm-tokens"
  launch inference "$BIN/morpheus-inference" --config "$ROOT/deploy/inference.yaml" \
    --data-dir "$VAR/inference" --rm 127.0.0.1:$RM_GRPC --token-file "$VAR/tokens"
  local i=0
  for n in "${NODES[@]}"; do
    i=$((i + 1))
    launch "$n" "$BIN/morpheus-nm" --config "$ROOT/deploy/nm.yaml" --data-dir "$VAR/$n" \
      --grpc-port $((8140 + i)) --http-port $((8240 + i)) --node-id "$n" \
      --rm 127.0.0.1:$RM_GRPC --set "nm.attributes=rack=r$i" --set nm.token-file="$VAR/$n.token"
  done
  # Wait (bounded) until all nodes are registered.
  local deadline=$((SECONDS + 30))
  while [ $SECONDS -lt $deadline ]; do
    live=$("$BIN/morpheusctl" --rm 127.0.0.1:$RM_GRPC cluster status --json 2>/dev/null |
      python3 -c 'import json,sys; print(json.load(sys.stdin)["live_nodes"])' 2>/dev/null || echo 0)
    if [ "$live" = "${#NODES[@]}" ]; then
      echo "local-cluster: up: RM 127.0.0.1:$RM_GRPC (http $RM_HTTP), inference 127.0.0.1:8050, ${#NODES[@]} nodes"
      echo "local-cluster: sign-off token: export MORPHEUS_TOKEN=$(cut -d" " -f1 "$VAR/tokens")"
      return 0
    fi
    for d in rm inference "${NODES[@]}"; do
      running "$d" || die "$d exited; see var/log/$d.log: $(tail -n 1 "$VAR/log/$d.log" 2>/dev/null)"
    done
    sleep 0.5
  done
  die "nodes did not register within 30 s; see var/log/"
}

stop() {
  for d in "${NODES[@]}" inference rm; do
    if running "$d"; then
      pid=$(cat "$VAR/run/$d.pid")
      kill -TERM "$pid"
      for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
      kill -0 "$pid" 2>/dev/null && kill -KILL "$pid"
      echo "local-cluster: stopped $d"
    fi
    rm -f "$VAR/run/$d.pid"
  done
}

status() {
  for d in rm inference "${NODES[@]}"; do
    if running "$d"; then echo "$d: running (pid $(cat "$VAR/run/$d.pid"))"; else echo "$d: stopped"; fi
  done
  if running rm && [ -n "$BIN" ]; then "$BIN/morpheusctl" --rm 127.0.0.1:$RM_GRPC cluster status || true; fi
}

case "${1:-}" in
  start) start ;;
  stop) stop ;;
  status) status ;;
  *) echo "usage: $0 start|stop|status" >&2; exit 2 ;;
esac
