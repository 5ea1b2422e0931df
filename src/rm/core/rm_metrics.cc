#include "rm/core/rm_metrics.h"

#include "common/status.h"
#include "rm/core/app_manager.h"

namespace morpheus::rm {

RmLatencyMetrics::RmLatencyMetrics(MetricsRegistry& m)
    : heartbeat(m.histogram("morpheus_rm_node_heartbeat_duration_seconds",
                            "Time to handle one node heartbeat, seconds", latencyBucketsSeconds())),
      allocate(m.histogram("morpheus_rm_allocate_duration_seconds",
                           "Time to handle one AM Allocate call, seconds",
                           latencyBucketsSeconds())),
      admission(m.histogram("morpheus_rm_reservation_admission_duration_seconds",
                            "Time to admit or refuse one reservation, seconds",
                            latencyBucketsSeconds())),
      dra_decision(m.histogram("morpheus_rm_dra_decision_duration_seconds",
                               "Time of one DRA review of a reservation, seconds",
                               latencyBucketsSeconds())) {}

namespace {
Gauge& nodesAdmin(MetricsRegistry& m, const char* state) {
  return m.gauge("morpheus_rm_nodes_admin",
                 "Registered nodes by admin state (drained, decommissioning, decommissioned); "
                 "in-service nodes are not counted here",
                 {{"state", state}});
}
}  // namespace

RmNodeMetrics::RmNodeMetrics(MetricsRegistry& m)
    : registrations(m.counter("morpheus_rm_node_registrations_total", "Node registrations")),
      heartbeats(m.counter("morpheus_rm_node_heartbeats_total", "Node heartbeats received")),
      lost_total(m.counter("morpheus_rm_nodes_lost_total", "Nodes declared lost")),
      live(m.gauge("morpheus_rm_nodes_live", "Live nodes")),
      lost(m.gauge("morpheus_rm_nodes_lost", "Nodes declared lost and not re-registered")),
      drained(nodesAdmin(m, "drained")),
      decommissioning(nodesAdmin(m, "decommissioning")),
      decommissioned(nodesAdmin(m, "decommissioned")),
      capacity_memory_bytes(
          m.gauge("morpheus_rm_cluster_capacity_memory_bytes", "Memory of live nodes, bytes")),
      capacity_vcores(m.gauge("morpheus_rm_cluster_capacity_vcores", "Vcores of live nodes")) {}

namespace {
Counter& reloads(MetricsRegistry& m, const char* result) {
  return m.counter("morpheus_rm_config_reloads_total",
                   "Config reloads (morpheusctl admin reload, SIGHUP), by result: applied, or "
                   "refused (invalid; the running config stayed)",
                   {{"result", result}});
}
}  // namespace

ConfigReloadMetrics::ConfigReloadMetrics(MetricsRegistry& m)
    : applied(reloads(m, "applied")), refused(reloads(m, "refused")) {}

namespace {
Counter& planningRefused(MetricsRegistry& m, const char* reason) {
  return m.counter("morpheus_rm_planning_refused_total",
                   "Submit/update requests refused by the planning lane's bounds, by reason "
                   "(per-user: rm.max-planning-requests-per-user, total: rm.max-planning-requests)",
                   {{"reason", reason}});
}
Gauge& reservationsActive(MetricsRegistry& m, const char* kind) {
  return m.gauge("morpheus_rm_reservations_active", "Admitted reservations", {{"kind", kind}});
}
}  // namespace

ReservationMetrics::ReservationMetrics(MetricsRegistry& m)
    : admitted(m.counter("morpheus_rm_reservations_admitted_total", "Reservations admitted")),
      rejections(m.counterFamily("morpheus_rm_reservation_rejections_total",
                                 "Reservations refused, by status code", {"code"})),
      at_risk_total(
          m.counter("morpheus_rm_reservations_at_risk_total",
                    "One-off reservations that lost their capacity backing (kept, not deleted)")),
      planning_refused_per_user(planningRefused(m, "per-user")),
      planning_refused_total(planningRefused(m, "total")),
      planning_conflicts(
          m.counter("morpheus_rm_planning_conflicts_total",
                    "Plans discarded because the plan changed while they were computed")),
      planning_running(m.gauge("morpheus_rm_planning_running",
                               "1 while a reservation request is planned on a snapshot "
                               "of the plan (off the scheduler's lock)")),
      planning_requests(
          m.gauge("morpheus_rm_planning_requests",
                  "Reservation submit/update requests waiting for or holding the planning lane")),
      active_periodic(reservationsActive(m, "periodic")),
      active_one_off(reservationsActive(m, "one-off")),
      degraded(m.gauge("morpheus_rm_reservations_degraded",
                       "Periodic reservations whose guarantee lost capacity backing")),
      at_risk(m.gauge("morpheus_rm_reservations_at_risk",
                      "One-off reservations kept over capacity after a capacity drop")),
      plan_capacity_memory_bytes(
          m.gauge("morpheus_rm_plan_capacity_memory_bytes", "Plan capacity, bytes of memory")),
      plan_capacity_vcores(m.gauge("morpheus_rm_plan_capacity_vcores", "Plan capacity, vcores")) {
  // The codes a refused admission has (planning finds no room, or the request
  // is out of bounds), so that their series exist from the start.
  for (StatusCode code : {StatusCode::kInfeasible, StatusCode::kInvalidArgument}) {
    rejections.with({{"code", statusCodeName(code)}});
  }
}

DraMetrics::DraMetrics(MetricsRegistry& m)
    : grants(
          m.counter("morpheus_rm_dra_grants_total", "DRA grants (swaps of the extra allocation)")),
      extra_container_seconds(
          m.counter("morpheus_rm_dra_extra_container_seconds_total",
                    "Extra container-seconds granted by DRA (charged to owners' budgets)")),
      denials(m.counterFamily(
          "morpheus_rm_dra_denials_total",
          "DRA reviews whose request was refused in whole or in part, by reason", {"reason"})),
      denied_budget(denials.with({{"reason", "budget"}})),
      denied_plan_full(denials.with({{"reason", "plan-full"}})) {}

Counter& DraMetrics::denial(const std::string& reason) {
  if (reason == "budget") return denied_budget;
  if (reason == "plan-full") return denied_plan_full;
  return denials.with({{"reason", reason}});
}

namespace {
Gauge& appsIn(MetricsRegistry& m, AppState s) {
  return m.gauge("morpheus_rm_apps", "Applications by state", {{"state", toString(s)}});
}
}  // namespace

AppMetrics::AppMetrics(MetricsRegistry& m)
    : by_state{&appsIn(m, AppState::kSubmitted), &appsIn(m, AppState::kRunning),
               &appsIn(m, AppState::kFinished), &appsIn(m, AppState::kFailed),
               &appsIn(m, AppState::kKilled)},
      refused_user_limit(m.counter("morpheus_rm_apps_refused_user_limit_total",
                                   "Application submissions refused at a per-user bound")) {}

Gauge& AppMetrics::state(AppState s) { return *by_state.at(static_cast<size_t>(s)); }

RuntimeMetrics::RuntimeMetrics(MetricsRegistry& m)
    : containers_allocated(
          m.counter("morpheus_rm_containers_allocated_total", "Containers allocated")),
      containers_preempted(m.counter("morpheus_rm_containers_preempted_total",
                                     "Borrowed containers killed for a reservation")),
      am_attempts_failed(m.counter("morpheus_rm_am_attempts_failed_total",
                                   "AM attempts that ended without finishing")),
      container_statuses_refused(
          m.counter("morpheus_rm_container_statuses_refused_total",
                    "Container statuses a node sent for a container allocated to another node")) {}

StrandMetrics::StrandMetrics(MetricsRegistry& m)
    : queued(m.gauge("morpheus_rm_strand_queued",
                     "Scheduling tasks (node heartbeats) waiting for the RM's strand")),
      background_queued(m.gauge(
          "morpheus_rm_strand_background_queued",
          "Background tasks (scheduling a node after its heartbeat) waiting for the RM's strand")),
      refused(m.counter("morpheus_rm_strand_refused_total",
                        "Scheduling tasks refused because the RM's strand queue was full")) {}

ResourceMetrics::ResourceMetrics(MetricsRegistry& m)
    : allocated_memory_bytes(m.gauge("morpheus_rm_cluster_allocated_memory_bytes",
                                     "Memory held by running containers, bytes")),
      allocated_vcores(
          m.gauge("morpheus_rm_cluster_allocated_vcores", "Vcores held by running containers")),
      used_memory_bytes(m.gauge("morpheus_rm_cluster_used_memory_bytes",
                                "Resident memory the live nodes' containers use, as the NMs "
                                "measure it, bytes")),
      used_vcores(m.gauge("morpheus_rm_cluster_used_vcores",
                          "CPU the live nodes' containers use, as the NMs measure it, vcores")),
      pending_memory_bytes(m.gauge("morpheus_rm_cluster_pending_memory_bytes",
                                   "Memory the apps' outstanding asks want, bytes")),
      pending_vcores(
          m.gauge("morpheus_rm_cluster_pending_vcores", "Vcores the apps' outstanding asks want")),
      pending_containers(m.gauge("morpheus_rm_cluster_pending_containers",
                                 "Containers the apps' outstanding asks want")),
      reserved_memory_bytes(m.gauge("morpheus_rm_cluster_reserved_memory_bytes",
                                    "Memory the plan guarantees reservations now, bytes")),
      reserved_vcores(m.gauge("morpheus_rm_cluster_reserved_vcores",
                              "Vcores the plan guarantees reservations now")),
      containers(m.gauge("morpheus_rm_containers_running", "Containers allocated and not ended")),
      node_reservations(m.gauge("morpheus_rm_node_reservations_active",
                                "Nodes reserved for one ad-hoc app until its container fits "
                                "their free room (Carbyne's leftover: its shortest job)")),
      queue_allocated_memory_bytes(m.gaugeFamily(
          "morpheus_rm_queue_allocated_memory_bytes",
          "Memory held by the ad-hoc queue's containers (descendants included), bytes", {"queue"})),
      queue_allocated_vcores(m.gaugeFamily(
          "morpheus_rm_queue_allocated_vcores",
          "Vcores held by the ad-hoc queue's containers (descendants included)", {"queue"})),
      queue_pending_memory_bytes(
          m.gaugeFamily("morpheus_rm_queue_pending_memory_bytes",
                        "Memory the ad-hoc queue's outstanding asks want, bytes", {"queue"})),
      queue_pending_vcores(m.gaugeFamily("morpheus_rm_queue_pending_vcores",
                                         "Vcores the ad-hoc queue's outstanding asks want",
                                         {"queue"})),
      queue_pending_containers(m.gaugeFamily("morpheus_rm_queue_pending_containers",
                                             "Containers the ad-hoc queue's outstanding asks want",
                                             {"queue"})),
      queue_apps(m.gaugeFamily("morpheus_rm_queue_apps",
                               "Apps in the ad-hoc queue's scheduler (descendants included)",
                               {"queue"})),
      reservation_guaranteed_memory_bytes(m.gaugeFamily(
          "morpheus_rm_reservation_guaranteed_memory_bytes",
          "Memory the plan guarantees the reservation now, bytes (reservations in their window)",
          {"reservation", "queue"})),
      reservation_guaranteed_vcores(m.gaugeFamily("morpheus_rm_reservation_guaranteed_vcores",
                                                  "Vcores the plan guarantees the reservation now",
                                                  {"reservation", "queue"})),
      reservation_allocated_memory_bytes(
          m.gaugeFamily("morpheus_rm_reservation_allocated_memory_bytes",
                        "Memory held by the containers of the reservation's apps, bytes",
                        {"reservation", "queue"})),
      reservation_allocated_vcores(m.gaugeFamily(
          "morpheus_rm_reservation_allocated_vcores",
          "Vcores held by the containers of the reservation's apps", {"reservation", "queue"})),
      reservation_pending_memory_bytes(
          m.gaugeFamily("morpheus_rm_reservation_pending_memory_bytes",
                        "Memory the outstanding asks of the reservation's apps want, bytes",
                        {"reservation", "queue"})),
      reservation_pending_vcores(m.gaugeFamily(
          "morpheus_rm_reservation_pending_vcores",
          "Vcores the outstanding asks of the reservation's apps want", {"reservation", "queue"})) {
}

void declareRmMetrics(MetricsRegistry& metrics) {
  RmLatencyMetrics latency(metrics);
  RmNodeMetrics nodes(metrics);
  ConfigReloadMetrics reloads(metrics);
  ReservationMetrics reservations(metrics);
  DraMetrics dra(metrics);
  AppMetrics apps(metrics);
  RuntimeMetrics runtime(metrics);
  StrandMetrics strand(metrics);
  ResourceMetrics resources(metrics);
}

}  // namespace morpheus::rm
