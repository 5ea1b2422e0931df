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

token() { od -An -N16 -tx1 /dev/urandom | tr -d ' \n'; }

# Bearer tokens of the RM and inference (one file, mode 0600, made once;
# README "Caller identity and queue ACLs"): the local operator as admin, the daemons' own service
# identity (RM telemetry -> inference, inference sign-off -> RM) as admin, and
# nm1..nm3 as nodes. Each client's own token is also kept alone in a file.
make_tokens() {
  # A token file of an older version (operator only) is replaced.
  [ -f "$VAR/tokens" ] && [ -f "$VAR/operator.token" ] && [ -f "$VAR/services.token" ] &&
    [ -f "$VAR/${NODES[0]}.token" ] && return 0
  local op svc
  op=$(token)
  svc=$(token)
  (
    umask 077
    {
      printf '# TOKEN USER [admin|node]\n%s %s admin\n%s services admin\n' "$op" "${USER:-operator}" "$svc"
      # One node token per NM (role node, user = node id); each NM reads its
      # own from var/<node>.token (nm.token-file).
      for n in "${NODES[@]}"; do
        t=$(token)
        printf '%s %s node\n' "$t" "$n"
        printf '%s\n' "$t" >"$VAR/$n.token"
      done
    } >"$VAR/tokens.new"
    printf '%s\n' "$op" >"$VAR/operator.token"
    printf '%s\n' "$svc" >"$VAR/services.token"
    mv "$VAR/tokens.new" "$VAR/tokens"
  )
  echo "local-cluster: made bearer tokens in var/tokens (0600)"
}

start() {
  [ -n "$BIN" ] && [ -x "$BIN/morpheus-rm" ] || die "no binaries found; build first (deploy/build.sh) or set MORPHEUS_BIN"
  mkdir -p "$VAR/log" "$VAR/run"
  make_tokens
  launch rm "$BIN/morpheus-rm" --config "$ROOT/deploy/rm.yaml" --data-dir "$VAR/rm" \
    --grpc-port $RM_GRPC --http-port $RM_HTTP --set rm.inference-address=127.0.0.1:8050 \
    --set "rm.token-file=$VAR/tokens" --set "rm.inference-token-file=$VAR/services.token"
  launch inference "$BIN/morpheus-inference" --config "$ROOT/deploy/inference.yaml" \
    --data-dir "$VAR/inference" --rm 127.0.0.1:$RM_GRPC --token-file "$VAR/tokens" \
    --set "inference.rm-token-file=$VAR/services.token"
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
    live=$("$BIN/morpheusctl" --rm 127.0.0.1:$RM_GRPC --token-file "$VAR/operator.token" \
      cluster status --json 2>/dev/null |
      python3 -c 'import json,sys; print(json.load(sys.stdin)["live_nodes"])' 2>/dev/null || echo 0)
    if [ "$live" = "${#NODES[@]}" ]; then
      echo "local-cluster: up: RM 127.0.0.1:$RM_GRPC (http $RM_HTTP), inference 127.0.0.1:8050, ${#NODES[@]} nodes"
      echo "local-cluster: your admin token for morpheusctl and REST (Authorization: Bearer):"
      echo "export MORPHEUS_TOKEN=$(cat "$VAR/operator.token")"
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
  if running rm && [ -n "$BIN" ]; then
    "$BIN/morpheusctl" --rm 127.0.0.1:$RM_GRPC --token-file "$VAR/operator.token" cluster status || true
  fi
}

case "${1:-}" in
  start) start ;;
  stop) stop ;;
  status) status ;;
  *) echo "usage: $0 start|stop|status" >&2; exit 2 ;;
esac
