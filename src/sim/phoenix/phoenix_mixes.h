// Job mixes and constraint kinds of the Phoenix experiment shaped like the
// papers' setups (Thinakaran et al., "Phoenix: A Constraint-aware Scheduler for
// Heterogeneous Datacenters", ICDCS'17 §V, which replays the Google, Yahoo and
// Cloudera traces of its predecessors Hawk, Delgado et al., ATC'15, and
// Eagle, Delgado et al., SoCC'16).
//
// A trace mix is a parametric job generator, not the trace: each job is short
// or long as in the trace (the share of long jobs and the share of
// task-seconds in long jobs, Hawk Table 1), short jobs' mean task duration
// lies below the trace's short/long cutoff and long jobs' above it (the
// cutoffs and Eagle's short-partition sizes of the Hawk/Eagle simulator's
// documented settings), and the long jobs' mean task count is solved so the
// long share of task-seconds matches the trace. docs/experiments/phoenix.md
// lists every figure with its source and marks our own choices.
//
// Constraint kinds follow Phoenix's Table II (after Sharma et al., SoCC'11):
// nine node attributes a job can require, each with the relative slowdown
// (mean response time of short jobs requiring it over that of unconstrained
// short jobs) the Google trace shows. How many jobs carry a kind
// (`job_share`) and how many nodes have it (`node_share`) is not published;
// `morpheus-sim phoenix-calibrate` finds node shares so that Eagle-C
// reproduces the table's slowdowns, and writes them to a calibration file
// (readPhoenixCalibration).
//
// Pure data and functions; thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace morpheus::sim {

// kSynthetic: the original small-cluster workload of phoenix_sim.h.
enum class PhoenixMix { kSynthetic, kGoogle, kYahoo, kCloudera };

// One constraint kind: a node attribute `name` ("yes" on the nodes that have
// it) that a job may require (hard constraint name in {yes}).
struct ConstraintKind {
  std::string name;
  double target_slowdown = 1;  // Table II; what calibration aims at
  double job_share = 0;        // share of jobs (short and long) requiring it
  double node_share = 1;       // share of nodes outside the short partition having it, (0, 1]
  // Every node of Eagle's short partition has it (the kinds whose target is
  // below 1: only nodes long jobs never use are less loaded than average).
  bool short_partition_first = false;
  // Nodes of the short partition having it (clamped to the partition's
  // size); -1: round(node_share x n) of its n nodes, or every node for a
  // short_partition_first kind. Setting it apart from node_share lets a
  // kind's short-partition nodes and general nodes be calibrated separately
  // (a short partition of 12 nodes moves a kind's slowdown by a step per node).
  int32_t short_nodes = -1;
};

// The published shape of one trace (sources in phoenix.md).
struct TraceMixShape {
  std::string_view name;
  double long_job_share;                 // Hawk Table 1: share of jobs that are long
  double long_task_seconds;              // Hawk Table 1: share of task-seconds in long jobs
  double cutoff_s;                       // mean task duration separating short from long jobs
  double short_partition;                // Eagle's short-only partition, share of the nodes
  double short_task_lo_s;                // ours: shortest mean task duration of a short job
  double long_task_hi_s;                 // ours: longest mean task duration of a long job
  int32_t short_tasks_max;               // ours: short jobs have U{1..max} tasks
  double long_tasks_mean;                // solved: mean task count of long jobs
  int32_t long_tasks_lo, long_tasks_hi;  // U{lo..hi} around the solved mean
};

// INVALID_ARGUMENT naming `field` unless "synthetic", "google", "yahoo" or
// "cloudera".
Result<PhoenixMix> parsePhoenixMix(const std::string& name, const std::string& field);
std::string_view phoenixMixName(PhoenixMix mix);
// The shape of a trace mix (not kSynthetic).
const TraceMixShape& traceMixShape(PhoenixMix mix);

// Table II's nine kinds with their target slowdowns, before calibration:
// job shares 0.6 / 9 each (so 60% of the jobs, and about as many of the
// tasks, are constrained: "more than half"), node shares 0.5, and
// short_partition_first for the kinds whose target is below 1.
std::vector<ConstraintKind> tableTwoKinds();

