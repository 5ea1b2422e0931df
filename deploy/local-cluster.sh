#!/usr/bin/env bash
# A local Morpheus cluster on loopback: RM + inference + 3 NMs.
# Usage: deploy/local-cluster.sh start|stop|status|env [options]   (--help: this text)
#   start                 start it; prints, and writes to DIR/env, the
#                         `export MORPHEUS_RM=... MORPHEUS_TOKEN=...` lines that
#                         point morpheusctl at it, whatever ports it chose
#   env                   print those lines again: eval "$(deploy/local-cluster.sh env)"
#   --var DIR             data, logs, pids and tokens under DIR (default ./var)
#   --ports fixed|auto    fixed (default): RM gRPC 8030, RM HTTP 8088, inference 8050,
#                         NMs 8141.. / 8241..; auto: free ports (the RM's and
#                         inference's gRPC ports are picked free, every other is 0)
#   --rm-set K=V          extra `--set K=V` for the RM (repeatable); likewise
#   --inference-set K=V   for inference and --nm-set K=V for every NM (start only)
# Logs under DIR/log, pids under DIR/run; DIR/cluster.env holds the addresses
# (RM, RM_HTTP, INFERENCE, INFERENCE_HTTP, BIN) for scripts to source.
# Binaries from $MORPHEUS_BIN (default: build-release/bin, else build/bin, build-test/bin).
#
# stop first kills the applications still running (their containers outlive
# a stopped NM by design, docs/user/applications.md) and waits for their
# containers to end, then stops the NMs, inference and the RM; a container a
# dead NM left behind is killed from its record (DIR/<nm>/local/containers).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
BIN=${MORPHEUS_BIN:-}
if [ -z "$BIN" ]; then
  for d in build-release/bin build/bin build-test/bin; do
    if [ -x "$d/morpheus-rm" ]; then BIN=$ROOT/$d; break; fi
  done
fi
NODES=(nm1 nm2 nm3)

# A start that fails stops what it started (no daemon is left behind).
STARTING=0
die() {
  echo "local-cluster: $*" >&2
  if [ "$STARTING" = 1 ]; then
    STARTING=0
    stop >/dev/null 2>&1 || true
    echo "local-cluster: stopped what this start had started" >&2
  fi
  exit 1
}

# The comment at the top of this file, without its "# ".
usage() { sed -n '2,/^set -euo/{/^#/s/^# \{0,1\}//p}' "$0"; }

CMD=${1:-}
[ $# -gt 0 ] && shift
case "$CMD" in -h | --help | help) usage; exit 0 ;; esac
VAR=$ROOT/var
PORTS=fixed
RM_SETS=()
INF_SETS=()
NM_SETS=()
while [ $# -gt 0 ]; do
  case "$1" in
    --var) VAR=$(mkdir -p "$2" && cd "$2" && pwd); shift 2 ;;
    --ports) PORTS=$2; shift 2 ;;
    --rm-set) RM_SETS+=(--set "$2"); shift 2 ;;
    --inference-set) INF_SETS+=(--set "$2"); shift 2 ;;
    --nm-set) NM_SETS+=(--set "$2"); shift 2 ;;
    -h | --help) usage; exit 0 ;;
    *) die "unknown option '$1' (see $0 --help)" ;;
  esac
done
case "$PORTS" in fixed | auto) ;; *) die "--ports: '$PORTS' is not fixed or auto" ;; esac

running() { [ -f "$VAR/run/$1.pid" ] && kill -0 "$(cat "$VAR/run/$1.pid")" 2>/dev/null; }

launch() {
  local name=$1; shift
  if running "$name"; then echo "local-cluster: $name already running (pid $(cat "$VAR/run/$name.pid"))"; return; fi
  # Its own session: a Ctrl-C meant for the script that started the cluster
  # (deploy/demo.sh) does not reach the daemons, which stop() stops in order.
  setsid "$@" >>"$VAR/log/$name.log" 2>&1 </dev/null &
  echo $! >"$VAR/run/$name.pid"
  echo "local-cluster: started $name (pid $!, log $VAR/log/$name.log)"
}

token() { od -An -N16 -tx1 /dev/urandom | tr -d ' \n'; }

