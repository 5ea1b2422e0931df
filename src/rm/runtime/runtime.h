// The RM's runtime (docs/design/scheduler.md): containers on nodes, AM launch,
// the AM protocol and heartbeat-driven allocation. It joins the AppManager
// (app records), the ReservationManager (plan: which apps are guaranteed) and
// the NMs (ContainerManager, called to launch AM containers).
//
// Scheduling is delegated to the scheduler core (scheduler/scheduler.h,
// docs/design/scheduler.md): this class turns the NMs' and the AMs' typed
// calls (node_calls.h, am_calls.h) into its calls and
// keeps what the core does not (AM launch, container records for telemetry,
// acknowledgements, kills, notices buffered for the AM's next allocate()).
// Every reservation with a bound app is a queue of the core whose guarantee is
// pushed from the plan on each heartbeat (the plan follower); ad-hoc apps go
// to their leaf queue. On each node heartbeat the runtime first places AM
// containers of submitted apps (reservation-bound first) and hands them to the
// core as AM containers (never preempted); then the core fills the node and
// selects borrowed containers to preempt for reservations below their
// guarantee (notices to the AMs, killed after the grace period).
//
// Its edge is typed: the gRPC services (rm/grpc/resource_tracker_service.h,
// am_service.h) parse the wire requests into these calls, report malformed
// ones, turn the answers and outcomes into replies and sign the tokens of
// the containers granted to AMs. No protobuf message crosses this interface;
// the one protobuf message the runtime builds is its own outgoing request,
// the AM launch to an NM's ContainerManager (AmLauncher), whose container
// token it signs.
//
// Container ids are the core's "<app>_<rm start ms>_<seq>" (AM containers
// "<app>_<rm start ms>_am<attempt>"), so an RM that restarts can re-attribute
// containers reported by NMs.
//
// Thread-safety: internally locked. NM RPCs (AM launch) are asynchronous
// calls of the AmLauncher (rm/runtime/am_launcher.h: concurrent, bounded per node and
// in total, one reused channel per node), never made under the lock.
// Harvesting's state (usage, classes, job selections and run lengths) is the
// HarvestTracker's (rm/runtime/harvest_tracker.h), behind its own lock, which
// is taken inside this one's and never the other way round.
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include <spdlog/spdlog.h>

#include "common/clock.h"
#include "common/metrics.h"
#include "common/mutex.h"
#include "common/tls.h"
#include "rm/core/app_manager.h"
#include "rm/core/dra_monitor.h"
#include "rm/core/harvest_rm.h"
#include "rm/core/node_registry.h"
#include "rm/core/rm_core.h"
#include "rm/runtime/am_calls.h"
#include "rm/runtime/am_launcher.h"
#include "rm/runtime/container_history.h"
#include "rm/runtime/harvest_tracker.h"
#include "rm/runtime/node_calls.h"
#include "rm/runtime/telemetry.h"
#include "scheduler/scheduler.h"
#include "store/state/state_store.h"

namespace morpheus::rm {

struct RuntimeOptions {
  Millis telemetry_step{60000};                 // skyline step of finished apps (= planner.step)
  Millis preemption_grace{15000};               // notice to kill of a borrowed container
  Millis preemption_interval{3000};             // between preemption checks (0: every heartbeat)
  std::map<std::string, double> queue_weights;  // ad-hoc queue path -> weight (default 1)
  // Ad-hoc leaf path -> ordering policy of its users and apps
  // (scheduler.policy); leaves not listed use DRF.
  std::map<std::string, std::shared_ptr<const sched::QueueOrderingPolicy>> queue_policies;
  // Bounds of node reservations (scheduler.carbyne.reservable-nodes and
  // node-reservation-timeout; sched::SchedulerOptions::node_reservation).
  sched::NodeReservationOptions node_reservation;
  TlsOptions tls;  // the RM's mutual TLS, used for AM launches on NMs (plaintext when off)
  // Bounds and deadline of AM launches (AmLauncherOptions; its tls is
  // replaced by `tls` above).
  AmLauncherOptions launch;
  HarvestRmOptions harvest;  // rm.harvest.*: primary-tenant classes
  // Ad-hoc path -> cap on what its apps hold (scheduler.max-resources;
  // sched::Scheduler::setQueueMaxResources). Unlisted = unlimited.
  std::map<std::string, Resource> queue_max_resources;
};

class RmRuntime {
 public:
  // `reservation_kind` tells whether a reservation is periodic (true) or one-off.
  using ReservationKind = std::function<bool(const ReservationId&)>;
  // The plan's guaranteed capacity of a reservation at a time.
  using Guarantee = std::function<Resource(const ReservationId&, TimePoint)>;
  RmRuntime(RuntimeOptions opts, RmCore& core, AppManager& apps, Clock& clock,
            MetricsRegistry& metrics, TelemetryForwarder* telemetry, ReservationKind periodic,
            Guarantee guarantee);
  ~RmRuntime();

