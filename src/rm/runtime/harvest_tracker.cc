// RmRuntime's harvesting (Zhang et al., OSDI'16 §3 and §4.1),
// apart from runtime.cc so the shared file keeps one call per hook: the
// primary tenants' usage and the NM's offer (onHarvestReport), the periodic
// clustering into classes and the node attribute harvest-class, and the
// per-job class selection (Algorithm 1) turned into a soft constraint on the
// job's asks.
#include <algorithm>

#include "common/wire.h"
#include "rm/runtime/runtime.h"

namespace morpheus::rm {
namespace {

// The scheduler core's ask identity, as runtime.cc's askKey: the request id,
// or the priority when it is empty.
std::string harvestAskKey(const sched::ResourceRequest& a) {
  return a.request_id.empty() ? "\x01p" + std::to_string(a.priority) : a.request_id;
}

std::string joined(const std::vector<std::string>& v) {
  std::string out;
  for (const auto& s : v) out += (out.empty() ? "" : ",") + s;
  return out.empty() ? "none" : out;
}

}  // namespace

void RmRuntime::onHarvestReport(const Node& node, const v1::NodeHeartbeatRequest& req,
                                TimePoint now) {
  if (!req.has_primary_usage()) return;
  const auto& u = req.primary_usage();
  const double cpu_cap = static_cast<double>(std::max<int64_t>(1, node.total.vcores()));
  const double mem_cap = static_cast<double>(std::max<int64_t>(1, node.total.memoryMib()));
  std::string tenant = u.tenant().empty() ? node.id.value() : u.tenant();
  harvest_history_.record(node.id, tenant, now, u.cpu_vcores() / cpu_cap,
                          static_cast<double>(u.memory_mib()) / mem_cap);
  tagHarvestNode(node.id, tenant);
  if (!req.has_harvest_offer() || node.drained) return;  // a drained node stays at zero
  // Secondary containers get only what the primary tenant leaves: the
  // scheduler places nothing beyond the NM's offer (never beyond the
  // registered total).
  Resource offer = Resource::min(fromProto(req.harvest_offer()), node.total);
  if (Status st = sched_->setNodeTotal(node.id, offer); !st.isOk()) {
    logLater(spdlog::level::warn, "node {}: harvest offer {} not applied: {}", node.id.value(),
             offer.toString(), st.message());
  }
}

void RmRuntime::startHarvestClustering() {
  if (opts_.harvest.cluster_every <= Millis(0)) return;
  MutexLock lk(harvest_mu_);
  if (!harvest_stopped_) return;
  harvest_stopped_ = false;
  harvest_timer_ = clock_.scheduleAfter(Millis(0), [this] { harvestTick(); });
  if (opts_.harvest.save_every > Millis(0)) {
    harvest_save_timer_ =
        clock_.scheduleAfter(opts_.harvest.save_every, [this] { harvestSaveTick(); });
  }
}

void RmRuntime::stopHarvestClustering() {
  {
    MutexLock lk(harvest_mu_);
    harvest_stopped_ = true;
    clock_.cancel(harvest_timer_);
    clock_.cancel(harvest_save_timer_);
  }
  saveHarvestUsage();
}

void RmRuntime::harvestSaveTick() {
  MutexLock lk(harvest_mu_);
  if (harvest_stopped_) return;
  saveHarvestUsage();
  harvest_save_timer_ =
      clock_.scheduleAfter(opts_.harvest.save_every, [this] { harvestSaveTick(); });
}

void RmRuntime::saveHarvestUsage() {
  if (!store_) return;
  std::vector<store::StateWrite> batch;
  {
    Guard lk(*this);
    for (const auto& t : harvest_history_.takeChangedTenants()) {
      const UtilSeries* cpu = harvest_history_.tenantCpu(t);
      const UtilSeries* mem = harvest_history_.tenantMemory(t);
      if (cpu != nullptr && mem != nullptr) {
        batch.push_back({kHarvestUsageTable, t, encodeTenantUsage(*cpu, *mem)});
      }
    }
  }
  // One write per tenant: a tenant's series are up to ~60 KB of JSON; etcd refuses
  // a transaction beyond its request size or state-store.etcd.max-txn-ops.
  // A tenant whose save fails is saved again after its next sample.
  size_t failed = 0;
  Status last;
  for (const auto& w : batch) {
    if (Status st = store_->commit({w}); !st.isOk()) {
      failed++;
      last = st;
    }
  }
  if (failed > 0) {
    spdlog::warn("harvesting: usage of {} of {} tenant(s) not saved: {}", failed, batch.size(),
                 last.message());
  }
}

void RmRuntime::tagHarvestNode(const NodeId& id, const std::string& tenant) {
  if (harvest_classes_.empty()) return;
  auto n = nodes_.find(id);
  if (n == nodes_.end()) return;
  auto c = harvest_class_of_.find(tenant);
  const std::string cls = c == harvest_class_of_.end() ? "" : c->second;
  auto a = n->second.attributes.find(kHarvestClassAttribute);
  const std::string now = a == n->second.attributes.end() ? "" : a->second;
  if (cls == now) return;
  if (cls.empty()) {
    n->second.attributes.erase(kHarvestClassAttribute);
  } else {
    n->second.attributes[kHarvestClassAttribute] = cls;
  }
  if (!n->second.live) return;
  if (Status st = sched_->setNodeAttribute(id, kHarvestClassAttribute, cls); !st.isOk()) {
    logLater(spdlog::level::warn, "node {}: harvest class not set: {}", id.value(), st.message());
  }
}

// On the clock's thread, never on the scheduler strand.
void RmRuntime::harvestTick() {
  MutexLock lk(harvest_mu_);
  if (harvest_stopped_) return;
  if (Status st = recomputeHarvestClasses(); !st.isOk()) {
    spdlog::warn("harvesting: primary tenants not clustered: {}", st.message());
  }
  harvest_timer_ = clock_.scheduleAfter(opts_.harvest.cluster_every, [this] { harvestTick(); });
}

Status RmRuntime::recomputeHarvestClasses() {
  std::vector<TenantSeries> series;
  {
    Guard lk(*this);
    for (const auto& t : harvest_history_.tenants()) {
      const UtilSeries* s = harvest_history_.tenantCpu(t);
      if (s != nullptr && !s->buckets().empty()) series.push_back({t, s->regular()});
    }
  }
  if (series.empty()) {
    // No classes yet; drop the jobs of apps that ended without finishAm (killed).
    Guard lk(*this);
    std::erase_if(harvest_jobs_, [this](const auto& j) REQUIRES(mu_) {
      auto r = rt_.find(j.first);
      return r == rt_.end() || !r->second.in_sched;
    });
    return Status::ok();
  }
  // The FFT and k-means run without the runtime's lock.
  MORPHEUS_ASSIGN_OR_RETURN(auto classes, clusterTenants(series, opts_.harvest.classifier()));
  Guard lk(*this);
  applyHarvestClasses(std::move(classes));
  reselectHarvest();
  return Status::ok();
}

void RmRuntime::applyHarvestClasses(std::vector<HarvestClass> classes) {
  std::map<std::string, std::string> class_of;  // tenant -> class id
  for (const auto& c : classes) {
    for (const auto& t : c.tenants) class_of[t] = c.id;
  }
  for (auto& [id, node] : nodes_) {
    auto it = class_of.find(harvest_history_.tenantOf(id));
    const std::string cls = it == class_of.end() ? "" : it->second;
    if (cls.empty()) {
      node.attributes.erase(kHarvestClassAttribute);
    } else {
      node.attributes[kHarvestClassAttribute] = cls;
    }
    if (!node.live) continue;  // re-added with its attributes when it comes back
    if (Status st = sched_->setNodeAttribute(id, kHarvestClassAttribute, cls); !st.isOk()) {
      logLater(spdlog::level::warn, "node {}: harvest class not set: {}", id.value(), st.message());
    }
  }
  for (const auto& c : classes) {
    logLater(spdlog::level::info,
             "harvesting: class {} ({}): average {:.2f}, peak {:.2f}, {} tenant(s)", c.id,
             patternName(c.pattern), c.average, c.peak, c.tenants.size());
  }
  harvest_classes_ = std::move(classes);
  harvest_class_of_ = std::move(class_of);
}

std::vector<std::string> RmRuntime::selectHarvest(const AppId& app, const HarvestJob& job,
                                                  const AppRt& rt) const {
  if (harvest_classes_.empty() || job.base.empty()) return {};
  Resource container;
  int64_t pending = 0;
  for (const auto& [key, a] : job.base) {
    container = Resource::max(container, a.capability);
    pending += a.count;
  }
  // Breadth-first over the DAG the AM reports; without one, what it asks.
  int64_t concurrent = pending;
  if (!rt.stages.empty()) {
    auto m = maxConcurrentContainers(stageShapes(rt.stages));
    if (m.isOk() && *m > 0) concurrent = *m;
  }
  std::vector<HarvestNode> nodes;
  for (const auto& [id, n] : nodes_) {
    auto a = n.attributes.find(kHarvestClassAttribute);
    if (!n.live || a == n.attributes.end()) continue;
    const UtilSeries* cpu = harvest_history_.nodeCpu(id);
    double current = cpu != nullptr && !cpu->buckets().empty() ? cpu->buckets().back().avg : 0;
    auto used = sched_->nodeUsed(id);
    nodes.push_back({id, a->second, n.total, current, used.isOk() ? *used : Resource()});
  }
  auto run = harvest_runs_.find(job.job);
  JobLength type =
      lengthType(run == harvest_runs_.end() ? std::nullopt : std::optional<Millis>(run->second),
                 opts_.harvest.selection);
  auto chosen = selectClasses(type, concurrent, classStates(harvest_classes_, nodes, container),
                              opts_.harvest.selection, harvestDraw(app.value()));
  logLater(spdlog::level::info,
           "harvesting: {} ({} job '{}', {} concurrent container(s) of {}) prefers classes {}",
           app.value(), jobLengthName(type), job.job, concurrent, container.toString(),
           joined(chosen));
  return chosen;
}

void RmRuntime::harvestAsks(const AppRecord& rec, const AppRt& rt,
                            std::vector<sched::ResourceRequest>* asks) {
  if (opts_.harvest.cluster_every <= Millis(0)) return;  // harvesting classes off
  HarvestJob& job = harvest_jobs_[rec.id];
  job.job = harvestJobName(rec.spec.name, rec.spec.recurrence_key.value());
  for (const auto& a : *asks) {
    if (a.count <= 0) {
      job.base.erase(harvestAskKey(a));
    } else {
      job.base[harvestAskKey(a)] = a;
    }
  }
  if (!job.selected && !harvest_classes_.empty() && !job.base.empty()) {
    job.classes = selectHarvest(rec.id, job, rt);
    job.selected = true;
  }
  auto c = harvestConstraint(job.classes);
  if (!c) return;
  for (auto& a : *asks) {
    if (a.count > 0) a.constraints.push_back(*c);
  }
}

void RmRuntime::reselectHarvest() {
  for (auto it = harvest_jobs_.begin(); it != harvest_jobs_.end();) {
    auto r = rt_.find(it->first);
    if (r == rt_.end() || !r->second.in_sched) {
      it = harvest_jobs_.erase(it);
      continue;
    }
    HarvestJob& job = it->second;
    // What is still pending of each ask (the core granted the rest).
    for (auto b = job.base.begin(); b != job.base.end();) {
      auto p = r->second.asks.find(b->first);
      if (p == r->second.asks.end()) {
        b = job.base.erase(b);
      } else {
        b->second.count = p->second.count;
        ++b;
      }
    }
    auto chosen = selectHarvest(it->first, job, r->second);
    job.selected = true;
    if (chosen != job.classes && !job.base.empty()) {
      auto c = harvestConstraint(chosen);
      std::vector<sched::ResourceRequest> asks;
      for (const auto& [key, a] : job.base) {
        asks.push_back(a);
        if (c) asks.back().constraints.push_back(*c);
      }
      if (Status st = sched_->updateAsks(it->first, asks); !st.isOk()) {
        logLater(spdlog::level::warn, "harvesting: asks of {} not re-constrained: {}",
                 it->first.value(), st.message());
      }
    }
    job.classes = std::move(chosen);
    ++it;
  }
}

std::optional<store::StateWrite> RmRuntime::recordHarvestRun(const AppRecord& rec,
                                                             AppState final_state) {
  harvest_jobs_.erase(rec.id);
  std::string job = harvestJobName(rec.spec.name, rec.spec.recurrence_key.value());
  if (final_state != AppState::kFinished || job.empty() || rec.finish <= rec.start) {
    return std::nullopt;
  }
  const Millis length = rec.finish - rec.start;
  harvest_runs_[job] = length;
  return store::StateWrite{kHarvestRunsTable, job, encodeHarvestRun(length)};
}

Status RmRuntime::recoverHarvestRuns() {
  if (!store_) return Status::ok();
  MORPHEUS_ASSIGN_OR_RETURN(auto rows, store_->list(kHarvestRunsTable));
  std::map<std::string, Millis> runs;
  for (const auto& [job, value] : rows) {
    MORPHEUS_ASSIGN_OR_RETURN(Millis length, decodeHarvestRun(job, value));
    runs[job] = length;
  }
  MORPHEUS_ASSIGN_OR_RETURN(auto usage_rows, store_->list(kHarvestUsageTable));
  Guard lk(*this);
  // The usage series are a cache the NMs' reports rebuild: a record that does
  // not decode is skipped with a warning, not a reason to refuse to start.
  for (const auto& [tenant, value] : usage_rows) {
    auto u = decodeTenantUsage(tenant, value, harvest_history_);
    if (!u.isOk()) {
      logLater(spdlog::level::warn, "harvesting: {}; the tenant's history starts afresh",
               u.status().message());
      continue;
    }
    harvest_history_.restoreTenant(tenant, std::move(u->cpu), std::move(u->memory));
  }
  harvest_runs_ = std::move(runs);
  return Status::ok();
}

std::vector<RmRuntime::HarvestClassView> RmRuntime::harvestClasses() const {
  Guard lk(*this);
  std::vector<HarvestClassView> out;
  for (const auto& c : harvest_classes_) {
    HarvestClassView v{c, {}};
    for (const auto& [id, n] : nodes_) {
      auto a = n.attributes.find(kHarvestClassAttribute);
      if (a != n.attributes.end() && a->second == c.id) v.nodes.push_back(id);
    }
    out.push_back(std::move(v));
  }
  return out;
}

std::string RmRuntime::harvestClassOf(const NodeId& node) const {
  Guard lk(*this);
  auto it = nodes_.find(node);
  if (it == nodes_.end()) return "";
  auto a = it->second.attributes.find(kHarvestClassAttribute);
  return a == it->second.attributes.end() ? "" : a->second;
}

std::vector<std::string> RmRuntime::harvestSelection(const AppId& app) const {
  Guard lk(*this);
  auto it = harvest_jobs_.find(app);
  return it == harvest_jobs_.end() ? std::vector<std::string>() : it->second.classes;
}

std::optional<Millis> RmRuntime::harvestLastRun(const std::string& job) const {
  Guard lk(*this);
  auto it = harvest_runs_.find(job);
  return it == harvest_runs_.end() ? std::nullopt : std::optional<Millis>(it->second);
}

}  // namespace morpheus::rm
