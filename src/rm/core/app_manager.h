// Application lifecycle in the RM (docs/design/scheduler.md, docs/design/ha.md): submission,
// binding to a reservation (by id, or by recurrence key so a periodic job
// needs no editing per run), AM attempts, finish and kill. Every transition
// is persisted through the StateStore before it is acknowledged, so an RM
// restart (kill -9 included) loses nothing that was acknowledged.
//
// AM tokens: an AM proves who it is with a token naming its application and
// attempt, signed with the RM's persistent key; an AM may act only for its
// own application (and only its current attempt).
//
// Thread-safety: internally locked.
#pragma once

#include <atomic>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/ids.h"
#include "common/metrics.h"
#include "common/mutex.h"
#include "common/resource.h"
#include "common/status.h"
#include "common/token.h"
#include "rm/core/queue_limits.h"
#include "rm/core/rm_metrics.h"
#include "store/state/state_store.h"

namespace morpheus::rm {

enum class AppState { kSubmitted, kRunning, kFinished, kFailed, kKilled };
const char* toString(AppState s);
inline bool isFinal(AppState s) {
  return s == AppState::kFinished || s == AppState::kFailed || s == AppState::kKilled;
}

struct AppSpec {
  std::string name;
  UserId user;
  std::string queue;  // ad-hoc queue path; "" = the default queue
  ReservationId reservation;
  JobKey recurrence_key;
  Resource am_resource;
  std::string am_launch_context;  // serialized v1::ContainerLaunchContext (opaque here)
  int max_attempts = 0;           // 0 = the RM default
  int priority = 0;
  std::map<std::string, std::string> tags;
};

struct AppRecord {
  AppId id;
  AppSpec spec;
  std::string queue;          // resolved ad-hoc queue ("" when bound to a reservation)
  ReservationId reservation;  // bound reservation ("" = ad hoc)
  AppState state = AppState::kSubmitted;
  TimePoint submit, start, finish;
  int attempt = 0;  // current AM attempt, 1-based once launched
  int max_attempts = 1;
  ContainerId am_container;
  NodeId am_node;
  float progress = 0;
  std::string diagnostics;
  // Accounting (YARN's memorySeconds / vcoreSeconds, in milli-units so
  // short containers count): the sum over the app's ended containers, AM
  // containers included, of resource x (end - start) on the RM's clock.
  // Persisted with the record; containers still running are added by
  // whoever reports (RmRuntime::runningUsage).
  int64_t memory_mib_ms = 0;
  int64_t vcore_ms = 0;
};

struct AppManagerOptions {
  int max_am_attempts = 2;
  std::string default_queue = "root.default";
  std::set<std::string> queues = {"root.default"};  // ad-hoc leaf queues that accept apps
  Resource max_am_resource = Resource(1 << 20, 1 << 10);
  // Per-user bounds (rm.max-pending-apps-per-user, rm.max-apps-per-user):
  // SUBMITTED apps (waiting for an AM), and unfinished apps (SUBMITTED or
  // RUNNING) one user may have. 0 = unbounded.
  int64_t max_pending_apps_per_user = 0;
  int64_t max_apps_per_user = 0;
  // Largest serialized AM launch context (rm.max-launch-context-bytes); 0 =
  // unbounded.
  int64_t max_launch_context_bytes = 0;
  // Longest name, recurrence key, tag key or value (rm.max-name-length).
  int64_t max_name_length = 256;
  // Running-apps limits of ad-hoc apps (scheduler.max-running-apps,
  // scheduler.user-max-running-apps; queue_limits.h). Its max_resources are
  // the scheduler core's business, kept here only to be reported.
  QueueLimits limits;
  // Finished applications kept (rm.app-history.max-apps, .max-age): beyond
  // either, the oldest finished ones are removed from memory and the store.
  // Unfinished apps are never removed.
  int64_t history_max_apps = 10000;
  Millis history_max_age{7LL * 24 * 3600 * 1000};
};

// One row of `morpheusctl usage` (GetUsage): the accounting of the apps of one
// user or queue.
struct UsageRow {
  std::string key;  // user, or queue (ad-hoc path or reservation id)
  int64_t memory_mib_ms = 0;
  int64_t vcore_ms = 0;
  int32_t apps = 0;
  int32_t running_apps = 0;  // not final yet
};
enum class UsageGroup { kUser, kQueue };
// Sums the apps not final, or final at or after `since`, per user or queue
// (bigger memory first, then key). `running` gives what an app's running
// containers add (memory MiB-ms, vcore-ms); null = nothing. Pure.
std::vector<UsageRow> aggregateUsage(
    const std::vector<AppRecord>& apps, UsageGroup by, TimePoint since,
    const std::function<std::pair<int64_t, int64_t>(const AppRecord&)>& running);

// A reservation an app may bind to, as the binding check sees it.
struct BindTarget {
  ReservationId id;
  UserId owner;
  std::string queue;  // the reservation's (reservable) queue
};

class AppManager {
 public:
  // Binding lookups into the reservation system. RecurrenceLookup: every
  // reservation with the key, the one an app should bind to first (the
  // reservation system's preference, ReservationManager::recurrenceCandidates).
  using RecurrenceLookup = std::function<std::vector<BindTarget>(const JobKey&)>;
  using ReservationLookup = std::function<std::optional<BindTarget>(const ReservationId&)>;
  // The submitter's right to run in a reservation (the RM edge: its owner, an
  // administrator of its queue, or an admin; docs/operator/security.md). A non-OK status
  // refuses the binding and is returned with the field named.
  using BindCheck = std::function<Status(const BindTarget&)>;