  // The RM's own gRPC address, given to AMs (MORPHEUS_RM_AM_ADDRESS).
  void setAmAddress(std::string address);
  void start();
  void stop();

  // NM side (node_calls.h; the RmCore registered the node, or admitted the
  // heartbeat, first).
  // The node joins, or joins again (an NM restart, or one that registers
  // with a new RM): it enters the scheduler core with the containers this RM
  // knows running there, drained when the RmCore says it is not in service.
  void onNodeRegistered(const NodeRegistration& node);
  // One heartbeat, all of it: onNodeReport, then scheduleNode; the answer
  // holds the kills that scheduling chose too (after the report's).
  NodeHeartbeatAnswer onNodeHeartbeat(NodeHeartbeatCall call);
  // The heartbeat's report only (YARN's asynchronous scheduling):
  // liveness, container statuses, and in `answer` the containers to kill and
  // to acknowledge that are due. The caller answers the NM at once and runs
  // scheduleNode afterwards, so a heartbeat never waits for the scheduling of
  // other nodes (the NM gets no grants in its answer: AMs get them in
  // Allocate). True when the node needs a scheduleNode that is not pending
  // yet (at most one is pending per node). A node the RM does not know gets
  // an empty answer. The call is consumed (its ids are moved into the RM's
  // records and the answer).
  bool onNodeReport(NodeHeartbeatCall call, NodeHeartbeatAnswer* answer);
  // Schedules the node (plan, AM placement, the scheduler core's nodeUpdate):
  // grants go to the apps, kills to the node's next heartbeat. No-op for a
  // node the RM no longer knows.
  void scheduleNode(const NodeId& node);
  // The node's containers are lost (exit reason NODE_LOST; diagnostics `why`,
  // "" = "node <id> lost") and it leaves the scheduler core.
  void onNodeLost(const NodeId& node, const std::string& why = "");
  // An admin drained the node (or decommissions it), or put it back in
  // service: a node not in service keeps its running containers but gets no
  // new ones (its schedulable capacity is zero, no AM is placed there).
  // Registration reads the state from the RmCore, so a node that registers
  // drained (after an RM restart) is never offered.
  void setNodeDrained(const NodeId& node, bool drained);
  // Containers the RM runs on the node (granted or running, AMs included).
  int runningOn(const NodeId& node) const;

  // AM side (the token is checked here: an AM acts only for its own app).
  // The calls are typed (am_calls.h): the gRPC edge parsed them, builds the
  // replies and signs the granted containers' tokens.
  // The AM registers with this RM incarnation (after an RM restart it must,
  // before its allocates are served) and learns its queue, reservation, the
  // largest container and its task containers still running; the app enters
  // the scheduler core. PERMISSION_DENIED for a token not of the app's
  // current attempt, FAILED_PRECONDITION (infeasible) unless it is RUNNING.
  Result<RegisterAmOutcome> registerAm(const RegisterAmCall& call);
  // The AM's asks, releases and stage report; returns what it is owed.
  // PERMISSION_DENIED for a token not of the app's current attempt,
  // FAILED_PRECONDITION (infeasible) unless the app is RUNNING and
  // schedulable, INVALID_ARGUMENT naming `releases` for a container not of
  // the app, the core's error for a refused DAG (a cycle).
  Result<AllocateOutcome> allocate(AllocateCall call);
  // The app ends with the AM's final state: its task containers are stopped,
  // its telemetry (and, on success, its stage history) recorded and
  // persisted. PERMISSION_DENIED for a token not of the current attempt; the
  // AppManager's error when the app cannot finish (already final).
  Status finishAm(FinishAmCall call);
  // The checks allocate (`running` true) and finishAm (false) start with:
  // PERMISSION_DENIED unless `am_token` is the token of `app`'s current
  // attempt; with `running`, NOT_FOUND / FAILED_PRECONDITION unless the app
  // is RUNNING. Changes nothing. The edge runs them on a request it could not
  // parse before it reports why, so the caller hears of its request's form
  // only once it proved to be the AM, as when the runtime parsed the wire.
  Status authorizeAm(const AppId& app, const std::string& am_token, bool running) const;

