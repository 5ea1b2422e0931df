#include "nodemanager/heartbeat_report.h"

#include <algorithm>

#include "common/status.h"
#include "common/wire.h"
#include "nodemanager/container_service.h"

namespace morpheus::nm {

HeartbeatReporter::HeartbeatReporter(int full_every, uint64_t phase_seed)
    : full_every_(full_every),
      phase_(static_cast<int>(phase_seed % static_cast<uint64_t>(std::max(1, full_every)))) {
  MORPHEUS_CHECK(full_every >= 1, "HeartbeatReporter needs full_every >= 1");
}

void HeartbeatReporter::reset() {
  force_full_ = true;
  known_.clear();
}

void HeartbeatReporter::build(const std::vector<ContainerSnapshot>& snapshot,
                              v1::NodeHeartbeatRequest* req) {
  built_full_ = force_full_ || since_full_ + 1 >= full_every_;
  built_listed_.clear();
  built_running_.clear();
  Resource used;
  int64_t rss = 0;
  double cpu = 0;
  for (const auto& c : snapshot) {
    if (!c.running) {
      toProto(c, req->add_container_statuses());
      continue;
    }
    used += c.resource;
    rss += c.rss_mib;
    cpu += c.cpu_vcores;
    built_running_.insert(c.id.value());
    if (built_full_ || !known_.count(c.id.value())) {
      toProto(c, req->add_container_statuses());
      built_listed_.push_back(c.id.value());
    }
  }
  req->set_changes_only(!built_full_);
  req->set_running_containers(static_cast<int32_t>(built_running_.size()));
  toProto(used, req->mutable_used());
  req->set_used_rss_mib(rss);
  req->set_used_cpu_vcores(cpu);
}

void HeartbeatReporter::delivered() {
  if (built_full_) {
    since_full_ = force_full_ ? phase_ : 0;
    force_full_ = false;
    known_ = built_running_;
    return;
  }
  since_full_++;
  for (auto it = known_.begin(); it != known_.end();) {
    it = built_running_.count(*it) ? std::next(it) : known_.erase(it);
  }
  known_.insert(built_listed_.begin(), built_listed_.end());
}

}  // namespace morpheus::nm
