// Sets the RM's resource gauges (ResourceMetrics, rm_metrics.h) at each
// scrape of /metrics, from the live nodes (RmCore), the scheduler core
// (RmRuntime::schedulerTotals) and the plan (ReservationManager::guaranteesAt):
// the cluster's allocated, used, pending and reserved resources, each ad-hoc
// queue's allocated and pending, each reservation's guarantee, allocation and
// pending asks. Per-queue and per-reservation series are replaced as a whole
// at each scrape, so a queue or reservation that is gone leaves /metrics.
//
// Read-only: it takes the components' locks as their other readers do (the
// web UI) and never changes a scheduling decision. Cost per scrape: one pass
// over the nodes, the queues and the reservations.
//
// Thread-safety: collect() runs on the scraping thread through the registry
// (MetricsRegistry::addCollector); the components it reads are thread-safe.
#pragma once

#include <memory>

#include "common/clock.h"
#include "common/metrics.h"
#include "rm/core/reservation_manager.h"
#include "rm/core/rm_core.h"
#include "rm/core/rm_metrics.h"
#include "rm/runtime/runtime.h"

namespace morpheus::rm {

class ResourceCollector {
 public:
  // Every argument must outlive the collector; it unregisters itself when
  // destroyed (waiting for a scrape that runs it).
  ResourceCollector(MetricsRegistry& metrics, const RmCore& core, const RmRuntime& runtime,
                    const ReservationManager& reservations, Clock& clock);
  ResourceCollector(const ResourceCollector&) = delete;
  ResourceCollector& operator=(const ResourceCollector&) = delete;

  // Sets every gauge now (render() calls it; public for tests).
  void collect();

 private:
  ResourceMetrics m_;
  const RmCore& core_;
  const RmRuntime& runtime_;
  const ReservationManager& reservations_;
  Clock& clock_;
  std::unique_ptr<MetricsRegistry::Collector> handle_;  // last: unregistered first
};

}  // namespace morpheus::rm
