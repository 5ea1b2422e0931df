// Phoenix experiment of morpheus-sim (Thinakaran et al., "Phoenix:
// A Constraint-aware Scheduler for Heterogeneous Datacenters", ICDCS'17 §V):
// a heterogeneous cluster whose nodes carry resource-kind attributes (ISA,
// cores, network speed, kernel), an open stream of short and long ad-hoc
// jobs of which a share carries hard constraints on those attributes, run
// through the real scheduler core (scheduler) with one ordering policy on a
// virtual time line of 1 s heartbeats.
//
// Reported: response time (finish - submit) percentiles of short jobs (all,
// and the constrained ones) and of long unconstrained jobs, per policy, so
// Phoenix can be compared with constraint-unaware FIFO/DRF and with itself
// without the CRV estimate.
//
// Workload (deterministic in `seed`; our approximation of the shape of the
// paper's setting, not its trace):
//  - nodes: `node_size` each; attributes drawn per node: isa aarch64 15%
//    (else x86_64), cores 16/32/64 at 60/30/10%, network_gbps 10/25/40 at
//    70/20/10%, kernel 5.4/5.10/6.1 at 40/40/20%;
//  - jobs: Poisson arrivals at the rate that offers `load` of the cluster's
//    vcores; short with probability `short_fraction` (1-10 tasks of
//    log-uniform 5-60 s), else long (20-100 tasks of log-uniform 5-20 min);
//    1 vcore / 2 GiB per task; every task of a job runs for the job's
//    duration x U(0.8, 1.2) and the job declares the duration as expected;
//  - constraints, per job independently (Table II-like frequencies: ISA,
//    number of cores, network speed and kernel version are the constraint
//    kinds the paper measures in the Google trace; the table's figures, and
//    those of its source, Sharma et al., "Modeling and synthesizing task
//    placement constraints in Google compute clusters", SoCC'11, could not
//    be retrieved — only the abstracts were reachable — so the
//    rates below are our approximation, not the trace's): isa in {aarch64}
//    `isa_rate`, cores >= 32 `cores_rate`, network_gbps >= 25
//    `network_rate`, kernel >= 5.10 `kernel_rate`; long jobs never carry
//    constraints (the paper's constrained short jobs behind long ones).
//
// Trace mixes (`mix` google, yahoo, cloudera; phoenix_mixes.h): the jobs are
// short or long in the trace's proportions (short ones 1..max tasks of a
// mean duration below the trace's cutoff, long ones above it) and every job,
// short or long, requires at most one constraint kind of `kinds` (a job
// draws kind k with probability kinds[k].job_share). Kind k is on exactly
// round(node_share x n) of the n nodes of the short partition of share
// `short_partition` (Eagle-C's layout, eagle_sim.h) and on exactly
// round(node_share x n) of the n general nodes, the nodes
// of lowest per-node draw; a short_partition_first kind is on every
// short-partition node instead, and a kind with short_nodes >= 0 on that
// many of them (the lowest draws). Exact counts: every seed has the node shares
// the calibration set, so seeds differ only in which nodes and which jobs.
// The isa/cores/network/kernel rates above are not used.
//
// Runs advance their 1 s ticks from event to event: a tick at which no job
// arrived, no task finished and the previous pass allocated nothing repeats
// the previous pass exactly, so it is skipped (results equal a run over
// every tick).
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/resource.h"
#include "common/status.h"
#include "scheduler/ordering_policy.h"
#include "scheduler/policies/crv.h"
#include "sim/phoenix/phoenix_mixes.h"