  // Containers of an app the client killed are stopped at the next heartbeats.
  void onAppKilled(const AppId& app);

  // Telemetry of finished apps (Morpheus §4 input), newest last; kept in
  // the state store so it survives restarts. `key` "" = all. Recovery also
  // reloads the per-stage task durations of the last successful run of each
  // recurrence key (table "stage-history").
  void setStore(store::StateStore* store);
  Status recoverTelemetry();
  std::vector<AppTelemetryRecord> telemetry(const std::string& key) const;

  // The node a container runs on; nullopt once it completed and was
  // acknowledged (the RM forgets it then).
  std::optional<NodeId> nodeOf(const ContainerId& container) const;
  // The app a container id belongs to ("" for a malformed id).
  static AppId appOf(const std::string& container_id);
  // Every container of `app` this RM allocated or re-adopted, running and
  // finished (ContainerHistory: bounded, not persisted).
  ContainerHistory::AppView containerHistory(const AppId& app) const;
  // When this RM runtime started: containers that ended before are not in
  // any history.
  TimePoint startedAt() const { return fromEpochMs(started_ms_); }

  // AM launch verdicts (started or failed, late ones included) this runtime
  // has applied since start(): tests wait on it instead of on time.
  uint64_t amLaunchVerdicts() const { return launcher_.verdicts(); }

  // For ApplicationReports: running containers and resources in use.
  void usage(const AppId& app, int32_t* containers, Resource* used) const;
  // Accounting of the app's containers still running: resource x time since
  // each started, {memory MiB-ms, vcore-ms} (AppRecord has the ended ones).
  std::pair<int64_t, int64_t> runningUsage(const AppId& app) const;
  // New queue caps (config reload; RuntimeOptions::queue_max_resources).
  // INVALID_ARGUMENT naming scheduler.max-resources for an unknown queue;
  // nothing changes then.
  Status setQueueMaxResources(const std::map<std::string, Resource>& caps);
  // Admission control: sched::Scheduler::pendingReasons of the
  // app; empty for an app not (or no longer) in the scheduler core.
  std::vector<std::string> pendingReasons(const AppId& app) const;
  // Carbyne: sched::Scheduler::appHint of the app; invalid for an
  // app that reported no DAG, whose queue's policy ignores DAGs, or that is
  // not (or no longer) in the scheduler core.
  sched::AppHint appHint(const AppId& app) const;

  // A config reload: new ad-hoc queue weights and leaf policies (the same
  // paths as at start-up: sched::Scheduler::setAdhocQueues); INVALID_ARGUMENT
  // and nothing changes otherwise.
  Status setQueueConfig(
      const std::map<std::string, double>& weights,
      const std::map<std::string, std::shared_ptr<const sched::QueueOrderingPolicy>>& policies);

  // The scheduler core's queues (sched::Scheduler::queues): ad-hoc hierarchy,
  // then reservation queues with bound apps.
  std::vector<sched::QueueView> queues() const;
  // What the scheduler core holds now, in one pass under the lock (for the
  // resource metrics, resource_collector.h).
  struct SchedulerTotals {
    Resource allocated;  // sched::Scheduler::clusterUsed
    size_t containers = 0;
    std::vector<sched::QueueView> queues;
    int64_t reserved_nodes = 0;  // sched::Scheduler::numReservedNodes
  };
  SchedulerTotals schedulerTotals() const;

  // DRA input (Morpheus §7): what the apps bound to each reservation do now.
  // One entry per reservation with a submitted or running bound app. Stage
  // task durations the AM has not measured yet in this run come from the
  // same stage of the last successful run with the app's recurrence key
  // (Jockey's job history, EuroSys'12 §4.1).
  std::map<ReservationId, ReservationDemand> reservationDemand() const;

