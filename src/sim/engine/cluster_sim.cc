#include "sim/engine/cluster_sim.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <queue>
#include <set>
#include <tuple>
#include <unordered_map>

#include "common/ignore.h"
#include "planner/planner.h"
#include "reprovision/policy.h"
#include "reprovision/review.h"
#include "scheduler/policies/policy_factory.h"
#include "scheduler/scheduler.h"
#include "sim/engine/aggregate_adhoc.h"
#include "sim/engine/fluid_adhoc.h"
#include "sim/engine/node_set.h"
#include "sim/workloads/workload_rng.h"

namespace morpheus::sim {

Resource jobUnit(const std::vector<SimStage>& stages) {
  Resource unit;
  for (const auto& st : stages) {
    if (unit.isZero() || st.task_resource.memoryMib() * st.task_resource.vcores() >
                             unit.memoryMib() * unit.vcores()) {
      unit = st.task_resource;
    }
  }
  return unit;
}

namespace {

int64_t weightOf(const Resource& r, const Resource& unit) {
  return unit.isZero() ? 1 : std::max<int64_t>(1, r.countCovering(unit));
}

TimePoint stepFloor(TimePoint t, Millis step) {
  int64_t ms = toEpochMs(t);
  int64_t s = step.count();
  return fromEpochMs(ms >= 0 ? ms / s * s : -((-ms + s - 1) / s) * s);
}

}  // namespace

std::optional<TimePoint> worstCaseCompletion(const std::vector<SimStage>& stages,
                                             const RealizedInstance& inst, const Resource& unit,
                                             TimePoint start, TimePoint deadline, Millis step,
                                             const std::function<int64_t(TimePoint)>& capacity) {
  const size_t n = stages.size();
  std::vector<int64_t> remaining(n), unmet(n);
  std::vector<std::vector<int>> dependents(n);
  std::deque<std::pair<int, Millis>> ready;  // (stage, duration)
  size_t stages_left = n;
  for (size_t s = 0; s < n; s++) {
    remaining[s] = static_cast<int64_t>(inst.stages[s].task_durations.size());
    unmet[s] = static_cast<int64_t>(stages[s].depends_on.size());
    for (int d : stages[s].depends_on)
      dependents[static_cast<size_t>(d)].push_back(static_cast<int>(s));
  }
  std::function<void(size_t)> release = [&](size_t s) {
    if (remaining[s] == 0) {
      stages_left--;
      for (int d : dependents[s]) {
        if (--unmet[static_cast<size_t>(d)] == 0) release(static_cast<size_t>(d));
      }
      return;
    }
    for (Millis dur : inst.stages[s].task_durations) ready.emplace_back(static_cast<int>(s), dur);
  };
  for (size_t s = 0; s < n; s++) {
    if (unmet[s] == 0) release(s);
  }
  using Running = std::tuple<TimePoint, int, int64_t>;  // end, stage, weight
  std::priority_queue<Running, std::vector<Running>, std::greater<>> running;
  int64_t used = 0;
  TimePoint t = start;
  while (true) {
    if (stages_left == 0) return t <= deadline ? std::optional<TimePoint>(t) : std::nullopt;
    const int64_t cap = capacity(t);
    while (!ready.empty()) {
      auto [s, dur] = ready.front();
      int64_t w = weightOf(stages[static_cast<size_t>(s)].task_resource, unit);
      if (used + w > cap) break;
      ready.pop_front();
      used += w;
      running.emplace(t + dur, s, w);
    }
    TimePoint next = stepFloor(t, step) + step;
    if (!running.empty()) next = std::min(next, std::get<0>(running.top()));
    if (next > deadline) return std::nullopt;
    t = next;
    while (!running.empty() && std::get<0>(running.top()) <= t) {
      auto [end, s, w] = running.top();
      running.pop();
      used -= w;
      if (--remaining[static_cast<size_t>(s)] == 0) {
        stages_left--;
        for (int d : dependents[static_cast<size_t>(s)]) {
          if (--unmet[static_cast<size_t>(d)] == 0) release(static_cast<size_t>(d));
        }
      }
    }
  }
}

namespace {

constexpr int64_t kHeartbeatMs = 1000;  // NM heartbeat interval (rm default)

// Simulated nodes are named "node<index, 6+ digits>" (sorted like their
// indices).
NodeId nodeName(int64_t index) {
  char name[32];
  std::snprintf(name, sizeof name, "node%06lld", static_cast<long long>(index));
  return NodeId(name);
}

enum class Ev : uint8_t {
  kTaskEnd,
  kHeartbeat,
  kGuarantee,
  kPeriodicSubmit,
  kAdhocSubmit,
  kPlanStep,
  kFluidStep,      // fluid ad-hoc pools advance (--task-model fluid only)
  kAggregateStep,  // aggregate ad-hoc capacity recomputed (--adhoc-model aggregate only)
  kOneOffCheck     // per-instance jobs' one-offs submitted (RunSetup::one_off_check)
};

struct Event {
  Ev type;
  int64_t a;
  int64_t b;
};

// The pending events in time order, and in push order within one time (what
// a heap ordered by (time, push sequence) gives). Each distinct time has a
// bucket its events are appended to, and a heap orders the distinct times
// only: task ends fall on the 1 s heartbeat grid, so a bucket holds many
// events, the heap stays small and an instant's events are read in
// sequence (a heap of every event spent most of the event loop's time in
// cache misses). The buckets of grid times up to kRing seconds after the
// last time opened sit in a ring indexed by the second (no lookup); the
// others (off the grid, further out, or pushed before the first open) in a
// hash map. A time is in one place only: a grid time that went to the map
// keeps its bucket there. A ring entry holds its time beside its bucket, so
// a push to a second far ahead (a task's end) reads one entry, not two arrays.
class EventQueue {
 public:
  EventQueue() : ring_(kRing) {}

  void push(int64_t t, const Event& e) { bucketFor(t).push_back(e); }
  bool empty() const { return times_.empty(); }
  // The earliest time with events. Requires !empty().
  int64_t nextTime() const { return times_.top(); }
  // Takes the earliest time out of the order and returns its bucket: events
  // pushed at that time until close() are appended to it (read them by
  // index: the bucket may grow). Requires !empty().
  std::vector<Event>& open() {
    const int64_t t = times_.top();
    times_.pop();
    if (t >= 0) lo_ = std::max(lo_, t / kGridMs);
    open_time_ = t;
    open_ring_ = -1;
    if (t % kGridMs == 0 && t >= 0) {
      const auto i = static_cast<size_t>((t / kGridMs) & (kRing - 1));
      if (ring_[i].time == t) {
        open_ring_ = static_cast<int64_t>(i);
        open_ = &ring_[i].events;
        return *open_;
      }
    }
    // A reference into the map stays valid while it rehashes (an iterator would not).
    open_ = &other_.find(t)->second;
    return *open_;
  }
  // Drops the opened bucket; a later push at its time starts a new one.
  void close() {
    open_->clear();
    spare_.push_back(std::move(*open_));
    if (open_ring_ >= 0) {
      ring_[static_cast<size_t>(open_ring_)].time = kFree;
    } else {
      other_.erase(open_time_);
    }
  }

 private:
  static constexpr int64_t kGridMs = 1000;
  static constexpr int64_t kRing = int64_t{1} << 14;  // seconds (about 4.5 h)
  static constexpr int64_t kFree = std::numeric_limits<int64_t>::min();

  std::vector<Event>& bucketFor(int64_t t) {
    if (t % kGridMs == 0 && t >= 0 && t / kGridMs >= lo_ && t / kGridMs - lo_ < kRing) {
      Slot& slot = ring_[static_cast<size_t>((t / kGridMs) & (kRing - 1))];
      if (slot.time == t) return slot.events;
      // Free: every pending ring time is within kRing seconds from lo_.
      if (other_.empty() || other_.find(t) == other_.end()) {
        MORPHEUS_CHECK(slot.time == kFree, "two pending times share a ring bucket");
        slot.time = t;
        slot.events = takeSpare();
        times_.push(t);
        return slot.events;
      }
    }
    auto [it, fresh] = other_.try_emplace(t);
    if (fresh) {
      it->second = takeSpare();
      times_.push(t);
    }
    return it->second;
  }
  std::vector<Event> takeSpare() {
    if (spare_.empty()) return {};
    std::vector<Event> v = std::move(spare_.back());
    spare_.pop_back();
    return v;
  }

  // A ring bucket and its time (kFree if none).
  struct Slot {
    int64_t time = kFree;
    std::vector<Event> events;
  };

  std::priority_queue<int64_t, std::vector<int64_t>, std::greater<>> times_;
  std::vector<Slot> ring_;
  int64_t lo_ = 0;  // the second of the latest time opened
  std::unordered_map<int64_t, std::vector<Event>> other_;
  std::vector<Event>* open_ = nullptr;     // the opened bucket
  int64_t open_time_ = 0;                  // its time
  int64_t open_ring_ = -1;                 // its ring index, or -1 (in other_)
  std::vector<std::vector<Event>> spare_;  // emptied buckets, their capacity kept
};

struct Grant {
  TimePoint from;
  TimePoint to;
  int64_t count;
};

// One stage of a live app: what starting and ending its tasks reads and
// writes, together (one cache line or two per task, not one per field).
struct StageRun {
  Resource task;                      // the stage's task resource
  const Millis* durations = nullptr;  // the instance's task durations (AppState::inst)
  int64_t tasks = 0;                  // how many
  int64_t next_task = 0;              // the first task never started
  int64_t pending = 0;                // tasks asked for and not granted
  int64_t remaining = 0;              // tasks not yet succeeded
  // Jockey's recorded durations: tasks that succeeded, and their time.
  int64_t done_count = 0;
  Millis done_time{0};
  std::vector<int64_t> requeued;  // killed tasks to start again
};

struct AppState {
  AppId id;
  sched::AppSlot slot;  // the scheduler's, once added
  int job = -1;         // periodic job index, or -1
  int adhoc = -1;       // ad-hoc job index, or -1
  int res = -1;         // reservation index, or -1
  const std::vector<SimStage>* stages = nullptr;
  RealizedInstance inst;  // periodic: the realisation; ad hoc: nominal durations
  Resource unit;
  std::vector<StageRun> run;   // per stage
  std::vector<int64_t> unmet;  // per stage: the stages it waits for
  // The resources of the pending tasks: the sum over stages of the stage's
  // task resource x its pending tasks, kept equal to it at every change.
  Resource pending_res;
  std::vector<std::vector<int>> dependents;
  size_t stages_left = 0;
  int64_t tasks_total = 0, tasks_done = 0;
  Resource used;
  TimePoint submit, start, end;
  bool started = false, done = false;
  std::vector<double> bins;  // unit-ms in use per step from start (history)
  double used_unit_ms = 0;
  int64_t dra_grants = 0;
  int64_t dra_withheld_ahead = 0;  // InstanceOutcome::dra_withheld_ahead
  std::vector<Grant> grants;
  // An ad-hoc job whose AM reports its DAG, and the misestimate
  // factor of each stage's reported task duration.
  bool reports_dag = false;
  // Whether its asks carry request ids ("s<stage>"): an ad-hoc app's (its
  // DAG report names its stages by them). A periodic app never reports its
  // DAG, and one ask per stage at priority = stage makes the priority name
  // the ask, so its asks carry none: nothing the scheduler decides reads the
  // id then (only Carbyne's askScore, and only for an app with a DAG), and
  // it keeps no per-request count and copies no id per container.
  bool names_asks = false;
  std::vector<double> estimate_factor;
  // --task-model fluid: the index of the fluid pool this app holds
  // containers for (cluster_sim's pools_), or -1 for a job's own app.
  int fluid = -1;
};

// One fluid ad-hoc pool (sim/engine/fluid_adhoc.h) and the scheduler app that holds
// its containers: the ad-hoc jobs of one queue and one task resource.
struct FluidState {
  std::string queue;
  Resource shape;
  FluidPool pool;
  int app = -1;
  std::vector<int64_t> held;  // task slots of held containers; slot.task = position here
  int64_t asked = 0;          // containers asked for and not yet granted
  double ended_credit = 0;    // tasks' worth ended, not yet turned over (< 1 after a step)
};

// One pool of the aggregate ad-hoc model (sim/engine/aggregate_adhoc.h): the
// ad-hoc jobs of one queue and one task resource as fluid work, and the
// capacity (in containers of its shape) it holds outside the scheduler.
struct AggregateState {
  std::string queue;
  Resource shape;
  FluidPool pool;
  int64_t held = 0;
  int64_t fair = 0;      // its fair share at the last step (AggregateSplit::fair)
  int64_t demand = 0;    // its demand at the last step (FluidPool::demand)
  double held_ms = 0;    // containers x ms held since the pool last advanced
  TimePoint held_since;  // when `held` last changed
};

struct TaskSlot {
  int app = -1;
  int stage = 0;
  int64_t task = 0;
  int node = 0;
  TimePoint start;
  Resource resource;
  sched::ContainerSlot container;
  bool alive = false;
  int64_t gen = 0;  // bumped on reuse: a stale task-end event names an older gen
};

struct ResState {
  ReservationId id;
  int job = -1;
  Resource unit;
  Millis period{0};
  std::vector<TimePoint> boundaries;  // first instance's allocation edges
  Resource guarantee;
  uint64_t gen = 0;
  std::vector<int> live;  // live apps bound to it, by creation
  // DRA, kept as the RM keeps it (reprovision/review.h): the owner's
  // per-instance budget, the active grant, and what the reviews of the
  // current instance carry over (Jockey's previous allocation, progress
  // against the plan).
  reprovision::InstanceBudget budget;
  reprovision::Grant grant;
  reprovision::ReviewState review;
  // Sim::planned's answer and the planner's planEdits when it was found.
  mutable const planner::PlannedReservation* planned = nullptr;
  mutable uint64_t planned_edits = std::numeric_limits<uint64_t>::max();
};

ReservationId reservationIdOf(const PeriodicJob& job) {
  return ReservationId("res-" + job.key.value());
}

// The one-off of instance k of a job reserved per instance (an off-kilter
// one, JobProvision::kPerInstance, or one whose recurring reservation the
// plan refused).
ReservationId oneOffIdOf(const PeriodicJob& job, int64_t k) {
  return ReservationId("res-" + job.key.value() + "#" + std::to_string(k));
}

class Sim {
 public:
  Sim(const Workload& w, const ExperimentOptions& o, const RunSetup& s, const std::string& phase,
      const ProgressFn& progress, const std::atomic<bool>* stop)
      : w_(w), o_(o), s_(s), phase_(phase), progress_(progress), stop_(stop) {}