namespace morpheus::sim {

struct PhoenixSimOptions {
  int32_t nodes = 100;                       // cluster size
  Resource node_size = Resource(65536, 16);  // per node
  Millis arrivals{2 * 3600 * 1000};          // jobs arrive during this window (default 2 h)
  double load = 0.85;                        // offered vcore load, share of the cluster (0, 1.5]
  double short_fraction = 0.9;               // share of short jobs
  double isa_rate = 0.10;                    // share of short jobs asking isa in {aarch64}
  double cores_rate = 0.15;                  // ... cores >= 32
  double network_rate = 0.10;                // ... network_gbps >= 25
  double kernel_rate = 0.10;                 // ... kernel >= 5.10
  uint64_t seed = 1;
  PhoenixMix mix = PhoenixMix::kSynthetic;  // trace mixes: phoenix_mixes.h
  std::vector<ConstraintKind> kinds;        // trace mixes: the constraint kinds
  double short_partition = 0.1;             // trace mixes: where short_partition_first nodes are
  bool progress = false;                    // a line on stderr per simulated hour
};

struct Percentiles {
  int64_t count = 0;
  double p50 = 0, p90 = 0, p99 = 0, mean = 0;  // seconds
};

// Where one short job's response time (finish - submit) went, in seconds,
// under Eagle-C or a hybrid (EagleOptions::wait_breakdown; eagle_sim.h
// defines each part). The parts sum to response_s.
struct ShortJobWait {
  size_t job = 0;
  int32_t kind = -1;  // trace mixes: its constraint kind, -1 if none
  bool constrained = false;
  int32_t tasks = 0;
  int32_t probes = 0;              // probes sent at submission
  int32_t probes_behind_long = 0;  // of those, to workers running a long task
  // Long tasks started on workers meeting its constraints between its
  // submission and its critical task's start: workers that freed up while
  // it waited and went to long work (a measure, not a part).
  int64_t long_starts_while_waiting = 0;
  double response_s = 0;
  // The parts.
  double behind_long_full_s = 0;   // critical worker ran a long task, no matching worker idle
  double behind_long_free_s = 0;   // ... while some matching worker was idle
  double behind_short_full_s = 0;  // ran another short job's task, no matching worker idle
  double behind_short_free_s = 0;  // ... while some matching worker was idle
  double own_tasks_s = 0;          // ran the job's own earlier tasks
  double dispatch_s = 0;           // idle before the start, and the end-to-tick rounding
  double run_s = 0;                // the critical task's run time
  double partsSum() const {
    return behind_long_full_s + behind_long_free_s + behind_short_full_s + behind_short_free_s +
           own_tasks_s + dispatch_s + run_s;
  }
};

// One pass of runQueueOrderSearch (eagle_sim.h).
struct QueueOrderPass {
  std::string order;       // srpt, edf, tail-1, tail-2, ...
  double short_p99_s = 0;  // its short-job p99
  double bound_p99_s = 0;  // the p99 of its short jobs' placement bounds
  double long_mean_s = 0;  // its long jobs' mean response time
};

struct PhoenixSimResult {
  std::string policy;
  int64_t jobs = 0;
  int64_t rejected = 0;            // admission control: no node meets their constraints
  Percentiles short_jobs;          // all short jobs
  Percentiles short_constrained;   // short jobs with at least one hard constraint
  Percentiles long_unconstrained;  // long jobs (unconstrained in the synthetic mix)
  double makespan_s = 0;           // last finish - first submit
  double wall_s = 0;               // simulator run time
  // Trace mixes: per constraint kind (index into opts.kinds), the mean
  // response time of the short jobs requiring it and their count; the mean
  // of unconstrained short jobs; the share of tasks that are constrained.
  std::vector<double> kind_short_mean_s;
  std::vector<int64_t> kind_short_count;
  double unconstrained_short_mean_s = 0;
  double constrained_task_share = 0;
  // Trace mixes, per constraint kind: how much of the vcores of the nodes
  // having it long tasks hold, over the arrival window (KindLongOccupancy):
  // the time-average share, and the share of the window during which they
  // hold at least 90% and all of them. The cause Phoenix's losses on the
  // scheduler core were ascribed to, measured (no decision depends on it).
  std::vector<int32_t> kind_nodes;
  std::vector<double> kind_long_share;
  std::vector<double> kind_long_90_time;
  std::vector<double> kind_long_full_time;
  // FNV-1a over every job's (index, rejected, finish ms since its submit):
  // two runs scheduled every job alike iff (but for collisions) the digests
  // match. Identity checks of changes meant not to alter decisions.
  uint64_t finish_digest = 0;
  // Eagle-C and hybrid runs with EagleOptions::wait_breakdown: every
  // finished short job's breakdown, in job order; empty otherwise.
  std::vector<ShortJobWait> short_waits;
  // Eagle-C-family runs with EagleOptions::job_bounds, per job index: a
  // short job's response time and its placement bound (eagle_sim.h), -1 for
  // long and rejected jobs; the p99 of the short jobs' bounds.
  std::vector<double> job_response_s, job_bound_s;
  double bound_short_p99_s = 0;
  // runQueueOrderSearch: every pass, in run order.
  std::vector<QueueOrderPass> passes;
};

// One job of the workload (shared with the Eagle-C baseline, eagle_sim.h).
struct PhoenixJob {
  TimePoint submit;
  bool is_short = true;
  int32_t tasks = 0;
  Millis duration{0};  // expected (declared) task run time
  std::vector<sched::PlacementConstraint> constraints;
  int32_t kind = -1;      // trace mixes: index of its constraint kind, -1 if none
  bool rejected = false;  // admission control: no node meets its constraints
  int32_t started = 0;
  int32_t done = 0;
  TimePoint finish;
};

// Run time of the k-th started task of job `job` (its declared duration x
// U(0.8, 1.2), deterministic in `seed`): the same in every run of the
// workload (scheduler core, Eagle-C, floor), so all see equal work.
Millis phoenixTaskRunTime(uint64_t seed, size_t job, int32_t k, Millis duration);

// The workload described above, deterministic in opts.seed: every node's
// attributes (index = node) and the jobs in submission order (from t0).
std::vector<sched::NodeAttributes> phoenixClusterAttributes(const PhoenixSimOptions& opts);
// Node i in the short partition of share p (spread evenly over the node
// list: floor((i+1)p) > floor(ip)).
bool inShortPartition(int32_t i, double p);
std::vector<PhoenixJob> makePhoenixJobs(const PhoenixSimOptions& opts, TimePoint t0);
// INVALID_ARGUMENT naming the field for bad options.
Status validatePhoenixOptions(const PhoenixSimOptions& opts);
// The first 1 s tick (counted from t0) at or after t.
TimePoint firstTickAtOrAfter(TimePoint t0, TimePoint t);
// Where a run goes after a tick in which nothing changed: the tick of the
// next arrival or task end, whichever comes first (never before now + 1 s),
// or nullopt when neither remains and all `jobs` are finished. INTERNAL
// naming `sim` when jobs are pending with nothing running or arriving.
Result<std::optional<TimePoint>> nextEventTick(const char* sim, TimePoint t0, TimePoint now,
                                               std::optional<TimePoint> next_submit,
                                               std::optional<TimePoint> next_end, size_t finished,
                                               size_t jobs);

// Progress of one run on stderr when enabled (PhoenixSimOptions::progress):
// a line per simulated hour with the finished jobs and the wall time so far.
// Not thread-safe; one per run.
class PhoenixProgress {
 public:
  PhoenixProgress(bool enabled, std::string name, size_t jobs);
  void at(Millis simulated, size_t finished);

