// RmRuntime's harvesting hook (issue #18), apart from runtime.cc so the
// shared file keeps one call.
#include <algorithm>

#include "common/wire.h"
#include "rm/runtime.h"

namespace morpheus::rm {

void RmRuntime::onHarvestReport(const Node& node, const v1::NodeHeartbeatRequest& req,
                                TimePoint now) {
  if (!req.has_primary_usage()) return;
  const auto& u = req.primary_usage();
  const double cpu_cap = static_cast<double>(std::max<int64_t>(1, node.total.vcores()));
  const double mem_cap = static_cast<double>(std::max<int64_t>(1, node.total.memoryMib()));
  std::string tenant = u.tenant().empty() ? node.id.value() : u.tenant();
  harvest_history_.record(node.id, tenant, now, u.cpu_vcores() / cpu_cap,
                          static_cast<double>(u.memory_mib()) / mem_cap);
  if (!req.has_harvest_offer()) return;
  // Secondary containers get only what the primary tenant leaves: the
  // scheduler places nothing beyond the NM's offer (never beyond the
  // registered total).
  Resource offer = Resource::min(fromProto(req.harvest_offer()), node.total);
  if (Status st = sched_->setNodeTotal(node.id, offer); !st.isOk()) {
    logLater(spdlog::level::warn, "node {}: harvest offer {} not applied: {}", node.id.value(),
             offer.toString(), st.message());
  }
}

}  // namespace morpheus::rm
