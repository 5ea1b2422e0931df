// The RM's latency histograms, declared in one place: wall time
// of the hot paths in seconds (Prometheus base unit), buckets
// latencyBucketsSeconds() (100 us .. 10 s). Each is fed by one ScopedTimer
// line where the work happens:
//   morpheus_rm_node_heartbeat_duration_seconds          NodeHeartbeat handling
//                                                        (validation, liveness, scheduling)
//   morpheus_rm_allocate_duration_seconds                an AM's Allocate call
//   morpheus_rm_reservation_admission_duration_seconds   ReservationManager::submit
//                                                        (validation, planning, persisting)
//   morpheus_rm_dra_decision_duration_seconds            one DRA review of a reservation
//                                                        (Morpheus §7: policy decision and grant)
// Constructing RmLatencyMetrics again on the same registry yields the same
// histograms. Thread-safe (Histogram::observe is lock-free).
#pragma once

#include "common/metrics.h"

namespace morpheus::rm {

struct RmLatencyMetrics {
  explicit RmLatencyMetrics(MetricsRegistry& metrics);
  Histogram& heartbeat;
  Histogram& allocate;
  Histogram& admission;
  Histogram& dra_decision;
};

}  // namespace morpheus::rm
