// The RM's reservation system: owns the Planner and the persisted
// records of every admitted reservation. Each mutation is planned first and
// persisted before it is acknowledged; when persisting fails the plan is
// rolled back, so a rejected or failed request leaves no partial state and an
// acknowledged one survives a crash (docs/design/ha.md).
//
// Thread-safety: internally locked; callable from gRPC/HTTP threads, the plan
// follower and the DRA thread. The lock (mu_) is never held while a request is
// planned: submit and update take a snapshot of the plan (Planner::clone)
// under it, plan on the snapshot without it, and install the result under it
// only if the plan did not change meanwhile (plan_version_), re-planning on a
// fresh snapshot otherwise. So the scheduling strand's calls (guaranteedAt,
// isPeriodic, onCapacity from node registration and liveness) never wait for
// LowCost. Planning requests run one at a time (planning_mu_), bounded per
// user and in total (ReservationLimits).
#pragma once

#include <functional>
#include <map>
#include <memory>
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
#include "planner/planner.h"
#include "reprovision/review.h"
#include "rm/core/rm_metrics.h"
#include "store/state/state_store.h"

namespace morpheus::rm {

struct ReprovisionRecord {
  TimePoint time;
  std::string policy;
  bool granted = false;
  Resource extra;  // per step
  Millis duration{0};
  std::string reason;
};

struct ReservationRecord {
  ReservationId id;
  TimePoint accepted;
  planner::ReservationDefinition def;  // includes user and queue
  planner::Placement placement;
  int64_t budget_container_ms = 0;  // DRA budget per instance (owner signed off)
  int64_t budget_used_container_ms = 0;
  int64_t budget_instance = -1;  // instance the budget use refers to
  // "active"; "degraded" (periodic: the capacity no longer backs its plan at
  // some offset); "at-risk" (one-off: the capacity dropped, or a periodic
  // reservation displaced it (reason names it), and no other placement fits;
  // it keeps its placement and is re-placed or backed again when capacity
  // returns or the periodic one is removed). Persisted; the system never
  // deletes an acknowledged reservation because of a capacity change.
  std::string status = "active";
  std::string status_reason;
  std::vector<ReprovisionRecord> history;
};

struct PlanStepLoad {
  TimePoint start;
  Resource periodic;
  Resource one_off;
};

struct PlanSnapshot {
  Millis step{0};
  Resource capacity;
  int reservations = 0;
  std::vector<PlanStepLoad> steps;
};

// Request size limits, checked before any planning.
// Defaults match the rm.* options declared in rm_options.h.
struct ReservationLimits {
  int64_t max_name_length = 256;                 // bytes of name and recurrence key
  int64_t max_stages = 10000;                    // stages per definition
  int64_t max_containers_per_stage = 100000;     // num_containers of one stage
  int64_t max_containers_per_request = 1000000;  // sum over the stages
  int64_t max_reservations_per_user = 1000;      // admitted reservations one user may hold
  // Planning work of one submit/update: stages x plan steps of the window
  // [arrival, deadline) (LowCost scans each stage over the window).
  // 20,000,000 admits a one-day skyline at the 60 s step (1440 stages) over
  // the whole 7-day one-off horizon.
  int64_t max_planning_work = 20000000;  // rm.max-planning-work, stage-steps
  // Submit/update requests of one user waiting for or holding the planning
  // lane (UNAVAILABLE beyond; the user retries when an earlier one answered).
  int64_t max_planning_per_user = 1;  // rm.max-planning-requests-per-user
  // Submit/update requests of all users waiting for or holding it.
  int64_t max_planning_total = 8;  // rm.max-planning-requests
  // Ids from issueId one user may hold unused; issuing one more withdraws
  // that user's oldest unused id (rm.max-unused-reservation-ids).
  int64_t max_unused_ids_per_user = 100;
};

struct ReservationManagerOptions {
  std::set<std::string> reservable_queues{"default"};
  std::set<std::string> admins;  // users who may change anyone's reservation
  ReservationLimits limits;
};

class ReservationManager {
 public:
  // Snapshots a submit/update plans on before it gives up with UNAVAILABLE
  // because the plan kept changing (capacity, DRA grants, expiry, deletions)
  // while it planned.
  static constexpr int kPlanAttempts = 3;