  // ---- Harvesting classes (OSDI'16 §4.1; the state is the HarvestTracker's) ----
  // Clusters the primary tenants from the CPU history the NMs reported
  // (HarvestTracker::cluster), off the scheduler strand: the history is
  // copied under the tracker's lock and clustered without any lock; the
  // result is applied under the runtime's. Every node whose tenant is in a
  // class gets node attribute harvest-class=<id> (others lose it), and the
  // class selection of every job with pending asks is redone. A no-op while
  // no tenant has history, but for forgetting the jobs of apps that left the
  // scheduler. The tracker calls it every rm.harvest.cluster-every (start()).
  Status recomputeHarvestClasses();
  struct HarvestClassView {
    HarvestClass cls;
    std::vector<NodeId> nodes;  // nodes tagged with it
  };
  // The classes of the last clustering, in clusterTenants order.
  std::vector<HarvestClassView> harvestClasses() const;
  // The node's class id ("" = none).
  std::string harvestClassOf(const NodeId& node) const;
  // The classes chosen for the app's asks (empty = none chosen).
  std::vector<std::string> harvestSelection(const AppId& app) const {
    return harvest_.selection(app);
  }
  // The class the ranked fallback added to the app's asks ("" = none).
  std::string harvestFallbackClass(const AppId& app) const { return harvest_.fallbackClass(app); }
  // The nodes the hold lets the app's asks use (HarvestTracker::holdNodes).
  std::optional<std::vector<std::string>> harvestHoldNodes(const AppId& app) const {
    return harvest_.holdNodes(app);
  }
  // The last successful run length of a job (harvestJobName), if known.
  std::optional<Millis> harvestLastRun(const std::string& job) const {
    return harvest_.lastRun(job);
  }

 private:
  struct Node {
    NodeId id;
    std::string address;
    Resource total;
    std::map<std::string, std::string> attributes;
    bool live = true;
    bool schedule_pending = false;  // onNodeReport asked for a scheduleNode
    bool drained = false;           // not in service (setNodeDrained)
    std::optional<Resource> offer;  // the NM's last harvest offer as applied (none: total)
    // What the scheduler core may place on the node: zero drained, else the
    // NM's harvest offer, else the registered total.
    Resource schedulable() const { return drained ? Resource() : offer.value_or(total); }
  };
  struct Cont {
    ContainerId id;
    AppId app;
    NodeId node;
    Resource resource;
    bool am = false;
    bool running = true;
    TimePoint start, end;
    bool reported = false;          // its node reported it running (ContainerHistory)
    ContainerHistory::Ref history;  // its entry in history_, until it completes
  };
  // What the app still asks for, mirrored from its allocate() calls minus what
  // the core granted (for reservationDemand and to withdraw asks).
  struct PendingAsk {
    std::string request_id;
    int32_t priority = 0;
    Resource capability;
    int32_t count = 0;
  };
  struct AppRt {
    std::map<std::string, PendingAsk> asks;       // by the core's ask key
    std::vector<GrantedContainer> allocated;      // not yet returned to the AM
    std::vector<CompletedContainer> completed;    // not yet returned to the AM
    std::vector<ContainerInterval> intervals;     // ended containers (AMs too), for telemetry
    bool am_pending = false;                      // AM container being launched
    bool am_ask = false;                          // the core holds an ask for the AM
    bool in_sched = false;                        // added to the scheduler core
    bool registered = false;                      // AM registered with this RM incarnation
    std::vector<reprovision::StageState> stages;  // AM-reported (Jockey), deps within the app
    Resource used;
    int32_t running = 0;
    // Over the running containers: memory x start and vcores x start, starts
    // in ms since started_ms_ (runningUsage without a walk).
    int64_t mem_start_sum = 0;
    int64_t vcore_start_sum = 0;
    // Cached from the AppManager (refreshed on every transition the runtime
    // drives, and by onAppKilled), so a heartbeat does not copy records.
    bool cached = false;
    AppState state = AppState::kSubmitted;
    std::string queue;
    std::string user;
    ReservationId reservation;
  };
  // Holds mu_; when released emits the log lines queued under it, so no log
  // I/O (spdlog's sinks take their own lock and write files) happens inside
  // the runtime's critical section.
  class SCOPED_CAPABILITY Guard {
   public:
    explicit Guard(const RmRuntime& rt) ACQUIRE(rt.mu_);
    ~Guard() RELEASE();  // release()
    Guard(const Guard&) = delete;
    Guard& operator=(const Guard&) = delete;
    void release() RELEASE();  // idempotent

   private:
    const RmRuntime& rt_;
    bool held_ = true;
  };
  // Queues a log line for the holder's Guard to emit.
  template <typename... Args>
  void logLater(spdlog::level::level_enum level, fmt::format_string<Args...> format,
                Args&&... args) const REQUIRES(mu_) {
    pending_logs_.emplace_back(level, fmt::format(format, std::forward<Args>(args)...));
  }

