#!/usr/bin/env bash
# Writes the seed corpus of the rm_grpc fuzz target (tests/fuzz/corpus/rm_grpc)
# from the text-format requests below, in the target's input format (see
# rm_grpc_fuzz.cc): per call [selector byte][length, 2 bytes LE][payload].
# Selectors follow the Call enum of rm_grpc_fuzz.cc. Ids are those a fresh RM
# of the target issues: its virtual clock starts at 1800000000000 ms.
# Usage: tests/fuzz/make_rm_grpc_seeds.sh   (needs protoc; rerun after a proto change)
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
out=$root/tests/fuzz/corpus/rm_grpc
mkdir -p "$out"

# Selectors (enum Call in rm_grpc_fuzz.cc).
REGISTER_NODE=0 NODE_HEARTBEAT=1 UNREGISTER_NODE=2 SUBMIT_APP=3 GET_APP=4 LIST_APPS=5 KILL_APP=6
LIST_TELEMETRY=7 LIST_NODES=8 CLUSTER_METRICS=9 NEW_RESERVATION=10 SUBMIT_RESERVATION=11
UPDATE_RESERVATION=12 DELETE_RESERVATION=13 LIST_RESERVATIONS=14 GET_PLAN=15 REGISTER_AM=16
ALLOCATE=17 FINISH_AM=18 TICK=19

APP=application_1800000000000_0001
RES=reservation_1800000000000_0001
# Arrival one hour after the target's start, deadline half an hour later.
ARRIVAL=1800003600000 DEADLINE=1800005400000

# call SELECTOR MESSAGE TEXT: appends one record to $seed.
call() {
  local sel=$1 msg=$2 text=$3 payload len
  payload=$(mktemp)
  printf '%s' "$text" | protoc --proto_path="$root/proto" --encode="morpheus.v1.$msg" \
    "$root"/proto/morpheus/v1/*.proto >"$payload"
  len=$(stat -c %s "$payload")
  printf "\\x$(printf %02x "$sel")\\x$(printf %02x $((len & 255)))\\x$(printf %02x $((len >> 8)))" >>"$seed"
  cat "$payload" >>"$seed"
  rm -f "$payload"
}
# tick MS: advances the virtual clock (4 bytes LE) and runs liveness + expiry.
tick() {
  local ms=$1
  printf "\\x$(printf %02x $TICK)\\x04\\x00" >>"$seed"
  printf "\\x$(printf %02x $((ms & 255)))\\x$(printf %02x $(((ms >> 8) & 255)))\\x$(printf %02x $(((ms >> 16) & 255)))\\x$(printf %02x $(((ms >> 24) & 255)))" >>"$seed"
}
begin() { seed=$out/$1; : >"$seed"; }

NODE='node_id: "n1" container_manager_address: "127.0.0.1:1" http_address: "127.0.0.1:2"
  total { memory_mib: 8192 vcores: 8 } attributes { key: "rack" value: "r1" } version: "0.1.0"'
STAGE='stages { capability { memory_mib: 1024 vcores: 1 } num_containers: 4 min_concurrency: 2 duration_ms: 600000 }'

begin nodes
call $REGISTER_NODE RegisterNodeRequest "$NODE"
call $NODE_HEARTBEAT NodeHeartbeatRequest 'node_id: "n1" sequence: 1 used { memory_mib: 0 vcores: 0 }'
call $LIST_NODES ListNodesRequest 'include_lost: true'
call $CLUSTER_METRICS GetClusterMetricsRequest ''
call $UNREGISTER_NODE UnregisterNodeRequest 'node_id: "n1"'
call $REGISTER_NODE RegisterNodeRequest 'node_id: "n2" total { memory_mib: -1 vcores: 2 }'

begin reservations
call $REGISTER_NODE RegisterNodeRequest "$NODE"
call $NEW_RESERVATION NewReservationRequest ''
call $SUBMIT_RESERVATION SubmitReservationRequest "reservation_id: \"$RES\" queue: \"default\" user: \"alice\"
  definition { arrival_ms: $ARRIVAL deadline_ms: $DEADLINE name: \"etl\" interpreter: R_ALL $STAGE
  recurrence_key: \"etl\" reprovision_budget_container_ms: 600000 }"
call $LIST_RESERVATIONS ListReservationsRequest 'include_allocations: true'
call $GET_PLAN GetPlanRequest "start_ms: 1800000000000 end_ms: 1800007200000"
call $UPDATE_RESERVATION UpdateReservationRequest "reservation_id: \"$RES\" user: \"bob\"
  definition { arrival_ms: $ARRIVAL deadline_ms: $DEADLINE interpreter: R_ORDER_NO_GAP $STAGE $STAGE }"
call $DELETE_RESERVATION DeleteReservationRequest "reservation_id: \"$RES\" user: \"alice\""

begin periodic-node-loss
call $REGISTER_NODE RegisterNodeRequest "$NODE"
call $SUBMIT_RESERVATION SubmitReservationRequest "reservation_id: \"p1\" user: \"alice\"
  definition { arrival_ms: $ARRIVAL deadline_ms: $DEADLINE period_ms: 86400000 interpreter: R_ANY $STAGE }"
tick 30000
call $LIST_RESERVATIONS ListReservationsRequest 'queue: "default"'
call $REGISTER_NODE RegisterNodeRequest "$NODE"
tick 4000000

begin applications
call $REGISTER_NODE RegisterNodeRequest "$NODE"
call $SUBMIT_APP SubmitApplicationRequest 'name: "job" user: "alice" queue: "root.default"
  am_resource { memory_mib: 1024 vcores: 1 } am_launch_context { command: "/bin/true" }
  max_am_attempts: 2 tags { key: "k" value: "v" }'
call $NODE_HEARTBEAT NodeHeartbeatRequest 'node_id: "n1" sequence: 1'
call $REGISTER_AM RegisterApplicationMasterRequest "application_id: \"$APP\" am_token: \"@am\""
call $ALLOCATE AllocateRequest "application_id: \"$APP\" am_token: \"@am\" progress: 0.1
  asks { request_id: \"tasks\" priority: 1 capability { memory_mib: 1024 vcores: 1 } count: 3 gang_size: 3
         constraints { key: \"rack\" values: \"r1\" hard: true } }"
call $NODE_HEARTBEAT NodeHeartbeatRequest 'node_id: "n1" sequence: 2'
call $ALLOCATE AllocateRequest "application_id: \"$APP\" am_token: \"@am\" progress: 0.5 response_id: 1"
call $FINISH_AM FinishApplicationMasterRequest "application_id: \"$APP\" am_token: \"@am\" final_status: FINAL_STATUS_SUCCEEDED diagnostics: \"done\"
  files_read { path: \"/in\" time_ms: 1800000001000 }"
call $GET_APP GetApplicationRequest "application_id: \"$APP\""
call $LIST_APPS ListApplicationsRequest ''
call $LIST_TELEMETRY ListAppTelemetryRequest ''

begin kill
call $SUBMIT_APP SubmitApplicationRequest 'name: "job" user: "alice" am_resource { memory_mib: 512 vcores: 1 }
  am_launch_context { command: "sleep" args: "60" }'
call $KILL_APP KillApplicationRequest "application_id: \"$APP\" user: \"bob\" reason: \"not mine\""
call $KILL_APP KillApplicationRequest "application_id: \"$APP\" user: \"admin\""
call $SUBMIT_APP SubmitApplicationRequest 'name: "" user: "alice"'

ls -l "$out"
