// The RM's metrics, declared in one place: one struct per component, built in
// that component's constructor on the daemon's registry (common/metrics.h
// says why). Names are in base units (bytes, seconds); every counter exists
// at 0 from the start. declareRmMetrics builds them all, for
// `morpheus-rm --print-metrics` and docs/reference/metrics.md.
//
// Constructing a struct again on the same registry yields the same metrics.
// Thread-safety: updates are lock-free (atomics); a CounterFamily/GaugeFamily
// lookup (with) takes the registry's lock.
#pragma once

#include <array>
#include <string>

#include "common/metrics.h"

namespace morpheus::rm {

enum class AppState;  // app_manager.h

// Latency histograms of the hot paths, in seconds, buckets
// latencyBucketsSeconds() (100 us .. 10 s). Each is fed by one ScopedTimer
// line where the work happens:
//   morpheus_rm_node_heartbeat_duration_seconds          NodeHeartbeat handling
//                                                        (validation, liveness, scheduling)
//   morpheus_rm_allocate_duration_seconds                an AM's Allocate call
//   morpheus_rm_reservation_admission_duration_seconds   ReservationManager::submit
//                                                        (validation, planning, persisting)
//   morpheus_rm_dra_decision_duration_seconds            one DRA review of a reservation
//                                                        (Morpheus §7: policy decision and grant)
struct RmLatencyMetrics {
  explicit RmLatencyMetrics(MetricsRegistry& metrics);
  Histogram& heartbeat;
  Histogram& allocate;
  Histogram& admission;
  Histogram& dra_decision;
};

// RmCore: node membership and the live capacity.
struct RmNodeMetrics {
  explicit RmNodeMetrics(MetricsRegistry& metrics);
  Counter& registrations;
  Counter& heartbeats;
  Counter& lost_total;
  Gauge& live;
  Gauge& lost;
  // Registered nodes by admin state (morpheusctl node drain|decommission):
  // morpheus_rm_nodes_admin{state="drained"|"decommissioning"|"decommissioned"}.
  Gauge& drained;
  Gauge& decommissioning;
  Gauge& decommissioned;
  Gauge& capacity_memory_bytes;
  Gauge& capacity_vcores;
};

// ConfigReloader: `morpheusctl admin reload` and SIGHUP.
struct ConfigReloadMetrics {
  explicit ConfigReloadMetrics(MetricsRegistry& metrics);
  Counter& applied;  // morpheus_rm_config_reloads_total{result="applied"}
  Counter& refused;  // {result="refused"}: the running config stayed
};

// ReservationManager: admission, the planning lane and the plan.
struct ReservationMetrics {
  explicit ReservationMetrics(MetricsRegistry& metrics);
  Counter& admitted;
  CounterFamily rejections;  // {code}: the status code name of the refusal
  Counter& at_risk_total;
  Counter& planning_refused_per_user;
  Counter& planning_refused_total;
  Counter& planning_conflicts;
  Gauge& planning_running;
  Gauge& planning_requests;
  Gauge& active_periodic;
  Gauge& active_one_off;
  Gauge& degraded;
  Gauge& at_risk;
  Gauge& plan_capacity_memory_bytes;
  Gauge& plan_capacity_vcores;
};

// DraMonitor (Morpheus §7): grants and denials.
struct DraMetrics {
  explicit DraMetrics(MetricsRegistry& metrics);
  // The counter of a denial reason: "budget" or "plan-full" (others are
  // counted too, through the family).
  Counter& denial(const std::string& reason);
  Counter& grants;
  Counter& extra_container_seconds;
  CounterFamily denials;  // {reason}
  Counter& denied_budget;
  Counter& denied_plan_full;
};

// AppManager: applications by state and admission refusals.
struct AppMetrics {
  explicit AppMetrics(MetricsRegistry& metrics);
  Gauge& state(AppState s);
  std::array<Gauge*, 5> by_state;  // indexed by AppState
  Counter& refused_user_limit;
};

// RmRuntime: containers and AM attempts.
struct RuntimeMetrics {
  explicit RuntimeMetrics(MetricsRegistry& metrics);
  Counter& containers_allocated;
  Counter& containers_preempted;
  Counter& am_attempts_failed;
  Counter& container_statuses_refused;
};

// Strand: the RM's scheduling queue.
struct StrandMetrics {
  explicit StrandMetrics(MetricsRegistry& metrics);
  Gauge& queued;
  Gauge& background_queued;
  Counter& refused;
};

// Resources of the cluster, its queues and its reservations, set at scrape
// time by ResourceCollector (runtime/resource_collector.h). Memory in bytes,
// CPU in vcores. "allocated" is what containers hold, "used" what the NMs
// measure (resident memory, CPU), "pending" what the apps' asks still want,
// "reserved" what the plan guarantees reservations now.
struct ResourceMetrics {
  explicit ResourceMetrics(MetricsRegistry& metrics);
  Gauge& allocated_memory_bytes;
  Gauge& allocated_vcores;
  Gauge& used_memory_bytes;
  Gauge& used_vcores;
  Gauge& pending_memory_bytes;
  Gauge& pending_vcores;
  Gauge& pending_containers;
  Gauge& reserved_memory_bytes;
  Gauge& reserved_vcores;
  Gauge& containers;
  // Nodes reserved for one ad-hoc app whose container does not fit their
  // free room yet (sched::NodeReservationOptions; Carbyne's leftover).
  Gauge& node_reservations;
  // Per ad-hoc queue {queue}: the leaf or parent path (root.a.b).
  GaugeFamily queue_allocated_memory_bytes;
  GaugeFamily queue_allocated_vcores;
  GaugeFamily queue_pending_memory_bytes;
  GaugeFamily queue_pending_vcores;
  GaugeFamily queue_pending_containers;
  GaugeFamily queue_apps;
  // Per reservation in its window now {reservation, queue}.
  GaugeFamily reservation_guaranteed_memory_bytes;
  GaugeFamily reservation_guaranteed_vcores;
  GaugeFamily reservation_allocated_memory_bytes;
  GaugeFamily reservation_allocated_vcores;
  GaugeFamily reservation_pending_memory_bytes;
  GaugeFamily reservation_pending_vcores;
};

// Builds every struct above on `metrics`. The RM's other metrics are declared
// by the libraries that do not depend on this one: TelemetryMetrics
// (runtime/telemetry.h) and HaMetrics (ha/standby_front.h).
void declareRmMetrics(MetricsRegistry& metrics);

}  // namespace morpheus::rm