  // ---- allocate's steps, in the order it runs them ----
  // The app's record if `am_token` is its current attempt's and it is RUNNING.
  Result<AppRecord> runningAm(const AppId& app, const std::string& am_token) const;
  // Whether an unregistered AM must register again (the NMs had time to re-report).
  bool resyncDue() const;
  // The stage report replaces the app's DAG in the core, then its Jockey stages.
  Status reportStages(const AppId& app, AppRt& rt, AllocateCall& call) REQUIRES(mu_);
  // The asks go to the core (harvest classes added) and are mirrored in rt.asks.
  Status recordAsks(const AppRecord& rec, AppRt& rt, std::vector<sched::ResourceRequest> asks)
      REQUIRES(mu_);
  // Released containers are freed, killed and done at once; stops at one not the app's.
  Status releaseContainers(const AppId& app, const std::vector<ContainerId>& releases)
      REQUIRES(mu_);
  // Moves grants, completions, notices and the cluster's headroom into `out`.
  void collectForAm(const AppId& app, AppRt& rt, AllocateOutcome* out) REQUIRES(mu_);
  // ---- finishAm's steps, in the order it runs them ----
  // Asks withdrawn, the app out of the core if idle, its task containers to kill.
  AppRt& windDown(const AppId& app) REQUIRES(mu_);
  // On success of a recurring job, its stage durations become its history (returned).
  std::map<std::string, Millis> recordStageHistory(
      const AppRecord& rec, AppState final_state,
      const std::vector<reprovision::StageState>& final_stages, const AppRt& rt) REQUIRES(mu_);
  // The finished app's telemetry, files aside: a skyline of all its containers, AMs too.
  AppTelemetryRecord finishedTelemetry(const AppRecord& rec, AppState final_state,
                                       const AppRt& rt) const REQUIRES(mu_);
  // One store batch of record, stage history and harvest run; failures logged. No lock.
  void persistFinished(const AppTelemetryRecord& t, const std::map<std::string, Millis>& profile,
                       const std::optional<store::StateWrite>& harvest_run);
  // ---- shared helpers ----
  AppRt& appRt(const AppId& app) REQUIRES(mu_);  // with its cache filled
  void refresh(const AppId& app) REQUIRES(mu_);
  bool ensureApp(const AppId& app, TimePoint now) REQUIRES(mu_);
  void forgetIfDone(const AppId& app) REQUIRES(mu_);
  void withdrawAsks(const AppId& app) REQUIRES(mu_);
  void pushGuarantee(const ReservationId& id, TimePoint now) REQUIRES(mu_);
  void followPlan(TimePoint now) REQUIRES(mu_);
  void placeAms(Node& node, TimePoint now) REQUIRES(mu_);
  bool startAm(Node& node, const AppRecord& a, const ContainerId& cid) REQUIRES(mu_);
  void grantTask(Node& node, const sched::Allocation& a) REQUIRES(mu_);
  void account(const Cont& c) REQUIRES(mu_);
  // A container of `rt` starts (+1) or ends (-1) running: its use and count,
  // and the sums of runningUsage.
  void track(AppRt& rt, const Cont& c, int sign) REQUIRES(mu_);
  // The container ended as `st` says (exit status, reason, diagnostics; the
  // rest of `st` is what its AM hears of a task container).
  void containerDone(Cont& c, const ContainerReport& st) REQUIRES(mu_);
  void endUnknownAmContainer(const NodeId& nid, const ContainerReport& st, TimePoint now)
      REQUIRES(mu_);
  void killAppContainers(const AppId& app) REQUIRES(mu_);
  // Harvesting: records the primary tenant's usage in the tracker, gives
  // the node its tenant's class, and caps the node's schedulable capacity at
  // the NM's harvest offer.
  void onHarvestReport(Node& node, const NodeHeartbeatCall& call, TimePoint now) REQUIRES(mu_);
  // Sets the node's harvest-class attribute ("" removes it), in the
  // scheduler core too when the node is live.
  void setHarvestClass(Node& node, const std::string& cls) REQUIRES(mu_);
  // The nodes as the tracker's class selection reads them.
  std::vector<HarvestNode> harvestNodes() const REQUIRES(mu_);
  // An AM's ask counts what it still needs as of the last allocate response
  // it read; the grants buffered for it since (rt.allocated) satisfy some of
  // that need already. Each ask's count is lowered by the undelivered grants
  // of its ask key (not below 0), so a heartbeat that crosses a grant does
  // not ask for the same container twice (YARN's AMs receive such surplus
  // grants and release them). A gang ask keeps its count when the result
  // would not be a whole number of gangs.
  void discountUndelivered(const AppRt& rt, std::vector<sched::ResourceRequest>* asks) const
      REQUIRES(mu_);
  // Adds the job's harvest-class soft constraint to `asks` (selecting the
  // classes on its first asks).
  void harvestAsks(const AppRecord& rec, const AppRt& rt, std::vector<sched::ResourceRequest>* asks)
      REQUIRES(mu_);
  // The ranked fallback (HarvestTracker::fallBack) on each allocate(): the
  // app's asks get its fallback class while its chosen classes are full.
  void applyHarvestFallback(const AppId& app, const AppRt& rt) REQUIRES(mu_);
  // onNodeReport's parts.
  void applyContainerStatuses(const NodeId& nid, std::vector<ContainerReport>& reports,
                              TimePoint now) REQUIRES(mu_);
  // Whether `nid` may report on container `cid` (`it` is its entry in
  // containers_ or end()): only the node it was allocated to.
  bool reportedByItsNode(const NodeId& nid, const ContainerId& cid,
                         std::unordered_map<ContainerId, Cont>::const_iterator it) const
      REQUIRES(mu_);
  // Moves the node's due kills and acknowledgements into `answer` (after
  // what it holds).
  void flushNodeAnswer(const NodeId& nid, NodeHeartbeatAnswer* answer) REQUIRES(mu_);
  void onLaunched(const AmLaunch& launch, const std::string& error);