# Two distinct TCP ports that are free now (the kernel's picks for port 0,
# both held until both are known).
free_ports() {
  python3 -c 'import socket
s = [socket.socket() for _ in range(2)]
for x in s: x.bind(("127.0.0.1", 0))
print(" ".join(str(x.getsockname()[1]) for x in s))'
}

# "host:port" of a daemon's `kind` (grpc|http) endpoint from the endpoints
# file it writes once listening; waits up to 20 s.
endpoint() {
  local dir=$1 component=$2 kind=$3 name=$4
  local f=$dir/$component.endpoints.json
  for _ in $(seq 1 200); do
    if [ -s "$f" ]; then
      python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))[sys.argv[2]])' "$f" "$kind" && return 0
    fi
    running "$name" || die "$name exited; see $VAR/log/$name.log: $(tail -n 1 "$VAR/log/$name.log" 2>/dev/null)"
    sleep 0.1
  done
  die "$name did not write $f within 20 s"
}

# Bearer tokens of the RM and inference (one file, mode 0600, made once;
# docs/operator/security.md): the local operator as admin, the daemons' own service
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
  echo "local-cluster: made bearer tokens in $VAR/tokens (0600)"
}

ctl() { "$BIN/morpheusctl" --rm "$RM" --inference "$INFERENCE" --token-file "$VAR/operator.token" "$@"; }

# The environment that points morpheusctl (and a REST client) at this
# cluster, from DIR/cluster.env and the operator's token: DIR/env, mode 0600
# (it holds the token).
# shellcheck disable=SC2153  # RM, RM_HTTP, INFERENCE come from cluster.env
write_env() {
  # shellcheck disable=SC1091
  . "$VAR/cluster.env"
  (
    umask 077
    {
      echo "export MORPHEUS_RM=$RM"
      echo "export MORPHEUS_RM_HTTP=$RM_HTTP"
      echo "export MORPHEUS_INFERENCE=$INFERENCE"
      echo "export MORPHEUS_TOKEN=$(cat "$VAR/operator.token")"
    } >"$VAR/env.new"
    mv "$VAR/env.new" "$VAR/env"
  )
}

env_cmd() {
  if [ ! -f "$VAR/cluster.env" ] || [ ! -f "$VAR/operator.token" ]; then
    die "no cluster under $VAR (start one: $0 start --var $VAR)"
  fi
  write_env
  cat "$VAR/env"
}

# True once daemon `name` wrote its endpoints file; false when it exited or
# 20 s passed.
listening() {
  local name=$1 component=$1
  for _ in $(seq 1 200); do
    [ -s "$VAR/$name/$component.endpoints.json" ] && return 0
    running "$name" || return 1
    sleep 0.1
  done
  return 1
}

# Stops one daemon (TERM, then KILL after 5 s) and forgets its pid.
stop_daemon() {
  local d=$1 pid
  if running "$d"; then
    pid=$(cat "$VAR/run/$d.pid")
    kill -TERM "$pid"
    for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -0 "$pid" 2>/dev/null && kill -KILL "$pid"
    echo "local-cluster: stopped $d"
  fi
  rm -f "$VAR/run/$d.pid"
}