  // `store`, `clock` and `metrics` must outlive the manager.
  ReservationManager(ReservationManagerOptions opts, std::unique_ptr<planner::Planner> planner,
                     store::StateStore& store, Clock& clock, MetricsRegistry& metrics);

  // Reloads persisted reservations into the plan without re-planning.
  Status recover();

  // A fresh id issued to `caller` ("reservation_<start ms>_<seq>"): never
  // one issued or used before, across restarts too. The issue is persisted
  // before the id is returned (errors: the state store's) and lasts until
  // a reservation is admitted under the id, or until `caller` holds more
  // than max_unused_ids_per_user unused ids (the oldest is withdrawn).
  Result<ReservationId> issueId(const UserId& caller);

  // Who submits a reservation: the authenticated caller (never a stated
  // user) and whether it is an admin.
  struct Submitter {
    UserId caller;
    bool admin = false;
  };

  // Plans and persists. Everything is validated before planning: strings
  // (valid UTF-8, name length), sizes (ReservationLimits), queue, budget.
  // INVALID_ARGUMENT (field named, planner names: "stages[0].duration") for
  // bad input or an unknown queue, PERMISSION_DENIED when the user holds
  // max_reservations_per_user, ALREADY_EXISTS for a used id, kInfeasible with
  // *explanation; INVALID_ARGUMENT naming "stages" and rm.max-planning-work
  // when stages x window steps exceed it; UNAVAILABLE (naming the option)
  // when the user already has max_planning_per_user requests planning or
  // max_planning_total are, or when the plan changed under each of
  // kPlanAttempts snapshots. On any failure, including one after planning
  // (persisting), the plan and the records are as before the call. A periodic reservation
  // has strict priority (Morpheus §6): it is planned ignoring one-offs, and
  // the one-offs it displaces are re-planned ("active", new placement) or,
  // when none fits, keep their placement as "at-risk" with a reason naming it;
  // all of that is persisted in the same commit as the new reservation.
  //
  // Id ownership: an id issued by issueId may be used only by the user it
  // was issued to, as caller or as the acting user (def.user); any other id
  // only by an admin (services that choose ids, e.g. morpheus-inference's
  // per-instance ids). Otherwise PERMISSION_DENIED naming reservation_id,
  // checked under the lock with ALREADY_EXISTS; nothing changes. Admission
  // consumes the issue (in the same commit).
  Result<ReservationRecord> submit(const ReservationId& id, const Submitter& by,
                                   const planner::ReservationDefinition& def,
                                   int64_t budget_container_ms,
                                   planner::InfeasibilityExplanation* explanation);
  // The same for in-process callers that chose the id themselves (unit
  // tests, the simulator): no id ownership check. Not for the RM's edges.
  Result<ReservationRecord> submit(const ReservationId& id,
                                   const planner::ReservationDefinition& def,
                                   int64_t budget_container_ms,
                                   planner::InfeasibilityExplanation* explanation);
  // Try-and-swap; PERMISSION_DENIED unless `user` owns it or is an admin.
  // Validated and admitted to planning like submit (the planning lane counts
  // it for `user`); on any failure the old placement stays.
  Result<ReservationRecord> update(const ReservationId& id, const UserId& user,
                                   const planner::ReservationDefinition& def,
                                   int64_t budget_container_ms,
                                   planner::InfeasibilityExplanation* explanation);
  // Removing a periodic reservation re-checks at-risk one-offs (the room it
  // frees may back or re-place them).
  Status remove(const ReservationId& id, const UserId& user);
  // The caller's access check, run under the manager's lock against the
  // current record before anything changes (the RM edge passes its queue-ACL
  // and owner check here; docs/operator/security.md). A non-OK result is returned as is and
  // leaves no state. `by` only names the actor in the log.
  using AccessCheck = std::function<Status(const ReservationRecord&)>;
  Result<ReservationRecord> update(const ReservationId& id, const UserId& by,
                                   const AccessCheck& may,
                                   const planner::ReservationDefinition& def,
                                   int64_t budget_container_ms,
                                   planner::InfeasibilityExplanation* explanation);
  Status remove(const ReservationId& id, const UserId& by, const AccessCheck& may);

