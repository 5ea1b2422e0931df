// Harvesting simulator (Zhang et al., OSDI'16 §5-6): primary
// tenants' utilisation series with the paper's three patterns, SWIM batch
// jobs harvesting what the primaries leave, and reimaging events hitting a
// storage layer. Compares
//  - task placement: history-based class selection (Algorithm 1, the real
//    rm/harvest_selection code) vs primary-aware (the paper's baseline: YARN
//    told each primary tenant's current usage, no history; a task goes to a
//    random server where the primary leaves a core now) vs random (ignores
//    the primary when placing; the NM still throttles and kills) vs the
//    clairvoyant bounds (the primaries' future known; PlacementStrategy);
//  - replica placement: Algorithm 2 (rm/harvest_replicas) vs random vs
//    best-first.
// Everything runs on a virtual time line; the same seed gives the same
// numbers.
//
// Model (stated assumptions): a server has `cores` cores; its primary uses
// util(t) * cores, piecewise constant per series step; secondary tasks take
// one core each; the NM policy of src/nodemanager/harvest_guard.h runs every
// tick: the primary has priority, so while the tasks on a server want more
// cores than cpu_left = cores - primary - reserve, each runs at
// cpu_left / tasks of a core (at least 1%, the cgroup quota's floor:
// harvest_cpu.h) and its remaining work shrinks that much slower; once that
// has lasted `cpu_kill_after`, the newest are killed until the rest fit.
// Memory cannot be throttled: a task takes cores-th of the server's memory,
// the primary `primary_memory` x its CPU share, and the newest tasks are
// killed at once while they do not fit beside the primary and the reserve
// (reserve_cores tasks' memory). A task whose work runs out during a tick
// has ended before the next tick's checks. A killed task reruns from
// scratch. cpu_kill_after 0 kills at once
// (no throttled phase). throttleSpeed() is the CPU part, calibrated against
// the real NM (bench/harvest/calibrate.sh). Jobs are SWIM jobs (map stage, then reduce stage). All
// days of the series but the last are history (clustering: a daily pattern
// needs two days to show two cycles); jobs arrive on the last day at their
// SWIM offsets. A job's length type uses its ideal duration as "last run"
// (SWIM jobs recur in production). History placement: Algorithm 1 runs once
// per job at arrival (class headroom minus the reserves and the secondary
// tasks already in the class); the job's tasks then go to servers of its
// classes only within the headroom of its length type, with the tags of the
// server's class (short: what the primary leaves now; medium: below
// max(average, current); long: below max(peak, current)), drawn at random
// among them; Algorithm 1 counts a class's room the same way, in whole
// cores per server. When none has such room, or no class fitted, the soft
// constraint falls back (our scheduler's delay, 3 s, is below one tick).
// HistoryFallback::kRanked: in the order in which Algorithm 1 combines
// classes, to a server with a core now whose class has the highest ranking
// weight for the job's length type and, among those, the most room within
// that type's headroom by its class's tags (the least negative: where the
// class's history predicts the task the least over what the primary leaves
// it). kAnyServer: to any server with a core now, as primary-aware places.
// kHold (the default) avoids creating stragglers: a task goes only to a
// server where the primary is predicted to leave it a core for its whole
// expected run, in its classes as above or, failing that, outside them in
// the ranked order (ranking weight, then the most predicted room); when no
// server is predicted to fit, the task is held and tried again every tick,
// and once its stage has held tasks for `history_hold` it takes the kRanked
// fallback. The prediction (harvest_forecast.h: TenantForecast and
// predictedMargin; the RM's rm.harvest.hold runs the same code) reads only
// the history days of the series (the usage the RM records), the server's
// class pattern and the task's expected run W, its stage's task duration
// in the job's last run (the SWIM duration, as for the length type): with c
// the primary's current share and k the 5-minute steps the run spans after
// the current one,
//  - periodic class: max(c, the largest share the tenant's history days
//    show over the same times of day, [now, now + W) modulo the day);
//  - constant or unpredictable class: c + the rise of the tenant's history
//    over k steps at `history_rise_quantile` (over every start step i of
//    the history, the largest share over steps i..i+k less the share at i;
//    quantile 1 is the largest rise seen; capped at 1).
// It fits when, for every b in (0, W], cores x (1 - the share predicted
// over [now, now + b)) - reserve - the server's tasks expected to run
// still at now + b >= 1 (a task is expected to end at its start plus its
// own expected run; one already past that counts for the whole run).
// Only a held task waits: the rest of the job's tasks are placed as they fit.
// Storage: a tenant's reimage wipes all its servers at once (Poisson, rate
// per tenant); a wiped replica is back after `rereplicate`; a block is
// lost when all its replicas are wiped at once, and unavailable while every
// replica's primary is busier than `busy_util`.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "common/clock.h"
#include "common/status.h"
#include "harvest/harvest_classes.h"
#include "harvest/harvest_selection.h"
#include "sim/workloads/swim_trace.h"

