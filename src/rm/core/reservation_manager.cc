#include "rm/core/reservation_manager.h"

#include <spdlog/spdlog.h>

#include <algorithm>

#include <nlohmann/json.hpp>

#include "common/validate.h"
#include "reprovision/policy.h"
#include "rm/core/reservation_codec.h"

namespace morpheus::rm {

using nlohmann::json;

namespace {

constexpr const char* kNs = "reservations";
// Ids issueId handed out, not yet used: id -> {"user", "issued_ms"}.
constexpr const char* kIssuedNs = "reservation-ids";

json encodeRecord(const ReservationRecord& r) {
  json hist = json::array();
  for (const auto& h : r.history) {
    hist.push_back({{"time", toEpochMs(h.time)},
                    {"policy", h.policy},
                    {"granted", h.granted},
                    {"extra", encodeResource(h.extra)},
                    {"duration_ms", h.duration.count()},
                    {"reason", h.reason}});
  }
  return {{"id", r.id.value()},
          {"accepted", toEpochMs(r.accepted)},
          {"definition", encodeDefinition(r.def)},
          {"placement", encodePlacement(r.placement)},
          {"budget", r.budget_container_ms},
          {"budget_used", r.budget_used_container_ms},
          {"budget_instance", r.budget_instance},
          {"status", r.status},
          {"status_reason", r.status_reason},
          {"history", hist}};
}

Result<ReservationRecord> decodeRecord(const std::string& text) {
  json j = json::parse(text, nullptr, false);
  if (j.is_discarded()) return internalError("corrupt stored reservation (not JSON)");
  try {
    ReservationRecord r;
    r.id = ReservationId(j.at("id").get<std::string>());
    r.accepted = fromEpochMs(j.at("accepted").get<int64_t>());
    MORPHEUS_ASSIGN_OR_RETURN(r.def, decodeDefinition(j.at("definition")));
    MORPHEUS_ASSIGN_OR_RETURN(r.placement, decodePlacement(j.at("placement")));
    r.budget_container_ms = j.at("budget").get<int64_t>();
    r.budget_used_container_ms = j.at("budget_used").get<int64_t>();
    r.budget_instance = j.at("budget_instance").get<int64_t>();
    r.status = j.at("status").get<std::string>();
    r.status_reason = j.at("status_reason").get<std::string>();
    for (const auto& h : j.at("history")) {
      r.history.push_back(
          {fromEpochMs(h.at("time").get<int64_t>()), h.at("policy").get<std::string>(),
           h.at("granted").get<bool>(), decodeResource(h.at("extra")),
           Millis(h.at("duration_ms").get<int64_t>()), h.at("reason").get<std::string>()});
    }
    return r;
  } catch (const json::exception& e) {
    return internalError(std::string("corrupt stored reservation: ") + e.what());
  }
}

bool validId(const std::string& id) {
  if (id.empty() || id.size() > 128) return false;
  for (char c : id) {
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.'))
      return false;
  }
  return true;
}

// The record's DRA budget as reprovision::InstanceBudget, and back.
reprovision::InstanceBudget budgetOf(const ReservationRecord& r) {
  return {r.budget_container_ms, r.budget_used_container_ms, r.budget_instance};
}
void storeBudget(ReservationRecord& r, const reprovision::InstanceBudget& b) {
  r.budget_used_container_ms = b.used_container_ms;
  r.budget_instance = b.instance;
}
// A grant of the record's reservation ended early: its unexpired part
// (ReservationManager::refundOf) goes back to the budget.
void giveBack(ReservationRecord& r, int64_t refund) {
  reprovision::InstanceBudget b = budgetOf(r);
  b.giveBack(refund);
  storeBudget(r, b);
}

}  // namespace

ReservationManager::ReservationManager(ReservationManagerOptions opts,
                                       std::unique_ptr<planner::Planner> planner,
                                       store::StateStore& store, Clock& clock,
                                       MetricsRegistry& metrics)
    : opts_(std::move(opts)),
      store_(store),
      clock_(clock),
      metrics_(metrics),
      latency_(metrics),
      epoch_ms_(toEpochMs(clock.now())),
      plan_step_(planner->options().step),
      m_(metrics),
      planning_running_(m_.planning_running),
      planning_requests_(m_.planning_requests),
      planner_(std::move(planner)) {
  MutexLock lk(mu_);
  updateGauges();
}

Status ReservationManager::recover() {
  MutexLock lk(mu_);
  auto rows = store_.list(kNs);
  if (!rows.isOk()) return rows.status().withContext("reading reservations from the state store");
  for (const auto& [key, value] : *rows) {
    auto rec = decodeRecord(value);
    if (!rec.isOk()) return rec.status().withContext("reservation " + key);
    MORPHEUS_RETURN_IF_ERROR(planner_->restore(rec->id, rec->def, rec->placement)
                                 .withContext("restoring reservation " + key));
    records_[rec->id] = std::move(rec).value();
    ++plan_version_;
  }
  auto issued = store_.list(kIssuedNs);
  if (!issued.isOk()) {
    return issued.status().withContext("reading issued reservation ids from the state store");
  }
  for (const auto& [key, value] : *issued) {
    json j = json::parse(value, nullptr, false);
    if (j.is_discarded() || !j.is_object() || !j.contains("user") || !j["user"].is_string() ||
        !j.contains("issued_ms") || !j["issued_ms"].is_number_integer()) {
      return internalError("corrupt issued reservation id " + key);
    }
    issued_[ReservationId(key)] = {UserId(j["user"].get<std::string>()),
                                   fromEpochMs(j["issued_ms"].get<int64_t>())};
  }
  spdlog::info("recovered {} reservation(s) and {} unused issued id(s) from the state store",
               records_.size(), issued_.size());
  updateGauges();
  return Status::ok();
}

Result<ReservationId> ReservationManager::issueId(const UserId& caller) {
  MutexLock lk(mu_);
  ReservationId id;
  do {
    char buf[64];
    std::snprintf(buf, sizeof buf, "reservation_%lld_%04llu", static_cast<long long>(epoch_ms_),
                  static_cast<unsigned long long>(next_seq_++));
    id = ReservationId(buf);
  } while (records_.count(id) || issued_.count(id));
  const TimePoint now = clock_.now();
  std::vector<store::StateWrite> batch = {
      {kIssuedNs, id.value(),
       json{{"user", caller.value()}, {"issued_ms", toEpochMs(now)}}.dump()}};
  // Beyond the cap, the caller's oldest unused id is withdrawn in the same commit.
  std::optional<ReservationId> oldest;
  int64_t held = 0;
  for (const auto& [other, issue] : issued_) {
    if (issue.user != caller) continue;
    held++;
    if (!oldest || issue.issued < issued_.at(*oldest).issued) oldest = other;
  }
  if (oldest && held >= opts_.limits.max_unused_ids_per_user) {
    batch.push_back({kIssuedNs, oldest->value(), std::nullopt});
  }
  if (Status st = store_.commit(batch); !st.isOk()) {
    return st.withContext("reservation id not issued: state store");
  }
  if (batch.size() > 1) {
    spdlog::info("reservation id {} of {} withdrawn unused (rm.max-unused-reservation-ids)",
                 oldest->value(), caller.value());
    issued_.erase(*oldest);
  }
  issued_[id] = {caller, now};
  return id;
}

Status ReservationManager::mayUseId(const ReservationId& id, const Submitter& by,
                                    const planner::ReservationDefinition& def) const {
  auto it = issued_.find(id);
  if (it != issued_.end()) {
    if (it->second.user == by.caller || it->second.user == def.user) return Status::ok();
    return permissionDenied("reservation_id: '" + id.value() + "' was issued to another user; " +
                            by.caller.value() + " may use only ids NewReservation issued to " +
                            by.caller.value());
  }
  if (by.admin) return Status::ok();
  return permissionDenied("reservation_id: '" + id.value() + "' was not issued to " +
                          by.caller.value() + " (call NewReservation for an id of your own)");
}

Status ReservationManager::persist(const ReservationRecord& rec) {
  return persist(std::vector<ReservationRecord>{rec});
}

Status ReservationManager::persist(const std::vector<ReservationRecord>& recs,
                                   const std::vector<store::StateWrite>& extra) {
  std::vector<store::StateWrite> batch = extra;
  for (const auto& rec : recs) {
    try {
      batch.push_back({kNs, rec.id.value(), encodeRecord(rec).dump()});
    } catch (const json::exception& e) {
      // Unencodable input must have been refused earlier; never let it escape
      // between planning and the rollback.
      return internalError("reservation " + rec.id.value() + " cannot be encoded: " + e.what());
    }
  }
  return store_.commit(batch);
}

std::vector<ReservationRecord> ReservationManager::displacedRecords(
    const planner::Planner& planned, const planner::DisplacementReport& rep,
    const ReservationId& by, TimePoint now) const {
  std::map<ReservationId, ReservationRecord> out;
  auto copy = [&](const ReservationId& id) REQUIRES(mu_) -> ReservationRecord* {
    auto it = records_.find(id);
    if (it == records_.end()) return nullptr;  // `by` itself (update) has its own record
    return &out.emplace(id, it->second).first->second;
  };
  for (const auto& id : rep.extras_released) {
    if (ReservationRecord* r = copy(id)) {
      giveBack(*r, refundOf(id, now));
    }
  }
  for (const auto& id : rep.replanned) {
    ReservationRecord* r = copy(id);
    const planner::Placement* p = planned.placement(id);
    if (r == nullptr || p == nullptr) continue;
    r->placement = *p;
    r->status = "active";
    r->status_reason.clear();
  }
  for (const auto& id : rep.at_risk) {
    ReservationRecord* r = copy(id);
    if (r == nullptr) continue;
    r->status = "at-risk";
    r->status_reason = "displaced by periodic reservation " + by.value() +
                       " (periodic reservations have strict priority, Morpheus §6) and no other "
                       "placement fits its window; kept on its placement, over capacity";
  }
  std::vector<ReservationRecord> v;
  for (auto& [_, r] : out) v.push_back(std::move(r));
  return v;
}

void ReservationManager::commitDisplaced(const planner::DisplacementReport& rep,
                                         std::vector<ReservationRecord> changed,
                                         const ReservationId& by) {
  for (const auto& id : rep.extras_released) {
    spdlog::warn("reservation {}: DRA extras released, displaced by periodic reservation {}",
                 id.value(), by.value());
    grants_.erase(id);
  }
  for (auto& r : changed) {
    ReservationRecord& cur = records_[r.id];
    if (r.status == "at-risk" && cur.status != "at-risk") {
      spdlog::warn("reservation {} (owner {}) is at-risk: {}", r.id.value(), r.def.user.value(),
                   r.status_reason);
      m_.at_risk_total.inc();
    } else if (cur.placement != r.placement) {
      spdlog::info("one-off reservation {} re-planned: displaced by periodic reservation {}",
                   r.id.value(), by.value());
    }
    cur = std::move(r);
  }
}

Status ReservationManager::validateRequest(const planner::ReservationDefinition& def,
                                           int64_t budget_container_ms) const {
  const ReservationLimits& lim = opts_.limits;
  MORPHEUS_RETURN_IF_ERROR(checkUtf8(def.user.value(), "user"));
  MORPHEUS_RETURN_IF_ERROR(checkUtf8(def.queue, "queue"));
  MORPHEUS_RETURN_IF_ERROR(checkDisplayName(def.name, "name"));
  MORPHEUS_RETURN_IF_ERROR(checkDisplayName(def.recurrence_key.value(), "recurrence_key"));
  auto tooLong = [&lim](const std::string& v) {
    return static_cast<int64_t>(v.size()) > lim.max_name_length;
  };
  const std::string max_len = std::to_string(lim.max_name_length);
  if (tooLong(def.name)) {
    return invalidArgument("name", std::to_string(def.name.size()) + " bytes; at most " + max_len +
                                       " (rm.max-name-length)");
  }
  if (tooLong(def.recurrence_key.value())) {
    return invalidArgument("recurrence_key", std::to_string(def.recurrence_key.value().size()) +
                                                 " bytes; at most " + max_len +
                                                 " (rm.max-name-length)");
  }
  if (tooLong(def.user.value())) {
    return invalidArgument("user", "longer than " + max_len + " bytes (rm.max-name-length)");
  }
  if (static_cast<int64_t>(def.stages.size()) > lim.max_stages) {
    return invalidArgument("stages", std::to_string(def.stages.size()) + " stages; at most " +
                                         std::to_string(lim.max_stages) + " (rm.max-stages)");
  }
  int64_t total = 0;
  for (size_t i = 0; i < def.stages.size(); ++i) {
    int64_t n = def.stages[i].num_containers;
    if (n > lim.max_containers_per_stage) {
      return invalidArgument("stages[" + std::to_string(i) + "].num_containers",
                             std::to_string(n) + "; at most " +
                                 std::to_string(lim.max_containers_per_stage) +
                                 " per stage (rm.max-containers-per-stage)");
    }
    total += std::max<int64_t>(0, n);  // each term is bounded above: no overflow
    if (total > lim.max_containers_per_request) {
      return invalidArgument("stages", "more than " +
                                           std::to_string(lim.max_containers_per_request) +
                                           " containers in one request "
                                           "(rm.max-containers-per-request)");
    }
  }
  if (budget_container_ms < 0) {
    return invalidArgument("reprovision_budget_container_ms", "must be >= 0");
  }
  // LowCost's work grows with stages x window steps; refuse what would hold
  // the planning lane for long before planning starts. A window the planner
  // refuses (deadline not after arrival) counts as none.
  const int64_t window_ms = def.deadline > def.arrival ? (def.deadline - def.arrival).count() : 0;
  const int64_t window_steps = (window_ms + plan_step_.count() - 1) / plan_step_.count();
  const int64_t stages = static_cast<int64_t>(def.stages.size());
  if (stages > 0 && window_steps > lim.max_planning_work / stages) {
    return invalidArgument("stages", std::to_string(stages) + " stages x " +
                                         std::to_string(window_steps) +
                                         " plan steps of window [arrival, deadline) exceed "
                                         "rm.max-planning-work = " +
                                         std::to_string(lim.max_planning_work) +
                                         " stage-steps; use fewer stages or a shorter window");
  }
  return Status::ok();
}

Status ReservationManager::enterPlanning(const UserId& user) {
  MutexLock lk(admission_mu_);
  const ReservationLimits& lim = opts_.limits;
  auto refuse = [](Counter& refused) { refused.inc(); };
  auto it = planning_by_user_.find(user);
  int64_t mine = it == planning_by_user_.end() ? 0 : it->second;
  if (mine >= lim.max_planning_per_user) {
    refuse(m_.planning_refused_per_user);
    return unavailable("user " + user.value() + " already has " + std::to_string(mine) +
                       " reservation request(s) planning, the most "
                       "rm.max-planning-requests-per-user allows; retry once it is answered");
  }
  if (planning_total_ >= lim.max_planning_total) {
    refuse(m_.planning_refused_total);
    return unavailable(std::to_string(planning_total_) +
                       " reservation requests are planning, the most rm.max-planning-requests "
                       "allows; retry later");
  }
  planning_by_user_[user] = mine + 1;
  ++planning_total_;
  planning_requests_.set(planning_total_);
  return Status::ok();
}

void ReservationManager::leavePlanning(const UserId& user) {
  MutexLock lk(admission_mu_);
  auto it = planning_by_user_.find(user);
  MORPHEUS_CHECK(it != planning_by_user_.end() && it->second > 0 && planning_total_ > 0,
                 "planning lane count of " + user.value());
  if (--it->second == 0) planning_by_user_.erase(it);
  --planning_total_;
  planning_requests_.set(planning_total_);
}

// One request's place in the planning lane, left when it goes out of scope.
class ReservationManager::PlanningTicket {
 public:
  PlanningTicket(ReservationManager& m, UserId user) : m_(m), user_(std::move(user)) {}
  ~PlanningTicket() { m_.leavePlanning(user_); }
  PlanningTicket(const PlanningTicket&) = delete;
  PlanningTicket& operator=(const PlanningTicket&) = delete;