  Result<RunOutput> run();

 private:
  Status init();
  // What the planner accepted for one job (planned provisionings only).
  struct Admission {
    std::optional<planner::Placement> placement;
    const planner::ReservationDefinition* def = nullptr;
    bool fallback = false;  // the user's own request, not the strategy's
    // The plan refused the whole recurring reservation and held a one-off
    // of at least one instance due at the start (admitPerInstance).
    bool per_instance = false;
  };
  Result<std::vector<Admission>> admitPlanned();
  // RunSetup::admit_per_instance: job j's instances due at the start get
  // one-offs (submitOneOffs); true when the plan held any, else the job is
  // not reserved per instance (its one-offs, none, are forgotten).
  Result<bool> admitPerInstance(size_t j);
  // Re-reads the placements of the one-offs a periodic admission displaced.
  void replanned(const planner::DisplacementReport& d);
  // Binds reservation `id` (admitted as `def` at `placement`) to job j, as
  // its next instance of the day (res_of_job_).
  Status addReservation(size_t j, const ReservationId& id,
                        const planner::ReservationDefinition& def,
                        const planner::Placement& placement, int64_t budget);
  // The same without res_of_job_: its index in res_.
  Result<int> newReservation(size_t j, const ReservationId& id,
                             const planner::ReservationDefinition& def,
                             const planner::Placement& placement, int64_t budget);
  // Submits a one-off for each instance of per-instance job j whose window
  // opens after `after` and within RunSetup::one_off_lead of now, unless it
  // holds one: an instance the plan refused is submitted again at every
  // call until its window opens (morpheus-inference's submitInstancesOf).
  // Returns how many were reserved.
  Result<int> submitOneOffs(size_t j, TimePoint after);
  void oneOffCheck();
  std::vector<size_t> admissionOrder() const;
  void push(TimePoint t, Ev type, int64_t a, int64_t b = 0) {
    q_.push(toEpochMs(t), Event{type, a, b});
  }
  void dispatch(const Event& e);
  // The container a task-end event at `instant[i]` would end (null: none,
  // or not a live task's end).
  const sched::ContainerSlot* endingContainer(const std::vector<Event>& instant, size_t i) const;
  void round();
  bool offerNewAsks();                                // whether any node was offered
  int64_t updateNode(int n, bool* killed = nullptr);  // containers granted
  void refreshFree(int n);
  // What node n offers the scheduler: its size less the ad-hoc capacity the
  // aggregate model placed on it.
  Resource nodeTotal(int n) const {
    return node_hidden_.empty() ? o_.node_size
                                : o_.node_size - node_hidden_[static_cast<size_t>(n)];
  }
  // A container granted on node n: a task of its app's stage (the ask's
  // priority: askStage asks for stage s at priority s).
  void startTask(int n, const sched::SlotGrant& g);
  // A container granted on node n becomes task slot (app, stage, task) on it.
  int64_t placeSlot(int app, int stage, int64_t task, int n, const sched::SlotGrant& g);
  void endTask(int64_t slot, bool killed);
  void accountUsage(AppState& app, TimePoint from, TimePoint to, int64_t weight);
  void releaseStage(int app, size_t s);
  void askStage(int app, size_t s, int64_t added);
  void stageDone(int app, size_t s);
  void finishApp(int app);
  void releaseRunState(AppState& app);
  void submitPeriodic(int job, int64_t k);
  void submitAdhoc(int idx);
  void reportDag(int app);
  // --task-model fluid (sim/engine/fluid_adhoc.h).
  Status initFluid();
  void submitFluid(int idx);
  void fluidStep();
  void startFluid(AppState& app, int app_index, int n, const sched::SlotGrant& g);
  void releaseFluid(FluidState& f, int64_t count);
  // --adhoc-model aggregate (sim/engine/aggregate_adhoc.h).
  Status initAggregate();
  // Whether a reservation that asked or had its guarantee raised this
  // instant lacks free room for its need within the guarantee.
  bool aggregateShortfall() const;
  // Advances the pools to now on the capacity they held, recomputes their
  // capacity and places it on the nodes (node totals).
  void aggregateStep();
  void placeAggregate();
  // Capacity periodic tasks freed this instant on agg_freed_'s nodes goes to
  // pools below their fair share (refillAggregate), on those nodes.
  void refillAggregateNodes();
  // --adhoc-fill: room the scheduling pass left on agg_touched_'s nodes goes
  // to pools whose demand exceeds what they hold (sim/engine/engine.h).
  void fillAggregateHoles();
  // App ai was added to the scheduler: its slot, and the slot's app.
  void bindSlot(int ai) {
    AppState& app = apps_[static_cast<size_t>(ai)];
    app.slot = sched_->appSlot(app.id).value();
    const auto i = static_cast<size_t>(app.slot.index);
    if (i >= app_of_slot_.size()) app_of_slot_.resize(i + 1, -1);
    app_of_slot_[i] = ai;
  }
  // A job's app, asking for its first stages at once; `names_asks`:
  // AppState::names_asks.
  int newApp(const std::string& name, const UserId& user, const sched::QueueRef& queue,
             const std::vector<SimStage>& stages, RealizedInstance inst, TimePoint submit,
             bool names_asks);
  Resource guaranteeAt(const ResState& r, TimePoint t) const;
  // r's admitted reservation (nullptr when the plan has none), looked up
  // again only after the plan's reservations changed (Planner::planEdits):
  // a lookup by id for every guarantee change and review led the
  // evaluation's profile at 50,000 nodes.
  const planner::PlannedReservation* planned(const ResState& r) const;
  TimePoint nextBoundary(const ResState& r, TimePoint t) const;
  void refreshGuarantee(int r, bool reschedule);
  void planStep();
  void collectNotices();
  void draTick();
  void draReview(int r);
  std::vector<reprovision::StageState> stageStates(int app) const;
  void rememberStageDurations(const AppState& app);
  void releaseExtras(int r);
  void recordGrant(ResState& r, int64_t count, TimePoint until);
  void judge(int app, bool unfinished);
  void recordRun(const AppState& app);
  // The training history's window (ExperimentOptions::history_window): drops
  // job j's runs submitted before `cutoff` but its min_runs most recent, with
  // their own file events (SLO inference matches a job's own events to its
  // runs, so those of a dropped run are never read).
  void trimRuns(size_t j, TimePoint cutoff);
  // Drops the file events on a path that no run inference may still read
  // can reach (every job's runs trimmed first): per path, those before the
  // earliest start of a kept or unfinished run of a job reading or writing
  // it (and never within the window), but the last write of each writer
  // before then (T_inAvail of a later run: the last write by another job
  // before its start). Reads before then are never a kept run's T_outRead
  // (it reads after the run's start); a consumer's run goes with its read.
  void trimPathEvents();
  void finalize();

  const Workload& w_;
  const ExperimentOptions& o_;
  const RunSetup& s_;
  const std::string phase_;
  const ProgressFn& progress_;
  const std::atomic<bool>* stop_;

  std::unique_ptr<sched::Scheduler> sched_;
  std::unique_ptr<planner::Planner> planner_;
  std::unique_ptr<reprovision::ReprovisionPolicy> policy_;
  // morpheus-dra with its "not ahead of its plan" rule off, asked beside
  // policy_ only to count the grants the rule alone withheld
  // (InstanceOutcome::dra_withheld_ahead); null when the rule is off or the
  // policy is not morpheus-dra.
  std::unique_ptr<reprovision::ReprovisionPolicy> without_ahead_rule_;
  bool jockey_ = false;  // the policy reads stage states (filled only then: they cost a slot scan)
  // Jockey's history: per periodic job, each stage's mean task duration in
  // its last successful run (0 = never ran), as the RM keeps "stage-history".
  std::vector<std::vector<Millis>> last_stage_mean_;
  // The history's window bookkeeping (record_history only): per job, the
  // own_events size when each kept run was recorded (its events follow) and
  // the run count after its last trim; per path event, whether a consumer's
  // run (history.consumer_runs, same order) goes with it; the path events'
  // count after their last trim; per path, the jobs reading or writing it.
  std::vector<std::vector<size_t>> run_event_mark_;
  std::vector<size_t> runs_after_trim_;
  std::vector<char> with_consumer_run_;
  size_t path_events_after_trim_ = 0;
  std::map<std::string, std::vector<size_t>> jobs_of_path_;
  // Per live app, per stage: elapsed time of its running tasks (draTick, Jockey only).
  std::map<int, std::vector<std::vector<Millis>>> running_;
  TimePoint now_;
  EventQueue q_;

  std::vector<NodeId> nodes_;
  std::vector<sched::NodeSlot> node_handles_;  // the scheduler's slot of each node
  std::vector<int> node_of_slot_;              // the node of each scheduler slot
  std::vector<sched::SlotNotice> notices_;     // scratch of collectNotices
  std::vector<Resource> node_used_;
  NodeSet free_nodes_, dirty_nodes_;  // dense node indices (sim/engine/node_set.h)
  Resource min_task_;
  bool poke_ = false;
  // Containers asked for since the last round, and the smallest shape among
  // them: only nodes with that much free room are offered to the new asks
  // (older asks already saw every free node; freed nodes are dirty).
  int64_t new_asked_ = 0;
  Resource new_ask_min_;

  // Every app of the run, finished ones included (millions at scale): a
  // deque, so growing it never copies them all into a buffer twice as large.
  std::deque<AppState> apps_;
  std::vector<FluidState> pools_;   // --task-model fluid only
  std::vector<int> pool_of_adhoc_;  // per ad-hoc job: its pool (fluid or aggregate)
  // --adhoc-model aggregate only: the pools; per node the ad-hoc capacity
  // placed on it (hidden from the scheduler through its node total) and the
  // total the scheduler sees; their sum; when the pools last advanced; and
  // what triggers a recomputation in the next round.
  std::vector<AggregateState> agg_;
  std::vector<Resource> node_hidden_;
  Resource hidden_total_;
  int agg_low_ = -1;  // lowest node index holding ad-hoc capacity (-1: none)
  TimePoint agg_last_;
  bool agg_due_ = false;
  std::vector<int> agg_check_;  // reservations that asked or grew this instant
  // --adhoc-refill: nodes where periodic tasks ended this instant while a
  // pool was below its fair share (agg_lacking_), and what reservations
  // below their guarantee still needed at the last step, less what freed
  // capacity served since.
  std::vector<int> agg_freed_;
  bool agg_lacking_ = false;
  Resource agg_unmet_;
  // --adhoc-fill: nodes the scheduler was offered this round.
  std::vector<int> agg_touched_;
  std::vector<std::pair<sched::NodeSlot, Resource>> totals_batch_;  // placeAggregate's, reused
  // What the jobs' own apps ask for and were not granted (sum of pending
  // tasks' resources): the fluid pools turn containers over only for it.
  Resource pending_tasks_;

  std::vector<TaskSlot> slots_;
  std::vector<int64_t> free_slots_;
  // Per scheduler container slot (sched::ContainerSlot::index), the task
  // slot that held it last, or -1: the holder only if that task slot is
  // alive and its container is the same (index and generation).
  std::vector<int64_t> slot_of_container_;
  // Per scheduler app slot (sched::AppSlot::index), the app holding it last.
  std::vector<int> app_of_slot_;
  sched::SlotUpdate update_;                  // updateNode's, reused
  std::vector<sched::ResourceRequest> asks_;  // askStage's, reused
  std::set<int> live_apps_;
  // RunSetup::record_until only: periodic instances submitted before it and
  // not yet ended; the run ends once it is 0 at or after record_until.
  int64_t recorded_live_ = 0;
  bool drained_ = false;  // the run ended so (not at RunSetup::to)
  // Whether `t` is in the recorded span (RunSetup::record_from, record_until;
  // all of the run when neither is set).
  bool inRecordedSpan(TimePoint t) const {
    return (!s_.record_from || t >= *s_.record_from) && (!s_.record_until || t < *s_.record_until);
  }
  // Whether `app`'s run enters the history, or is judged.
  bool recorded(const AppState& app) const { return inRecordedSpan(app.submit); }

  std::vector<ResState> res_;
  // Per periodic job, the reservation of each of its instances over the day
  // (index k mod size; -1 = unreserved): one entry for a whole recurring
  // reservation, day / period entries for a job admitted per instance.
  std::vector<std::vector<int>> res_of_job_;
  int64_t unreserved_ = 0;
  int64_t fallback_ = 0;
  int64_t per_instance_jobs_ = 0;  // planned jobs admitted per instance
  // Jobs reserved per instance: the template of instance 0 (window after the
  // epoch, the job's period) and its in-order alternative, per job; instance
  // k -> its one-off in res_ (-1: refused so far), per job.
  struct OneOffTemplate {
    planner::ReservationDefinition def;
    std::optional<planner::ReservationDefinition> in_order;
  };
  std::vector<std::optional<OneOffTemplate>> one_off_template_;
  std::vector<std::map<int64_t, int>> res_of_instance_;
  std::vector<size_t> off_kilter_;    // JobProvision::kPerInstance jobs
  std::vector<size_t> one_off_jobs_;  // every job reserved per instance, ascending
  int64_t one_offs_reserved_ = 0;     // instances reserved, at any submission
  int64_t one_offs_refused_ = 0;      // instances the plan refused at their first submission
  int64_t one_offs_on_retry_ = 0;     // of those, reserved by a later check
  // Plan capacity freed ahead of now (DRA extras released, one-offs moved),
  // in order: freed_[i] has sequence number freed_base_ + i. An instance
  // the planner refused for want of room (kInfeasible) records the sequence
  // number at its last refusal in tried_at_ and is submitted again only once
  // some later interval overlaps its window. Until then its window's
  // residual only shrank, so the planner (which admits on the residual; its
  // agents are taken to place nothing into less room that they could not
  // place into more) refuses it again: skipping that submission saves a
  // full planner search (an every-minute retry of each refused instance
  // otherwise costs most of a run).
  struct Freed {
    TimePoint from, to;
  };
  std::deque<Freed> freed_;
  int64_t freed_base_ = 0;
  std::map<std::pair<size_t, int64_t>, int64_t> tried_at_;
  void freedPlan(TimePoint from, TimePoint to) {
    if (!tried_at_.empty() && from < to) freed_.push_back(Freed{from, to});
  }
  bool freedSince(int64_t seq, TimePoint from, TimePoint to) const;
  Status error_ = Status::ok();     // a failure inside an event: the run stops with it
  int64_t preemption_kills_ = 0;    // tasks killed by the scheduler's to_kill
  int64_t preemption_notices_ = 0;  // notices taken (a withdrawn one is not killed)
  // The counters above as a run reports them: over its recorded span only
  // (RunSetup::record_from, record_until), from their values at the plan
  // steps where the span begins and ends (zero, and the end of the run, when
  // unset).
  struct Counted {
    int64_t one_offs_reserved = 0, one_offs_refused = 0, one_offs_on_retry = 0;
    int64_t preemption_kills = 0, preemption_notices = 0;
  };
  Counted counted() const {
    return {one_offs_reserved_, one_offs_refused_, one_offs_on_retry_, preemption_kills_,
            preemption_notices_};
  }
  Counted counted_from_;
  std::optional<Counted> counted_until_;