  AppManager(AppManagerOptions opts, store::StateStore& store, Clock& clock,
             MetricsRegistry& metrics, const TokenSigner& signer, RecurrenceLookup by_key,
             ReservationLookup reservation);
  ~AppManager();  // stop()
  AppManager(const AppManager&) = delete;
  AppManager& operator=(const AppManager&) = delete;

  // Loads every persisted app (RM restart).
  Status recover();

  // INVALID_ARGUMENT naming the field (name, user, queue, reservation_id,
  // am_resource, am_launch_context, max_am_attempts; names without control
  // or bidi characters, see checkDisplayName); PERMISSION_DENIED naming the
  // option when the user is at a per-user bound; persisted before return,
  // nothing stored on refusal.
  // Binding: an explicit reservation_id must pass `may_bind`, else
  // PERMISSION_DENIED naming reservation_id; a recurrence key binds to the
  // first of its reservations that passes `may_bind`, and when it has some
  // but none passes, PERMISSION_DENIED naming recurrence_key (an app never
  // runs in, or feeds the history of, another user's reservation). A key
  // with no reservation runs ad hoc.
  Result<AppRecord> submit(const AppSpec& spec, const BindCheck& may_bind);

  Result<AppRecord> get(const AppId& id) const;
  // The queue of an app submitted without one.
  const std::string& defaultQueue() const { return opts_.default_queue; }
  std::vector<AppRecord> list(const std::set<AppState>& states, const std::string& queue) const;

  // The AM container of the next attempt was allocated and started.
  Status amLaunched(const AppId& id, const ContainerId& container, const NodeId& node);
  // The AM container of the current attempt ended without the AM finishing
  // the app: retried (back to SUBMITTED) while attempts remain, else FAILED.
  Result<AppRecord> amAttemptFailed(const AppId& id, const std::string& diagnostics);
  // The AM reports the end (FINISHED, FAILED or KILLED).
  Status finish(const AppId& id, AppState final_state, const std::string& diagnostics);
  // Owner or admin; NOT_FOUND / FAILED_PRECONDITION when already final.
  Status kill(const AppId& id, const UserId& who, bool admin, const std::string& reason);
  void setProgress(const AppId& id, float progress);