start() {
  [ -n "$BIN" ] && [ -x "$BIN/morpheus-rm" ] || die "no binaries found; build first (deploy/build.sh) or set MORPHEUS_BIN"
  mkdir -p "$VAR/log" "$VAR/run"
  make_tokens
  local rm_grpc=8030 rm_http=8088 inf_grpc=8050 inf_http=8051 nm_grpc=8140 nm_http=8240
  if running rm || running inference; then
    die "a cluster already runs under $VAR (stop it first: $0 stop --var $VAR)"
  fi
  STARTING=1
  # The RM and inference must know each other's gRPC port before either
  # listens, so with --ports auto both are chosen free beforehand. Another
  # process may take one in between: then both are started again on new
  # ports (up to 5 times).
  local attempt rm_log_at inf_log_at
  for attempt in 1 2 3 4 5; do
    # A daemon killed earlier may have left its endpoints file behind.
    rm -f "$VAR/rm/rm.endpoints.json" "$VAR/inference/inference.endpoints.json"
    rm_log_at=$(stat -c %s "$VAR/log/rm.log" 2>/dev/null || echo 0)
    inf_log_at=$(stat -c %s "$VAR/log/inference.log" 2>/dev/null || echo 0)
    if [ "$PORTS" = auto ]; then
      read -r rm_grpc inf_grpc < <(free_ports)
      rm_http=0
      inf_http=0
    fi
    launch rm "$BIN/morpheus-rm" --config "$ROOT/deploy/rm.yaml" --data-dir "$VAR/rm" \
      --grpc-port "$rm_grpc" --http-port "$rm_http" --set "rm.inference-address=127.0.0.1:$inf_grpc" \
      --set "rm.token-file=$VAR/tokens" --set "rm.inference-token-file=$VAR/services.token" \
      ${RM_SETS[@]+"${RM_SETS[@]}"}
    RM=127.0.0.1:$rm_grpc
    launch inference "$BIN/morpheus-inference" --config "$ROOT/deploy/inference.yaml" \
      --data-dir "$VAR/inference" --grpc-port "$inf_grpc" --http-port "$inf_http" --rm "$RM" \
      --token-file "$VAR/tokens" --set "inference.rm-token-file=$VAR/services.token" \
      ${INF_SETS[@]+"${INF_SETS[@]}"}
    INFERENCE=127.0.0.1:$inf_grpc
    [ "$PORTS" = auto ] || break
    if listening rm && listening inference; then break; fi
    # This attempt's log lines only: was it a port taken meanwhile?
    local lines
    lines=$(tail -c +$((rm_log_at + 1)) "$VAR/log/rm.log" 2>/dev/null
      tail -c +$((inf_log_at + 1)) "$VAR/log/inference.log" 2>/dev/null)
    if [[ "$lines" != *"Address already in use"* ]] || [ "$attempt" = 5 ]; then
      break  # not a port race: endpoint() below reports the daemon's own error
    fi
    echo "local-cluster: a chosen port was taken meanwhile; starting rm and inference on new ports"
    stop_daemon inference
    stop_daemon rm
  done
  # Containers run as the NM's account. As a normal user that is you (one
  # user, nothing to isolate). As root the NM refuses that unless told
  # explicitly: this throw-away demo cluster's users (alice, ...) have no local
  # accounts, so it allows root containers and says so loudly. A shared
  # machine runs the NM as root with nm.run-as: mapped instead (see nm.run-as
  # in deploy/nm.yaml); --nm-set nm.run-as=mapped overrides this.
  local run_as=()
  if [ "$(id -u)" = 0 ]; then
    echo "local-cluster: WARNING: running as root: containers run as root" \
      "(nm.allow-root-containers: true); for a single-user demo machine only" >&2
    run_as=(--set nm.run-as=nm-user --set nm.allow-root-containers=true)
  fi
  local i=0
  for n in "${NODES[@]}"; do
    i=$((i + 1))
    local g=$((nm_grpc + i)) h=$((nm_http + i))
    [ "$PORTS" = auto ] && g=0 && h=0
    launch "$n" "$BIN/morpheus-nm" --config "$ROOT/deploy/nm.yaml" --data-dir "$VAR/$n" \
      --grpc-port "$g" --http-port "$h" --node-id "$n" \
      --rm "$RM" --set "nm.attributes=rack=r$i" --set nm.token-file="$VAR/$n.token" \
      ${run_as[@]+"${run_as[@]}"} ${NM_SETS[@]+"${NM_SETS[@]}"}
  done
  local rm_http_addr inf_http_addr
  rm_http_addr=$(endpoint "$VAR/rm" rm http rm)
  inf_http_addr=$(endpoint "$VAR/inference" inference http inference)
  {
    echo "RM=$RM"
    echo "RM_HTTP=$rm_http_addr"
    echo "INFERENCE=$INFERENCE"
    echo "INFERENCE_HTTP=$inf_http_addr"
    echo "BIN=$BIN"
  } >"$VAR/cluster.env"
  # Wait (bounded) until all nodes are registered.
  local deadline=$((SECONDS + 30)) live
  while [ $SECONDS -lt $deadline ]; do
    live=$(ctl cluster status --json 2>/dev/null |
      python3 -c 'import json,sys; print(json.load(sys.stdin)["live_nodes"])' 2>/dev/null || echo 0)
    if [ "$live" = "${#NODES[@]}" ]; then
      echo "local-cluster: up: RM $RM (http $rm_http_addr), inference $INFERENCE, ${#NODES[@]} nodes"
      write_env
      echo "local-cluster: morpheusctl reaches it with these (your admin token is also REST's"
      echo "local-cluster: Authorization: Bearer); run them, or: source $VAR/env"
      cat "$VAR/env"
      STARTING=0
      return 0
    fi
    for d in rm inference "${NODES[@]}"; do
      running "$d" || die "$d exited; see $VAR/log/$d.log: $(tail -n 1 "$VAR/log/$d.log" 2>/dev/null)"
    done
    sleep 0.5
  done
  die "nodes did not register within 30 s; see $VAR/log/"
}