 private:
  ReservationManager& m_;
  const UserId user_;
};

Result<ReservationRecord> ReservationManager::submit(
    const ReservationId& id, const Submitter& by, const planner::ReservationDefinition& def,
    int64_t budget_container_ms, planner::InfeasibilityExplanation* explanation) {
  return submitChecked(id, by, def, budget_container_ms, explanation);
}

Result<ReservationRecord> ReservationManager::submit(
    const ReservationId& id, const planner::ReservationDefinition& def, int64_t budget_container_ms,
    planner::InfeasibilityExplanation* explanation) {
  return submitChecked(id, std::nullopt, def, budget_container_ms, explanation);
}

Result<ReservationRecord> ReservationManager::submitChecked(
    const ReservationId& id, const std::optional<Submitter>& by,
    const planner::ReservationDefinition& def, int64_t budget_container_ms,
    planner::InfeasibilityExplanation* explanation) {
  ScopedTimer timer(latency_.admission);
  if (!validId(id.value())) {
    return invalidArgument("reservation_id",
                           "'" + id.value() + "' must be 1-128 of [A-Za-z0-9_.-]");
  }
  MORPHEUS_RETURN_IF_ERROR(validateRequest(def, budget_container_ms));
  if (!opts_.reservable_queues.count(def.queue)) {
    return invalidArgument("queue", "'" + def.queue + "' is not a reservable queue");
  }
  if (def.user.empty()) return invalidArgument("user", "is required");
  MORPHEUS_RETURN_IF_ERROR(enterPlanning(def.user));
  PlanningTicket ticket(*this, def.user);
  MutexLock lane(planning_mu_);
  for (int attempt = 1;; ++attempt) {
    // Snapshot under mu_: the checks against the records and a copy of the plan.
    std::unique_ptr<planner::Planner> snap;
    uint64_t version = 0;
    TimePoint now;
    {
      MutexLock lk(mu_);
      if (records_.count(id)) return alreadyExists("reservation " + id.value() + " exists");
      if (by) MORPHEUS_RETURN_IF_ERROR(mayUseId(id, *by, def));
      int64_t held = 0;
      for (const auto& [_, r] : records_) held += r.def.user == def.user ? 1 : 0;
      if (held >= opts_.limits.max_reservations_per_user) {
        return permissionDenied("user " + def.user.value() + " holds " + std::to_string(held) +
                                " reservations, the most rm.max-reservations-per-user allows");
      }
      snap = planner_->clone();
      version = plan_version_;
      now = clock_.now();
    }
    // Planning (LowCost, and the one-offs a periodic definition displaces) on
    // the snapshot, without mu_.
    planner::DisplacementReport displaced;
    planning_running_.set(1);
    auto placement = snap->submit(id, def, now, explanation, &displaced);
    planning_running_.set(0);
    MutexLock lk(mu_);
    if (plan_version_ != version &&
        (placement.isOk() || placement.status().code() == StatusCode::kInfeasible)) {
      m_.planning_conflicts.inc();
      if (attempt < kPlanAttempts) continue;
      return unavailable("reservation " + id.value() +
                         " not admitted: the plan changed while it was planned, " +
                         std::to_string(kPlanAttempts) + " times; retry");
    }
    // The id may have been withdrawn or used meanwhile (issueId and another
    // submit do not move the plan version): checked again before the commit.
    if (records_.count(id)) return alreadyExists("reservation " + id.value() + " exists");
    if (by) MORPHEUS_RETURN_IF_ERROR(mayUseId(id, *by, def));
    if (!placement.isOk()) {
      m_.rejections.with({{"code", statusCodeName(placement.status().code())}}).inc();
      return placement.status();
    }
    ReservationRecord rec;
    rec.id = id;
    rec.accepted = now;
    rec.def = def;
    rec.placement = *placement;
    rec.budget_container_ms = budget_container_ms;
    // The periodic reservation and every one-off it displaced commit together.
    std::vector<ReservationRecord> changed = displacedRecords(*snap, displaced, id, now);
    changed.push_back(rec);
    std::vector<store::StateWrite> consumed;
    if (issued_.count(id)) consumed.push_back({kIssuedNs, id.value(), std::nullopt});
    if (Status st = persist(changed, consumed); !st.isOk()) {
      // The snapshot is dropped: the plan is as before the call.
      return st.withContext("reservation " + id.value() + " not admitted: state store");
    }
    planner_ = std::move(snap);
    ++plan_version_;
    changed.pop_back();
    commitDisplaced(displaced, std::move(changed), id);
    records_[id] = rec;
    issued_.erase(id);
    spdlog::info("reservation {} admitted for {} in queue {}: period {} ms, {} allocation run(s)",
                 id.value(), def.user.value(), def.queue, def.period.count(),
                 rec.placement.allocations.size());
    m_.admitted.inc();
    updateGauges();
    return rec;
  }
}

ReservationManager::AccessCheck ReservationManager::ownerOrAdmin(const UserId& user,
                                                                 const std::string& verb) const {
  return [this, user, verb](const ReservationRecord& r) {
    if (r.def.user == user || opts_.admins.count(user.value())) return Status::ok();
    return permissionDenied("only " + r.def.user.value() + " or an admin may " + verb +
                            " reservation " + r.id.value());
  };
}

Result<ReservationRecord> ReservationManager::update(
    const ReservationId& id, const UserId& user, const planner::ReservationDefinition& def,
    int64_t budget_container_ms, planner::InfeasibilityExplanation* explanation) {
  return update(id, user, ownerOrAdmin(user, "change"), def, budget_container_ms, explanation);
}

Result<ReservationRecord> ReservationManager::update(
    const ReservationId& id, const UserId& user, const AccessCheck& may,
    const planner::ReservationDefinition& def, int64_t budget_container_ms,
    planner::InfeasibilityExplanation* explanation) {
  MORPHEUS_RETURN_IF_ERROR(validateRequest(def, budget_container_ms));
  MORPHEUS_RETURN_IF_ERROR(enterPlanning(user));
  PlanningTicket ticket(*this, user);
  MutexLock lane(planning_mu_);
  for (int attempt = 1;; ++attempt) {
    std::unique_ptr<planner::Planner> snap;
    uint64_t version = 0;
    TimePoint now;
    ReservationRecord old;
    planner::ReservationDefinition nd = def;
    {
      MutexLock lk(mu_);
      auto it = records_.find(id);
      if (it == records_.end()) return notFound("reservation " + id.value() + " does not exist");
      old = it->second;
      MORPHEUS_RETURN_IF_ERROR(may(old));
      nd.user = old.def.user;
      if (nd.queue.empty()) nd.queue = old.def.queue;
      if (!opts_.reservable_queues.count(nd.queue)) {
        return invalidArgument("queue", "'" + nd.queue + "' is not a reservable queue");
      }
      snap = planner_->clone();
      version = plan_version_;
      now = clock_.now();
    }
    planner::DisplacementReport displaced;
    planning_running_.set(1);
    auto placement = snap->update(id, nd, now, explanation, &displaced);
    planning_running_.set(0);
    MutexLock lk(mu_);
    // An unchanged version also means an unchanged record: `old` and the
    // access check still hold.
    if (plan_version_ != version &&
        (placement.isOk() || placement.status().code() == StatusCode::kInfeasible)) {
      m_.planning_conflicts.inc();
      if (attempt < kPlanAttempts) continue;
      return unavailable("reservation " + id.value() +
                         " not updated: the plan changed while it was planned, " +
                         std::to_string(kPlanAttempts) + " times; retry");
    }
    if (!placement.isOk()) return placement.status();
    ReservationRecord rec = old;
    rec.def = nd;
    rec.placement = *placement;
    rec.budget_container_ms = budget_container_ms;
    rec.status = "active";
    rec.status_reason.clear();
    std::vector<ReservationRecord> changed = displacedRecords(*snap, displaced, id, now);
    changed.push_back(rec);
    std::vector<store::StateWrite> consumed;
    if (issued_.count(id)) consumed.push_back({kIssuedNs, id.value(), std::nullopt});
    if (Status st = persist(changed, consumed); !st.isOk()) {
      return st.withContext("reservation " + id.value() + " not updated: state store");
    }
    planner_ = std::move(snap);
    ++plan_version_;
    changed.pop_back();
    commitDisplaced(displaced, std::move(changed), id);
    records_[id] = rec;
    issued_.erase(id);
    spdlog::info("reservation {} updated by {}", id.value(), user.value());
    return rec;
  }
}

Status ReservationManager::remove(const ReservationId& id, const UserId& user) {
  return remove(id, user, ownerOrAdmin(user, "delete"));
}

Status ReservationManager::remove(const ReservationId& id, const UserId& user,
                                  const AccessCheck& may) {
  MutexLock lk(mu_);
  auto it = records_.find(id);
  if (it == records_.end()) return notFound("reservation " + id.value() + " does not exist");
  MORPHEUS_RETURN_IF_ERROR(may(it->second));
  MORPHEUS_RETURN_IF_ERROR(
      store_.commit({{kNs, id.value(), std::nullopt}})
          .withContext("reservation " + id.value() + " not deleted: state store"));
  MORPHEUS_CHECK(planner_->remove(id).isOk(), "planner lost reservation " + id.value());
  ++plan_version_;
  bool periodic = it->second.def.period.count() > 0;
  records_.erase(it);
  grants_.erase(id);
  spdlog::info("reservation {} deleted by {}", id.value(), user.value());
  // Room freed by a periodic reservation may back (or re-place) at-risk one-offs.
  bool any_at_risk = std::any_of(records_.begin(), records_.end(),
                                 [](const auto& kv) { return kv.second.status == "at-risk"; });
  if (periodic && any_at_risk && reconciled_) {
    applyCapacityReport(planner_->setCapacity(planner_->capacity(), clock_.now()),
                        planner_->capacity());
  }
  updateGauges();
  return Status::ok();
}

std::vector<ReservationRecord> ReservationManager::list(const std::string& queue,
                                                        const std::string& id, TimePoint start,
                                                        TimePoint end) const {
  MutexLock lk(mu_);
  std::vector<ReservationRecord> out;
  for (const auto& [rid, r] : records_) {
    if (!queue.empty() && r.def.queue != queue) continue;
    if (!id.empty() && rid.value() != id) continue;
    if (toEpochMs(start) > 0 || toEpochMs(end) > 0) {
      bool overlap = false;
      for (const auto& a : r.placement.allocations) {
        // Periodic: compare against the instance that could overlap [start, end).
        Millis shift(0);
        if (r.def.period.count() > 0 && start > a.end) {
          int64_t k = (start - a.end).count() / r.def.period.count() + 1;
          shift = r.def.period * k;
        }
        TimePoint s = a.start + shift, e = a.end + shift;
        if (e > start && (toEpochMs(end) == 0 || s < end)) overlap = true;
      }
      if (!overlap) continue;
    }
    out.push_back(r);
  }
  std::sort(out.begin(), out.end(),
            [](const auto& a, const auto& b) { return a.accepted < b.accepted; });
  return out;
}

std::optional<ReservationRecord> ReservationManager::get(const ReservationId& id) const {
  MutexLock lk(mu_);
  auto it = records_.find(id);
  if (it == records_.end()) return std::nullopt;
  return it->second;
}

PlanSnapshot ReservationManager::plan(TimePoint from, TimePoint to) const {
  MutexLock lk(mu_);
  PlanSnapshot snap;
  snap.step = planner_->options().step;
  snap.capacity = planner_->capacity();
  snap.reservations = static_cast<int>(records_.size());
  int64_t step = snap.step.count();
  TimePoint t = fromEpochMs(toEpochMs(from) / step * step);
  const int64_t kMaxSteps = 20000;
  for (int64_t i = 0; t < to && i < kMaxSteps; i++, t += snap.step) {
    Resource total = planner_->loadAt(t);
    Resource periodic = planner_->view().periodicLoadAt(t);
    snap.steps.push_back({t, periodic, total - periodic});
  }
  return snap;
}

void ReservationManager::onCapacity(const Resource& live, bool allow_drop) {
  MutexLock lk(mu_);
  Resource current = planner_->capacity();
  if (!allow_drop) {
    Resource target = Resource::max(live, current);
    if (target == current) return;
    planner_->setCapacityOnly(target);
    ++plan_version_;
    spdlog::info("plan capacity {} -> {} (start-up grace: nothing re-planned)", current.toString(),
                 target.toString());
    updateGauges();
    return;
  }
  if (live == current && reconciled_) return;
  reconciled_ = true;
  auto report = planner_->setCapacity(live, clock_.now());
  ++plan_version_;
  if (live != current) spdlog::info("plan capacity {} -> {}", current.toString(), live.toString());
  applyCapacityReport(report, live);
  updateGauges();
}

void ReservationManager::applyCapacityReport(const planner::CapacityChangeReport& report,
                                             const Resource& capacity) {
  for (const auto& id : report.extras_released) {
    spdlog::warn("reservation {}: DRA extras released by a capacity drop", id.value());
    if (auto it = records_.find(id); it != records_.end()) {
      giveBack(it->second, refundOf(id, clock_.now()));
    }
    grants_.erase(id);
  }
  std::set<ReservationId> replanned(report.replanned.begin(), report.replanned.end());
  std::set<ReservationId> at_risk(report.at_risk.begin(), report.at_risk.end());
  std::set<ReservationId> degraded(report.periodic_over_capacity.begin(),
                                   report.periodic_over_capacity.end());
  for (auto& [id, r] : records_) {
    bool changed = false;
    if (replanned.count(id)) {
      if (const planner::Placement* p = planner_->placement(id)) {
        r.placement = *p;
        changed = true;
        spdlog::info("one-off reservation {} re-planned after a capacity change", id.value());
      }
    }
    std::string want = "active", reason;
    if (at_risk.count(id)) {
      want = "at-risk";
      // Still at risk: keep the first cause (e.g. the periodic reservation that displaced it).
      reason = r.status == "at-risk" && !r.status_reason.empty()
                   ? r.status_reason
                   : "cluster capacity " + capacity.toString() +
                         " no longer backs its placement and no other placement fits; kept, and "
                         "re-placed when capacity returns";
    } else if (degraded.count(id)) {
      want = "degraded";
      reason = "cluster capacity " + capacity.toString() +
               " no longer backs the periodic plan at its offsets";
    }
    if (r.status != want || r.status_reason != reason) {
      if (want == "active") {
        spdlog::info("reservation {} (owner {}) guarantees restored", id.value(),
                     r.def.user.value());
      } else if (r.status != want) {
        spdlog::warn("reservation {} (owner {}) is {}: {}", id.value(), r.def.user.value(), want,
                     reason);
        if (want == "at-risk") {
          m_.at_risk_total.inc();
        }
      }
      r.status = want;
      r.status_reason = reason;
      changed = true;
    }
    if (!changed) continue;
    if (Status st = persist(r); !st.isOk()) {
      // The in-memory record is authoritative; the next capacity change or
      // mutation persists it again.
      spdlog::error("reservation {}: status {} not persisted: {}", id.value(), r.status,
                    st.message());
    }
  }
}

void ReservationManager::expire() {
  MutexLock lk(mu_);
  // Trimming load before now alone does not move the version: a snapshot
  // installed later plans nothing before now, and the next call trims it.
  const std::vector<ReservationId> expired = planner_->expire(clock_.now());
  if (!expired.empty()) ++plan_version_;
  for (const auto& id : expired) {
    if (!store_.commit({{kNs, id.value(), std::nullopt}}).isOk()) {
      spdlog::warn("expired reservation {} could not be removed from the state store", id.value());
    }
    records_.erase(id);
    grants_.erase(id);
    spdlog::info("one-off reservation {} expired", id.value());
  }
  updateGauges();
}

Resource ReservationManager::guaranteedAt(const ReservationId& id, TimePoint t) const {
  MutexLock lk(mu_);
  return planner_->guaranteedAt(id, t);
}

bool ReservationManager::isPeriodic(const ReservationId& id) const {
  MutexLock lk(mu_);
  auto it = records_.find(id);
  return it != records_.end() && it->second.def.period.count() > 0;
}

namespace {

// The window of `def`'s instance that ends after `now` (the current one, or
// the next): [arrival, deadline) for a one-off, shifted by whole periods for
// a periodic reservation. nullopt when a one-off's window has passed.
std::optional<std::pair<TimePoint, TimePoint>> currentOrNextWindow(
    const planner::ReservationDefinition& def, TimePoint now) {
  TimePoint start = def.arrival, end = def.deadline;
  if (def.period > Millis(0) && end <= now) {
    int64_t k = (now - end) / def.period + 1;
    start += def.period * k;
    end += def.period * k;
  }
  if (end <= now) return std::nullopt;
  return std::make_pair(start, end);
}

}  // namespace

std::optional<ReservationId> ReservationManager::byRecurrenceKey(const JobKey& key) const {
  auto candidates = recurrenceCandidates(key);
  if (candidates.empty()) return std::nullopt;
  return candidates.front().id;
}

std::vector<ReservationRecord> ReservationManager::recurrenceCandidates(const JobKey& key) const {
  if (key.empty()) return {};
  const TimePoint now = clock_.now();
  MutexLock lk(mu_);
  // Prefer the reservation serving the current (or next) instance: a job with
  // per-instance one-off reservations has the next instances'
  // reservations accepted ahead of time, and its run must bind to its own.
  struct Ranked {
    bool open;  // has a window ending after now
    TimePoint start, accepted;
    const ReservationRecord* rec;
  };
  std::vector<Ranked> ranked;
  for (const auto& [id, r] : records_) {
    if (r.def.recurrence_key != key) continue;
    auto w = currentOrNextWindow(r.def, now);
    ranked.push_back({w.has_value(), w ? w->first : TimePoint(), r.accepted, &r});
  }
  std::stable_sort(ranked.begin(), ranked.end(), [](const Ranked& a, const Ranked& b) {
    if (a.open != b.open) return a.open;
    if (a.open && a.start != b.start) return a.start < b.start;
    return a.accepted > b.accepted;
  });
  std::vector<ReservationRecord> out;
  for (const auto& r : ranked) out.push_back(*r.rec);
  return out;
}

std::vector<ReservationManager::Guaranteed> ReservationManager::guaranteesAt(TimePoint t) const {
  MutexLock lk(mu_);
  std::vector<Guaranteed> out;
  for (const auto& [id, r] : records_) {
    Resource g = planner_->guaranteedAt(id, t);
    if (g != Resource()) out.push_back({id, r.def.queue, g});
  }
  return out;
}

std::vector<ReservationId> ReservationManager::ids() const {
  MutexLock lk(mu_);
  std::vector<ReservationId> out;
  for (const auto& [id, _] : records_) out.push_back(id);
  return out;
}

namespace {

// The container size DRA counts in: the largest stage capability (dominant).
Resource containerUnit(const planner::ReservationDefinition& def) {
  Resource unit(1, 1);
  for (const auto& st : def.stages) {
    if (st.capability.memoryMib() * st.capability.vcores() > unit.memoryMib() * unit.vcores()) {
      unit = st.capability;
    }
  }
  return unit;
}

}  // namespace

int64_t ReservationManager::refundOf(const ReservationId& id, TimePoint now) const {
  auto g = grants_.find(id);
  return g == grants_.end() ? 0 : g->second.refundAt(now);
}

std::optional<ReservationManager::DraPlanView> ReservationManager::draView(const ReservationId& id,
                                                                           TimePoint now,
                                                                           Millis recent) const {
  MutexLock lk(mu_);
  auto it = records_.find(id);
  if (it == records_.end()) return std::nullopt;
  const ReservationRecord& r = it->second;
  auto inst = planner_->instanceAt(id, now);
  if (!inst) return std::nullopt;
  DraPlanView v;
  v.unit = containerUnit(r.def);
  v.extra_now = planner_->extraAt(id, now);
  v.planned_now = planner_->guaranteedAt(id, now) - v.extra_now;
  v.planned_recent = reprovision::recentPlanned(
      [&](TimePoint t)
          REQUIRES(mu_) { return planner_->guaranteedAt(id, t) - planner_->extraAt(id, t); },
      now, inst->start, inst->end, recent, planner_->options().step);
  v.instance = *inst;
  v.budget_remaining_container_ms = budgetOf(r).remaining(inst->index, refundOf(id, now));
  for (const auto& a : r.placement.allocations) {
    v.instance_work_container_ms += a.resource.countCovering(v.unit) * (a.end - a.start).count();
  }
  return v;
}

Result<ReservationManager::DraOutcome> ReservationManager::reprovision(
    const ReservationId& id, const std::string& policy, int64_t count, Millis duration,
    const std::string& rationale) {
  if (count <= 0) return invalidArgument("count", "must be > 0");
  if (duration <= Millis(0)) return invalidArgument("duration", "must be > 0");
  MutexLock lk(mu_);
  auto it = records_.find(id);
  if (it == records_.end()) return notFound("reservation " + id.value());
  ReservationRecord& r = it->second;
  const TimePoint now = clock_.now();
  ++plan_version_;  // the record's budget and history, and the plan's extras
  auto inst = planner_->instanceAt(id, now);
  int64_t instance = inst ? inst->index : 0;
  const Resource unit = containerUnit(r.def);
  reprovision::InstanceBudget budget = budgetOf(r);
  auto g = grants_.find(id);
  reprovision::Grant grant = g == grants_.end() ? reprovision::Grant{} : g->second;
  const reprovision::SwapQuote q =
      reprovision::quoteSwap(budget, grant, instance, count, duration, now);
  storeBudget(r, budget);
  DraOutcome out;
  if (q.want < count) {
    out.denial = "budget";
    out.reason = "reprovisioning budget allows " + std::to_string(q.affordable) + " of " +
                 std::to_string(count) + " (" + std::to_string(r.budget_used_container_ms) +
                 " of " + std::to_string(r.budget_container_ms) + " container-ms used)";
  }
  if (q.want > 0) {
    std::string limit;
    auto n = planner_->setExtra(id, unit, q.want, now, now + duration, now, &limit);
    if (!n.isOk()) return n.status();
    out.granted = *n;
    if (*n < q.want) {
      out.denial = "plan-full";
      out.reason = limit;
    }
    reprovision::settleSwap(budget, grant, q, *n, duration, now);
    storeBudget(r, budget);
    if (grant.count > 0) {
      grants_[id] = grant;
    } else {
      grants_.erase(id);
    }
  }
  ReprovisionRecord ev{now, policy, out.granted > 0, unit * out.granted, duration, rationale};
  if (!out.reason.empty()) ev.reason = rationale + "; " + out.reason;
  // A renewal of the same decision extends the last entry (the history lists
  // changes, each with the span it held for), so a straggler reviewed every
  // step does not flood it.
  ReprovisionRecord* last = r.history.empty() ? nullptr : &r.history.back();
  if (last != nullptr && last->policy == ev.policy && last->granted == ev.granted &&
      last->extra == ev.extra && last->time + last->duration >= now) {
    last->duration = now + duration - last->time;
  } else {
    r.history.push_back(ev);
    if (r.history.size() > 200) r.history.erase(r.history.begin());
  }
  if (Status st = persist(r); !st.isOk()) {
    spdlog::warn("reservation {}: reprovisioning history not persisted: {}", id.value(),
                 st.message());
  }
  return out;
}

void ReservationManager::releaseExtras(const ReservationId& id) {
  MutexLock lk(mu_);
  auto it = records_.find(id);
  if (it == records_.end()) return;
  const TimePoint now = clock_.now();
  ReservationRecord& r = it->second;
  ++plan_version_;
  giveBack(r, refundOf(id, now));
  grants_.erase(id);
  // The record exists, so the planner knows the id: removeExtra cannot fail.
  MORPHEUS_CHECK(planner_->removeExtra(id, now).isOk(), "planner lost reservation " + id.value());
  if (Status st = persist(r); !st.isOk()) {
    spdlog::warn("reservation {}: released extras not persisted: {}", id.value(), st.message());
  }
}

std::vector<ReservationId> ReservationManager::withExtras() const {
  MutexLock lk(mu_);
  std::vector<ReservationId> out;
  const TimePoint now = clock_.now();
  for (const auto& [id, g] : grants_) {
    if (g.until > now) out.push_back(id);
  }
  return out;
}

void ReservationManager::updateGauges() {
  int periodic = 0, one_off = 0, degraded = 0, at_risk = 0;
  for (const auto& [_, r] : records_) {
    (r.def.period.count() > 0 ? periodic : one_off)++;
    degraded += r.status == "degraded" ? 1 : 0;
    at_risk += r.status == "at-risk" ? 1 : 0;
  }
  m_.active_periodic.set(periodic);
  m_.active_one_off.set(one_off);
  m_.degraded.set(degraded);
  m_.at_risk.set(at_risk);
  Resource cap = planner_->capacity();
  m_.plan_capacity_memory_bytes.set(static_cast<double>(cap.memoryMib()) * kBytesPerMib);
  m_.plan_capacity_vcores.set(cap.vcores());
}

}  // namespace morpheus::rm