  RunOutput out_;
  std::vector<std::pair<std::pair<int, int64_t>, InstanceOutcome>> outcomes_;
  double util_sum_ = 0;
  int64_t util_n_ = 0;
  int64_t steps_done_ = 0, steps_total_ = 0;
};

// Groups the ad-hoc jobs into one pool per (queue, task resource) in `pools`
// (entries with `queue` and `shape`, appended as first seen); the pool index of
// every job. A job whose stages differ in task resource is INVALID_ARGUMENT
// naming it: `model` ("fluid task", "aggregate ad-hoc") needs one per job.
template <typename Pool>
Result<std::vector<int>> poolAdhocJobs(const std::vector<AdhocJob>& adhoc, const std::string& model,
                                       std::vector<Pool>* pools) {
  std::vector<int> pool_of(adhoc.size(), -1);
  for (size_t i = 0; i < adhoc.size(); i++) {
    const AdhocJob& job = adhoc[i];
    const Resource shape = job.stages.empty() ? Resource() : job.stages[0].task_resource;
    for (size_t s = 1; s < job.stages.size(); s++) {
      if (!(job.stages[s].task_resource == shape)) {
        return invalidArgument("workload.adhoc[" + std::to_string(i) + "].stages[" +
                                   std::to_string(s) + "].task_resource",
                               "the " + model + " model needs one task resource per ad-hoc job");
      }
    }
    auto it = std::find_if(pools->begin(), pools->end(),
                           [&](const Pool& p) { return p.queue == job.queue && p.shape == shape; });
    if (it == pools->end()) {
      pools->emplace_back();
      pools->back().queue = job.queue;
      pools->back().shape = shape;
      it = pools->end() - 1;
    }
    pool_of[i] = static_cast<int>(it - pools->begin());
  }
  return pool_of;
}

Status Sim::init() {
  sched::SchedulerOptions so;
  std::set<std::string> queues;
  for (const auto& j : w_.periodic) queues.insert(j.queue);
  for (const auto& j : w_.adhoc) queues.insert(j.queue);
  if (queues.empty()) queues.insert("root.default");
  MORPHEUS_ASSIGN_OR_RETURN(auto adhoc_policy,
                            sched::makeOrderingPolicy(o_.adhoc_policy, "adhoc_policy"));
  for (const auto& q : queues) so.adhoc_queues.push_back({q, 1.0, adhoc_policy});
  so.preemption_grace = o_.preemption_grace;
  so.preemption_interval = o_.preemption_interval;
  so.borrowing_reservations_share = true;  // the RM daemon's behaviour
  // Containers are ended and released by slot (TaskSlot::container): no id
  // index to keep up for millions of containers.
  so.index_container_ids = false;
  MORPHEUS_ASSIGN_OR_RETURN(sched_, sched::Scheduler::create(so));
  free_nodes_.resize(static_cast<size_t>(o_.nodes));
  dirty_nodes_.resize(static_cast<size_t>(o_.nodes));
  for (int64_t i = 0; i < o_.nodes; i++) {
    nodes_.push_back(nodeName(i));
    MORPHEUS_RETURN_IF_ERROR(sched_->addNode(nodes_.back(), o_.node_size, {}));
    MORPHEUS_ASSIGN_OR_RETURN(sched::NodeSlot handle, sched_->nodeSlot(nodes_.back()));
    node_handles_.push_back(handle);
    if (node_of_slot_.size() <= static_cast<size_t>(handle.value))
      node_of_slot_.resize(static_cast<size_t>(handle.value) + 1, -1);
    node_of_slot_[static_cast<size_t>(handle.value)] = static_cast<int>(i);
    node_used_.emplace_back();
    free_nodes_.insert(static_cast<int>(i));
  }
  bool first = true;
  auto takeMin = [&](const std::vector<SimStage>& st) {
    for (const auto& x : st) {
      min_task_ = first ? x.task_resource : Resource::min(min_task_, x.task_resource);
      first = false;
    }
  };
  for (const auto& j : w_.periodic) takeMin(j.stages);
  for (const auto& j : w_.adhoc) takeMin(j.stages);

  const Resource capacity = o_.node_size * o_.nodes;
  bool planned = std::any_of(s_.provisions.begin(), s_.provisions.end(), [](const auto& p) {
    return p.kind != JobProvision::Kind::kNone || p.fallback;
  });
  if (planned) {
    planner::PlannerOptions po;
    po.step = o_.step;
    po.agent = s_.agent;
    po.agent_options.tie_break = o_.tie_break;
    MORPHEUS_ASSIGN_OR_RETURN(planner_, planner::Planner::create(po, capacity));
  }
  if (!s_.dra.empty()) {
    reprovision::MorpheusDraOptions dra;
    dra.extension = o_.step;
    dra.grant_when_ahead = o_.dra_grant_when_ahead;
    reprovision::JockeyOptions jockey;
    jockey.extension = o_.step;
    MORPHEUS_ASSIGN_OR_RETURN(policy_, reprovision::makePolicy(s_.dra, dra, jockey, "strategy"));
    jockey_ = policy_->name() == "jockey";
    if (!jockey_ && !dra.grant_when_ahead) {
      reprovision::MorpheusDraOptions off = dra;
      off.grant_when_ahead = true;
      without_ahead_rule_ = reprovision::makeMorpheusDra(off);
    }
  }
  now_ = s_.from;
  if (o_.fluid_adhoc_step > Millis(0)) MORPHEUS_RETURN_IF_ERROR(initFluid());
  if (o_.aggregate_adhoc_step > Millis(0)) MORPHEUS_RETURN_IF_ERROR(initAggregate());
  if (s_.record_history) {
    out_.history.runs.resize(w_.periodic.size());
    out_.history.runtimes.resize(w_.periodic.size());
    out_.history.own_events.resize(w_.periodic.size());
    out_.history.last_stage_tasks.resize(w_.periodic.size());
    run_event_mark_.resize(w_.periodic.size());
    runs_after_trim_.assign(w_.periodic.size(), 0);
    for (size_t j = 0; j < w_.periodic.size(); j++) {
      for (const std::string* p : {&w_.periodic[j].input_path, &w_.periodic[j].output_path}) {
        if (p->empty()) continue;
        auto& jobs = jobs_of_path_[*p];
        if (jobs.empty() || jobs.back() != j) jobs.push_back(j);
      }
    }
  }
  if (s_.one_off_check <= Millis(0)) return invalidArgument("one_off_check", "must be > 0");
  res_of_job_.assign(w_.periodic.size(), {});
  res_of_instance_.assign(w_.periodic.size(), {});
  one_off_template_.assign(w_.periodic.size(), std::nullopt);
  MORPHEUS_ASSIGN_OR_RETURN(const std::vector<Admission> admitted, admitPlanned());
  for (size_t j = 0; j < w_.periodic.size(); j++) {
    const JobProvision& p = s_.provisions[j];
    const Admission& a = admitted[j];
    if (a.placement) {
      fallback_ += a.fallback ? 1 : 0;
      MORPHEUS_RETURN_IF_ERROR(addReservation(j, reservationIdOf(w_.periodic[j]), *a.def,
                                              *a.placement,
                                              a.fallback ? 0 : p.budget_container_ms));
    } else if (p.kind == JobProvision::Kind::kPerInstance) {
      off_kilter_.push_back(j);
    } else if (a.per_instance) {
      per_instance_jobs_++;
    } else {
      unreserved_++;
    }
  }
  for (size_t j : off_kilter_) {
    const JobProvision& p = s_.provisions[j];
    if (p.def.period <= Millis(0)) return invalidArgument("provisions", "per-instance period <= 0");
    one_off_template_[j] = OneOffTemplate{p.def, p.in_order};
    // Signed off as the run starts: an instance opening at the start is due.
    MORPHEUS_RETURN_IF_ERROR(submitOneOffs(j, s_.from - Millis(1)).status());
  }
  for (size_t j = 0; j < w_.periodic.size(); j++) {
    if (one_off_template_[j]) one_off_jobs_.push_back(j);
  }
  if (!one_off_jobs_.empty()) push(s_.from + s_.one_off_check, Ev::kOneOffCheck, 0);
  for (size_t j = 0; j < w_.periodic.size(); j++) {
    const PeriodicJob& job = w_.periodic[j];
    int64_t k = 0;
    int64_t rel = toEpochMs(s_.from) - job.submit_offset.count();
    if (rel > 0) k = (rel + job.period.count() - 1) / job.period.count();
    push(fromEpochMs(k * job.period.count() + job.submit_offset.count()), Ev::kPeriodicSubmit,
         static_cast<int64_t>(j), k);
  }
  auto first_adhoc = std::lower_bound(
      w_.adhoc.begin(), w_.adhoc.end(), s_.from,
      [](const AdhocJob& a, TimePoint t) { return fromEpochMs(a.submit.count()) < t; });
  if (first_adhoc != w_.adhoc.end()) {
    push(fromEpochMs(first_adhoc->submit.count()), Ev::kAdhocSubmit,
         first_adhoc - w_.adhoc.begin());
  }
  push(s_.from, Ev::kPlanStep, 0);
  steps_total_ = (s_.to - s_.from) / o_.step;
  return Status::ok();
}

// The strategy's own reservations go to the planner first, in workload order
// or, with RunSetup::admit_smallest_first, smallest instance first (a
// reshaped skyline refused front-loaded is tried in order at once); only then
// the user fallbacks of the jobs left without one, so a user's request (often
// over-provisioned many times, Morpheus Fig. 2a) never takes the room of a
// reservation the strategy derived — as Morpheus would migrate jobs onto
// inferred reservations before keeping any user request.
Result<std::vector<Sim::Admission>> Sim::admitPlanned() {
  std::vector<Admission> out(w_.periodic.size());
  auto tryAdmit = [&](size_t j, const planner::ReservationDefinition& def, bool fallback) {
    planner::DisplacementReport displaced;
    auto got = planner_->submit(reservationIdOf(w_.periodic[j]), def, s_.from, nullptr, &displaced);
    replanned(displaced);
    if (!got.isOk()) return;
    out[j].placement = std::move(*got);
    out[j].def = &def;
    out[j].fallback = fallback;
  };
  const std::vector<size_t> order = admissionOrder();
  for (size_t j : order) {
    const JobProvision& p = s_.provisions[j];
    if (p.kind != JobProvision::Kind::kPlanned) continue;
    tryAdmit(j, p.def, false);
    if (!out[j].placement && p.in_order) tryAdmit(j, *p.in_order, false);
  }
  if (s_.admit_per_instance) {
    for (size_t j : order) {
      if (out[j].placement || s_.provisions[j].kind != JobProvision::Kind::kPlanned) continue;
      MORPHEUS_ASSIGN_OR_RETURN(out[j].per_instance, admitPerInstance(j));
    }
  }
  for (size_t j = 0; j < w_.periodic.size(); j++) {
    const JobProvision& p = s_.provisions[j];
    if (p.kind == JobProvision::Kind::kPerInstance) continue;  // its one-offs come later
    if (!out[j].placement && !out[j].per_instance && p.fallback) {
      tryAdmit(j, *p.fallback, true);
    }
  }
  return out;
}

// A job whose whole recurring reservation the plan refused gets a one-off
// reservation per instance, as morpheus-inference's acceptPerInstance gives
// it: the instances due at the sign-off (the start) are submitted at once,
// later ones and refused ones at every check (submitOneOffs), so the plan
// holds every instance it has room for instead of none. When the plan
// refuses every instance due at the start, the daemon keeps the proposal
// pending: the job gets no one-off at all.
Result<bool> Sim::admitPerInstance(size_t j) {
  const JobProvision& p = s_.provisions[j];
  const int64_t period = p.def.period.count();
  const int64_t from = toEpochMs(s_.from);
  // Instance k of the job is submitted k periods after the epoch; the
  // template is instance 0's window, so the start must fall on a period.
  if (period <= 0 || p.def.period != w_.periodic[j].period || from % period != 0) return false;
  auto fromEpoch = [&](planner::ReservationDefinition def) {
    def.arrival = fromEpochMs(toEpochMs(def.arrival) - from);
    def.deadline = fromEpochMs(toEpochMs(def.deadline) - from);
    return def;
  };
  OneOffTemplate t{fromEpoch(p.def), std::nullopt};
  if (p.in_order) t.in_order = fromEpoch(*p.in_order);
  one_off_template_[j] = std::move(t);
  const int64_t refused = one_offs_refused_;
  MORPHEUS_ASSIGN_OR_RETURN(int reserved, submitOneOffs(j, s_.from - Millis(1)));
  if (reserved > 0 || one_offs_refused_ == refused) return true;
  one_offs_refused_ = refused;  // a pending proposal: its refusals are not the job's one-offs
  res_of_instance_[j].clear();
  one_off_template_[j].reset();
  for (auto it = tried_at_.begin(); it != tried_at_.end();) {
    it = it->first.first == j ? tried_at_.erase(it) : std::next(it);
  }
  return false;
}

void Sim::replanned(const planner::DisplacementReport& d) {
  if (!d.empty()) freedPlan(TimePoint::min(), TimePoint::max());
  for (const ReservationId& id : d.replanned) {
    const planner::Placement* placement = planner_->placement(id);
    for (size_t ri = 0; ri < res_.size() && placement != nullptr; ri++) {
      if (res_[ri].id != id) continue;
      res_[ri].boundaries.clear();
      for (const auto& alloc : placement->allocations) {
        res_[ri].boundaries.push_back(alloc.start);
        res_[ri].boundaries.push_back(alloc.end);
      }
      refreshGuarantee(static_cast<int>(ri), true);
    }
  }
}

Status Sim::addReservation(size_t j, const ReservationId& id,
                           const planner::ReservationDefinition& def,
                           const planner::Placement& placement, int64_t budget) {
  MORPHEUS_ASSIGN_OR_RETURN(int ri, newReservation(j, id, def, placement, budget));
  res_of_job_[j].push_back(ri);
  return Status::ok();
}

Result<int> Sim::submitOneOffs(size_t j, TimePoint after) {
  const OneOffTemplate& t = *one_off_template_[j];
  const Millis period = t.def.period;
  // Instance k of a template: its window shifted by k periods, period 0.
  auto instance = [period](const planner::ReservationDefinition& d, int64_t k) {
    planner::ReservationDefinition def = d;
    def.period = Millis(0);
    def.arrival = d.arrival + period * k;
    def.deadline = d.deadline + period * k;
    return def;
  };
  std::map<int64_t, int>& mine = res_of_instance_[j];
  // The first instance whose window opens after `after`.
  const int64_t rel = toEpochMs(after) - toEpochMs(t.def.arrival);
  int reserved = 0;
  for (int64_t k = rel < 0 ? 0 : rel / period.count() + 1;; k++) {
    planner::ReservationDefinition def = instance(t.def, k);
    if (def.arrival > now_ + s_.one_off_lead) return reserved;
    auto held = mine.find(k);
    if (held != mine.end() && held->second >= 0) continue;
    const auto tried = tried_at_.find({j, k});
    if (tried != tried_at_.end() && !freedSince(tried->second, def.arrival, def.deadline)) continue;
    const ReservationId id = oneOffIdOf(w_.periodic[j], k);
    auto got = planner_->submit(id, def, now_);
    if (!got.isOk() && t.in_order) {  // a reshaped skyline: its in-order alternative
      def = instance(*t.in_order, k);
      got = planner_->submit(id, def, now_);
    }
    if (!got.isOk()) {
      if (held == mine.end()) {
        mine[k] = -1;
        one_offs_refused_++;
      }
      // Refused for want of room: submitted again once room is freed in its
      // window. Otherwise (a window beyond the planner's horizon) at every check.
      if (got.status().code() == StatusCode::kInfeasible) {
        tried_at_[{j, k}] = freed_base_ + static_cast<int64_t>(freed_.size());
      }
      continue;
    }
    if (tried != tried_at_.end()) tried_at_.erase(tried);
    MORPHEUS_ASSIGN_OR_RETURN(
        int ri, newReservation(j, id, def, *got, s_.provisions[j].budget_container_ms));
    one_offs_on_retry_ += held == mine.end() ? 0 : 1;
    mine[k] = ri;
    one_offs_reserved_++;
    reserved++;
  }
}

void Sim::oneOffCheck() {
  for (size_t j : one_off_jobs_) {
    auto n = submitOneOffs(j, now_);
    if (!n.isOk() && error_.isOk()) error_ = n.status();
  }
  // Instances whose window opened are not submitted again; freed capacity
  // no pending refusal predates is not looked at again.
  int64_t oldest = freed_base_ + static_cast<int64_t>(freed_.size());
  for (auto it = tried_at_.begin(); it != tried_at_.end();) {
    const OneOffTemplate& t = *one_off_template_[it->first.first];
    if (t.def.arrival + t.def.period * it->first.second <= now_) {
      it = tried_at_.erase(it);
      continue;
    }
    oldest = std::min(oldest, it->second);
    ++it;
  }
  for (; freed_base_ < oldest; freed_base_++) freed_.pop_front();
  push(now_ + s_.one_off_check, Ev::kOneOffCheck, 0);
}

bool Sim::freedSince(int64_t seq, TimePoint from, TimePoint to) const {
  for (auto i = static_cast<size_t>(std::max<int64_t>(0, seq - freed_base_)); i < freed_.size();
       i++) {
    if (freed_[i].from < to && freed_[i].to > from) return true;
  }
  return false;
}

Result<int> Sim::newReservation(size_t j, const ReservationId& id,
                                const planner::ReservationDefinition& def,
                                const planner::Placement& placement, int64_t budget) {
  ResState r;
  r.id = id;
  r.job = static_cast<int>(j);
  r.unit = jobUnit(w_.periodic[j].stages);
  r.period = def.period;
  r.budget.budget_container_ms = budget;
  for (const auto& alloc : placement.allocations) {
    r.boundaries.push_back(alloc.start);
    r.boundaries.push_back(alloc.end);
  }
  res_.push_back(std::move(r));
  MORPHEUS_RETURN_IF_ERROR(
      sched_->setReservation(res_.back().id, sched::ReservationKind::kPeriodic, Resource()));
  const int ri = static_cast<int>(res_.size()) - 1;
  refreshGuarantee(ri, true);
  return ri;
}

// Workload order, or (admit_smallest_first) ascending footprint of one
// instance: the sum over its stages of containers x duration x the
// container's dominant share of the cluster; ties keep workload order.
// Violations are counted per instance and an instance's footprint is what it
// takes from the plan, so admitting small ones first leaves the fewest
// instances unreserved when the plan cannot hold every job (workload order
// left some jobs unreserved, mostly hourly ones).
std::vector<size_t> Sim::admissionOrder() const {
  std::vector<size_t> order(w_.periodic.size());
  for (size_t j = 0; j < order.size(); j++) order[j] = j;
  if (!s_.admit_smallest_first) return order;
  const Resource capacity = o_.node_size * o_.nodes;
  std::vector<double> footprint(order.size(), 0);
  for (size_t j = 0; j < order.size(); j++) {
    for (const auto& st : s_.provisions[j].def.stages) {
      footprint[j] += st.capability.dominantShare(capacity) *
                      static_cast<double>(st.num_containers) *
                      static_cast<double>(st.duration.count());
    }
  }
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t x, size_t y) { return footprint[x] < footprint[y]; });
  return order;
}

