#include "nodemanager/harvest_guard.h"

#include <spdlog/spdlog.h>

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <sstream>

#include "common/wire.h"
#include "nodemanager/container_runtime.h"

namespace morpheus::nm {
namespace {

// Newest first: later start, then the larger id for a deterministic order.
void sortNewestFirst(std::vector<SecondaryContainer>* v) {
  std::sort(v->begin(), v->end(), [](const SecondaryContainer& a, const SecondaryContainer& b) {
    if (a.start != b.start) return a.start > b.start;
    return b.id < a.id;
  });
}

}  // namespace

HarvestDecision decideHarvest(const HarvestLimits& limits, const std::string& tenant,
                              const PrimaryUsage& primary, std::vector<SecondaryContainer> running,
                              Millis cpu_over_for) {
  HarvestDecision d;
  const int64_t mem_left =
      limits.capacity.memoryMib() - primary.memory_mib - limits.reserve.memoryMib();
  d.cpu_left =
      static_cast<double>(limits.capacity.vcores() - limits.reserve.vcores()) - primary.cpu_vcores;
  d.offer = Resource(std::max<int64_t>(0, mem_left),
                     std::max<int64_t>(0, static_cast<int64_t>(std::floor(d.cpu_left))));
  sortNewestFirst(&running);
  int64_t mem = 0, vcores = 0;
  for (const auto& c : running) {
    mem += c.resource.memoryMib();
    vcores += c.resource.vcores();
  }
  const bool cpu_kill =
      static_cast<double>(vcores) > d.cpu_left && cpu_over_for >= limits.cpu_kill_after;
  for (const auto& c : running) {
    bool mem_over = mem > mem_left;
    bool cpu_over = cpu_kill && static_cast<double>(vcores) > d.cpu_left;
    if (!mem_over && !cpu_over) break;
    d.kill.push_back(c.id);
    mem -= c.resource.memoryMib();
    vcores -= c.resource.vcores();
  }
  d.throttle = static_cast<double>(vcores) > d.cpu_left;
  std::ostringstream why;
  why.precision(3);
  why << "preempted by harvesting: the primary tenant '" << tenant
      << "' needed the resources (primary uses " << primary.memory_mib << " MiB, "
      << primary.cpu_vcores << " vcores; secondary containers may use " << d.offer.toString()
      << ")";
  d.why = why.str();
  return d;
}

HarvestMonitor::HarvestMonitor(HarvestOptions opts, std::string tenant, Resource capacity,
                               std::unique_ptr<PrimaryUsageSource> source,
                               ContainerRuntime& runtime, MetricsRegistry& metrics,
                               const Clock& clock)
    : opts_(std::move(opts)),
      tenant_(std::move(tenant)),
      limits_{capacity, opts_.reserve, opts_.cpu_kill_after},
      source_(std::move(source)),
      runtime_(runtime),
      metrics_(metrics),
      clock_(clock),
      offer_(capacity) {}

HarvestMonitor::~HarvestMonitor() { stop(); }

void HarvestMonitor::start() {
  throttle_ = pickThrottle();
  if (throttle_) {
    spdlog::info("harvest: secondary containers are CPU-throttled through {}",
                 throttle_->describe());
  } else {
    spdlog::warn(
        "harvest: no cgroup cpu controller (v2 under the container cgroups, or v1 at "
        "nm.harvest.cpu-cgroup-v1 '{}'): a primary tenant's CPU growth kills secondary "
        "containers after nm.harvest.cpu-kill-after without throttling them first",
        opts_.cpu_cgroup_v1);
  }
  checkOnce();
  thread_ = std::thread([this] {
    MutexLock lk(mu_);
    while (!cv_.waitFor(mu_, opts_.interval, [this]() REQUIRES(mu_) { return stopping_; })) {
      lk.unlock();
      checkOnce();
      lk.lock();
    }
  });
}

std::unique_ptr<CpuThrottle> HarvestMonitor::pickThrottle() const {
  if (runtime_.usingCgroups() &&
      writeControlFile(runtime_.cgroupParent() + "/cgroup.subtree_control", "+cpu")) {
    return makeCgroupV2CpuThrottle(runtime_.cgroupParent());
  }
  if (opts_.cpu_cgroup_v1.empty()) return nullptr;
  if (int n = removeStaleCpuGroups(opts_.cpu_cgroup_v1, "morpheus-harvest-"); n > 0) {
    spdlog::info("harvest: removed {} cgroup(s) of NMs that no longer run under {}", n,
                 opts_.cpu_cgroup_v1);
  }
  auto v1 = makeCgroupV1CpuThrottle(
      opts_.cpu_cgroup_v1, "morpheus-harvest-" + tenant_ + "-" + std::to_string(::getpid()));
  if (!v1.isOk()) {
    spdlog::info("harvest: cgroup v1 CPU throttling unavailable: {}", v1.status().message());
    return nullptr;
  }
  return std::move(v1).value();
}

void HarvestMonitor::stop() {
  {
    MutexLock lk(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
  throttle_.reset();  // removes the v1 cgroups it created
}

void HarvestMonitor::checkOnce() {
  const TimePoint now = clock_.now();
  auto sample = source_->sample(now);
  if (!sample.isOk()) {
    spdlog::warn("harvest: primary tenant {} usage not sampled: {}", tenant_,
                 sample.status().message());
    metrics_.sample_failures.inc();
    return;
  }
  std::vector<SecondaryContainer> running;
  MutexLock lk(mu_);
  for (const auto& c : runtime_.snapshot()) {
    if (c.running && killed_.count(c.id) == 0) {
      running.push_back({c.id, c.resource, c.start, c.session});
    }
  }
  Millis over_for = cpu_over_since_ ? now - *cpu_over_since_ : Millis(0);
  HarvestDecision d = decideHarvest(limits_, tenant_, *sample, running, over_for);
  last_ = *sample;
  last_at_ = now;
  offer_ = d.offer;
  if (d.throttle && !cpu_over_since_) cpu_over_since_ = now;
  if (!d.throttle) cpu_over_since_.reset();
  for (const auto& id : d.kill) killed_.insert(id);
  // Forget kills of containers that are gone.
  for (auto it = killed_.begin(); it != killed_.end();) {
    auto s = runtime_.get(*it);
    it = (s && s->running) ? std::next(it) : killed_.erase(it);
  }
  lk.unlock();
  for (const auto& id : d.kill) {
    spdlog::info("harvest: killing secondary container {}: {}", id.value(), d.why);
    if (Status st = runtime_.stop(id, ExitReason::kPreempted, d.why); !st.isOk()) {
      spdlog::info("harvest: container {} already gone: {}", id.value(), st.message());
    }
    metrics_.kills.inc();
  }
  applyThrottle(d, running);
}

void HarvestMonitor::applyThrottle(const HarvestDecision& d,
                                   const std::vector<SecondaryContainer>& running) {
  bool was;
  {
    MutexLock lk(mu_);
    was = throttled_;
    throttled_ = d.throttle;
  }
  if (d.throttle != was) {
    spdlog::info("harvest: secondary CPU {} (primary tenant {} leaves {:.2f} vcores)",
                 d.throttle ? "throttled" : "unthrottled", tenant_, d.cpu_left);
  }
  if (!throttle_) return;
  std::vector<ContainerId> live;
  for (const auto& c : running) live.push_back(c.id);
  throttle_->prune(live);  // containers gone since the last pass
  if (!d.throttle && !was) return;
  int64_t total = 0;
  for (const auto& c : running) total += c.resource.vcores();
  for (const auto& c : running) {
    if (std::find(d.kill.begin(), d.kill.end(), c.id) != d.kill.end()) continue;
    std::optional<double> cap;
    if (d.throttle && total > 0) {
      // Each container's share of the CPU left, in proportion to its vcores
      // (cpuQuotaUs keeps at least 1 ms per period so it still progresses).
      cap = std::max(0.0, d.cpu_left) * static_cast<double>(c.resource.vcores()) /
            static_cast<double>(total);
    }
    if (Status st = throttle_->limit(c.id, c.session, cap); !st.isOk()) {
      metrics_.throttle_failures.inc();
    }
  }
}

void HarvestMonitor::fillHeartbeat(v1::NodeHeartbeatRequest* req) const {
  MutexLock lk(mu_);
  // The primary's usage unknown (never sampled, or no good sample for
  // kStaleSamples intervals): nothing is offered, so no new secondary work
  // lands on a primary the NM cannot see.
  if (!last_ || clock_.now() - last_at_ > opts_.interval * kStaleSamples) {
    toProto(Resource(), req->mutable_harvest_offer());
    return;
  }
  auto* u = req->mutable_primary_usage();
  u->set_tenant(tenant_);
  u->set_cpu_vcores(last_->cpu_vcores);
  u->set_memory_mib(last_->memory_mib);
  u->set_sampled_at_ms(toEpochMs(last_at_));
  toProto(offer_, req->mutable_harvest_offer());
}

}  // namespace morpheus::nm

namespace morpheus::nm {

Status validateHarvestOptions(const HarvestOptions& opts) {
  if (opts.source == "none") return Status::ok();
  if (opts.reserve.memoryMib() < 0 || opts.reserve.vcores() < 0) {
    return invalidArgument("nm.harvest.reserve", "must be >= 0, got " + opts.reserve.toString());
  }
  if (opts.source == "file") {
    if (opts.file.empty()) return invalidArgument("nm.harvest.file", "required by source file");
  } else if (opts.source == "cgroup") {
    if (opts.cgroup.empty()) {
      return invalidArgument("nm.harvest.cgroup", "required by source cgroup");
    }
  } else if (opts.source == "processes") {
    if (opts.processes.empty()) {
      return invalidArgument("nm.harvest.processes", "required by source processes");
    }
  } else {
    return invalidArgument("nm.harvest.source", "unknown source '" + opts.source + "'");
  }
  return Status::ok();
}

Result<std::unique_ptr<HarvestMonitor>> makeHarvestMonitor(
    const HarvestOptions& opts, const std::string& node_id, const Resource& capacity,
    ContainerRuntime& runtime, MetricsRegistry& metrics, const Clock& clock) {
  MORPHEUS_RETURN_IF_ERROR(validateHarvestOptions(opts));
  if (opts.source == "none") return std::unique_ptr<HarvestMonitor>();
  std::unique_ptr<PrimaryUsageSource> source;
  if (opts.source == "file") {
    source = makeFileUsageSource(opts.file);
  } else if (opts.source == "cgroup") {
    source = makeCgroupUsageSource(opts.cgroup);
  } else {
    source = makeProcessSetUsageSource(opts.processes);
  }
  std::string tenant = opts.tenant.empty() ? node_id : opts.tenant;
  return std::make_unique<HarvestMonitor>(opts, std::move(tenant), capacity, std::move(source),
                                          runtime, metrics, clock);
}

}  // namespace morpheus::nm
