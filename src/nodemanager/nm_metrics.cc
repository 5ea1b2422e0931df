#include "nodemanager/nm_metrics.h"

namespace morpheus::nm {

ContainerMetrics::ContainerMetrics(MetricsRegistry& m)
    : launched(m.counter("morpheus_nm_containers_launched_total", "Containers launched")),
      launch_failed(m.counter("morpheus_nm_containers_launch_failed_total",
                              "Containers whose command could not run")),
      completed(m.counter("morpheus_nm_containers_completed_total", "Containers completed")),
      memory_killed(m.counter("morpheus_nm_containers_memory_killed_total",
                              "Containers killed over their memory")) {}

HarvestMetrics::HarvestMetrics(MetricsRegistry& m)
    : sample_failures(m.counter("morpheus_nm_harvest_sample_failures_total",
                                "Failed samples of the primary tenant's usage")),
      kills(m.counter("morpheus_nm_harvest_kills_total",
                      "Secondary containers killed because the primary tenant needed the "
                      "resources")),
      throttle_failures(m.counter("morpheus_nm_harvest_throttle_failures_total",
                                  "CPU cap writes that failed (container gone or no cpu "
                                  "controller)")) {}

NodeAgentMetrics::NodeAgentMetrics(MetricsRegistry& m)
    : heartbeats(m.counter("morpheus_nm_heartbeats_total", "Heartbeats sent")),
      heartbeat_failures(m.counter("morpheus_nm_heartbeat_failures_total", "Failed heartbeats")) {}

void declareNmMetrics(MetricsRegistry& metrics) {
  ContainerMetrics containers(metrics);
  HarvestMetrics harvest(metrics);
  NodeAgentMetrics agent(metrics);
}

}  // namespace morpheus::nm