 private:
  bool enabled_;
  std::string name_;
  size_t jobs_;
  int64_t next_hour_ = 1;
  std::chrono::steady_clock::time_point wall0_;
};

// Long-task occupancy of each constraint kind's nodes (the kind_long_*
// fields of PhoenixSimResult), accumulated as tasks start and end on a
// virtual time line over [t0, t0 + opts.arrivals): every change of a node's
// long vcores adds the elapsed interval at the previous level. Kinds are the
// trace mixes' (a node has kind k when its attribute kinds[k].name is
// "yes"); empty for the synthetic mix. Not thread-safe; one per run.
class KindLongOccupancy {
 public:
  KindLongOccupancy(const PhoenixSimOptions& opts, TimePoint t0);
  // Long tasks on node `node` hold `delta` vcores more (negative: fewer) from `now`.
  void change(int32_t node, int64_t delta, TimePoint now);
  // Closes the window (at its end, or `now` if earlier) into out.kind_*.
  void finish(TimePoint now, PhoenixSimResult& out);

 private:
  void advance(TimePoint now);
  TimePoint start_, end_, last_;
  std::vector<std::vector<size_t>> node_kinds_;  // kinds each node has
  std::vector<int64_t> capacity_, held_;         // vcores per kind
  std::vector<int32_t> nodes_;
  std::vector<double> area_, t90_, tfull_;  // vcore-ms, ms, ms
};

// Nearest-rank percentiles (seconds in, seconds out).
Percentiles percentilesOf(std::vector<double> v);
// Fills the percentile groups, per-kind means and makespan of `out` from
// finished jobs (rejected ones are not measured); `kinds` = opts.kinds.size().
void summarisePhoenixJobs(const std::vector<PhoenixJob>& jobs, size_t kinds, PhoenixSimResult& out);

// Runs the workload of `opts` under `policy` until every job finished or was
// turned away by admission control (Scheduler::pendingReasons not empty at
// submission: no node meets its hard constraints).
// INVALID_ARGUMENT naming the field for bad options.
Result<PhoenixSimResult> runPhoenixSim(const PhoenixSimOptions& opts,
                                       std::shared_ptr<const sched::QueueOrderingPolicy> policy);

// The floor under every scheduler's response times on the workload of
// `opts`: each job's tasks all start at the first 1 s tick at or after its
// submission (no waiting, as on an idle cluster of unbounded size), with the
// same per-task run times as runPhoenixSim and runEagleSim, and the job is seen
// finished at the first tick at or after its last task's end. Jobs no node
// can serve are rejected as there. policy = "floor". No scheduler's
// percentile can be below this run's, so a baseline's p99 over the floor's
// is the most any scheduler could gain on it.
// INVALID_ARGUMENT naming the field for bad options.
Result<PhoenixSimResult> runPhoenixFloor(const PhoenixSimOptions& opts);

}  // namespace morpheus::sim
