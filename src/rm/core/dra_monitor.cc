#include "rm/core/dra_monitor.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <set>
#include <utility>

#include "common/ignore.h"

namespace morpheus::rm {

namespace {

std::string joinApps(const std::vector<AppId>& apps) {
  std::string s;
  for (const auto& a : apps) s += (s.empty() ? "" : ",") + a.value();
  return s;
}

}  // namespace

DraMonitor::DraMonitor(DraOptions opts, std::unique_ptr<reprovision::ReprovisionPolicy> policy,
                       ReservationManager& reservations, DemandSource demand, Clock& clock,
                       MetricsRegistry& metrics)
    : opts_(std::move(opts)),
      policy_(std::move(policy)),
      reservations_(reservations),
      demand_(std::move(demand)),
      clock_(clock),
      metrics_(metrics),
      latency_(metrics),
      m_(metrics) {}

DraMonitor::~DraMonitor() { stop(); }

void DraMonitor::start() {
  if (!opts_.enabled || thread_.joinable()) return;
  // The clock only signals (its timer thread must not block); the pass runs
  // on the monitor's own thread.
  {
    MutexLock lk(mu_);
    timer_ = clock_.scheduleAfter(opts_.interval, [this] { requestTick(); });
  }
  thread_ = std::thread([this] {
    MutexLock lk(mu_);
    while (true) {
      cv_.wait(mu_, [this]() REQUIRES(mu_) { return stopping_ || due_ > 0; });
      if (stopping_) return;
      due_ = 0;
      lk.unlock();
      tick();
      lk.lock();
    }
  });
  spdlog::info("dynamic reprovisioning on: policy {}, every {} ms", policy_->name(),
               opts_.interval.count());
}

void DraMonitor::requestTick() {
  MutexLock lk(mu_);
  if (stopping_) return;
  due_++;
  cv_.notify_all();
  timer_ = clock_.scheduleAfter(opts_.interval, [this] { requestTick(); });
}

void DraMonitor::stop() {
  TimerId timer;
  {
    MutexLock lk(mu_);
    if (stopping_) return;
    stopping_ = true;
    timer = timer_;
  }
  // An arming callback already running takes mu_, sees stopping_ and returns;
  // it must have returned before the monitor may be destroyed.
  clock_.cancelAndWait(timer);
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void DraMonitor::tick() {
  const TimePoint now = clock_.now();
  auto demand = demand_();
  // Grants of reservations whose apps are all done end now.
  for (const auto& id : reservations_.withExtras()) {
    if (demand.count(id)) continue;
    reservations_.releaseExtras(id);
    spdlog::info("DRA {}: reservation {} has no running app; its extra containers are released",
                 policy_->name(), id.value());
  }
  for (auto it = chosen_.begin(); it != chosen_.end();) {
    it = demand.count(it->first) ? std::next(it) : chosen_.erase(it);
  }
  for (auto* m : {&last_outcome_, &last_denial_}) {
    for (auto it = m->begin(); it != m->end();) {
      it = demand.count(it->first) ? std::next(it) : m->erase(it);
    }
  }
  for (const auto& [id, d] : demand) review(id, d, now);
}

void DraMonitor::review(const ReservationId& id, const ReservationDemand& d, TimePoint now) {
  auto view = reservations_.draView(id, now, opts_.dra.recent);
  if (!view) return;
  ScopedTimer timer(latency_.dra_decision);
  const Resource& unit = view->unit;
  reprovision::ReviewView seen;
  seen.unit = unit;
  seen.used = d.used;
  seen.am = d.am;
  seen.pending = d.pending;
  seen.planned_now = view->planned_now;
  seen.extra_now = view->extra_now;
  seen.planned_recent = std::move(view->planned_recent);
  seen.instance = view->instance.index;
  seen.deadline = view->instance.end;
  seen.budget_remaining_container_ms = view->budget_remaining_container_ms;
  seen.stages = d.stages;
  reprovision::ReviewState& chosen = chosen_[id];
  const reprovision::ReprovisionInput in = reprovision::reviewInput(
      id, now, opts_.interval, opts_.dra.ahead_window, std::move(seen), chosen);

  const std::string& policy = policy_->name();
  auto decision = reprovision::decideReview(*policy_, in, chosen);
  if (!decision) {
    // Would the policy have asked without the budget? Then the budget is
    // what denies it: say so once per instance.
    auto unbounded = in;
    unbounded.budget_remaining_container_ms = INT64_MAX / 2;
    auto wanted = policy_->decide(unbounded);
    std::string key = std::to_string(view->instance.index);
    if (wanted && last_denial_[id] != key) {
      last_denial_[id] = key;
      std::string why = wanted->rationale + "; reprovisioning budget exhausted (" +
                        std::to_string(view->budget_remaining_container_ms) + " container-ms left)";
      ignoreError(
          reservations_.reprovision(id, policy, wanted->extra_containers, wanted->duration, why),
          "called to record the refusal in the reservation's history; it is expected to fail");
      m_.denied_budget.inc();
      spdlog::warn("DRA {}: reservation {} (apps {}) denied +{} containers: {}", policy, id.value(),
                   joinApps(d.apps), wanted->extra_containers, why);
    }
    return;
  }
  auto out = reservations_.reprovision(id, policy, decision->extra_containers, decision->duration,
                                       decision->rationale);
  if (!out.isOk()) {
    spdlog::warn("DRA {}: reservation {}: {}", policy, id.value(), out.status().message());
    return;
  }
  if (out->granted > 0) {
    m_.grants.inc();
    m_.extra_container_seconds.inc(static_cast<double>(out->granted * decision->duration.count()) /
                                   1000.0);
  }
  if (!out->denial.empty()) {
    m_.denial(out->denial).inc();
  }
  // One log line per change of outcome; renewals of the same grant are quiet.
  std::string outcome = std::to_string(out->granted) + "/" + out->denial;
  if (last_outcome_[id] == outcome) {
    spdlog::debug("DRA {}: reservation {} renewed +{} containers", policy, id.value(),
                  out->granted);
  } else if (out->granted > 0 && out->denial.empty()) {
    spdlog::info(
        "DRA {}: reservation {} (apps {}) +{} containers of {} for {} ms (used {}, pending {}, "
        "planned {}): {}",
        policy, id.value(), joinApps(d.apps), out->granted, unit.toString(),
        decision->duration.count(), in.used_containers, in.pending_containers, in.skyline_now,
        decision->rationale);
  } else {
    spdlog::warn("DRA {}: reservation {} (apps {}) asked +{} containers, granted {} ({}): {}; {}",
                 policy, id.value(), joinApps(d.apps), decision->extra_containers, out->granted,
                 out->denial, decision->rationale, out->reason);
  }
  last_outcome_[id] = outcome;
}

}  // namespace morpheus::rm