  // Filters: empty queue/id = all; [start, end) overlap with the current or
  // next allocation (end 0 = unbounded).
  std::vector<ReservationRecord> list(const std::string& queue, const std::string& id,
                                      TimePoint start, TimePoint end) const;
  std::optional<ReservationRecord> get(const ReservationId& id) const;
  PlanSnapshot plan(TimePoint from, TimePoint to) const;

  // Plan capacity follows the live nodes. A drop re-plans one-offs on
  // overloaded steps; those that fit nowhere else keep their placement and
  // become "at-risk", periodic reservations that lost backing "degraded"
  // (log, metric, persisted status). When capacity returns they are re-placed
  // or backed again and become "active". Nothing is deleted. `allow_drop`
  // false (RM start-up grace while NMs re-register) only ever raises the
  // capacity and re-plans nothing; the first call after the grace reconciles
  // every status even when the capacity is unchanged.
  void onCapacity(const Resource& live, bool allow_drop);

  // Rolling horizon: drops one-off reservations whose deadline has passed
  // (from the plan and the store). Called every plan step.
  void expire();

  // Plan follower / scheduler view.
  Resource guaranteedAt(const ReservationId& id, TimePoint t) const;
  bool isPeriodic(const ReservationId& id) const;
  // The reservation an app with this recurrence key binds to: the one whose
  // current or next instance window (ending after now) starts first, ties to
  // the latest accepted; when every window has passed, the latest accepted.
  std::optional<ReservationId> byRecurrenceKey(const JobKey& key) const;
  // Every reservation with the key, in that preference (windows ending after
  // now by start, ties to the latest accepted; then the rest, latest accepted
  // first): byRecurrenceKey is the first. Each with its owner and queue.
  std::vector<ReservationRecord> recurrenceCandidates(const JobKey& key) const;
  std::vector<ReservationId> ids() const;
  // Every reservation the plan guarantees something at `t` (guaranteedAt not
  // zero), with its queue, in id order; one pass under the lock. For the
  // per-reservation metrics (ResourceCollector).
  struct Guaranteed {
    ReservationId id;
    std::string queue;
    Resource guaranteed;
  };
  std::vector<Guaranteed> guaranteesAt(TimePoint t) const;

  // DRA (Morpheus §7). What the plan holds for one reservation at
  // `now`: the monitor's input besides the runtime's demand.
  struct DraPlanView {
    Resource unit;                              // container size: the largest stage capability
    Resource planned_now;                       // placement at now, extras excluded
    Resource extra_now;                         // DRA extras held at now
    std::vector<Resource> planned_recent;       // placement over the last `recent`, oldest first
    planner::InstanceWindow instance;           // the instance containing now
    int64_t budget_remaining_container_ms = 0;  // incl. the refund of the active grant
    int64_t instance_work_container_ms = 0;     // one instance's placement area, in units
  };
  // nullopt when unknown.
  std::optional<DraPlanView> draView(const ReservationId& id, TimePoint now, Millis recent) const;

  struct DraOutcome {
    int64_t granted = 0;  // containers of `unit` held from now on (0 = denied)
    std::string denial;   // when granted < asked: "budget" or "plan-full"
    std::string reason;   // what capped or denied it
  };
  // A grant as a swap: holds up to `count` containers on top of the plan over
  // [now, now + duration), replacing the earlier grant (whose unexpired part
  // is refunded), capped by the owner's per-instance budget (budget
  // container-ms = containers x ms) and the plan's room. A budget denial
  // leaves the earlier grant in place. Every decision is recorded in the
  // reservation's history and persisted.
  Result<DraOutcome> reprovision(const ReservationId& id, const std::string& policy, int64_t count,
                                 Millis duration, const std::string& rationale);
  // Ends the grant now (its apps are done) and refunds its unexpired part.
  void releaseExtras(const ReservationId& id);
  // Reservations holding a DRA grant now.
  std::vector<ReservationId> withExtras() const;

