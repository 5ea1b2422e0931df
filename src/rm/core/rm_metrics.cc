#include "rm/core/rm_metrics.h"

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

}  // namespace morpheus::rm
