// morpheus-sim engine: the real planner, scheduler
// core, DRA policies, skyline LP and SLO inference driven on a virtual time
// line, with simulated nodes and tasks and no RPC.
//
// An experiment (Morpheus OSDI'16 §9):
//  1. training: the first `train_days` run under user provisioning (the
//     baseline); every periodic run leaves a RunRecord (containers in use per
//     plan step) and provenance FileEvents (the producer's write of the input,
//     the run's read and write, and the consumer — a scheduled job started at
//     the ground-truth deadline — with its run record and its read of the
//     output, at its start or when a late output is written);
//  2. each strategy derives its reservations from that history (SLO inference
//     §4, skyline LP §5, packing §6) and runs the evaluation days on a fresh
//     cluster; DRA (§7) is applied per strategy;
//  3. every periodic instance of the evaluation days is judged against its
//     ground-truth deadline, and again "worst case" (§9): completion computed
//     with only the capacity reserved for it (placement + DRA grants), as if
//     no opportunistic capacity were available.
//
// Event driven: a priority queue of events (task ends, submissions, guarantee
// changes at placement boundaries, plan steps, preemption deadlines). After
// all events of one instant, one scheduling round runs Scheduler::nodeUpdate
// on the nodes that freed capacity, and — only when there are pending asks —
// on nodes with free room until the asks are served. No pass over all nodes.
//
// Determinism: no wall clock and no hash-order iteration reaches a decision;
// the same workload, options and seed give the same results.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/resource.h"
#include "common/status.h"
#include "inference/model/slo_inference.h"
#include "planner/agent.h"
#include "sim/engine/report.h"
#include "sim/engine/strategy.h"
#include "sim/workloads/workload.h"