Result<RunOutput> Sim::run() {
  MORPHEUS_RETURN_IF_ERROR(init());
  while (!q_.empty() && !out_.interrupted && error_.isOk()) {
    const int64_t t = q_.nextTime();
    if (t >= toEpochMs(s_.to)) break;
    // `stop` is polled every instant, not only at plan steps: one simulated
    // minute at 50,000 nodes can take minutes of wall time (--max-wall
    // overshot by 270 s when it was polled at plan steps only).
    if (stop_ != nullptr && stop_->load(std::memory_order_relaxed)) {
      out_.interrupted = true;
      break;
    }
    now_ = fromEpochMs(t);
    std::vector<Event>& instant = q_.open();
    for (size_t i = 0; i < instant.size() && !out_.interrupted; i++) {
      // Task ends are most of an instant; each reads its task slot, then
      // ends the slot's container in the scheduler, which relinks the
      // container's list neighbours. Hints, a few events ahead, in that
      // order (each stage reads what the one before fetched; nothing
      // changes): the task slot, the container, its neighbours.
      constexpr size_t kSlotAhead = 12, kContainerAhead = 8, kNeighboursAhead = 4;
      if (i + kSlotAhead < instant.size() && instant[i + kSlotAhead].type == Ev::kTaskEnd) {
        __builtin_prefetch(&slots_[static_cast<size_t>(instant[i + kSlotAhead].a)]);
      }
      if (const sched::ContainerSlot* c = endingContainer(instant, i + kContainerAhead)) {
        sched_->prefetchContainer(*c);
      }
      if (const sched::ContainerSlot* c = endingContainer(instant, i + kNeighboursAhead)) {
        sched_->prefetchNeighbours(*c);
      }
      const Event e = instant[i];
      out_.events++;
      dispatch(e);
    }
    q_.close();
    round();
    if (s_.record_until && now_ >= *s_.record_until && recorded_live_ == 0) {
      drained_ = true;
      break;
    }
  }
  MORPHEUS_RETURN_IF_ERROR(error_);
  if (!out_.interrupted && !drained_) now_ = s_.to;
  if (o_.events_processed != nullptr) o_.events_processed->fetch_add(out_.events);
  finalize();
  return std::move(out_);
}

const sched::ContainerSlot* Sim::endingContainer(const std::vector<Event>& instant,
                                                 size_t i) const {
  if (i >= instant.size() || instant[i].type != Ev::kTaskEnd) return nullptr;
  const TaskSlot& t = slots_[static_cast<size_t>(instant[i].a)];
  return t.alive && t.gen == instant[i].b ? &t.container : nullptr;
}

void Sim::dispatch(const Event& e) {
  switch (e.type) {
    case Ev::kTaskEnd:
      if (slots_[static_cast<size_t>(e.a)].gen == e.b) endTask(e.a, false);
      break;
    case Ev::kHeartbeat:
      dirty_nodes_.insert(static_cast<int>(e.a));
      break;
    case Ev::kGuarantee:
      if (res_[static_cast<size_t>(e.a)].gen == static_cast<uint64_t>(e.b)) {
        refreshGuarantee(static_cast<int>(e.a), true);
      }
      break;
    case Ev::kPeriodicSubmit:
      submitPeriodic(static_cast<int>(e.a), e.b);
      break;
    case Ev::kAdhocSubmit:
      submitAdhoc(static_cast<int>(e.a));
      break;
    case Ev::kPlanStep:
      planStep();
      break;
    case Ev::kFluidStep:
      fluidStep();
      break;
    case Ev::kAggregateStep:
      agg_due_ = true;
      push(now_ + o_.aggregate_adhoc_step, Ev::kAggregateStep, 0);
      break;
    case Ev::kOneOffCheck:
      oneOffCheck();
      break;
  }
}

// ---- scheduling ----

void Sim::round() {
  // The aggregate ad-hoc capacity first: it takes its share of the room that
  // ended tasks freed before the periodic apps' asks are offered it, and it
  // yields at once to a guarantee that lacks room (the preemption of ad-hoc
  // work by reservations, as capacity).
  // The refill goes first: a reservation that asked this instant and finds
  // the freed room taken by it triggers the recomputation below, which
  // serves the guarantee before the pools.
  if (!agg_due_ && !agg_freed_.empty()) refillAggregateNodes();
  agg_freed_.clear();
  if (!agg_.empty() && (agg_due_ || (!agg_check_.empty() && aggregateShortfall()))) {
    aggregateStep();
  }
  agg_due_ = false;
  agg_check_.clear();
  bool updated = false;
  for (int n = dirty_nodes_.popFirst(); n != NodeSet::kNone; n = dirty_nodes_.popFirst()) {
    updateNode(n);
    updated = true;
  }
  updated = offerNewAsks() || updated;
  new_asked_ = 0;
  if (poke_ && !updated && !nodes_.empty()) updateNode(0);
  // Preemption is selected inside nodeUpdate once a guarantee cannot be
  // served from free capacity; guarantees change only when poked.
  if (poke_) collectNotices();
  poke_ = false;
  // Kills found above free capacity: serve it in the same instant.
  for (int n = dirty_nodes_.popFirst(); n != NodeSet::kNone; n = dirty_nodes_.popFirst()) {
    updateNode(n);
  }
  if (!agg_touched_.empty()) fillAggregateHoles();
}

// New asks are offered to the free nodes they fit, in node order, until as
// many containers as were asked are granted. An offer that grants nothing,
// kills nothing and finds no container under notice on its node (whose
// notice it could withdraw) leaves the scheduler as it was; the simulated
// nodes are alike (same size, no attributes), so a node whose free room is
// within such a node's, and that holds no notice either, would get nothing
// and change nothing: it is not offered. (At 50,000 nodes an ask its app
// could not take yet was offered to every free node.) Once a wholly free node
// declined while no node holds a notice, no later node can be offered, and
// the walk ends. The declined rooms are forgotten at the first offer that
// changes anything. Decisions are those of offering every node: summary.json
// is byte-identical (README).
bool Sim::offerNewAsks() {
  bool offered = false;
  int64_t granted = 0;
  std::vector<Resource> declined;
  bool whole_node_declined = false;
  for (int n = free_nodes_.first(); n != NodeSet::kNone && granted < new_asked_;
       n = free_nodes_.next(n)) {
    const Resource free = nodeTotal(n) - node_used_[static_cast<size_t>(n)];
    if (!new_ask_min_.fitsIn(free)) continue;
    // An offer's preemption selection may have noticed containers anywhere.
    const bool any_notices = sched_->anyNodeHasNotices();
    const bool noticed =
        any_notices && sched_->nodeHasNotices(node_handles_[static_cast<size_t>(n)]);
    if (!noticed && !o_.offer_every_free_node &&
        std::any_of(declined.begin(), declined.end(),
                    [&](const Resource& d) { return free.fitsIn(d); })) {
      refreshFree(n);  // as an offer would: the smallest task may have changed
      if (whole_node_declined && !any_notices) break;  // every later node's room is within it
      continue;
    }
    bool killed = false;
    const int64_t got = updateNode(n, &killed);
    granted += got;
    offered = true;
    if (got > 0 || killed || noticed) {
      declined.clear();
      whole_node_declined = false;
    } else {
      declined.push_back(free);
      whole_node_declined = whole_node_declined || free == o_.node_size;
    }
  }
  return offered;
}