namespace morpheus::sim {

struct PrimaryTrace {
  std::string tenant;
  rm::UtilPattern truth =
      rm::UtilPattern::kUnpredictable;  // generated pattern (or inferred on load)
  std::vector<double> util;             // fraction per step
};

struct PrimaryGenOptions {
  int tenants = 30;
  // Relative shares of periodic, constant and unpredictable tenants (>= 0,
  // not all 0); tenants take patterns in smooth weighted round-robin order,
  // so equal shares give periodic, constant, unpredictable, periodic, ...
  std::array<double, 3> mix = {1, 1, 1};
  int days = 3;
  Millis step{Millis(5 * 60 * 1000)};
  uint64_t seed = 1;
  // > 0: every tenant's level is drawn around this mean CPU share (the
  // utilisation sweep; see generatePrimaryTraces); 0: the fixed ranges.
  double mean_util = 0;
};

// Periodic: a daily wave (mean 0.15-0.45, amplitude 0.1-0.35, phase within
// +-3 h of a common peak) plus small noise; constant: a level 0.1-0.6 +-0.02;
// unpredictable: a random walk in [0.05, 0.95] with bursts.
// With mean_util = U > 0: periodic mean U +- 0.1 (amplitude 0.1-0.35, kept
// inside [0.02, 0.98]), constant level U +- 0.15, unpredictable a random walk
// pulled back towards its level U +- 0.15 (5% of the gap per step) with the
// same noise and bursts; levels clamped to [0.05, 0.95].
// INVALID_ARGUMENT naming "mix" for negative, non-finite or all-zero shares, "tenants"
// below 1, "days" below 2, "mean_util" outside [0, 0.95].
Result<std::vector<PrimaryTrace>> generatePrimaryTraces(const PrimaryGenOptions& o);

// Real series: one line per tenant, "TENANT U0 U1 ..." (whitespace-separated,
// fractions in [0, 1], one per step, '#' starts a comment); all lines must
// have the same number of samples; tenant names are unique. INVALID_ARGUMENT
// naming the line. The classifier labels each loaded tenant (its `truth`).
Result<std::vector<PrimaryTrace>> parsePrimaryTraces(const std::string& text);

// "P,C,U" (e.g. "2,1,1"): the relative shares of periodic, constant and
// unpredictable generated tenants (PrimaryGenOptions::mix), each a finite
// number >= 0, not all 0; spaces around a share are allowed. INVALID_ARGUMENT
// naming "mix" and the spec (wrong count, not a number, negative, all 0).
Result<std::array<double, 3>> parseClassMix(const std::string& spec);

// "LENGTH:P,C,U" (e.g. "short:1,3,2"): sets the ranking weights of job
// length short|medium|long for periodic, constant and unpredictable classes
// in `o`. INVALID_ARGUMENT naming "weights" (and the spec); `o` unchanged.
Status parseRankingWeights(const std::string& spec, rm::SelectionOptions& o);

// Task placement. kHistory, kPrimaryAware and kRandom are described at the
// top of this file. The clairvoyant strategies are not realisable policies:
// at a task's placement they read every server's actual future primary
// series and the task's true work W (its stage's duration at full speed),
// so they bound what a placement that predicts the primaries from history
// could do with perfect predictions. Among the servers where the primary
// leaves a core now, a server *fits* when, at every tick of [now, now + W),
// the primary leaves a core for the task beside the tasks already there
// (each counted until its remaining work would end at full speed): the task
// then runs throttle-free for its whole duration. Its *future headroom* is
// the least number of cores the primary, the reserve, those tasks and this
// one leave free over that window. kClairvoyantBestFit takes the fitting
// server with the least future headroom (best fit: big gaps stay for later
// tasks), kClairvoyantMostRoom the one with the most; ties are drawn at
// random. When no server fits, both take the server that adds the fewest
// throttled task-ticks over the window (this task's and those it slows
// down on that server). kClairvoyantWait is best fit that instead holds the
// task (tried again every tick) until a server fits: it trades throttled
// time for waiting.
enum class PlacementStrategy {
  kHistory,
  kPrimaryAware,
  kRandom,
  kClairvoyantBestFit,
  kClairvoyantMostRoom,
  kClairvoyantWait
};
// "history", "primary-aware", "random", "clairvoyant-best-fit",
// "clairvoyant-most-room", "clairvoyant-wait".
const char* strategyName(PlacementStrategy s);
// The inverse of strategyName; INVALID_ARGUMENT naming "strategy" and the
// known names for any other text.
Result<PlacementStrategy> parsePlacementStrategy(const std::string& name);

// The CPU speed (cores, <= 1) of each of `tasks` one-core secondary tasks on
// a server whose primary leaves `cpu_left` cores (after the NM's reserve):
// 1 while they fit, else an equal share of what is left, at least 0.01 (the
// NM's cgroup quota never goes below 1 ms per 100 ms).
double throttleSpeed(double cpu_left, int64_t tasks);

// Where history places a task its job's classes have no room for (or of
// a job without classes); see the top of this file.
enum class HistoryFallback { kRanked, kAnyServer, kHold };
// "ranked", "any", "hold"; parseHistoryFallback: INVALID_ARGUMENT naming
// "history-fallback" and the names for any other text.
const char* historyFallbackName(HistoryFallback f);
Result<HistoryFallback> parseHistoryFallback(const std::string& name);

struct HarvestSimOptions {
  int servers_per_tenant = 10;
  int cores = 16;
  int reserve_cores = 1;
  Millis tick{Millis(10000)};
  Millis step{Millis(5 * 60 * 1000)};  // of the primary series
  double job_sample = 0.1;             // share of SWIM jobs kept
  int64_t max_tasks_per_stage = 200;
  // History only: how long a job for which Algorithm 1 finds no class is
  // held (selection retried every tick) before it runs unconstrained; 0 =
  // runs unconstrained at once (the RM's "no classes, no constraint").
  Millis no_class_wait{0};
  // After the evaluation day, the jobs submitted on it run on for at most
  // this long, the primaries repeating that day; 0 = the run stops at the
  // day's end and jobs unfinished then are left out of the JCTs.
  Millis drain{0};
  // The NM's nm.harvest.cpu-kill-after: how long tasks stay throttled before
  // the newest are killed; 0 = killed at once (nothing runs throttled).
  Millis cpu_kill_after{0};
  // The primary's memory share = this x its CPU share (in [0, 1]); 1 makes a
  // memory overlap coincide with the CPU one.
  double primary_memory = 1.0;
  rm::SelectionOptions selection;  // Algorithm 1's length thresholds and ranking weights
  HistoryFallback history_fallback = HistoryFallback::kHold;
  // kHold only: how long a stage's tasks are held while no server is
  // predicted to fit them before they take the ranked fallback (0: at once,
  // which still prefers servers predicted to fit).
  Millis history_hold{Millis(24 * 3600 * 1000)};
  // kHold only: the quantile of the history's rises over a run's span that
  // predicts a constant or unpredictable primary (in [0, 1]; 0.9: a rise
  // seen in at most a tenth of the history's windows is not planned for).
  double history_rise_quantile = 0.9;
  uint64_t seed = 1;
};

struct HarvestSimResult {
  int64_t jobs = 0, jobs_finished = 0;
  int64_t tasks_run = 0, task_kills = 0;
  double mean_jct_s = 0, p50_jct_s = 0, p95_jct_s = 0;
  double harvested_util = 0;  // secondary core-time / all core-time on the last day
  double primary_util = 0;
  // Breakdowns: index 0/1/2 = rm::UtilPattern of the killing server's tenant
  // (its generated or inferred pattern), and rm::JobLength of the job.
  int64_t kills_by_pattern[3] = {0, 0, 0};
  int64_t kills_by_length[3] = {0, 0, 0};
  int64_t jobs_by_length[3] = {0, 0, 0};
  double mean_jct_by_length_s[3] = {0, 0, 0};
  double lost_core_s = 0;    // core-seconds killed tasks had run (work lost to kills)
  int64_t memory_kills = 0;  // of task_kills, those for memory (the rest: CPU after the throttle)
  // Task-seconds run below full speed, and the core-seconds that cost
  // (sum over throttled ticks of 1 - speed).
  double throttled_task_s = 0, throttle_lost_core_s = 0;
  double throttled_task_s_by_pattern[3] = {0, 0, 0};  // by the server's tenant's pattern
  // The same finished jobs had none waited and none been killed: each job's
  // map then reduce task duration in ticks (its JCT on an idle cluster of
  // unbounded size). No placement's JCTs can be below these, so a strategy's
  // figure over the floor's is the most any placement could gain on it.
  double floor_mean_jct_s = 0, floor_p95_jct_s = 0;
  double floor_mean_jct_by_length_s[3] = {0, 0, 0};
  // History only: jobs for which Algorithm 1 found no class (or combination)
  // with room (within no_class_wait); their tasks all take the fallback
  // (HarvestSimOptions::history_fallback).
  int64_t jobs_without_class = 0;
  // History only: tasks placed outside their job's classes because those had
  // no headroom left (the soft constraint falls back), and tenants whose
  // class's pattern differs from their generated one (misclassified).
  int64_t tasks_outside_class = 0;
  int64_t tenants_mislabelled = 0;
  // History only, index 0/1/2 = placed within the job's classes, outside
  // them (the classes were full), for a job without classes: tasks placed
  // (a rerun counts again) and task-seconds they ran throttled.
  int64_t tasks_by_placement[3] = {0, 0, 0};
  double throttled_task_s_by_placement[3] = {0, 0, 0};
  // Task-seconds run throttled by the job's rm::JobLength (every strategy).
  double throttled_task_s_by_length[3] = {0, 0, 0};
  // History with kHold only: task-seconds tasks spent held because no server
  // was predicted to fit them, and tasks placed by the ranked fallback after
  // `history_hold` (on a server not predicted to fit).
  double held_task_s = 0;
  int64_t tasks_placed_after_hold = 0;
};

Result<HarvestSimResult> runHarvestSim(const std::vector<PrimaryTrace>& traces,
                                       const std::vector<SwimJob>& jobs, PlacementStrategy strategy,
                                       const HarvestSimOptions& o);

enum class ReplicaStrategy { kAlgorithm2, kRandom, kBestFirst };
const char* replicaStrategyName(ReplicaStrategy s);

struct ReplicaSimOptions {
  int servers_per_tenant = 10;
  int64_t blocks = 20000;
  int replicas = 3;
  int64_t free_blocks_per_server = 1000;
  int days = 30;
  Millis rereplicate{Millis(60 * 60 * 1000)};
  double busy_util = 0.8;
  // Reimage rates of the tenants (per month): tenants 0-2 the first, 3-5 the
  // second, ... round-robin in groups of three (one per generated pattern).
  std::vector<double> reimage_rates = {0.5, 2, 8};
  uint64_t seed = 1;
};

struct ReplicaSimResult {
  int64_t blocks = 0;
  int64_t lost = 0;
  // Of `lost`, by the number of distinct tenants the block's replicas were
  // on (index 1-4, 4 = four or more; index 0 unused): a tenant-wide reimage
  // wipes every replica on that tenant at once, so blocks with replicas
  // sharing a tenant need fewer coincident reimages to be lost.
  int64_t lost_by_tenants[5] = {0, 0, 0, 0, 0};
  double unavailable = 0;  // mean share of steps a block has no available replica
  // With 4 or more replicas: blocks (and lost blocks) by the reimage rate of
  // the fourth replica's tenant (index into ReplicaSimOptions::reimage_rates).
  // Algorithm 2 has used every reimage class by then, so the fourth repeats
  // one, and the rate of the one it repeats sets the block's loss odds.
  std::vector<int64_t> fourth_by_rate, lost_fourth_by_rate;
};

// The 2.5% and 97.5% points of sum(num) / sum(den) over `resamples`
// resamples of the seeds with replacement (num[i], den[i]: seed i's counts,
// e.g. blocks lost by two placements), drawn with a fixed seed so a rerun
// gives the same interval. Block losses cluster by seed (one seed's reimage
// times decide which tenant sets lose blocks), so the seeds, not the blocks,
// are the independent draws. A resample with sum(den) = 0 counts as an
// infinite ratio. INVALID_ARGUMENT naming "num" (sizes differ or 0) or
// "resamples" (< 1).
Result<std::pair<double, double>> seedRatioInterval(const std::vector<double>& num,
                                                    const std::vector<double>& den,
                                                    int resamples = 4000);

Result<ReplicaSimResult> runReplicaSim(const std::vector<PrimaryTrace>& traces,
                                       ReplicaStrategy strategy, const ReplicaSimOptions& o);

}  // namespace morpheus::sim