 private:
  // The check of the user-named overloads: the owner or an rm.admins user.
  AccessCheck ownerOrAdmin(const UserId& user, const std::string& verb) const;
  Status persist(const ReservationRecord& rec) REQUIRES(mu_);
  // One atomic commit of several records (and `extra` writes).
  Status persist(const std::vector<ReservationRecord>& recs,
                 const std::vector<store::StateWrite>& extra = {}) REQUIRES(mu_);
  // Both submit overloads; `by` nullopt = no id ownership check.
  Result<ReservationRecord> submitChecked(const ReservationId& id,
                                          const std::optional<Submitter>& by,
                                          const planner::ReservationDefinition& def,
                                          int64_t budget_container_ms,
                                          planner::InfeasibilityExplanation* explanation);
  // PERMISSION_DENIED unless `by` may use `id` for `def` (see submit).
  Status mayUseId(const ReservationId& id, const Submitter& by,
                  const planner::ReservationDefinition& def) const REQUIRES(mu_);
  // Copies of the records a periodic admission by `by` changed (re-placed:
  // new placement in `planned`, "active"; kept: "at-risk" with a reason naming
  // `by`; DRA extras released: budget refunded), not yet stored.
  std::vector<ReservationRecord> displacedRecords(const planner::Planner& planned,
                                                  const planner::DisplacementReport& rep,
                                                  const ReservationId& by, TimePoint now) const
      REQUIRES(mu_);
  // Admission control of the planning lane: counts a submit/update of `user`
  // in, or refuses it (UNAVAILABLE naming rm.max-planning-requests-per-user or
  // rm.max-planning-requests) when either bound is reached. Every OK is paired
  // with one leavePlanning(user).
  Status enterPlanning(const UserId& user);
  void leavePlanning(const UserId& user);
  class PlanningTicket;
  // After they were persisted: installs them, ends released grants, logs.
  void commitDisplaced(const planner::DisplacementReport& rep,
                       std::vector<ReservationRecord> changed, const ReservationId& by)
      REQUIRES(mu_);
  void updateGauges() REQUIRES(mu_);
  // Size, string and budget checks of submit/update (no lock, no plan).
  Status validateRequest(const planner::ReservationDefinition& def,
                         int64_t budget_container_ms) const;
  // Sets each record's status from a capacity change and persists changes.
  void applyCapacityReport(const planner::CapacityChangeReport& report, const Resource& capacity)
      REQUIRES(mu_);

  const ReservationManagerOptions opts_;
  store::StateStore& store_;
  Clock& clock_;
  MetricsRegistry& metrics_;
  RmLatencyMetrics latency_;
  const int64_t epoch_ms_;

  // DRA budget and grants go through reprovision/review.h, the arithmetic
  // morpheus-sim shares. The unexpired part of id's grant.
  int64_t refundOf(const ReservationId& id, TimePoint now) const REQUIRES(mu_);

  const Millis plan_step_;  // planner.step (constant: clones keep the options)
  ReservationMetrics m_;
  Gauge& planning_running_;   // 1 from a snapshot's planning start to its end
  Gauge& planning_requests_;  // planning_total_

  // Planning lane: held by the one submit/update planning on a snapshot.
  // Lock order: planning_mu_ before mu_; never taken under mu_.
  Mutex planning_mu_;
  // The planning counts: a leaf, never held with planning_mu_ or mu_.
  Mutex admission_mu_;
  std::map<UserId, int64_t> planning_by_user_ GUARDED_BY(admission_mu_);
  int64_t planning_total_ GUARDED_BY(admission_mu_) = 0;

  mutable Mutex mu_ ACQUIRED_AFTER(planning_mu_);
  // Bumped by every change of planner_ or records_ (and so of grants_' effect
  // on the plan): a snapshot taken at version v may be installed only while
  // the version is still v.
  uint64_t plan_version_ GUARDED_BY(mu_) = 0;
  std::map<ReservationId, reprovision::Grant> grants_
      GUARDED_BY(mu_);  // active DRA grants (not persisted,
                        // like the plan's extras: they lapse within T)
  std::unique_ptr<planner::Planner> planner_ GUARDED_BY(mu_);
  std::map<ReservationId, ReservationRecord> records_ GUARDED_BY(mu_);
  uint64_t next_seq_ GUARDED_BY(mu_) = 1;
  struct IssuedId {
    UserId user;
    TimePoint issued;
  };
  // Ids issueId handed out and not yet used, persisted.
  std::map<ReservationId, IssuedId> issued_ GUARDED_BY(mu_);
  bool reconciled_ GUARDED_BY(mu_) = false;  // statuses checked against capacity since start
};

}  // namespace morpheus::rm