int64_t Sim::updateNode(int n, bool* killed) {
  if (!sched_->nodeUpdate(node_handles_[static_cast<size_t>(n)], now_, &update_).isOk()) return 0;
  if (o_.aggregate_adhoc_fill && !agg_.empty()) agg_touched_.push_back(n);
  if (killed != nullptr) *killed = !update_.to_kill.empty();
  // startTask and endTask call the scheduler (release, updateAsks), never
  // nodeUpdate: update_ stays as it is while it is read.
  for (const auto& g : update_.grants) startTask(n, g);
  for (const auto& k : update_.to_kill) {
    // The live task slot on node n holding the container, if any.
    const auto ci = static_cast<size_t>(k.index);
    if (k.index < 0 || ci >= slot_of_container_.size()) continue;
    const int64_t slot = slot_of_container_[ci];
    if (slot < 0) continue;
    const TaskSlot& t = slots_[static_cast<size_t>(slot)];
    if (t.alive && t.node == n && t.container.index == k.index &&
        t.container.generation == k.generation) {
      preemption_kills_++;
      endTask(slot, true);
    }
  }
  refreshFree(n);
  return static_cast<int64_t>(update_.grants.size());
}

void Sim::refreshFree(int n) {
  Resource free = nodeTotal(n) - node_used_[static_cast<size_t>(n)];
  if (!min_task_.isZero() && min_task_.fitsIn(free)) {
    free_nodes_.insert(n);
  } else {
    free_nodes_.erase(n);
  }
}

void Sim::startTask(int n, const sched::SlotGrant& g) {
  const int app_index = app_of_slot_[static_cast<size_t>(g.app.index)];
  AppState& app = apps_[static_cast<size_t>(app_index)];
  if (app.fluid >= 0) {
    startFluid(app, app_index, n, g);
    return;
  }
  const auto s = static_cast<size_t>(g.priority);
  StageRun& st = app.run[s];
  int64_t task;
  if (!st.requeued.empty()) {
    task = st.requeued.back();
    st.requeued.pop_back();
  } else if (st.next_task < st.tasks) {
    task = st.next_task++;
  } else {
    // More granted than asked: give it back.
    MORPHEUS_IGNORE_NOT_FOUND(sched_->release(app.id, g.container),
                              "the core granted it this call");
    return;
  }
  const int64_t slot = placeSlot(app_index, static_cast<int>(s), task, n, g);
  const int64_t gen = slots_[static_cast<size_t>(slot)].gen;
  st.pending--;
  app.pending_res -= st.task;
  pending_tasks_ -= st.task;
  if (!app.started) {
    app.started = true;
    app.start = now_;
  }
  // The NM reports a container's end on its next heartbeat (1 s grid).
  const int64_t end = toEpochMs(now_ + st.durations[task]);
  push(fromEpochMs((end + kHeartbeatMs - 1) / kHeartbeatMs * kHeartbeatMs), Ev::kTaskEnd, slot,
       gen);
}

int64_t Sim::placeSlot(int app_index, int stage, int64_t task, int node,
                       const sched::SlotGrant& g) {
  int64_t slot;
  if (!free_slots_.empty()) {
    slot = free_slots_.back();
    free_slots_.pop_back();
  } else {
    slot = static_cast<int64_t>(slots_.size());
    slots_.emplace_back();
  }
  const int64_t gen = slots_[static_cast<size_t>(slot)].gen + 1;
  slots_[static_cast<size_t>(slot)] =
      TaskSlot{app_index, stage, task, node, now_, g.resource, g.container, true, gen};
  const auto ci = static_cast<size_t>(g.container.index);
  if (ci >= slot_of_container_.size()) slot_of_container_.resize(ci + 1, -1);
  slot_of_container_[ci] = slot;
  node_used_[static_cast<size_t>(node)] += g.resource;
  apps_[static_cast<size_t>(app_index)].used += g.resource;
  return slot;
}

void Sim::accountUsage(AppState& app, TimePoint from, TimePoint to, int64_t weight) {
  app.used_unit_ms += static_cast<double>(weight) * static_cast<double>((to - from).count());
  if (!s_.record_history || to <= from) return;
  // Steps first..last from the app's start, the first and last in part: each
  // step gets weight x the time of [from, to) inside it, one addition each.
  const int64_t step = o_.step.count();
  const int64_t a = (from - app.start).count(), b = (to - app.start).count();
  const auto first = static_cast<size_t>(a / step), last = static_cast<size_t>((b - 1) / step);
  if (app.bins.size() <= last) app.bins.resize(last + 1, 0.0);
  const auto w = static_cast<double>(weight);
  if (first == last) {
    app.bins[first] += w * static_cast<double>(b - a);
    return;
  }
  app.bins[first] += w * static_cast<double>(static_cast<int64_t>(first + 1) * step - a);
  for (size_t k = first + 1; k < last; k++) app.bins[k] += w * static_cast<double>(step);
  app.bins[last] += w * static_cast<double>(b - static_cast<int64_t>(last) * step);
}

void Sim::endTask(int64_t slot, bool killed) {
  TaskSlot& t = slots_[static_cast<size_t>(slot)];
  if (!t.alive) return;
  t.alive = false;
  MORPHEUS_IGNORE_NOT_FOUND(sched_->containerCompleted(t.container),
                            "released or its node removed");
  // slot_of_container_ keeps naming this slot: a kill looked up there is
  // taken only if the slot is alive and holds that very container
  // (updateNode), which a freed or reused slot never does.
  free_slots_.push_back(slot);
  node_used_[static_cast<size_t>(t.node)] -= t.resource;
  dirty_nodes_.insert(t.node);
  if (agg_lacking_ && !killed) agg_freed_.push_back(t.node);
  AppState& app = apps_[static_cast<size_t>(t.app)];
  app.used -= t.resource;
  if (app.fluid >= 0) {
    // Swap-remove from the pool's held list; the moved slot learns its place.
    auto& held = pools_[static_cast<size_t>(app.fluid)].held;
    const auto pos = static_cast<size_t>(t.task);
    held[pos] = held.back();
    slots_[static_cast<size_t>(held[pos])].task = static_cast<int64_t>(pos);
    held.pop_back();
    return;
  }
  accountUsage(app, t.start, now_, weightOf(t.resource, app.unit));
  size_t s = static_cast<size_t>(t.stage);
  StageRun& st = app.run[s];
  if (killed) {
    st.requeued.push_back(t.task);
    st.pending++;
    app.pending_res += st.task;
    pending_tasks_ += st.task;
    askStage(t.app, s, 1);
    return;
  }
  app.tasks_done++;
  st.done_count++;
  st.done_time += now_ - t.start;
  if (--st.remaining == 0) stageDone(t.app, s);
  if (app.reports_dag && !app.done) reportDag(t.app);
}

void Sim::askStage(int ai, size_t s, int64_t added) {
  AppState& app = apps_[static_cast<size_t>(ai)];
  asks_.resize(1);
  sched::ResourceRequest& r = asks_[0];
  if (app.names_asks) {
    r.request_id = "s" + std::to_string(s);
  } else {
    r.request_id.clear();
  }
  r.priority = static_cast<int32_t>(s);
  r.capability = app.run[s].task;
  r.count = static_cast<int32_t>(app.run[s].pending);
  MORPHEUS_IGNORE_NOT_FOUND(sched_->updateAsks(app.slot, asks_), "the app left the core");
  if (!agg_.empty() && app.res >= 0 && added > 0) agg_check_.push_back(app.res);
  if (app.reports_dag) reportDag(ai);
  new_ask_min_ = new_asked_ == 0 ? r.capability : Resource::min(new_ask_min_, r.capability);
  new_asked_ += added;
}

void Sim::releaseStage(int ai, size_t s) {
  AppState& app = apps_[static_cast<size_t>(ai)];
  StageRun& st = app.run[s];
  if (st.remaining == 0) {
    stageDone(ai, s);
    return;
  }
  app.pending_res += st.task * (st.remaining - st.pending);
  st.pending = st.remaining;
  pending_tasks_ += st.task * st.pending;
  askStage(ai, s, st.pending);
}

void Sim::stageDone(int ai, size_t s) {
  AppState& app = apps_[static_cast<size_t>(ai)];
  app.stages_left--;
  for (int d : app.dependents[s]) {
    if (--app.unmet[static_cast<size_t>(d)] == 0) releaseStage(ai, static_cast<size_t>(d));
  }
  if (app.stages_left == 0 && !app.done) finishApp(ai);
}

int Sim::newApp(const std::string& name, const UserId& user, const sched::QueueRef& queue,
                const std::vector<SimStage>& stages, RealizedInstance inst, TimePoint submit,
                bool names_asks) {
  int ai = static_cast<int>(apps_.size());
  apps_.emplace_back();
  AppState& app = apps_.back();
  app.names_asks = names_asks;
  app.id = AppId("a" + std::to_string(ai) + ":" + name);
  app.stages = &stages;
  app.inst = std::move(inst);
  app.unit = jobUnit(stages);
  app.submit = submit;
  const size_t n = stages.size();
  app.run.resize(n);
  app.unmet.assign(n, 0);
  app.dependents.assign(n, {});
  app.stages_left = n;
  for (size_t s = 0; s < n; s++) {
    StageRun& st = app.run[s];
    const std::vector<Millis>& durations = app.inst.stages[s].task_durations;
    st.task = stages[s].task_resource;
    st.durations = durations.data();
    st.tasks = static_cast<int64_t>(durations.size());
    st.remaining = st.tasks;
    app.tasks_total += st.remaining;
    app.unmet[s] = static_cast<int64_t>(stages[s].depends_on.size());
    for (int d : stages[s].depends_on)
      app.dependents[static_cast<size_t>(d)].push_back(static_cast<int>(s));
  }
  live_apps_.insert(ai);
  if (!sched_->addApp(app.id, user, queue).isOk()) {
    // Unreachable with a validated workload; the app is dropped as finished.
    app.done = true;
    live_apps_.erase(ai);
    return ai;
  }
  bindSlot(ai);
  if (n == 0) {
    finishApp(ai);
    return ai;
  }
  for (size_t s = 0; s < n; s++) {
    if (apps_[static_cast<size_t>(ai)].unmet[s] == 0) releaseStage(ai, s);
  }
  return ai;
}

void Sim::submitPeriodic(int j, int64_t k) {
  const PeriodicJob& job = w_.periodic[static_cast<size_t>(j)];
  push(now_ + job.period, Ev::kPeriodicSubmit, j, k + 1);
  RealizedInstance inst = o_.realize(job, static_cast<size_t>(j), k, o_.seed);
  const std::vector<int>& per = res_of_job_[static_cast<size_t>(j)];
  // A recurring reservation holds every instance; a job reserved per
  // instance has a one-off per instance.
  int r = per.empty() ? -1 : per[static_cast<size_t>(k) % per.size()];
  if (one_off_template_[static_cast<size_t>(j)]) {
    const auto& mine = res_of_instance_[static_cast<size_t>(j)];
    auto it = mine.find(k);
    r = it == mine.end() ? -1 : it->second;
  }
  auto queue = r >= 0 ? sched::QueueRef::reservation(res_[static_cast<size_t>(r)].id)
                      : sched::QueueRef::adhoc(job.queue);
  if (s_.record_until && now_ < *s_.record_until) recorded_live_++;
  int ai = newApp(job.key.value() + "#" + std::to_string(k), job.owner, queue, job.stages,
                  std::move(inst), now_, false);
  AppState& app = apps_[static_cast<size_t>(ai)];
  app.job = j;
  app.res = r;
  if (r >= 0 && !app.done) res_[static_cast<size_t>(r)].live.push_back(ai);
}

void Sim::submitAdhoc(int idx) {
  if (static_cast<size_t>(idx + 1) < w_.adhoc.size()) {
    push(fromEpochMs(w_.adhoc[static_cast<size_t>(idx + 1)].submit.count()), Ev::kAdhocSubmit,
         idx + 1);
  }
  if (o_.fluid_adhoc_step > Millis(0)) {
    submitFluid(idx);
    return;
  }
  if (!agg_.empty()) {
    const auto i = static_cast<size_t>(idx);
    agg_[static_cast<size_t>(pool_of_adhoc_[i])].pool.add(idx, w_.adhoc[i].stages);
    return;
  }
  const AdhocJob& job = w_.adhoc[static_cast<size_t>(idx)];
  RealizedInstance inst;
  for (const auto& st : job.stages) {
    inst.stages.push_back(RealizedStage{std::vector<Millis>(
        static_cast<size_t>(std::max<int64_t>(0, st.tasks)), st.task_duration)});
  }
  int ai = newApp("adhoc-" + std::to_string(idx) + "-" + job.name, job.user,
                  sched::QueueRef::adhoc(job.queue), job.stages, std::move(inst), now_, true);
  AppState& app = apps_[static_cast<size_t>(ai)];
  app.adhoc = idx;
  // Which jobs report their DAG, and how wrong their estimates are
  // (deterministic in the seed and the job's index).
  const rng::Stream draw(o_.seed, static_cast<uint64_t>(idx), -1, "carbyne");
  app.reports_dag = !app.done && draw.uniform(0) < o_.altruistic_share;
  for (size_t s = 0; s < job.stages.size(); s++) {
    app.estimate_factor.push_back(
        draw.uniform(s + 1, 1.0 - o_.estimate_noise, 1.0 + o_.estimate_noise));
  }
  if (app.reports_dag) reportDag(ai);
}

// The AM's report (rm/runtime/dag_report.cc): unfinished stages, their remaining
// tasks, estimated durations and task resources, deps among them, and the
// request id each stage's ask carries (askStage's), so a Carbyne leaf tells
// the stages its plan needs now from the others and counts their running
// tasks (AppHint::needed, needed_tasks), as in the RM.
void Sim::reportDag(int ai) {
  const AppState& app = apps_[static_cast<size_t>(ai)];
  std::vector<sched::DagStage> dag;
  std::vector<int64_t> index(app.run.size(), -1);
  for (size_t s = 0; s < app.run.size(); s++) {
    if (app.run[s].remaining <= 0) continue;
    const SimStage& st = (*app.stages)[s];
    sched::DagStage d;
    d.tasks_left = app.run[s].remaining;
    d.task_duration = std::max(
        Millis(1), Millis(static_cast<int64_t>(static_cast<double>(st.task_duration.count()) *
                                               app.estimate_factor[s])));
    d.task = st.task_resource;
    d.request_id = "s" + std::to_string(s);
    for (int dep : st.depends_on) {
      if (index[static_cast<size_t>(dep)] >= 0)
        d.deps.push_back(static_cast<size_t>(index[static_cast<size_t>(dep)]));
    }
    index[s] = static_cast<int64_t>(dag.size());
    dag.push_back(std::move(d));
  }
  MORPHEUS_IGNORE_NOT_FOUND(sched_->reportDag(app.id, dag), "the app left the core");
}