# Kills every application that is not final and waits (<= 30 s) until the RM
# reports none running, so their containers are stopped by their NMs.
kill_apps() {
  running rm || return 0
  local ids
  ids=$(ctl app list --state accepted,running --json 2>/dev/null |
    python3 -c 'import json,sys; print(" ".join(a["application_id"] for a in json.load(sys.stdin)["applications"]))' 2>/dev/null) || return 0
  [ -z "$ids" ] && return 0
  for id in $ids; do ctl app kill "$id" --reason "local cluster stopping" >/dev/null 2>&1 || true; done
  echo "local-cluster: killed running application(s) $ids"
  local deadline=$((SECONDS + 30)) used
  while [ $SECONDS -lt $deadline ]; do
    used=$(ctl cluster status --json 2>/dev/null |
      python3 -c 'import json,sys; print(sum(n["containers"] for n in json.load(sys.stdin)["nodes"]))' 2>/dev/null || echo 0)
    [ "$used" = 0 ] && return 0
    sleep 0.5
  done
  echo "local-cluster: containers still running after 30 s; stopping them from their records" >&2
}

# SIGKILLs the process session of every container record under DIR whose
# launcher (the session leader) is still the recorded process.
kill_left_containers() {
  python3 - "$VAR" <<'EOF2'
import glob, json, os, signal, sys

def stat(pid):
    # Fields after the command name: [0] state, [3] session, [19] start time.
    return open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()

n = 0
for rec in glob.glob(os.path.join(sys.argv[1], "nm*", "local", "containers", "*", "container.json")):
    try:
        c = json.load(open(rec))
        pid = int(c.get("pid", -1))
        if pid <= 1 or "completed" in c:
            continue
        f = stat(pid)
        if f[0] == "Z" or int(f[19]) != int(c.get("proc_start", 0)) or int(f[3]) != pid:
            continue
    except (OSError, ValueError, IndexError):
        continue
    for p in os.listdir("/proc"):
        try:
            if p.isdigit() and int(stat(int(p))[3]) == pid:
                os.kill(int(p), signal.SIGKILL)
        except (OSError, ValueError, IndexError):
            pass
    n += 1
if n:
    print(f"local-cluster: killed {n} container(s) left running")
EOF2
}

stop() {
  if [ -f "$VAR/cluster.env" ]; then
    # shellcheck disable=SC1091
    . "$VAR/cluster.env"
    kill_apps
  fi
  for d in "${NODES[@]}" inference rm; do stop_daemon "$d"; done
  kill_left_containers
}

status() {
  for d in rm inference "${NODES[@]}"; do
    if running "$d"; then echo "$d: running (pid $(cat "$VAR/run/$d.pid"))"; else echo "$d: stopped"; fi
  done
  if running rm && [ -n "$BIN" ] && [ -f "$VAR/cluster.env" ]; then
    # shellcheck disable=SC1091
    . "$VAR/cluster.env"
    ctl cluster status || true
  fi
}

case "$CMD" in
  start) start ;;
  stop) stop ;;
  status) status ;;
  env) env_cmd ;;
  *) echo "usage: $0 start|stop|status|env [--var DIR] [--ports fixed|auto] [--rm-set K=V] [--inference-set K=V] [--nm-set K=V] (--help: more)" >&2; exit 2 ;;
esac