  const RuntimeOptions opts_;
  RmCore& core_;
  AppManager& apps_;
  Clock& clock_;
  MetricsRegistry& metrics_;
  TelemetryForwarder* telemetry_;
  const ReservationKind periodic_;
  const Guarantee guarantee_;
  const int64_t started_ms_;
  RuntimeMetrics m_;
  Counter& allocated_total_;  // m_.containers_allocated

  mutable Mutex mu_;
  // Log lines queued under mu_ (logLater), emitted by Guard::release.
  mutable std::vector<std::pair<spdlog::level::level_enum, std::string>> pending_logs_
      GUARDED_BY(mu_);
  std::unique_ptr<sched::Scheduler> sched_ GUARDED_BY(mu_);  // every scheduling decision
  std::map<ReservationId, int> bound_ GUARDED_BY(mu_);       // reservation -> apps in sched_
  // The kind and guarantee last set in sched_ per reservation
  // (pushed only when it changes).
  std::map<ReservationId, std::pair<sched::ReservationKind, Resource>> pushed_ GUARDED_BY(mu_);
  std::set<AppId> am_asks_ GUARDED_BY(mu_);  // apps with an AM ask in sched_
  std::string am_address_ GUARDED_BY(mu_);
  std::map<NodeId, Node> nodes_ GUARDED_BY(mu_);
  int live_nodes_ GUARDED_BY(mu_) = 0;  // nodes_ with live set
  // Hashed: every heartbeat looks up each container its node reports (a
  // string-keyed tree spent much of the RM's CPU on key compares).
  std::unordered_map<ContainerId, Cont> containers_ GUARDED_BY(mu_);
  std::map<AppId, AppRt> rt_ GUARDED_BY(mu_);
  std::map<NodeId, std::set<ContainerId>> to_kill_ GUARDED_BY(mu_);
  std::map<NodeId, std::vector<ContainerId>> to_ack_ GUARDED_BY(mu_);
  std::unordered_set<ContainerId> done_ GUARDED_BY(mu_);       // completed ids seen (dedupe)
  std::set<ContainerId> preempted_ GUARDED_BY(mu_);            // under a preemption notice
  std::vector<AppRecord> submitted_ GUARDED_BY(mu_);           // apps waiting for an AM
  uint64_t submitted_version_ GUARDED_BY(mu_) = ~uint64_t{0};  // AppManager version of submitted_
  std::deque<AppTelemetryRecord> finished_ GUARDED_BY(mu_);
  ContainerHistory history_ GUARDED_BY(mu_);  // per-app containers
  // Recurrence key -> stage name -> mean task duration of its last successful
  // run (from the AM's final stage reports).
  std::map<std::string, std::map<std::string, Millis>> stage_history_ GUARDED_BY(mu_);
  store::StateStore* store_ = nullptr;
  // Harvesting's state, behind its own lock (a leaf: taken inside mu_, see
  // harvest_tracker.h).
  HarvestTracker harvest_;
  AmLauncher launcher_;  // internally locked; its callbacks take mu_
};

}  // namespace morpheus::rm
