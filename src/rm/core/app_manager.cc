#include "rm/core/app_manager.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "common/validate.h"
#include "rm/core/reservation_manager.h"

namespace morpheus::rm {

using nlohmann::json;

namespace {

constexpr const char* kNs = "apps";
// Deletions per store commit when trimming history (an etcd transaction
// holds state-store.etcd.max-txn-ops operations, 128 by default).
constexpr size_t kDeleteBatch = 100;

std::string toHex(const std::string& s) {
  static const char* d = "0123456789abcdef";
  std::string out;
  out.reserve(s.size() * 2);
  for (unsigned char c : s) {
    out.push_back(d[c >> 4]);
    out.push_back(d[c & 15]);
  }
  return out;
}

std::string fromHex(const std::string& h) {
  auto v = [](char c) { return c <= '9' ? c - '0' : c - 'a' + 10; };
  std::string out;
  for (size_t i = 0; i + 1 < h.size(); i += 2)
    out.push_back(static_cast<char>(v(h[i]) * 16 + v(h[i + 1])));
  return out;
}

AppState stateFrom(const std::string& s) {
  for (AppState a : {AppState::kSubmitted, AppState::kRunning, AppState::kFinished,
                     AppState::kFailed, AppState::kKilled}) {
    if (s == toString(a)) return a;
  }
  return AppState::kFailed;
}

json encode(const AppRecord& r) {
  return {{"id", r.id.value()},
          {"name", r.spec.name},
          {"user", r.spec.user.value()},
          {"spec_queue", r.spec.queue},
          {"spec_reservation", r.spec.reservation.value()},
          {"recurrence_key", r.spec.recurrence_key.value()},
          {"am_memory_mib", r.spec.am_resource.memoryMib()},
          {"am_vcores", r.spec.am_resource.vcores()},
          {"am_launch", toHex(r.spec.am_launch_context)},
          {"spec_max_attempts", r.spec.max_attempts},
          {"priority", r.spec.priority},
          {"tags", r.spec.tags},
          {"queue", r.queue},
          {"reservation", r.reservation.value()},
          {"state", toString(r.state)},
          {"submit_ms", toEpochMs(r.submit)},
          {"start_ms", toEpochMs(r.start)},
          {"finish_ms", toEpochMs(r.finish)},
          {"attempt", r.attempt},
          {"max_attempts", r.max_attempts},
          {"am_container", r.am_container.value()},
          {"am_node", r.am_node.value()},
          {"progress", r.progress},
          {"diagnostics", r.diagnostics},
          {"memory_mib_ms", r.memory_mib_ms},
          {"vcore_ms", r.vcore_ms}};
}

Result<AppRecord> decode(const std::string& text) {
  json j = json::parse(text, nullptr, false);
  if (j.is_discarded()) return internalError("corrupt app record");
  try {
    AppRecord r;
    r.id = AppId(j.at("id").get<std::string>());
    r.spec.name = j.at("name").get<std::string>();
    r.spec.user = UserId(j.at("user").get<std::string>());
    r.spec.queue = j.at("spec_queue").get<std::string>();
    r.spec.reservation = ReservationId(j.at("spec_reservation").get<std::string>());
    r.spec.recurrence_key = JobKey(j.at("recurrence_key").get<std::string>());
    r.spec.am_resource =
        Resource(j.at("am_memory_mib").get<int64_t>(), j.at("am_vcores").get<int64_t>());
    r.spec.am_launch_context = fromHex(j.at("am_launch").get<std::string>());
    r.spec.max_attempts = j.at("spec_max_attempts").get<int>();
    r.spec.priority = j.at("priority").get<int>();
    r.spec.tags = j.at("tags").get<std::map<std::string, std::string>>();
    r.queue = j.at("queue").get<std::string>();
    r.reservation = ReservationId(j.at("reservation").get<std::string>());
    r.state = stateFrom(j.at("state").get<std::string>());
    r.submit = fromEpochMs(j.at("submit_ms").get<int64_t>());
    r.start = fromEpochMs(j.at("start_ms").get<int64_t>());
    r.finish = fromEpochMs(j.at("finish_ms").get<int64_t>());
    r.attempt = j.at("attempt").get<int>();
    r.max_attempts = j.at("max_attempts").get<int>();
    r.am_container = ContainerId(j.at("am_container").get<std::string>());
    r.am_node = NodeId(j.at("am_node").get<std::string>());
    r.progress = j.at("progress").get<float>();
    r.diagnostics = j.at("diagnostics").get<std::string>();
    // Records written before accounting have none.
    r.memory_mib_ms = j.value("memory_mib_ms", int64_t{0});
    r.vcore_ms = j.value("vcore_ms", int64_t{0});
    return r;
  } catch (const json::exception& e) {
    return internalError(std::string("corrupt app record: ") + e.what());
  }
}

}  // namespace

const char* toString(AppState s) {
  switch (s) {
    case AppState::kSubmitted:
      return "SUBMITTED";
    case AppState::kRunning:
      return "RUNNING";
    case AppState::kFinished:
      return "FINISHED";
    case AppState::kFailed:
      return "FAILED";
    case AppState::kKilled:
      return "KILLED";
  }
  return "UNKNOWN";
}

AppManager::AppManager(AppManagerOptions opts, store::StateStore& store, Clock& clock,
                       MetricsRegistry& metrics, const TokenSigner& signer, RecurrenceLookup by_key,
                       ReservationLookup reservation)
    : opts_(std::move(opts)),
      store_(store),
      clock_(clock),
      metrics_(metrics),
      signer_(signer),
      by_key_(std::move(by_key)),
      reservation_(std::move(reservation)),
      cluster_ts_(toEpochMs(clock.now())),
      limits_(opts_.limits) {}

AppManager::~AppManager() { stop(); }

Status AppManager::persist(const AppRecord& rec) {
  version_++;
  MORPHEUS_RETURN_IF_ERROR(store_.commit({{kNs, rec.id.value(), encode(rec).dump()}}));
  usage_dirty_.erase(rec.id);
  return Status::ok();
}

AppId AppManager::newId() {
  char buf[64];
  std::snprintf(buf, sizeof buf, "application_%lld_%04lld", static_cast<long long>(cluster_ts_),
                static_cast<long long>(next_seq_++));
  return AppId(buf);
}

void AppManager::updateGauges() {
  std::map<AppState, int> n;
  for (const auto& [_, a] : apps_) n[a.state]++;
  for (AppState s : {AppState::kSubmitted, AppState::kRunning, AppState::kFinished,
                     AppState::kFailed, AppState::kKilled}) {
    metrics_.state(s).set(static_cast<double>(n[s]));
  }
}

Status AppManager::recover() {
  MORPHEUS_ASSIGN_OR_RETURN(auto rows, store_.list(kNs));
  MutexLock lk(mu_);
  for (const auto& [key, value] : rows) {
    auto rec = decode(value);
    if (!rec.isOk()) return rec.status().withContext("app " + key);
    apps_[rec->id] = *rec;
    if (isFinal(rec->state)) finished_++;
  }
  if (auto trimmed = trimLocked(clock_.now()); !trimmed.isOk()) return trimmed.status();
  updateGauges();
  if (!rows.empty()) spdlog::info("recovered {} application(s)", rows.size());
  return Status::ok();
}

Result<AppRecord> AppManager::submit(const AppSpec& spec, const BindCheck& may_bind) {
  if (spec.name.empty()) return invalidArgument("name", "is required");
  if (spec.user.empty()) return invalidArgument("user", "is required");
  const std::string max_len = std::to_string(opts_.max_name_length);
  auto checkName = [&](const std::string& v, const std::string& field) -> Status {
    MORPHEUS_RETURN_IF_ERROR(checkDisplayName(v, field));
    if (static_cast<int64_t>(v.size()) > opts_.max_name_length) {
      return invalidArgument(
          field, std::to_string(v.size()) + " bytes; at most " + max_len + " (rm.max-name-length)");
    }
    return Status::ok();
  };
  MORPHEUS_RETURN_IF_ERROR(checkName(spec.name, "name"));
  MORPHEUS_RETURN_IF_ERROR(checkName(spec.recurrence_key.value(), "recurrence_key"));
  for (const auto& [k, v] : spec.tags) {
    MORPHEUS_RETURN_IF_ERROR(checkName(k, "tags"));
    MORPHEUS_RETURN_IF_ERROR(checkName(v, "tags[" + k + "]"));
  }
  if (spec.am_resource.anyNegative() || spec.am_resource.isZero()) {
    return invalidArgument("am_resource", "must be a positive container size");
  }
  if (!spec.am_resource.fitsIn(opts_.max_am_resource)) {
    return invalidArgument("am_resource", "is larger than any node can hold");
  }
  if (spec.am_launch_context.empty()) return invalidArgument("am_launch_context", "is required");
  if (opts_.max_launch_context_bytes > 0 &&
      static_cast<int64_t>(spec.am_launch_context.size()) > opts_.max_launch_context_bytes) {
    return invalidArgument("am_launch_context",
                           "is " + std::to_string(spec.am_launch_context.size()) +
                               " bytes, more than rm.max-launch-context-bytes (" +
                               std::to_string(opts_.max_launch_context_bytes) + ")");
  }
  if (spec.max_attempts < 0) return invalidArgument("max_am_attempts", "must be >= 0");
  AppRecord rec;
  rec.spec = spec;
  if (!spec.reservation.empty()) {
    auto target = reservation_(spec.reservation);
    if (!target) {
      return invalidArgument("reservation_id", "no active reservation " + spec.reservation.value());
    }
    if (Status st = may_bind(*target); !st.isOk()) {
      return Status(st.code(), "reservation_id: " + st.message());
    }
    rec.reservation = spec.reservation;
  } else if (!spec.recurrence_key.empty()) {
    Status refused = Status::ok();
    for (const auto& target : by_key_(spec.recurrence_key)) {
      Status st = may_bind(target);
      if (st.isOk()) {
        rec.reservation = target.id;
        break;
      }
      if (refused.isOk()) refused = st;
    }
    if (rec.reservation.empty() && !refused.isOk()) {
      return Status(refused.code(), "recurrence_key: '" + spec.recurrence_key.value() +
                                        "' is reserved by another user: " + refused.message());
    }
  }
  if (rec.reservation.empty()) {
    rec.queue = spec.queue.empty() ? opts_.default_queue : spec.queue;
    if (!opts_.queues.count(rec.queue)) {
      std::string known;
      for (const auto& q : opts_.queues) known += (known.empty() ? "" : ", ") + q;
      return invalidArgument("queue", "unknown queue '" + rec.queue + "' (known: " + known + ")");
    }
  }
  rec.max_attempts = spec.max_attempts > 0 ? spec.max_attempts : opts_.max_am_attempts;
  rec.submit = clock_.now();
  MutexLock lk(mu_);
  MORPHEUS_RETURN_IF_ERROR(checkUserBounds(spec.user));
  rec.id = newId();
  MORPHEUS_RETURN_IF_ERROR(persist(rec));
  apps_[rec.id] = rec;
  updateGauges();
  spdlog::info(
      "app {} '{}' of {} submitted to {}", rec.id.value(), spec.name, spec.user.value(),
      rec.reservation.empty() ? "queue " + rec.queue : "reservation " + rec.reservation.value());
  return rec;
}

Status AppManager::checkUserBounds(const UserId& user) const {
  int64_t pending = 0, unfinished = 0;
  for (const auto& [_, a] : apps_) {
    if (a.spec.user != user || isFinal(a.state)) continue;
    unfinished++;
    if (a.state == AppState::kSubmitted) pending++;
  }
  auto refuse = [&](int64_t n, const char* what, const char* option) {
    metrics_.refused_user_limit.inc();
    return permissionDenied("user " + user.value() + " has " + std::to_string(n) + " " + what +
                            " applications, the most " + option + " allows");
  };
  if (opts_.max_pending_apps_per_user > 0 && pending >= opts_.max_pending_apps_per_user) {
    return refuse(pending, "pending (SUBMITTED)", "rm.max-pending-apps-per-user");
  }
  if (opts_.max_apps_per_user > 0 && unfinished >= opts_.max_apps_per_user) {
    return refuse(unfinished, "unfinished", "rm.max-apps-per-user");
  }
  return Status::ok();
}

Result<AppRecord> AppManager::get(const AppId& id) const {
  MutexLock lk(mu_);
  auto it = apps_.find(id);
  if (it == apps_.end()) return notFound("application " + id.value() + " does not exist");
  return it->second;
}

std::vector<AppRecord> AppManager::list(const std::set<AppState>& states,
                                        const std::string& queue) const {
  MutexLock lk(mu_);
  std::vector<AppRecord> out;
  for (const auto& [_, a] : apps_) {
    if (!states.empty() && !states.count(a.state)) continue;
    if (!queue.empty() && a.queue != queue && a.reservation.value() != queue) continue;
    out.push_back(a);
  }
  return out;
}

Status AppManager::amLaunched(const AppId& id, const ContainerId& container, const NodeId& node) {
  MutexLock lk(mu_);
  auto it = apps_.find(id);
  if (it == apps_.end()) return notFound("application " + id.value() + " does not exist");
  if (it->second.state != AppState::kSubmitted) {
    return infeasible("application " + id.value() + " is " + toString(it->second.state));
  }
  AppRecord rec = it->second;
  rec.state = AppState::kRunning;
  rec.attempt += 1;
  rec.am_container = container;
  rec.am_node = node;
  if (rec.attempt == 1) rec.start = clock_.now();
  MORPHEUS_RETURN_IF_ERROR(persist(rec));
  it->second = rec;
  updateGauges();
  return Status::ok();
}

Result<AppRecord> AppManager::amAttemptFailed(const AppId& id, const std::string& diagnostics) {
  MutexLock lk(mu_);
  auto it = apps_.find(id);
  if (it == apps_.end()) return notFound("application " + id.value() + " does not exist");
  if (isFinal(it->second.state)) return it->second;
  AppRecord rec = it->second;
  rec.diagnostics = "attempt " + std::to_string(rec.attempt) + ": " + diagnostics;
  rec.am_container = ContainerId();
  rec.am_node = NodeId();
  if (rec.attempt >= rec.max_attempts) {
    rec.state = AppState::kFailed;
    rec.finish = clock_.now();
    rec.diagnostics += " (no attempts left of " + std::to_string(rec.max_attempts) + ")";
  } else {
    rec.state = AppState::kSubmitted;
  }
  MORPHEUS_RETURN_IF_ERROR(persist(rec));
  it->second = rec;
  if (rec.state == AppState::kFailed) finishedOne();
  updateGauges();
  spdlog::warn("app {} AM attempt {} failed: {}; {}", id.value(), rec.attempt, diagnostics,
               rec.state == AppState::kFailed ? "app failed" : "retrying");
  return rec;
}

Status AppManager::finish(const AppId& id, AppState final_state, const std::string& diagnostics) {
  if (!isFinal(final_state))
    return invalidArgument("final_status", "must be SUCCEEDED, FAILED or KILLED");
  MutexLock lk(mu_);
  auto it = apps_.find(id);
  if (it == apps_.end()) return notFound("application " + id.value() + " does not exist");
  if (isFinal(it->second.state)) return Status::ok();  // idempotent (retried Finish)
  AppRecord rec = it->second;
  rec.state = final_state;
  rec.finish = clock_.now();
  rec.diagnostics = diagnostics;
  if (final_state == AppState::kFinished) rec.progress = 1;
  MORPHEUS_RETURN_IF_ERROR(persist(rec));
  it->second = rec;
  finishedOne();
  updateGauges();
  spdlog::info("app {} {}{}", id.value(), toString(final_state),
               diagnostics.empty() ? "" : ": " + diagnostics);
  return Status::ok();
}

Status AppManager::kill(const AppId& id, const UserId& who, bool admin, const std::string& reason) {
  MutexLock lk(mu_);
  auto it = apps_.find(id);
  if (it == apps_.end()) return notFound("application " + id.value() + " does not exist");
  if (!admin && it->second.spec.user != who) {
    return permissionDenied(who.value() + " may not kill application " + id.value() + " of " +
                            it->second.spec.user.value());
  }
  if (isFinal(it->second.state)) {
    return infeasible("application " + id.value() + " already " + toString(it->second.state));
  }
  AppRecord rec = it->second;
  rec.state = AppState::kKilled;
  rec.finish = clock_.now();
  rec.diagnostics = "killed by " + who.value() + (reason.empty() ? "" : ": " + reason);
  MORPHEUS_RETURN_IF_ERROR(persist(rec));
  it->second = rec;
  finishedOne();
  updateGauges();
  spdlog::info("app {} {}", id.value(), rec.diagnostics);
  return Status::ok();
}

void AppManager::setProgress(const AppId& id, float progress) {
  MutexLock lk(mu_);
  auto it = apps_.find(id);
  if (it != apps_.end()) it->second.progress = std::clamp(progress, 0.0f, 1.0f);
}

void AppManager::finishedOne() {
  finished_++;
  if (finished_ <= opts_.history_max_apps) return;
  if (auto t = trimLocked(clock_.now()); !t.isOk()) {
    spdlog::warn("finished applications not trimmed: {}", t.status().message());
  }
}

const std::map<AppId, std::string>& AppManager::waiting() const {
  if (waiting_version_ == version_.load()) return waiting_;
  waiting_version_ = version_.load();
  std::vector<const AppRecord*> order;
  for (const auto& [_, a] : apps_) {
    if (a.reservation.empty() && !isFinal(a.state)) order.push_back(&a);
  }
  std::stable_sort(order.begin(), order.end(), [](const AppRecord* x, const AppRecord* y) {
    return x->submit != y->submit ? x->submit < y->submit : x->id < y->id;
  });
  std::vector<AdmissionApp> in;
  in.reserve(order.size());
  for (const AppRecord* a : order) {
    in.push_back(
        {a->id, a->spec.user.value(), a->queue, a->state == AppState::kRunning || a->attempt > 0});
  }
  waiting_ = admit(in, limits_);
  return waiting_;
}

std::vector<AppRecord> AppManager::startable() const {
  MutexLock lk(mu_);
  const auto& held = waiting();
  std::vector<AppRecord> out;
  for (const auto& [id, a] : apps_) {
    if (a.state == AppState::kSubmitted && !held.count(id)) out.push_back(a);
  }
  // Retried attempts and reservation-bound apps first (they hold their
  // place), then by submission.
  std::stable_sort(out.begin(), out.end(), [](const AppRecord& x, const AppRecord& y) {
    auto rank = [](const AppRecord& a) { return a.attempt > 0 || !a.reservation.empty() ? 0 : 1; };
    if (rank(x) != rank(y)) return rank(x) < rank(y);
    return x.submit != y.submit ? x.submit < y.submit : x.id < y.id;
  });
  return out;
}

std::string AppManager::waitingReason(const AppId& id) const {
  MutexLock lk(mu_);
  auto it = apps_.find(id);
  if (it == apps_.end() || it->second.state != AppState::kSubmitted) return "";
  const auto& held = waiting();
  auto w = held.find(id);
  return w == held.end() ? "" : w->second;
}

void AppManager::setLimits(QueueLimits limits) {
  MutexLock lk(mu_);
  limits_ = std::move(limits);
  version_++;  // the runtime re-reads startable()
}

QueueLimits AppManager::limits() const {
  MutexLock lk(mu_);
  return limits_;
}

void AppManager::addUsage(const AppId& id, int64_t memory_mib_ms, int64_t vcore_ms) {
  if (memory_mib_ms <= 0 && vcore_ms <= 0) return;
  MutexLock lk(mu_);
  auto it = apps_.find(id);
  if (it == apps_.end()) return;
  it->second.memory_mib_ms += std::max<int64_t>(0, memory_mib_ms);
  it->second.vcore_ms += std::max<int64_t>(0, vcore_ms);
  if (!isFinal(it->second.state)) {
    usage_dirty_.insert(id);
    return;
  }
  // A final app changes no more but for its last containers: written now.
  if (Status st = store_.commit({{kNs, id.value(), encode(it->second).dump()}}); !st.isOk()) {
    usage_dirty_.insert(id);
    spdlog::warn("usage of {} not written yet: {}", id.value(), st.message());
  }
}

Status AppManager::flushUsage() {
  MutexLock lk(mu_);
  if (usage_dirty_.empty()) return Status::ok();
  std::vector<store::StateWrite> batch;
  std::vector<AppId> written;
  for (const auto& id : usage_dirty_) {
    auto it = apps_.find(id);
    if (it != apps_.end()) batch.push_back({kNs, id.value(), encode(it->second).dump()});
    written.push_back(id);
    if (batch.size() >= kDeleteBatch) break;
  }
  if (!batch.empty()) MORPHEUS_RETURN_IF_ERROR(store_.commit(batch));
  for (const auto& id : written) usage_dirty_.erase(id);
  return Status::ok();
}

Result<int64_t> AppManager::trimHistory() {
  MutexLock lk(mu_);
  return trimLocked(clock_.now());
}

Result<int64_t> AppManager::trimLocked(TimePoint now) {
  std::vector<std::pair<TimePoint, AppId>> finished;
  for (const auto& [id, a] : apps_) {
    if (isFinal(a.state)) finished.emplace_back(a.finish, id);
  }
  std::sort(finished.begin(), finished.end());
  // Oldest first: everything finished before the age bound, then as many
  // more as needed to keep at most max-apps.
  size_t drop = 0;
  while (drop < finished.size() && finished[drop].first < now - opts_.history_max_age) drop++;
  const size_t keep = static_cast<size_t>(std::max<int64_t>(0, opts_.history_max_apps));
  if (finished.size() - drop > keep) drop = finished.size() - keep;
  for (size_t i = 0; i < drop; i += kDeleteBatch) {
    std::vector<store::StateWrite> batch;
    for (size_t j = i; j < std::min(drop, i + kDeleteBatch); j++) {
      batch.push_back({kNs, finished[j].second.value(), std::nullopt});
    }
    MORPHEUS_RETURN_IF_ERROR(store_.commit(batch));
    for (const auto& w : batch) {
      apps_.erase(AppId(w.key));
      usage_dirty_.erase(AppId(w.key));
      finished_--;
    }
  }
  if (drop > 0) {
    version_++;
    updateGauges();
    spdlog::info(
        "forgot {} finished application(s), the oldest (rm.app-history.max-apps {}, "
        "rm.app-history.max-age {}s)",
        drop, opts_.history_max_apps, opts_.history_max_age.count() / 1000);
  }
  return static_cast<int64_t>(drop);
}

void AppManager::tick() {
  if (Status st = flushUsage(); !st.isOk()) spdlog::warn("usage not written: {}", st.message());
  if (auto t = trimHistory(); !t.isOk())
    spdlog::warn("finished applications not trimmed: {}", t.status().message());
  MutexLock lk(timer_mu_);
  if (!running_) return;
  Millis every = std::clamp(opts_.history_max_age / 4, Millis(100), Millis(10000));
  timer_ = clock_.scheduleAfter(every, [this] { tick(); });
}

void AppManager::start() {
  MutexLock lk(timer_mu_);
  if (running_) return;
  running_ = true;
  Millis every = std::clamp(opts_.history_max_age / 4, Millis(100), Millis(10000));
  timer_ = clock_.scheduleAfter(every, [this] { tick(); });
}

void AppManager::stop() {
  TimerId timer;
  {
    MutexLock lk(timer_mu_);
    if (!running_) return;
    running_ = false;
    timer = timer_;
  }
  // A tick already running flushes and trims, then takes timer_mu_ and does
  // not reschedule; it must have returned before the manager is destroyed.
  clock_.cancelAndWait(timer);
  if (Status st = flushUsage(); !st.isOk()) spdlog::warn("usage not written: {}", st.message());
}

std::vector<UsageRow> aggregateUsage(
    const std::vector<AppRecord>& apps, UsageGroup by, TimePoint since,
    const std::function<std::pair<int64_t, int64_t>(const AppRecord&)>& running) {
  std::map<std::string, UsageRow> rows;
  for (const auto& a : apps) {
    const bool final_state = isFinal(a.state);
    if (final_state && a.finish < since) continue;
    std::string key = by == UsageGroup::kUser
                          ? a.spec.user.value()
                          : (a.reservation.empty() ? a.queue : a.reservation.value());
    UsageRow& r = rows[key];
    r.key = key;
    r.memory_mib_ms += a.memory_mib_ms;
    r.vcore_ms += a.vcore_ms;
    if (running) {
      auto [mem, vc] = running(a);
      r.memory_mib_ms += mem;
      r.vcore_ms += vc;
    }
    r.apps++;
    if (!final_state) r.running_apps++;
  }
  std::vector<UsageRow> out;
  for (auto& [_, r] : rows) out.push_back(std::move(r));
  std::stable_sort(out.begin(), out.end(), [](const UsageRow& x, const UsageRow& y) {
    return x.memory_mib_ms > y.memory_mib_ms;
  });
  return out;
}

std::string AppManager::amToken(const AppId& id, int attempt) const {
  return signer_.sign("am|" + id.value() + "|" + std::to_string(attempt));
}

Status AppManager::checkAmToken(const AppId& app, const std::string& token) const {
  auto payload = signer_.verify(token);
  if (!payload.isOk()) return permissionDenied("am_token: invalid");
  auto a = payload->find('|'), b = payload->rfind('|');
  if (payload->compare(0, a, "am") != 0 || a == b)
    return permissionDenied("am_token: not an AM token");
  std::string tok_app = payload->substr(a + 1, b - a - 1);
  if (tok_app != app.value()) {
    return permissionDenied("am_token: issued for " + tok_app + ", not " + app.value());
  }
  MutexLock lk(mu_);
  auto it = apps_.find(app);
  if (it == apps_.end()) return notFound("application " + app.value() + " does not exist");
  if (std::to_string(it->second.attempt) != payload->substr(b + 1)) {
    return permissionDenied("am_token: attempt " + payload->substr(b + 1) +
                            " is not the current attempt " + std::to_string(it->second.attempt));
  }
  return Status::ok();
}

std::vector<BindTarget> bindTargets(const ReservationManager& reservations, const JobKey& key) {
  std::vector<BindTarget> out;
  for (const auto& r : reservations.recurrenceCandidates(key)) {
    out.push_back({r.id, r.def.user, r.def.queue});
  }
  return out;
}

std::optional<BindTarget> bindTarget(const ReservationManager& reservations,
                                     const ReservationId& id) {
  auto r = reservations.get(id);
  if (!r) return std::nullopt;
  return BindTarget{r->id, r->def.user, r->def.queue};
}

}  // namespace morpheus::rm
