// The NM's metrics, declared in one place: one struct per component, built in
// that component's constructor on the daemon's registry (common/metrics.h
// says why); every counter exists at 0 from the start. declareNmMetrics
// builds them all, for `morpheus-nm --print-metrics` and
// docs/reference/metrics.md. Thread-safety: updates are lock-free.
#pragma once

#include "common/metrics.h"

namespace morpheus::nm {

// ContainerRuntime: container lifecycle on this node.
struct ContainerMetrics {
  explicit ContainerMetrics(MetricsRegistry& metrics);
  Counter& launched;
  Counter& launch_failed;
  Counter& completed;
  Counter& memory_killed;
};

// HarvestMonitor (Zhang et al. OSDI'16): the primary tenant's guard.
struct HarvestMetrics {
  explicit HarvestMetrics(MetricsRegistry& metrics);
  Counter& sample_failures;
  Counter& kills;
  Counter& throttle_failures;
};

// NodeAgent: heartbeats to the RM.
struct NodeAgentMetrics {
  explicit NodeAgentMetrics(MetricsRegistry& metrics);
  Counter& heartbeats;
  Counter& heartbeat_failures;
};

// Builds every struct above on `metrics`.
void declareNmMetrics(MetricsRegistry& metrics);

}  // namespace morpheus::nm