namespace morpheus::sim {

// How instance k of periodic job number `job_index` runs (sim/workloads/workload.h
// drawInstance in the CLI; tests hand in exact realisations).
using RealizeFn = std::function<RealizedInstance(const PeriodicJob& job, size_t job_index,
                                                 int64_t k, uint64_t seed)>;

struct ExperimentOptions {
  int64_t nodes = 50;                // simulated nodes; > 0
  Resource node_size{65536, 16};     // per node (MiB, vcores); default 64 GiB, 16 vcores
  int64_t days = 10;                 // simulated days; > 0
  double train_fraction = 0.7;       // first share of the days used for training (paper: 70%)
  uint64_t seed = 1;                 // passed to the realisation function
  Millis step{60000};                // plan step and DRA interval; default 60 s
  Millis preemption_grace{15000};    // scheduler preemption grace; default 15 s (rm default)
  Millis preemption_interval{3000};  // between preemption checks; default 3 s (rm default)
  double dra_budget_fraction = 0.5;  // DRA budget per instance, share of the skyline area
                                     // (inference proposal.budget-fraction default; 0.5
                                     // settled by the sweep in README's simulator section)
  // morpheus-dra's "not ahead of its plan" rule off (dra.grant-when-ahead):
  // for measuring what the rule costs; default false, the RM's default.
  bool dra_grant_when_ahead = false;
  // Over how long "ahead" is judged (MorpheusDraOptions::ahead_window; 0 =
  // the whole instance so far, as the RM does).
  Millis dra_ahead_window{0};
  int64_t history_runs = 30;  // runs fitted per job (inference skyline.history-runs)
  // The training runs SLO inference and the skyline fits read: each job's
  // succeeded runs submitted within this window before the end of training,
  // but at least its inference::SloParams::min_runs most recent ones, as
  // morpheus-inference reads its store (slo.history-window, default 30 days).
  // The training history keeps only those runs and the file events their
  // inference can read, so its memory is bounded by the window, not by the
  // training's length. A 30-day experiment's 21 training days never leave it.
  Millis history_window{int64_t{30} * 86'400'000};
  // LowCost's rule among equally cheap positions (planner.tie-break: latest,
  // earliest, slack); default the planner's own default (slack).
  planner::TieBreak tie_break = planner::AgentOptions{}.tie_break;
  // How the strategies' skylines are placed (inference proposal.skyline-steps;
  // planner/reservation.h): whole steps unless set to stretchable.
  planner::SkylineSteps skyline_steps = planner::SkylineSteps::kWhole;
  RealizeFn realize;  // required
  // Carbyne: the ordering policy of the ad-hoc leaf queues
  // (scheduler.policy names: drf, fifo, carbyne, phoenix; default drf); the share of
  // ad-hoc jobs whose AM reports its DAG (the altruistic ones under carbyne;
  // the others get their DRF share), in [0, 1], default 1; and estimate
  // noise: each job's reported task duration of each stage is the true one
  // times a factor drawn uniformly from [1 - noise, 1 + noise], noise in
  // [0, 1), default 0 (exact estimates).
  std::string adhoc_policy = "drf";
  double altruistic_share = 1.0;
  double estimate_noise = 0.0;
  // Optional (benchmarks): every simulated run, training included, adds the
  // events it processed here when it ends (interrupted runs too). Not owned.
  std::atomic<int64_t>* events_processed = nullptr;
  // Optional (benchmarks): each strategy's own evaluation progress, called
  // just before the summed "evaluation" progress it is part of, under the
  // same lock: the strategy's name, its simulated plan steps, its total.
  std::function<void(const std::string& strategy, int64_t done, int64_t total)> strategy_progress;
  // Scale (sim/engine/task_model.h, sim/engine/fluid_adhoc.h): > 0 simulates
  // the ad-hoc jobs as fluid pools advanced at this step (ms, >= 1 s); 0
  // (default) simulates every ad-hoc task.
  Millis fluid_adhoc_step{0};
  // `--adhoc-model aggregate` (sim/engine/aggregate_adhoc.h): > 0 takes the
  // ad-hoc jobs out of the scheduler as capacity over time, recomputed at
  // this step (ms, >= 1 s; at once when a guarantee lacks room); 0 (default)
  // keeps them in the scheduler. Not together with fluid_adhoc_step.
  Millis aggregate_adhoc_step{0};
  // `--adhoc-refill` (aggregate model only): capacity periodic tasks free
  // between steps goes to pools below their fair share before the periodic
  // apps (refillAggregate); false leaves it to the periodic apps until the
  // next step.
  bool aggregate_adhoc_refill = true;
  // `--adhoc-fill` (aggregate model only): room a scheduling pass leaves on
  // a node it offered (no periodic ask took it) goes to pools with demand
  // beyond what they hold, above their fair share, until the next step, as
  // the task model's scheduler gives a hole no periodic ask fits to the
  // ad-hoc queues; false leaves it idle until the next step.
  bool aggregate_adhoc_fill = false;
  // `--train-adhoc-model`: the ad-hoc model of the training days alone, as
  // aggregate_adhoc_step (0: task; > 0: aggregate at that step). Unset
  // (default): the training runs under the evaluation's model. Crossing the
  // two separates what a model does to what the training teaches (SLOs,
  // skylines) from what it does to the evaluation.
  std::optional<Millis> training_aggregate_adhoc_step;
  // `--train-segments`, `--train-warmup-days`: the training days split into
  // this many consecutive segments (trainSegments), each simulated as a Sim
  // of its own from a cold cluster, side by side on the threads, their
  // histories merged in time order before SLO inference (mergeSegments).
  // A fidelity choice for scale (validated in docs/experiments/simulator.md,
  // "The periodic run"): 1 (default) is one Sim over every training day.
  // Never derived from `threads`: the results do not depend on it. Each
  // segment but the first starts `train_warmup_days` earlier (not before
  // day 0), its warm-up simulated and not recorded.
  int64_t train_segments = 1;
  int64_t train_warmup_days = 1;
  // `--eval-segments`, `--eval-warmup-days`: each strategy's evaluation days
  // split the same way (evalSegments), each segment a Sim of its own from a
  // cold cluster with the strategy's reservations admitted at its start,
  // side by side on the threads; their results merged (the instances, ad-hoc
  // jobs, plan steps and counted events of each segment's recorded days).
  // Every segment but the first starts `eval_warmup_days` earlier (not
  // before the evaluation's first day). A fidelity choice for scale
  // (validated in docs/experiments/simulator.md, "Evaluation in segments");
  // 1 (default) is one Sim over the evaluation days. Never derived from
  // `threads`. runExperiment only (min-cluster evaluates each size whole).
  int64_t eval_segments = 1;
  int64_t eval_warmup_days = 1;
  // min-cluster: match the baseline's worst-case violation rate (the
  // paper's metric, Morpheus §8) instead of its rate with the ad-hoc load.
  bool min_cluster_worst_case = false;
  // min-cluster: where the sizes' SLOs and skylines come from. false
  // (default, `--train-size nodes`): one training at `nodes`, the history
  // of the cluster as it is, which every smaller size plans from (Morpheus
  // §8 infers from the production traces and then varies the cluster).
  // true (`--train-size each`): every size is trained anew at its size, so
  // a size also changes what the inference sees (a job that starves there
  // may get no SLO).
  bool min_cluster_retrain = false;
  // min-cluster: empty (default) searches every strategy's smallest size.
  // Otherwise no search: every strategy but the baseline is evaluated at
  // exactly these node counts (each in [1, nodes], none twice), for
  // checking a given answer where a search costs too much (see
  // runMinCluster).
  std::vector<int64_t> min_cluster_sizes;
  // Strategies evaluated side by side (runExperiment): up to this many
  // threads, each running one strategy's simulation at a time (>= 1; 1 =
  // one after the other). The results do not depend on it.
  int threads = 1;
  // For the differential test only: offer new asks to every free node they
  // fit, as before the simulator skipped offers that cannot change anything
  // (Sim::offerNewAsks). Decisions must be the same either way.
  bool offer_every_free_node = false;
};

struct History;  // sim/engine/cluster_sim.h

// One segment of the training or of an evaluation (ExperimentOptions::
// train_segments, eval_segments): simulated over [from, to), recording the
// instances submitted in [record_from, record_until). The recorded spans are
// consecutive and cover the phase's days, split into whole days as evenly as
// possible (the first segments take the extra days); `from` is record_from
// less the warm-up days, but not before the phase's first day. Every segment
// but the last runs past record_until until its recorded instances have
// ended, at most one day (`to`; a generated job's window never exceeds its
// period, at most a day), so the instances straddling a boundary are
// recorded whole; the last ends with the phase, as an unsegmented one does.
struct DaySegment {
  TimePoint from, record_from, record_until, to;
};

// The segments of options' training (one spanning every training day when
// train_segments is 1). Options must be valid (validateExperiment).
std::vector<DaySegment> trainSegments(const ExperimentOptions& options);

// The segments of options' evaluation days (one spanning all of them when
// eval_segments is 1). Options must be valid (validateExperiment).
std::vector<DaySegment> evalSegments(const ExperimentOptions& options);

// The segments' histories (in segment order) as one: each job's runs,
// runtimes and own events in segment order (the recorded spans are
// consecutive), the path events by time and the consumers' runs by submit
// (stable), each job's last stage tasks from its latest run; then each job's
// runs windowed as one Sim's are at the end of training `end`
// (ExperimentOptions::history_window, at least SloParams::min_runs), with
// the own events of the runs dropped. Path events no kept run reads may
// remain (SLO inference never reads them).
History mergeSegments(std::vector<History> segments, TimePoint end,
                      const ExperimentOptions& options);

// The training's history as runExperiment learns from it: its segments
// simulated on up to options.threads threads and merged (one Sim when
// train_segments is 1). `interrupted` is set when `stop` ended a segment.
Result<History> trainingHistory(const Workload& workload, const ExperimentOptions& options,
                                bool* interrupted);

// The SLO inference of the training phase (Morpheus §4), one verdict per
// periodic job in workload order: each job's runs and file events, every
// event on the paths, and the consumers' run records (T_need), exactly as
// morpheus-inference sees a provenance store.
std::vector<inference::SloVerdict> inferTrainingSlos(const Workload& workload,
                                                     const History& history);

// Progress of the whole experiment: `done` of `total` simulated plan steps.
using ProgressFn = std::function<void(const std::string& phase, int64_t done, int64_t total)>;

// The days actually used for training: floor(days * train_fraction), at
// least 1 and at most days - 1 (days >= 2), so both phases exist.
int64_t trainDays(const ExperimentOptions& options);

// Validates options: INVALID_ARGUMENT naming the field ("nodes", "days",
// "node_size", "train_fraction", "realize", "workload.periodic[3].period").
Status validateExperiment(const Workload& workload, const ExperimentOptions& options);

// Runs the training phase once, then every strategy: their provisioning
// one after the other (SLO inference once; each strategy's skyline fits,
// job by job, on up to options.threads threads), their simulations on up
// to options.threads threads; results in strategy order, the same whatever
// the thread count. Strategies provisioned from the users' requests alone
// (the baseline) do not read the training, so with threads >= 2 their
// evaluation runs beside the training. Progress (one call at a time):
// "training", and "evaluation" over all strategies' steps, interleaved when
// an evaluation runs beside the training.
// `stop` (may be null) is polled every simulated instant (between the events
// of two instants): once set, the runs in progress end there, results so far
// are returned (strategies not started are left out), summary.interrupted is
// set, and an interrupted training skips its SLO inference (no strategy runs
// after it).
Result<SimSummary> runExperiment(const Workload& workload, const ExperimentOptions& options,
                                 const std::vector<StrategySpec>& strategies,
                                 const ProgressFn& progress = nullptr,
                                 const std::atomic<bool>* stop = nullptr);

// `morpheus-sim min-cluster`: runs the experiment at `options.nodes` for the
// baseline, then for every other strategy searches (bisection over the node
// count, one node at a time, assuming violations fall as nodes grow) the
// smallest cluster whose violation rate (worst case with
// options.min_cluster_worst_case) is at most the baseline's at options.nodes; the result is in
// StrategyResult::min_nodes_at_baseline_rate (the baseline's is
// options.nodes). The other figures of each strategy are those at that size.
// Every size plans from the training at options.nodes, or, with
// options.min_cluster_retrain, from a training of its own at that size.
// Every size a strategy's search evaluated, with its rate and whether it
// matched, is in its StrategyResult::min_cluster_search, in search order.
// The strategies' searches run side by side on up to options.threads
// threads (trainings shared, GLPK on one thread at a time); the
// result does not depend on the thread count.
//
// With options.min_cluster_sizes, nothing is searched: every strategy but
// the baseline is evaluated at each of those sizes, one result per size
// named "<strategy>@<nodes>" (in strategy order, sizes ascending) whose
// extra["nodes"] is the size and extra["matches_baseline_rate"] is 1 when
// its rate is at most the baseline's, 0 when not; min_nodes_at_baseline_rate
// is left unset on them (no smallest size is claimed). The bisection's
// assumption turns two sizes into a check of an answer A: matching at A+1
// and not at A-2 puts the smallest size in [A-1, A+1], within one step of A.
// The (strategy, size) runs share trainings per size and run side by side
// on up to options.threads threads; the result does not depend on it.
// INVALID_ARGUMENT naming eval_segments when it is not 1.
Result<SimSummary> runMinCluster(const Workload& workload, const ExperimentOptions& options,
                                 const std::vector<StrategySpec>& strategies,
                                 const ProgressFn& progress = nullptr,
                                 const std::atomic<bool>* stop = nullptr);

}  // namespace morpheus::sim