void Sim::finishApp(int ai) {
  AppState& app = apps_[static_cast<size_t>(ai)];
  app.done = true;
  app.end = now_;
  if (!app.started) app.start = now_;
  MORPHEUS_IGNORE_NOT_FOUND(sched_->removeApp(app.id), "the app never reached the core");
  live_apps_.erase(ai);
  if (app.res >= 0) {
    auto& live = res_[static_cast<size_t>(app.res)].live;
    live.erase(std::remove(live.begin(), live.end(), ai), live.end());
  }
  if (app.job >= 0) {
    if (s_.record_until && app.submit < *s_.record_until) recorded_live_--;
    if (!app.inst.fails) rememberStageDurations(app);
    if (s_.record_history && recorded(app)) recordRun(app);
    judge(ai, false);
  } else if (app.adhoc >= 0) {
    out_.result.adhoc.push_back(AdhocOutcome{w_.adhoc[static_cast<size_t>(app.adhoc)].name,
                                             w_.adhoc[static_cast<size_t>(app.adhoc)].submit,
                                             app.end - app.submit});
  }
  releaseRunState(app);
}

// A finished app keeps only what outcomes and lookups read (ids, times,
// flags, used); its per-stage and per-step state is freed, so memory does
// not grow with the instances simulated (millions of apps at scale).
void Sim::releaseRunState(AppState& app) {
  auto drop = [](auto& v) { std::remove_reference_t<decltype(v)>().swap(v); };
  drop(app.bins);
  drop(app.inst.stages);
  drop(app.run);
  app.pending_res = Resource();
  drop(app.unmet);
  drop(app.dependents);
  drop(app.grants);
  drop(app.estimate_factor);
}

// ---- fluid ad-hoc pools (--task-model fluid, sim/engine/fluid_adhoc.h) ----

// One pool per (queue, task resource) of the ad-hoc jobs, each with its
// scheduler app in that ad-hoc queue; the first step is one fluid step in.
Status Sim::initFluid() {
  if (o_.adhoc_policy != "drf") {
    return invalidArgument("adhoc_policy",
                           "the fluid task model shares ad-hoc capacity max-min fairly among "
                           "jobs (drf); '" +
                               o_.adhoc_policy + "' needs the task model");
  }
  MORPHEUS_ASSIGN_OR_RETURN(pool_of_adhoc_, poolAdhocJobs(w_.adhoc, "fluid task", &pools_));
  for (size_t p = 0; p < pools_.size(); p++) {
    const int ai = static_cast<int>(apps_.size());
    apps_.emplace_back();
    AppState& app = apps_.back();
    // "a<index>:" and nothing more, on purpose: the scheduler's container
    // ids are the app id plus "_<epoch>_<n>", the pools churn hundreds of
    // millions of containers at scale, and an id within std::string's inline
    // buffer (15 characters: here up to n = 999,999,999 for the first ten
    // apps) costs no allocation in the scheduler or in the copies it returns.
    app.id = AppId("a" + std::to_string(ai) + ":");
    app.fluid = static_cast<int>(p);
    pools_[p].app = ai;
    MORPHEUS_RETURN_IF_ERROR(
        sched_->addApp(app.id, UserId("fluid-adhoc"), sched::QueueRef::adhoc(pools_[p].queue)));
    bindSlot(ai);
    live_apps_.insert(ai);
  }
  if (!pools_.empty()) push(s_.from + o_.fluid_adhoc_step, Ev::kFluidStep, 0);
  return Status::ok();
}

void Sim::submitFluid(int idx) {
  const auto i = static_cast<size_t>(idx);
  pools_[static_cast<size_t>(pool_of_adhoc_[i])].pool.add(idx, w_.adhoc[i].stages);
}

// Each pool: the step just ended ran on the containers held now (finished
// jobs recorded), then what it holds beyond its demand is released (newest
// first), and so are the containers of the tasks that ended in the step
// while jobs' apps wait for room; its ask becomes its demand net of what it
// still holds.
void Sim::fluidStep() {
  const Millis dt = o_.fluid_adhoc_step;
  for (FluidState& f : pools_) {
    for (const FluidFinished& d : f.pool.advance(now_, dt, static_cast<int64_t>(f.held.size()))) {
      const AdhocJob& job = w_.adhoc[static_cast<size_t>(d.job)];
      out_.result.adhoc.push_back(
          AdhocOutcome{job.name, job.submit, d.end - fromEpochMs(job.submit.count())});
    }
    const int64_t want = f.pool.demand();
    const auto held = static_cast<int64_t>(f.held.size());
    if (held > want) releaseFluid(f, held - want);
    // Turnover: the containers whose tasks ended in the step go back to the
    // scheduler (and are asked for again) while other apps wait for room, so
    // they are ordered against those apps as ended tasks are in the task
    // model (reservations first, then queue shares), without preemption.
    const int64_t waiting =
        pending_tasks_.isZero() || f.shape.isZero() ? 0 : pending_tasks_.countCovering(f.shape);
    // Fractions of a task carry to the next step; whole tasks not needed
    // by anyone waiting were followed by ad-hoc tasks and are dropped.
    f.ended_credit += f.pool.lastCompletions();
    const auto ended = static_cast<int64_t>(f.ended_credit);
    f.ended_credit -= static_cast<double>(ended);
    const auto turnover = std::min<int64_t>({ended, waiting, static_cast<int64_t>(f.held.size())});
    releaseFluid(f, turnover);
    const int64_t ask = std::max<int64_t>(0, want - static_cast<int64_t>(f.held.size()));
    if (ask == f.asked) continue;
    sched::ResourceRequest r;
    r.request_id = "fluid";
    r.capability = f.shape;
    r.count = static_cast<int32_t>(std::min<int64_t>(ask, std::numeric_limits<int32_t>::max()));
    MORPHEUS_IGNORE_NOT_FOUND(sched_->updateAsks(apps_[static_cast<size_t>(f.app)].id, {r}),
                              "the app left the core");
    if (ask > f.asked) {
      new_ask_min_ = new_asked_ == 0 ? f.shape : Resource::min(new_ask_min_, f.shape);
      new_asked_ += ask - f.asked;
    }
    f.asked = ask;
  }
  push(now_ + dt, Ev::kFluidStep, 0);
}

void Sim::startFluid(AppState& app, int app_index, int n, const sched::SlotGrant& g) {
  FluidState& f = pools_[static_cast<size_t>(app.fluid)];
  if (f.asked <= 0) {
    // More granted than asked: give it back.
    MORPHEUS_IGNORE_NOT_FOUND(sched_->release(app.id, g.container),
                              "the core granted it this call");
    return;
  }
  f.asked--;
  const int64_t slot = placeSlot(app_index, 0, static_cast<int64_t>(f.held.size()), n, g);
  f.held.push_back(slot);
}

void Sim::releaseFluid(FluidState& f, int64_t count) {
  for (int64_t i = 0; i < count && !f.held.empty(); i++) endTask(f.held.back(), false);
}

// ---- aggregate ad-hoc model (--adhoc-model aggregate, sim/engine/aggregate_adhoc.h) ----

// One pool per (queue, task resource) of the ad-hoc jobs, outside the
// scheduler; the first recomputation is one step in.
Status Sim::initAggregate() {
  MORPHEUS_ASSIGN_OR_RETURN(pool_of_adhoc_, poolAdhocJobs(w_.adhoc, "aggregate ad-hoc", &agg_));
  if (agg_.empty()) return Status::ok();
  node_hidden_.assign(static_cast<size_t>(o_.nodes), Resource());
  agg_last_ = s_.from;
  for (AggregateState& a : agg_) a.held_since = s_.from;
  push(s_.from + o_.aggregate_adhoc_step, Ev::kAggregateStep, 0);
  return Status::ok();
}

bool Sim::aggregateShortfall() const {
  if (hidden_total_.isZero()) return false;
  Resource need;
  std::vector<int> seen;
  for (int ri : agg_check_) {
    if (std::find(seen.begin(), seen.end(), ri) != seen.end()) continue;
    seen.push_back(ri);
    const ResState& r = res_[static_cast<size_t>(ri)];
    Resource used, pending;
    for (int ai : r.live) {
      const AppState& app = apps_[static_cast<size_t>(ai)];
      used += app.used;
      pending += app.pending_res;
    }
    need += Resource::max(Resource::min(r.guarantee, used + pending) - used, Resource());
  }
  if (need.isZero()) return false;
  const Resource free = o_.node_size * o_.nodes - hidden_total_ - sched_->clusterUsed();
  return !need.fitsIn(free);
}

void Sim::aggregateStep() {
  const Millis dt = now_ - agg_last_;
  if (dt > Millis(0)) {
    for (AggregateState& a : agg_) {
      a.held_ms += static_cast<double>(a.held) * static_cast<double>((now_ - a.held_since).count());
      const double mean = a.held_ms / static_cast<double>(dt.count());
      a.held_ms = 0;
      a.held_since = now_;
      for (const FluidFinished& d : a.pool.advanceMean(now_, dt, mean)) {
        const AdhocJob& job = w_.adhoc[static_cast<size_t>(d.job)];
        out_.result.adhoc.push_back(
            AdhocOutcome{job.name, job.submit, d.end - fromEpochMs(job.submit.count())});
      }
    }
    agg_last_ = now_;
  }
  AggregateInput in;
  in.capacity = o_.node_size * o_.nodes;
  for (const ResState& r : res_) {
    if (r.live.empty()) continue;
    AggregateReservation ar;
    ar.guarantee = r.guarantee;
    for (int ai : r.live) {
      const AppState& app = apps_[static_cast<size_t>(ai)];
      ar.used += app.used;
      ar.pending += app.pending_res;
    }
    in.reservations.push_back(std::move(ar));
  }
  for (int ai : live_apps_) {
    const AppState& app = apps_[static_cast<size_t>(ai)];
    if (app.job < 0 || app.res >= 0) continue;
    const std::string& queue = w_.periodic[static_cast<size_t>(app.job)].queue;
    auto it = std::find_if(in.periodic.begin(), in.periodic.end(),
                           [&](const AggregateQueueDemand& q) { return q.queue == queue; });
    if (it == in.periodic.end()) {
      in.periodic.push_back({queue, Resource(), Resource()});
      it = in.periodic.end() - 1;
    }
    it->used += app.used;
    it->pending += app.pending_res;
  }
  for (AggregateState& a : agg_) {
    a.demand = a.pool.demand();
    in.pools.push_back({a.queue, a.shape, a.demand});
  }
  const AggregateSplit split = aggregateAdhocSplit(in);
  for (size_t p = 0; p < agg_.size(); p++) {
    agg_[p].held = split.held[p];
    agg_[p].fair = split.fair[p];
  }
  agg_unmet_ = split.unmet;
  placeAggregate();
  agg_lacking_ = false;
  if (o_.aggregate_adhoc_refill) {
    for (const AggregateState& a : agg_) agg_lacking_ = agg_lacking_ || a.held < a.fair;
  }
}

// Each freed node (in index order, once) gives its free room, less what
// reservations below their guarantee still need, to the pools below their
// fair share; the pools hold it there until the next step re-packs them.
void Sim::refillAggregateNodes() {
  std::sort(agg_freed_.begin(), agg_freed_.end());
  agg_freed_.erase(std::unique(agg_freed_.begin(), agg_freed_.end()), agg_freed_.end());
  std::vector<Resource> shapes;
  std::vector<int64_t> fair, held;
  for (const AggregateState& a : agg_) {
    shapes.push_back(a.shape);
    fair.push_back(a.fair);
    held.push_back(a.held);
  }
  totals_batch_.clear();
  for (int n : agg_freed_) {
    const size_t i = static_cast<size_t>(n);
    const Resource room = o_.node_size - node_hidden_[i] - node_used_[i];
    const Resource taken = refillAggregate(room, shapes, fair, held, agg_unmet_);
    if (taken.isZero()) continue;
    node_hidden_[i] += taken;
    hidden_total_ += taken;
    totals_batch_.emplace_back(node_handles_[i], nodeTotal(n));
    refreshFree(n);
    agg_low_ = agg_low_ < 0 ? n : std::min(agg_low_, n);
  }
  agg_freed_.clear();
  if (!totals_batch_.empty()) {
    MORPHEUS_IGNORE_NOT_FOUND(sched_->setNodeTotals(totals_batch_), "never: simulated nodes stay");
  }
  agg_lacking_ = false;
  for (size_t p = 0; p < agg_.size(); p++) {
    AggregateState& a = agg_[p];
    if (held[p] != a.held) {
      a.held_ms += static_cast<double>(a.held) * static_cast<double>((now_ - a.held_since).count());
      a.held_since = now_;
      a.held = held[p];
    }
    agg_lacking_ = agg_lacking_ || a.held < a.fair;
  }
}

