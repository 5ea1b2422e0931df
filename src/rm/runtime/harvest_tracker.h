// HarvestTracker: the RM's state of history-based harvesting (Zhang et al.,
// "History-Based Harvesting of Spare Cycles and Storage in Large-Scale
// Datacenters", OSDI'16 §4): the primary tenants' usage series the NMs report
// (§3), the classes the periodic clustering puts them in (FFT and k-means,
// §4.1, harvest_classes.h), each job's last successful run length, and each
// running job's class selection (Algorithm 1, harvest_selection.h), which
// becomes a soft constraint on its asks.
//
// Why a class of its own: this state has its own life (persisted in its own
// tables, changed by a daily clustering, redone per job) and its own rules,
// apart from the scheduling state of RmRuntime. The tracker decides, the
// runtime applies: it never touches the nodes, their attributes or the
// scheduler core. The runtime feeds it the heartbeats' primary usage and the
// apps' asks, hands it the nodes as the selection sees them, and applies what
// it returns: a node's class (node attribute harvest-class), an app's asks
// with their new constraint, a run-length row for finishAm's store batch.
//
// Thread-safety: internally locked by one mutex, a leaf. The runtime calls
// the tracker with RmRuntime::mu_ held, so the lock order is RmRuntime::mu_,
// then the tracker's; the tracker never calls out (the runtime, the state
// store, the log) while it holds its lock, but for scheduling and cancelling
// its timers (the clock's lock is a leaf too). The periodic work start()
// sets up runs on the clock's timer thread without the tracker's lock, and
// calls the runtime then; stop() waits for a running one, so it must not be
// called with RmRuntime::mu_ held nor from that work.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/ids.h"
#include "common/mutex.h"
#include "common/resource.h"
#include "common/status.h"
#include "harvest/harvest_classes.h"
#include "harvest/harvest_forecast.h"
#include "harvest/harvest_series.h"
#include "reprovision/policy.h"
#include "rm/core/app_manager.h"
#include "rm/core/harvest_rm.h"
#include "scheduler/types.h"
#include "store/state/state_store.h"

namespace morpheus::rm {

class HarvestTracker {
 public:
  HarvestTracker(HarvestRmOptions opts, Clock& clock);
  // Stops the periodic work (stop() without its final save: the owner
  // calls stop() while the store is still there).
  ~HarvestTracker();
  HarvestTracker(const HarvestTracker&) = delete;
  HarvestTracker& operator=(const HarvestTracker&) = delete;

  // Whether classes are on (rm.harvest.cluster-every > 0). Off: asks get no
  // constraint and start() runs nothing; usage is still recorded.
  bool classesOn() const { return opts_.cluster_every > Millis(0); }

  // ---- State store: tables harvest-runs and harvest-usage ----
  // Null (the default) persists nothing. Set before recover() and start().
  void setStore(store::StateStore* store) EXCLUDES(mu_);
  // Loads the run lengths and the usage series. A run row that does not
  // decode fails with INTERNAL naming the job, and nothing changes; a usage
  // row that does not decode is skipped with a warning (the NMs' reports
  // rebuild the series).
  Status recover() EXCLUDES(mu_);
  // Writes the series of each tenant with samples since the last save, one
  // write per tenant (a tenant's series are up to ~60 KB of JSON; etcd refuses
  // a transaction beyond its request size). A failed write is logged and the
  // tenant is written again after its next sample.
  void saveUsage() EXCLUDES(mu_);

  // ---- Periodic work ----
  // When classes are on: runs `recluster` at once and then every
  // rm.harvest.cluster-every (a failure is logged), and saveUsage() every
  // rm.harvest.save-every (when > 0), on the clock's timer thread, without
  // the tracker's lock. `recluster` is the runtime's: it calls cluster() and
  // applies the result. No-op when started already.
  void start(std::function<Status()> recluster) EXCLUDES(mu_);
  // Stops both, waits for a running one, then saves what the last save
  // missed. Idempotent.
  void stop() EXCLUDES(mu_);

  // ---- Usage and classes (§3, §4.1) ----
  // Records a heartbeat's primary usage on `node` of capacity `total`:
  // `cpu_vcores` and `memory_mib` in use by `tenant` ("" = the node is its
  // own tenant). Returns the class the node's harvest-class attribute should
  // have ("" = none) once a clustering has run, nullopt before, so a node
  // that reports after a clustering (new, or back after an RM restart) gets
  // its class at once.
  std::optional<std::string> record(const NodeId& node, const Resource& total,
                                    const std::string& tenant, double cpu_vcores,
                                    int64_t memory_mib, TimePoint now) EXCLUDES(mu_);
  // Clusters the tenants' CPU series (clusterTenants): copied under the lock,
  // clustered without it. nullopt while no tenant has history. Changes
  // nothing: setClasses() makes them current. Logs each class.
  Result<std::optional<std::vector<HarvestClass>>> cluster() const EXCLUDES(mu_);
  void setClasses(std::vector<HarvestClass> classes) EXCLUDES(mu_);
  // The classes last set, in clusterTenants order.
  std::vector<HarvestClass> classes() const EXCLUDES(mu_);
  // The class of the tenant `node` last reported ("" = none).
  std::string classOfNode(const NodeId& node) const EXCLUDES(mu_);

