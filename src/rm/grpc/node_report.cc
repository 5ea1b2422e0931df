#include "rm/grpc/node_report.h"

#include "common/wire.h"

namespace morpheus::rm {

void nodeReport(const NodeInfo& n, v1::NodeReport* r) {
  r->set_node_id(n.id.value());
  r->set_container_manager_address(n.container_manager_address);
  r->set_http_address(n.http_address);
  toProto(n.total, r->mutable_total());
  toProto(n.used, r->mutable_used());
  for (const auto& [k, v] : n.attributes) {
    auto* a = r->add_attributes();
    a->set_key(k);
    a->set_value(v);
  }
  switch (n.admin.state) {
    case NodeAdminState::kDecommissioned:
      r->set_state(v1::NodeReport::NODE_STATE_DECOMMISSIONED);
      break;
    case NodeAdminState::kDecommissioning:
      r->set_state(n.live ? v1::NodeReport::NODE_STATE_DECOMMISSIONING
                          : v1::NodeReport::NODE_STATE_LOST);
      r->set_decommission_deadline_ms(toEpochMs(n.admin.deadline));
      break;
    default:
      r->set_state(n.live ? v1::NodeReport::NODE_STATE_RUNNING : v1::NodeReport::NODE_STATE_LOST);
  }
  r->set_drained(n.admin.state != NodeAdminState::kInService);
  r->set_last_heartbeat_ms(toEpochMs(n.last_heartbeat));
  r->set_num_containers(n.num_containers);
  r->set_used_rss_mib(n.used_rss_mib);
  r->set_used_cpu_vcores(n.used_cpu_vcores);
}

}  // namespace morpheus::rm