  // Increases on every change of any app (lets the runtime cache lists).
  uint64_t version() const { return version_.load(); }

  // ---- Queue and user limits (queue_limits.h) ----
  // SUBMITTED apps that may start their AM now (admit(): not held back by a
  // running-apps limit), retried attempts and reservation-bound apps first,
  // then by submission.
  std::vector<AppRecord> startable() const;
  // Why a SUBMITTED app waits for a limit ("" = it does not).
  std::string waitingReason(const AppId& id) const;
  // New limits (config reload): apps held back start, from the next AM
  // placement on, when the new limits allow; running apps are never stopped.
  void setLimits(QueueLimits limits);
  QueueLimits limits() const;

  // ---- Accounting ----
  // Adds an ended container's resource x lifetime to the app (no-op for an
  // unknown app). Written to the store at once for a final app (its last
  // containers end after it finished), else with the app's next transition
  // or the next flushUsage.
  void addUsage(const AppId& id, int64_t memory_mib_ms, int64_t vcore_ms);
  // Writes the usage of every app changed since it was last written.
  Status flushUsage();

  // ---- History retention ----
  // Removes the finished apps beyond rm.app-history.max-age and, oldest
  // finish first, beyond rm.app-history.max-apps, from memory and the store.
  // Returns how many were removed.
  Result<int64_t> trimHistory();
  // Runs flushUsage and trimHistory every min(10 s, max-age / 4) on the
  // clock until stop() (which flushes once more). Idempotent.
  void start();
  void stop();

  std::string amToken(const AppId& id, int attempt) const;
  // PERMISSION_DENIED unless `token` was issued for `app`'s current attempt.
  Status checkAmToken(const AppId& app, const std::string& token) const;

 private:
  Status persist(const AppRecord& rec) REQUIRES(mu_);
  Status checkUserBounds(const UserId& user) const REQUIRES(mu_);
  // The admission of the current version (recomputed when it changed).
  const std::map<AppId, std::string>& waiting() const REQUIRES(mu_);
  Result<int64_t> trimLocked(TimePoint now) REQUIRES(mu_);
  void finishedOne() REQUIRES(mu_);  // an app became final (trims beyond max-apps)
  void tick();
  AppId newId() REQUIRES(mu_);
  void updateGauges() REQUIRES(mu_);

  // Constant; its `limits` are only the starting value of limits_.
  const AppManagerOptions opts_;
  store::StateStore& store_;
  Clock& clock_;
  AppMetrics metrics_;
  const TokenSigner& signer_;
  const RecurrenceLookup by_key_;
  const ReservationLookup reservation_;
  const int64_t cluster_ts_;  // YARN-style id prefix: the RM's start time

  std::atomic<uint64_t> version_{0};
  mutable Mutex mu_;
  std::map<AppId, AppRecord> apps_ GUARDED_BY(mu_);
  int64_t next_seq_ GUARDED_BY(mu_) = 1;
  std::set<AppId> usage_dirty_ GUARDED_BY(mu_);  // usage not written yet
  int64_t finished_ GUARDED_BY(mu_) = 0;         // apps in a final state
  mutable std::map<AppId, std::string> waiting_ GUARDED_BY(mu_);
  mutable uint64_t waiting_version_ GUARDED_BY(mu_) = ~uint64_t{0};
  QueueLimits limits_ GUARDED_BY(mu_);  // setLimits
  // The trim timer: never held with mu_ (tick flushes and trims before
  // taking it).
  Mutex timer_mu_;
  bool running_ GUARDED_BY(timer_mu_) = false;
  TimerId timer_ GUARDED_BY(timer_mu_) = 0;
};

// The AppManager's lookups over the RM's reservation system.
class ReservationManager;
std::vector<BindTarget> bindTargets(const ReservationManager& reservations, const JobKey& key);
std::optional<BindTarget> bindTarget(const ReservationManager& reservations,
                                     const ReservationId& id);

}  // namespace morpheus::rm