  // ---- Class selection per job (§4.1, Algorithm 1) ----
  // The nodes a selection reads are HarvestNode: the live nodes with a
  // harvest-class attribute, with their registered total and what secondary
  // containers hold there; `current` is ignored (the tracker's history has
  // it). `stages` are the app's DAG as its AM reported it (none: what it
  // asks is all concurrent).
  //
  // Notes the asks of one allocate() of `rec`'s app as the AM sent them
  // (count 0 withdraws an ask), kept for later re-selections. True when the
  // job's classes are to be selected now (select()): classes exist, the job
  // has pending asks and was never selected.
  bool noteAsks(const AppRecord& rec, const std::vector<sched::ResourceRequest>& asks)
      EXCLUDES(mu_);
  // Selects the classes of a job noteAsks() said is due. Returns the line to
  // log ("" when nothing was selected).
  std::string select(const AppId& app, const std::vector<HarvestNode>& nodes,
                     const std::vector<reprovision::StageState>& stages) EXCLUDES(mu_);
  // Adds the job's class constraint (soft, harvestConstraint) to each ask of
  // `asks` with a count; none without a selection.
  void constrain(const AppId& app, std::vector<sched::ResourceRequest>* asks) const EXCLUDES(mu_);
  // The apps with noted asks, in id order (the runtime re-selects them after
  // a clustering and forgets those that left the scheduler).
  std::vector<AppId> jobs() const EXCLUDES(mu_);
  void forgetJob(const AppId& app) EXCLUDES(mu_);
  // A re-selection after a clustering: the asks to send the scheduler again
  // with the new constraint (nullopt when the choice did not change or
  // nothing is pending) and the line to log ("" for none). A changed choice
  // drops the ranked fallback's class (fallBack() adds one again if due).
  struct Reselection {
    std::optional<std::vector<sched::ResourceRequest>> asks;
    std::string note;
  };
  // `pending`: ask key -> the count the scheduler still holds (the core
  // granted the rest); noted asks not in it are dropped.
  Reselection reselect(const AppId& app, const std::map<std::string, int32_t>& pending,
                       const std::vector<HarvestNode>& nodes,
                       const std::vector<reprovision::StageState>& stages) EXCLUDES(mu_);
  // The classes chosen for the app's asks (empty = none chosen).
  std::vector<std::string> selection(const AppId& app) const EXCLUDES(mu_);

  // ---- The hold and the ranked fallback (harvest_forecast.h,
  // rankedFallback in harvest_selection.h) ----
  // With rm.harvest.hold > 0, the job's asks get a hard constraint on node
  // attribute harvest-node: the nodes predicted to leave one of its
  // containers a core for its whole expected run (predictedMargin >= 1 with
  // the tenant's usage series in the tracker, the node's current share and
  // the containers on it; the expected run: the largest expected_duration of
  // its asks, else its last successful run, else rm.harvest.long-min).
  // Among them the job's classes' nodes first (the class constraint stays
  // soft); when none of those can take a container now, the constraint also
  // holds the class of the fitting node ranked first outside them (ranking
  // weight, then the most predicted room). While no fitting node can take
  // one now, the job is held: the hard constraint keeps the scheduler's
  // soft-constraint delay from placing it anywhere. The hold clock starts at
  // the first such call and runs until the job has nothing pending; once it
  // has run rm.harvest.hold, the hard constraint goes and the ranked
  // fallback below applies until the job has nothing pending.
  // The ranked fallback (rm.harvest.hold 0, or after the hold): while no
  // node of the job's chosen classes can take one of its containers now
  // (its NM's offer less what runs there), or Algorithm 1 chose none, the
  // job's constraint also holds the class ranked first among the others
  // with a node that can: the highest ranking weight for the job's length
  // type, then the most room under that type's headroom. Once a chosen
  // class has room again, the chosen classes alone. The scheduler's
  // soft-constraint delay still places an ask anywhere once it has waited
  // that long with no match. `pending` and `nodes` as for reselect(); times
  // are the tracker's clock. The asks to send the scheduler again when the
  // constraint changed (nullopt: unchanged, or nothing pending) and the line
  // to log ("" for none). O(nodes x classes) plus, per tenant whose series
  // gained a bucket, O(history x span) to rebuild its forecast; the runtime
  // calls it on each allocate of a job with pending asks (fallbackDue).
  Reselection fallBack(const AppId& app, const std::map<std::string, int32_t>& pending,
                       const std::vector<HarvestNode>& nodes) EXCLUDES(mu_);
  // Whether fallBack() can change the app's constraint: classes exist and
  // the job has asks and was selected (the runtime skips building the
  // nodes otherwise).
  bool fallbackDue(const AppId& app) const EXCLUDES(mu_);
  // The class the ranked fallback added to the app's constraint ("" = none).
  std::string fallbackClass(const AppId& app) const EXCLUDES(mu_);
  // The nodes the hold lets the app's asks use, sorted (nullopt: no hold
  // constraint; empty: held, no node may take them).
  std::optional<std::vector<std::string>> holdNodes(const AppId& app) const EXCLUDES(mu_);