// After the pass, the room left on an offered node is room no periodic ask
// took when the scheduler was offered the node. The pools
// with demand beyond what they hold take it, one container at a time to the
// pool holding least above its fair share, so a hole only ad-hoc tasks fit is
// not left idle; the next step re-places the pools at their shares.
void Sim::fillAggregateHoles() {
  std::sort(agg_touched_.begin(), agg_touched_.end());
  agg_touched_.erase(std::unique(agg_touched_.begin(), agg_touched_.end()), agg_touched_.end());
  std::vector<int64_t> held, want;
  bool any = false;
  for (const AggregateState& a : agg_) {
    held.push_back(a.held);
    want.push_back(a.shape.isZero() ? 0 : std::max<int64_t>(0, a.demand - a.held));
    any = any || want.back() > 0;
  }
  totals_batch_.clear();
  for (int n : any ? agg_touched_ : std::vector<int>{}) {
    const size_t i = static_cast<size_t>(n);
    Resource room = nodeTotal(n) - node_used_[i];
    Resource taken;
    for (;;) {
      size_t best = agg_.size();
      for (size_t p = 0; p < agg_.size(); p++) {
        if (want[p] <= 0 || !agg_[p].shape.fitsIn(room)) continue;
        if (best == agg_.size() || held[p] - agg_[p].fair < held[best] - agg_[best].fair) best = p;
      }
      if (best == agg_.size()) break;
      held[best]++;
      want[best]--;
      room -= agg_[best].shape;
      taken += agg_[best].shape;
    }
    if (taken.isZero()) continue;
    node_hidden_[i] += taken;
    hidden_total_ += taken;
    totals_batch_.emplace_back(node_handles_[i], nodeTotal(n));
    refreshFree(n);
    agg_low_ = agg_low_ < 0 ? n : std::min(agg_low_, n);
  }
  agg_touched_.clear();
  if (totals_batch_.empty()) return;
  MORPHEUS_IGNORE_NOT_FOUND(sched_->setNodeTotals(totals_batch_), "never: simulated nodes stay");
  for (size_t p = 0; p < agg_.size(); p++) {
    AggregateState& a = agg_[p];
    if (held[p] == a.held) continue;
    a.held_ms += static_cast<double>(a.held) * static_cast<double>((now_ - a.held_since).count());
    a.held_since = now_;
    a.held = held[p];
  }
}

// The pools' capacity goes onto the nodes from the last one down, each node
// giving what periodic containers leave free on it, so it stays packed on
// few nodes and moves little between steps. A pool holds what found room
// (fragments too small for its shape are left out). The changed node totals
// go to the scheduler in one batch (one re-sort of its queues per step, not
// one per node).
void Sim::placeAggregate() {
  std::vector<int64_t> left;
  for (const AggregateState& a : agg_) left.push_back(a.held);
  int low = -1;
  hidden_total_ = Resource();
  totals_batch_.clear();
  for (int n = static_cast<int>(o_.nodes) - 1; n >= 0; n--) {
    const bool more = std::any_of(left.begin(), left.end(), [](int64_t x) { return x > 0; });
    if (!more && (agg_low_ < 0 || n < agg_low_)) break;
    Resource hidden;
    if (more) {
      Resource free = o_.node_size - node_used_[static_cast<size_t>(n)];
      for (size_t p = 0; p < agg_.size(); p++) {
        if (left[p] <= 0) continue;
        const int64_t k = std::min(left[p], free.countFitting(agg_[p].shape));
        if (k <= 0) continue;
        hidden += agg_[p].shape * k;
        free -= agg_[p].shape * k;
        left[p] -= k;
      }
      if (!hidden.isZero()) low = n;
    }
    Resource& was = node_hidden_[static_cast<size_t>(n)];
    hidden_total_ += hidden;
    if (hidden == was) continue;
    const bool grew_free = !was.fitsIn(hidden);  // the scheduler gets room back
    was = hidden;
    totals_batch_.emplace_back(node_handles_[static_cast<size_t>(n)], nodeTotal(n));
    if (grew_free) dirty_nodes_.insert(n);
    refreshFree(n);
  }
  MORPHEUS_IGNORE_NOT_FOUND(sched_->setNodeTotals(totals_batch_), "never: simulated nodes stay");
  agg_low_ = low;
  for (size_t p = 0; p < agg_.size(); p++) agg_[p].held -= left[p];
}

// ---- reservations: plan follower and DRA ----

Resource Sim::guaranteeAt(const ResState& r, TimePoint t) const {
  const planner::PlannedReservation* pr = planned(r);
  return pr != nullptr ? planner_->guaranteedOf(*pr, t) : Resource();
}

const planner::PlannedReservation* Sim::planned(const ResState& r) const {
  const uint64_t edits = planner_->planEdits();
  if (r.planned_edits != edits) {
    r.planned = planner_->find(r.id);
    r.planned_edits = edits;
  }
  return r.planned;
}

TimePoint Sim::nextBoundary(const ResState& r, TimePoint t) const {
  TimePoint best = TimePoint::max();
  const int64_t p = r.period.count(), ms = toEpochMs(t);
  auto consider = [&](int64_t b) {
    int64_t k = 0;
    if (b <= ms) {
      if (p <= 0) return;
      k = (ms - b) / p + 1;
    }
    best = std::min(best, fromEpochMs(b + k * p));
  };
  for (TimePoint b : r.boundaries) consider(toEpochMs(b));
  if (r.grant.activeAt(t)) best = std::min(best, r.grant.until);
  return best;
}

void Sim::refreshGuarantee(int ri, bool reschedule) {
  ResState& r = res_[static_cast<size_t>(ri)];
  Resource g = guaranteeAt(r, now_);
  if (!(g == r.guarantee)) {
    r.guarantee = g;
    MORPHEUS_IGNORE_NOT_FOUND(sched_->setReservation(r.id, sched::ReservationKind::kPeriodic, g),
                              "never: ids and guarantees are valid");
    poke_ = true;
    if (!agg_.empty()) agg_check_.push_back(ri);
  }
  if (!reschedule) return;
  r.gen++;
  TimePoint next = nextBoundary(r, now_);
  if (next < s_.to) push(next, Ev::kGuarantee, ri, static_cast<int64_t>(r.gen));
}

// Every app's notices by slot, in the order of the live apps (app index),
// each app's in selection order: the heartbeats are pushed as a walk over
// the live apps taking each one's notices would push them.
void Sim::collectNotices() {
  if (sched_->numUntakenNotices() == 0) return;
  std::vector<sched::SlotNotice>& taken = notices_;
  taken.clear();
  sched_->takePreemptionNotices(&taken);
  std::stable_sort(taken.begin(), taken.end(),
                   [this](const sched::SlotNotice& a, const sched::SlotNotice& b) {
                     return app_of_slot_[static_cast<size_t>(a.app.index)] <
                            app_of_slot_[static_cast<size_t>(b.app.index)];
                   });
  for (const sched::SlotNotice& n : taken) {
    preemption_notices_++;
    push(std::max(now_, n.deadline), Ev::kHeartbeat,
         node_of_slot_[static_cast<size_t>(n.node.value)]);
  }
}

void Sim::planStep() {
  if (stop_ != nullptr && stop_->load()) {
    out_.interrupted = true;
    return;
  }
  if (policy_) draTick();
  if (s_.record_from && now_ == *s_.record_from) counted_from_ = counted();
  if (s_.record_until && now_ == *s_.record_until) counted_until_ = counted();
  if (inRecordedSpan(now_)) {
    // The aggregate model's ad-hoc capacity is in use, though the scheduler
    // does not see it (its node totals leave it out).
    Resource total = agg_.empty() ? sched_->clusterTotal() : o_.node_size * o_.nodes;
    double u = total.isZero() ? 0 : (sched_->clusterUsed() + hidden_total_).dominantShare(total);
    util_sum_ += u;
    util_n_++;
    out_.result.utilisation_series.push_back(u);
  }
  poke_ = true;
  steps_done_++;
  if (progress_ && (steps_done_ % 60 == 0 || steps_done_ == steps_total_)) {
    progress_(phase_, steps_done_, steps_total_);
  }
  push(now_ + o_.step, Ev::kPlanStep, 0);
}

void Sim::draTick() {
  running_.clear();
  if (jockey_) {
    for (const TaskSlot& t : slots_) {
      if (!t.alive || apps_[static_cast<size_t>(t.app)].fluid >= 0) continue;
      auto& per_stage = running_[t.app];
      per_stage.resize(apps_[static_cast<size_t>(t.app)].stages->size());
      per_stage[static_cast<size_t>(t.stage)].push_back(now_ - t.start);
    }
  }
  for (size_t ri = 0; ri < res_.size(); ri++) {
    ResState& r = res_[ri];
    if (r.live.empty()) {
      if (r.grant.activeAt(now_)) releaseExtras(static_cast<int>(ri));
      continue;
    }
    draReview(static_cast<int>(ri));
  }
}

void Sim::recordGrant(ResState& r, int64_t count, TimePoint until) {
  for (int ai : r.live) {
    auto& g = apps_[static_cast<size_t>(ai)].grants;
    if (!g.empty() && g.back().to > now_) g.back().to = now_;
    if (count > 0) {
      g.push_back(Grant{now_, until, count});
      apps_[static_cast<size_t>(ai)].dra_grants++;
    }
  }
}

void Sim::releaseExtras(int ri) {
  ResState& r = res_[static_cast<size_t>(ri)];
  freedPlan(now_, r.grant.until);
  reprovision::releaseGrant(r.budget, r.grant, now_);
  MORPHEUS_IGNORE_NOT_FOUND(planner_->removeExtra(r.id, now_),
                            "the reservation has no extras left");
  recordGrant(r, 0, now_);
  refreshGuarantee(ri, true);
}

// Jockey's view of one app (EuroSys'12 §4.1), as the DAG AM reports it to the
// RM: per stage its tasks, those done, the running ones' elapsed time and the
// recorded task duration (this run's mean so far, else the last run's).
std::vector<reprovision::StageState> Sim::stageStates(int ai) const {
  const AppState& app = apps_[static_cast<size_t>(ai)];
  std::vector<reprovision::StageState> out(app.stages->size());
  auto run = running_.find(ai);
  for (size_t s = 0; s < out.size(); s++) {
    reprovision::StageState& st = out[s];
    st.name = (*app.stages)[s].name;
    for (int d : (*app.stages)[s].depends_on) st.deps.push_back(static_cast<size_t>(d));
    const StageRun& mine = app.run[s];
    st.tasks = mine.tasks;
    st.completed = mine.done_count;
    if (run != running_.end() && s < run->second.size()) st.running = run->second[s];
    if (mine.done_count > 0) {
      st.task_duration = mine.done_time / mine.done_count;
    } else if (app.job >= 0 && static_cast<size_t>(app.job) < last_stage_mean_.size() &&
               s < last_stage_mean_[static_cast<size_t>(app.job)].size()) {
      st.task_duration = last_stage_mean_[static_cast<size_t>(app.job)][s];
    }
  }
  return out;
}

void Sim::rememberStageDurations(const AppState& app) {
  const size_t j = static_cast<size_t>(app.job);
  if (last_stage_mean_.size() <= j) last_stage_mean_.resize(j + 1);
  auto& means = last_stage_mean_[j];
  means.resize(app.run.size(), Millis(0));
  for (size_t s = 0; s < means.size(); s++) {
    const StageRun& st = app.run[s];
    if (st.done_count > 0) means[s] = st.done_time / st.done_count;
  }
}

// One review on the virtual clock through the RM's review arithmetic
// (reprovision/review.h; DraMonitor::review and ReservationManager::
// reprovision run the same functions): the policy's input from this
// reservation's plan and live apps, its decision, then the grant as a swap
// within the instance's budget, placed through the planner.
void Sim::draReview(int ri) {
  ResState& r = res_[static_cast<size_t>(ri)];
  // Found once: the review reads the plan several times and changes it only
  // at the end (setExtra), after its last read.
  const planner::PlannedReservation* pr = planned(r);
  if (pr == nullptr) return;
  const planner::InstanceWindow inst = planner_->instanceOf(*pr, now_);
  auto plannedOf = [&](TimePoint t) { return planner_->placedOf(*pr, t); };
  reprovision::ReviewView view;
  view.unit = r.unit;
  for (int ai : r.live) {
    const AppState& app = apps_[static_cast<size_t>(ai)];
    view.used += app.used;
    view.pending += app.pending_res;
    if (!jockey_) continue;
    // Several apps on one reservation: their DAGs side by side, deps shifted.
    const size_t base = view.stages.size();
    for (auto st : stageStates(ai)) {
      for (size_t& d : st.deps) d += base;
      view.stages.push_back(std::move(st));
    }
  }
  view.planned_now = plannedOf(now_);
  view.extra_now = planner_->extraOf(*pr, now_);
  view.planned_recent = reprovision::recentPlanned(
      plannedOf, now_, inst.start, inst.end, reprovision::MorpheusDraOptions{}.recent, o_.step);
  view.instance = inst.index;
  view.deadline = inst.end;
  view.budget_remaining_container_ms = r.budget.remaining(inst.index, r.grant.refundAt(now_));
  const reprovision::ReprovisionInput in =
      reprovision::reviewInput(r.id, now_, o_.step, o_.dra_ahead_window, std::move(view), r.review);
  auto decision = reprovision::decideReview(*policy_, in, r.review);
  if (without_ahead_rule_ != nullptr && !decision && reprovision::aheadOfPlan(in)) {
    auto would = without_ahead_rule_->decide(in);
    if (would && would->extra_containers > 0) {
      for (int ai : r.live) apps_[static_cast<size_t>(ai)].dra_withheld_ahead++;
    }
  }
  if (!decision || decision->extra_containers <= 0 || decision->duration <= Millis(0)) return;
  const reprovision::SwapQuote q = reprovision::quoteSwap(
      r.budget, r.grant, inst.index, decision->extra_containers, decision->duration, now_);
  if (q.want <= 0) return;
  const TimePoint until = now_ + decision->duration;
  if (r.grant.activeAt(now_)) freedPlan(now_, r.grant.until);  // the swap releases it first
  auto n = planner_->setExtra(r.id, r.unit, q.want, now_, until, now_, nullptr);
  if (!n.isOk()) return;
  reprovision::settleSwap(r.budget, r.grant, q, *n, decision->duration, now_);
  recordGrant(r, *n, until);
  refreshGuarantee(ri, true);
}

// ---- outcomes ----