// INVALID_ARGUMENT naming the field ("kinds[i].name", ...) for empty or
// duplicate names, shares outside their ranges or job shares summing over 1.
Status validateConstraintKinds(const std::vector<ConstraintKind>& kinds);

// phoenix-calibrate's search for one kind's node share: a safeguarded
// secant (regula falsi, Illinois variant) in log space. x = ln(node share),
// f = the log error ln(slowdown / target), signed so f rises with x (a larger
// share makes a kind's nodes less contended, so its slowdown falls; for
// short_partition_first kinds the share counts general nodes added to the
// short partition's, first assumed to move the slowdown towards 1, its value
// when the kind is on every node; below).
//
// Each measurement at the current share replaces the bracket end of its
// sign (the newest measurement wins: the other kinds move too) and drops
// the other end if it lies on the wrong side of it. With both
// ends known the next share is the secant root between them, kept inside
// the bracket's middle 80% (an end kept twice in a row has its f halved, so
// the bracket shrinks from both sides). With one end known it extrapolates
// along the slope through the last two measurements (or a slope of 1 when
// that slope is outside (0.02, 50): the wrong sign or noise), at most a
// factor of 1.5 in share per step.
// Shares stay in [kMinNodeShare, 1]. Deterministic; a kind already within
// the tolerance moves by the same rule (its step is small).
//
// The direction of a short_partition_first kind is an assumption, not
// physics: its short jobs gain the short partition but lose the general
// nodes its own long jobs fill, so below 1 its slowdown may fall as general
// nodes are added. When two measurements at shares more than 5% apart move its log
// error by more than kFlipThreshold against the assumed direction, the
// search flips the direction and drops the bracket. Other kinds never flip
// (fewer nodes is more contention), so noise cannot turn them round.
inline constexpr double kMinNodeShare = 0.002;
inline constexpr double kFlipThreshold = 0.01;
struct NodeShareSearch {
  bool direction_set = false;
  bool rises = false;                   // the slowdown rises with the share
  int flips = 0;                        // direction changes so far
  int count_steps = 0;                  // short_nodes changes so far
  bool has_lo = false, has_hi = false;  // ends with f < 0 and f > 0
  double lo_x = 0, lo_f = 0, hi_x = 0, hi_f = 0;
  int kept_lo = 0, kept_hi = 0;  // steps each end survived unchanged
  bool has_prev = false;
  double prev_x = 0, prev_e = 0;  // the measurement before the last (log error)
};
//
// The two pools of a kind (short_pool > 0: the short partition's node
// count) are searched apart. At the first step a kind's short_nodes is fixed
// at the count its share gives (-1 resolved: round(node_share x
// short_pool), or short_pool for a short_partition_first kind); from then on
// the secant moves only node_share, the general nodes, whose share moves
// the slowdown smoothly (one short-partition node of 12 is a step). The
// count moves by one node only when node_share is pinned at a bound and the
// error still asks for more of it (at 1 and too slow: one short node more;
// at kMinNodeShare and too fast: one fewer), and the kind's bracket is then
// dropped (its curve moved). A short_partition_first kind keeps every short
// node. short_pool = 0: short_nodes is left as it is.
//
// Given the slowdown measured at each kind's current node share, records it
// and moves every share to its next candidate.
void stepNodeShares(std::vector<ConstraintKind>& kinds, const std::vector<double>& measured,
                    std::vector<NodeShareSearch>& search, int32_t short_pool = 0);
// The number of nodes of Eagle's short partition of share `short_partition`
// in a cluster of `nodes` (inShortPartition's count).
int32_t shortPartitionNodes(int32_t nodes, double short_partition);

// Calibration files (JSON): {"mix": "google", "kinds": [{"name", "target_slowdown",
// "job_share", "node_share", "short_partition_first", "short_nodes" (optional,
// -1 when absent), "measured_slowdown"}...],
// ...}. read: INVALID_ARGUMENT naming `field` and the file for a missing or
// malformed file, a mix other than `mix`, or bad kinds.
Result<std::vector<ConstraintKind>> readPhoenixCalibration(const std::string& path, PhoenixMix mix,
                                                           const std::string& field);

}  // namespace morpheus::sim