  // ---- Job run lengths (the length type of Algorithm 1) ----
  // The app ended (finishAm): its job entry goes; a successful run's length
  // is kept under its job name (harvestJobName), and the store row for it
  // is returned for the caller's batch (nullopt: nothing to persist).
  std::optional<store::StateWrite> recordRun(const AppRecord& rec, AppState final_state)
      EXCLUDES(mu_);
  // The last successful run length of a job (harvestJobName), if known.
  std::optional<Millis> lastRun(const std::string& job) const EXCLUDES(mu_);

 private:
  // A job's asks as its AM sent them (before the harvest-class constraint)
  // and its chosen classes.
  struct Job {
    std::string name;                  // harvestJobName
    std::vector<std::string> classes;  // last selection
    std::string fallback;              // fallBack()'s class ("" = none)
    // The hold: the nodes predicted to fit (nullopt: no hold constraint),
    // since when the job has been held (nullopt: not since it last had
    // nothing pending), whether it is held now, and whether its hold ran
    // out (the ranked fallback applies until nothing is pending).
    std::optional<std::vector<std::string>> fit;
    std::optional<TimePoint> held_since;
    bool held = false;
    bool hold_over = false;
    bool selected = false;                               // selected once (asks or clustering)
    std::map<std::string, sched::ResourceRequest> base;  // by ask key, count as last sent
  };
  std::vector<std::string> selectLocked(const AppId& app, const Job& job,
                                        std::vector<HarvestNode> nodes,
                                        const std::vector<reprovision::StageState>& stages,
                                        std::string* note) const REQUIRES(mu_);
  // The job's length type from its last run (unseen: medium).
  JobLength typeOf(const Job& job) const REQUIRES(mu_);
  // `nodes` with each one's latest CPU utilisation from the history.
  std::vector<HarvestNode> withCurrent(std::vector<HarvestNode> nodes) const REQUIRES(mu_);
  // The job's base asks with its constraint (its classes and fallback,
  // and the hold's nodes).
  static std::vector<sched::ResourceRequest> constrained(const Job& job);
  // The constraints the job's asks get (none, the soft class one, the hard
  // node one of the hold).
  static std::vector<sched::PlacementConstraint> constraintsOf(const Job& job);
  // The hold's part of fallBack(): updates job.fit, job.fallback and the
  // hold clock. False when the hold ran out now (job.hold_over set, fit
  // cleared): the ranked fallback applies.
  bool holdLocked(const AppId& app, Job& job, JobLength type, const Resource& container,
                  const std::vector<HarvestNode>& nodes, std::string* note) REQUIRES(mu_);
  // The expected run of one of the job's containers (see fallBack()).
  Millis expectedRun(const Job& job) const REQUIRES(mu_);
  // The tenant's forecast from its CPU series, rebuilt when the series
  // gained a bucket or changed its step; null without samples.
  TenantForecast* forecastOf(const std::string& tenant) REQUIRES(mu_);
  void clusterTick() EXCLUDES(mu_);
  void saveTick() EXCLUDES(mu_);
  // stop() without the save: no tick runs or will once it returns.
  void halt() EXCLUDES(mu_);

  const HarvestRmOptions opts_;
  Clock& clock_;

  mutable Mutex mu_;  // a leaf: see the thread-safety note above
  store::StateStore* store_ GUARDED_BY(mu_) = nullptr;
  HarvestHistory history_ GUARDED_BY(mu_);  // primary tenants' usage
  std::vector<HarvestClass> classes_ GUARDED_BY(mu_);
  std::map<std::string, std::string> class_of_ GUARDED_BY(mu_);  // tenant -> class id
  std::map<std::string, Millis> runs_ GUARDED_BY(mu_);           // job -> last run length
  std::map<AppId, Job> jobs_ GUARDED_BY(mu_);
  struct Forecast {
    TimePoint last;  // the series' newest bucket's start when built
    Millis step;
    TenantForecast forecast;
  };
  std::map<std::string, Forecast> forecasts_ GUARDED_BY(mu_);  // by tenant
  // The periodic work: stop() sets stopped_ and waits on idle_ until no tick
  // runs (running_), so it returns only once none runs or will.
  std::function<Status()> recluster_ GUARDED_BY(mu_);
  bool stopped_ GUARDED_BY(mu_) = true;
  int running_ GUARDED_BY(mu_) = 0;
  CondVar idle_;
  TimerId cluster_timer_ GUARDED_BY(mu_) = 0;
  TimerId save_timer_ GUARDED_BY(mu_) = 0;
};

}  // namespace morpheus::rm