void Sim::judge(int ai, bool unfinished) {
  const AppState& app = apps_[static_cast<size_t>(ai)];
  const PeriodicJob& job = w_.periodic[static_cast<size_t>(app.job)];
  if (s_.record_history) return;
  if (app.inst.deadline > s_.to || app.submit < s_.from || !recorded(app)) return;
  InstanceOutcome o;
  o.job = job.key.value();
  o.index = app.inst.index;
  o.failed = app.inst.fails && !unfinished;
  TimePoint end = unfinished ? s_.to : app.end;
  o.runtime = app.started ? end - app.start : Millis(0);
  o.lateness = std::max(Millis(0), end - app.inst.deadline);
  o.met = !unfinished && !app.inst.fails && app.end <= app.inst.deadline;
  o.used_container_s = app.used_unit_ms / 1000.0;
  o.dra_grants = app.dra_grants;
  o.dra_withheld_ahead = app.dra_withheld_ahead;
  // Reserved capacity for this instance: the guarantee over its own window
  // (baseline: submit..deadline; planned: the placement instance), plus its grants.
  const int ri = app.res;
  const ResState* r = ri >= 0 ? &res_[static_cast<size_t>(ri)] : nullptr;
  // The window whose reserved capacity serves this instance.
  TimePoint win_from = app.submit, win_to = app.inst.deadline;
  // Found once for the walk over the window below (judging reads the plan only).
  const planner::PlannedReservation* pr = r != nullptr ? planned(*r) : nullptr;
  if (pr != nullptr) {
    const planner::InstanceWindow win = planner_->instanceOf(*pr, app.inst.deadline - Millis(1));
    win_from = win.start;
    win_to = win.end;
  } else if (r != nullptr) {
    win_to = win_from;  // a reservation the plan no longer holds: nothing reserved
  }
  auto reservedAt = [&](TimePoint t) -> int64_t {
    int64_t units = 0;
    if (pr != nullptr && t >= win_from && t < win_to) {
      units = planner_->placedOf(*pr, t).countCovering(r->unit);
    }
    for (const auto& g : app.grants) {
      if (t >= g.from && t < g.to) units += g.count;
    }
    return units;
  };
  double reserved_ms = 0;
  const TimePoint span_from = std::min(win_from, app.submit);
  const TimePoint span_to = std::max(win_to, app.inst.deadline);
  for (TimePoint t = stepFloor(span_from, o_.step); t < span_to; t += o_.step) {
    TimePoint a = std::max(t, span_from), b = std::min(t + o_.step, span_to);
    reserved_ms += static_cast<double>(reservedAt(a)) * static_cast<double>((b - a).count());
  }
  o.reserved_container_s = reserved_ms / 1000.0;
  auto wc = worstCaseCompletion(job.stages, app.inst, app.unit, app.submit, app.inst.deadline,
                                o_.step, reservedAt);
  o.worst_case_met = !app.inst.fails && wc.has_value();
  outcomes_.push_back({{app.job, app.inst.index}, o});
}

void Sim::recordRun(const AppState& app) {
  const PeriodicJob& job = w_.periodic[static_cast<size_t>(app.job)];
  const size_t j = static_cast<size_t>(app.job);
  History& h = out_.history;
  RunId run(job.key.value() + "#" + std::to_string(app.inst.index));
  const size_t own_mark = h.own_events[j].size();
  auto event = [&](const JobKey& who, const std::string& path, store::FileAccess kind,
                   TimePoint t) {
    if (path.empty()) return;
    store::FileEvent e{who, run, path, kind, t};
    h.path_events.push_back(e);
    with_consumer_run_.push_back(0);
    if (who == job.key) h.own_events[j].push_back(e);
  };
  event(JobKey("producer:" + job.input_path), job.input_path, store::FileAccess::kWrite,
        app.inst.input_available);
  event(job.key, job.input_path, store::FileAccess::kRead, app.start);
  if (app.inst.fails) return;
  event(job.key, job.output_path, store::FileAccess::kWrite, app.end);
  // The consumer, a scheduled job of its own, starts at the deadline and
  // reads the output then, or when the output is late, as soon as it is written.
  if (auto c = consumerRun(job, app.inst, app.end)) {
    h.path_events.push_back(c->read);
    with_consumer_run_.push_back(1);
    h.consumer_runs.push_back(std::move(c->run));
  }
  store::RunRecord rec;
  rec.job = job.key;
  rec.run = run;
  rec.user = job.owner.value();
  rec.submit = app.submit;
  rec.start = app.start;
  rec.end = app.end;
  rec.step = o_.step;
  rec.container = app.unit;
  for (double b : app.bins) rec.skyline.push_back(b / static_cast<double>(o_.step.count()));
  h.runs[j].push_back(std::move(rec));
  // Only the last history_runs skylines are fitted (the skyline LP, as
  // morpheus-inference's skyline.history-runs); SLO inference reads the
  // runs' times, never their skylines. Older skylines are dropped, so the
  // history's memory grows with the runs' times and events only, not with
  // their lengths (the bulk of it on month-long runs).
  const auto keep = static_cast<size_t>(std::max<int64_t>(1, o_.history_runs));
  if (h.runs[j].size() > keep)
    std::vector<double>().swap(h.runs[j][h.runs[j].size() - 1 - keep].skyline);
  auto& tasks = h.last_stage_tasks[j];
  tasks.clear();
  for (const auto& st : app.inst.stages)
    tasks.push_back(static_cast<int64_t>(st.task_durations.size()));
  h.runtimes[j].push_back(app.end - app.start);
  run_event_mark_[j].push_back(own_mark);
  // Trimmed when a job's runs or the path events doubled since their last
  // trim: amortised constant time per run, at most twice the window kept.
  const TimePoint cutoff = now_ - o_.history_window;
  if (h.runs[j].size() >= 2 * runs_after_trim_[j] + 16) {
    trimRuns(j, cutoff);
    runs_after_trim_[j] = h.runs[j].size();
  }
  if (h.path_events.size() >= 2 * path_events_after_trim_ + 1024) {
    for (size_t k = 0; k < h.runs.size(); k++) {
      trimRuns(k, cutoff);
      runs_after_trim_[k] = h.runs[k].size();
    }
    trimPathEvents();
    path_events_after_trim_ = h.path_events.size();
  }
}

void Sim::trimRuns(size_t j, TimePoint cutoff) {
  History& h = out_.history;
  auto& runs = h.runs[j];
  // As morpheus-inference's usableRuns: the runs from the back submitted at
  // or after the cutoff, but at least min_runs. A later cutoff (the end of
  // training) drops a superset, so trimming early never keeps less than the
  // end's window.
  size_t first = runs.size();
  while (first > 0 && runs[first - 1].submit >= cutoff) first--;
  const auto floor_runs =
      static_cast<size_t>(std::max<int64_t>(0, inference::SloParams{}.min_runs));
  if (runs.size() - first < floor_runs)
    first = runs.size() > floor_runs ? runs.size() - floor_runs : 0;
  if (first == 0) return;
  auto& marks = run_event_mark_[j];
  const size_t events = first < marks.size() ? marks[first] : h.own_events[j].size();
  const auto n = static_cast<std::ptrdiff_t>(first);
  runs.erase(runs.begin(), runs.begin() + n);
  h.runtimes[j].erase(h.runtimes[j].begin(), h.runtimes[j].begin() + n);
  marks.erase(marks.begin(), marks.begin() + n);
  for (size_t& m : marks) m -= events;
  auto& own = h.own_events[j];
  own.erase(own.begin(), own.begin() + static_cast<std::ptrdiff_t>(events));
}

void Sim::trimPathEvents() {
  History& h = out_.history;
  // Per job, the earliest start of a run inference may still read: its kept
  // runs, its unfinished instances (by submit: they start later), and none
  // after now (later instances are submitted later).
  std::vector<TimePoint> earliest(w_.periodic.size(), now_);
  for (size_t j = 0; j < h.runs.size(); j++) {
    for (const auto& r : h.runs[j]) earliest[j] = std::min(earliest[j], r.start);
  }
  for (int ai : live_apps_) {
    const AppState& app = apps_[static_cast<size_t>(ai)];
    if (app.job >= 0)
      earliest[static_cast<size_t>(app.job)] =
          std::min(earliest[static_cast<size_t>(app.job)], app.submit);
  }
  const TimePoint window_start = now_ - o_.history_window;
  std::map<std::string, TimePoint> keep_from;  // per path
  for (const auto& [path, jobs] : jobs_of_path_) {
    TimePoint t = window_start;
    for (size_t j : jobs) t = std::min(t, earliest[j]);
    keep_from.emplace(path, t);
  }
  auto keepFrom = [&](const std::string& path) {
    auto it = keep_from.find(path);
    return it == keep_from.end() ? window_start : it->second;
  };
  // The last write of each (path, writer) before the path's keep_from.
  std::map<std::pair<std::string, std::string>, TimePoint> last_write;
  for (const auto& e : h.path_events) {
    if (e.kind != store::FileAccess::kWrite || e.time >= keepFrom(e.path)) continue;
    auto [it, fresh] = last_write.try_emplace({e.path, e.job.value()}, e.time);
    if (!fresh) it->second = std::max(it->second, e.time);
  }
  size_t out = 0, consumer_in = 0, consumer_out = 0;
  for (size_t i = 0; i < h.path_events.size(); i++) {
    const store::FileEvent& e = h.path_events[i];
    bool keep = e.time >= keepFrom(e.path);
    if (!keep && e.kind == store::FileAccess::kWrite)
      keep = last_write.at({e.path, e.job.value()}) == e.time;
    if (with_consumer_run_[i]) {
      if (keep) {
        if (consumer_out != consumer_in)
          h.consumer_runs[consumer_out] = std::move(h.consumer_runs[consumer_in]);
        consumer_out++;
      }
      consumer_in++;
    }
    if (!keep) continue;
    if (out != i) {
      h.path_events[out] = std::move(h.path_events[i]);
      with_consumer_run_[out] = with_consumer_run_[i];
    }
    out++;
  }
  h.path_events.resize(out);
  with_consumer_run_.resize(out);
  h.consumer_runs.resize(consumer_out);
}

void Sim::finalize() {
  // Instances still running at the end: judged as unfinished (a miss once
  // their deadline passed; never counted twice).
  for (const TaskSlot& t : slots_) {
    if (!t.alive) continue;
    AppState& app = apps_[static_cast<size_t>(t.app)];
    accountUsage(app, t.start, now_, weightOf(t.resource, app.unit));
  }
  std::vector<int> live(live_apps_.begin(), live_apps_.end());
  for (int ai : live) {
    AppState& app = apps_[static_cast<size_t>(ai)];
    if (app.job >= 0 && !out_.interrupted) judge(ai, true);
    if (app.adhoc >= 0) {
      out_.result.adhoc.push_back(AdhocOutcome{w_.adhoc[static_cast<size_t>(app.adhoc)].name,
                                               w_.adhoc[static_cast<size_t>(app.adhoc)].submit,
                                               Millis(-1)});
    }
  }
  for (const AggregateState& a : agg_) {
    for (int64_t idx : a.pool.unfinished()) {
      const AdhocJob& job = w_.adhoc[static_cast<size_t>(idx)];
      out_.result.adhoc.push_back(AdhocOutcome{job.name, job.submit, Millis(-1)});
    }
  }
  for (const FluidState& f : pools_) {
    for (int64_t idx : f.pool.unfinished()) {
      const AdhocJob& job = w_.adhoc[static_cast<size_t>(idx)];
      out_.result.adhoc.push_back(AdhocOutcome{job.name, job.submit, Millis(-1)});
    }
  }
  // The window inference reads at the end of training (its refit then).
  if (s_.record_history) {
    for (size_t j = 0; j < out_.history.runs.size(); j++) trimRuns(j, s_.to - o_.history_window);
    trimPathEvents();
  }
  std::stable_sort(out_.history.path_events.begin(), out_.history.path_events.end(),
                   [](const auto& a, const auto& b) { return a.time < b.time; });
  std::stable_sort(out_.history.consumer_runs.begin(), out_.history.consumer_runs.end(),
                   [](const auto& a, const auto& b) { return a.submit < b.submit; });
  std::sort(outcomes_.begin(), outcomes_.end(),
            [](const auto& a, const auto& b) { return a.first < b.first; });
  StrategyResult& r = out_.result;
  for (auto& [key, o] : outcomes_) r.instances.push_back(std::move(o));
  r.adhoc.erase(std::remove_if(r.adhoc.begin(), r.adhoc.end(),
                               [this](const AdhocOutcome& a) {
                                 return !inRecordedSpan(fromEpochMs(a.submit.count()));
                               }),
                r.adhoc.end());
  std::sort(r.adhoc.begin(), r.adhoc.end(), adhocBefore);
  r.utilisation = util_n_ > 0 ? util_sum_ / static_cast<double>(util_n_) : 0;
  r.extra["unreserved_jobs"] = static_cast<double>(unreserved_);
  r.extra["user_reservation_jobs"] = static_cast<double>(fallback_);
  if (!off_kilter_.empty()) r.extra["off_kilter_jobs"] = static_cast<double>(off_kilter_.size());
  if (s_.admit_per_instance) r.extra["per_instance_jobs"] = static_cast<double>(per_instance_jobs_);
  const Counted until = counted_until_.value_or(counted());
  auto countedSpan = [&](int64_t Counted::*c) {
    return static_cast<double>(until.*c - counted_from_.*c);
  };
  if (!one_off_jobs_.empty()) {
    // Instances still refused when their window opened run unreserved.
    int64_t unreserved = 0;
    for (size_t j : one_off_jobs_) {
      const OneOffTemplate& t = *one_off_template_[j];
      for (const auto& [k, ri] : res_of_instance_[j]) {
        const TimePoint opens = t.def.arrival + t.def.period * k;
        unreserved += ri < 0 && opens < s_.to && inRecordedSpan(opens) ? 1 : 0;
      }
    }
    r.extra["one_offs_reserved"] = countedSpan(&Counted::one_offs_reserved);
    r.extra["one_offs_refused_first"] = countedSpan(&Counted::one_offs_refused);
    r.extra["one_offs_reserved_on_retry"] = countedSpan(&Counted::one_offs_on_retry);
    r.extra["one_offs_unreserved"] = static_cast<double>(unreserved);
  }
  r.extra["preemption_kills"] = countedSpan(&Counted::preemption_kills);
  r.extra["preemption_notices"] = countedSpan(&Counted::preemption_notices);
}

}  // namespace

Result<RunOutput> simulateRun(const Workload& workload, const ExperimentOptions& options,
                              const RunSetup& setup, const std::string& phase,
                              const ProgressFn& progress, const std::atomic<bool>* stop) {
  if (setup.provisions.size() != workload.periodic.size()) {
    return invalidArgument("provisions", "one per periodic job expected");
  }
  Sim sim(workload, options, setup, phase, progress, stop);
  return sim.run();
}

}  // namespace morpheus::sim
