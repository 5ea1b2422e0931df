// Class selection per job for harvesting (Zhang et al., OSDI'16
// §4.1, Algorithm 1). Decides on which primary-tenant classes a job's
// secondary containers should run, so that a primary's growth kills as few
// of them as possible:
//  1. the job's length type from its last run (unseen jobs are medium);
//  2. its maximum concurrent containers from its DAG (breadth-first: the
//     largest sum of task counts over the stages at one depth);
//  3. each class's headroom for that type (utilisation fractions):
//       short:  1 - current
//       medium: 1 - max(average, current)
//       long:   1 - max(peak, current)
//     times the class's capacity in containers of the job's size, minus the
//     containers other secondaries (and the NMs' reserves) already hold
//     there: the headroom is the primary's, so what earlier jobs took from
//     it is gone for this one (counted node by node when the nodes are
//     given: a container does not span nodes);
//  4. among classes whose headroom holds the whole job, one is drawn with
//     probability proportional to its ranking weight for the type (options);
//     when none holds it alone, classes are combined in decreasing weight
//     (then headroom) until they do; when even all together do not, none.
// The result becomes a soft node constraint (key harvest-class) on the job's
// asks: the scheduler prefers those nodes and falls back after its soft-
// constraint delay.
// Pure and stateless: the random draw comes in as a number in [0, 1), so the
// same input gives the same choice. Cost O(C log C) for C classes.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/status.h"
#include "harvest/harvest_classes.h"
#include "scheduler/types.h"

namespace morpheus::rm {

enum class JobLength { kShort, kMedium, kLong };
const char* jobLengthName(JobLength l);

struct SelectionOptions {
  Millis short_max{Millis(5 * 60 * 1000)};  // a last run up to this is short (default 5 min)
  Millis long_min{Millis(60 * 60 * 1000)};  // a last run of at least this is long (default 1 h)
  // Ranking weight per (length, pattern); 0 = never chosen. Defaults: short
  // jobs prefer unpredictable classes (they finish before a change matters
  // and leave the predictable ones to longer jobs), medium prefer periodic,
  // long prefer constant.
  std::map<JobLength, std::map<UtilPattern, double>> weights = {
      {JobLength::kShort,
       {{UtilPattern::kUnpredictable, 3},
        {UtilPattern::kPeriodic, 2},
        {UtilPattern::kConstant, 1}}},
      {JobLength::kMedium,
       {{UtilPattern::kPeriodic, 3},
        {UtilPattern::kConstant, 2},
        {UtilPattern::kUnpredictable, 1}}},
      {JobLength::kLong,
       {{UtilPattern::kConstant, 3},
        {UtilPattern::kPeriodic, 2},
        {UtilPattern::kUnpredictable, 1}}},
  };
};

// One node of a class as the selector sees it now (ClassState::nodes).
struct NodeSlots {
  double current = 0;          // its primary's current utilisation (fraction)
  int64_t capacity_slots = 0;  // containers of the job's size it holds when idle
  int64_t taken_slots = 0;     // of them, held by other secondaries or the NM's reserve
  // Containers of the job's size the node can take now, whatever its class's
  // history says (the NM's offer less what runs there); -1 = unknown, taken
  // as floor((1 - current) x capacity_slots) - taken_slots (openSlots).
  int64_t open_slots = -1;
};

// The class as the selector sees it now.
struct ClassState {
  HarvestClass cls;
  double current = 0;          // the members' current utilisation (fraction)
  int64_t capacity_slots = 0;  // containers of the job's size the class's nodes hold when idle
  // Containers of the job's size the class's nodes already give to other
  // secondary containers or keep as the NMs' reserve (0 = none).
  int64_t taken_slots = 0;
  // Optional: the same per node. A container runs on one node, so the
  // class's room in containers is the sum of each node's whole containers;
  // with nodes given, freeSlots counts them node by node (each node's own
  // current, the class's average and peak) and ignores the three totals
  // above. Pooled, a class of nodes each with 0.7 of a container's headroom
  // would count 0.7 x nodes containers that no node can hold.
  std::vector<NodeSlots> nodes{};
};

struct StageShape {
  std::string name;
  int64_t tasks = 0;
  std::vector<std::string> depends_on;
};

// Unseen (nullopt) = medium.
JobLength lengthType(std::optional<Millis> last_run, const SelectionOptions& o);
// INVALID_ARGUMENT naming "stages[i].depends_on" for an unknown stage or a cycle.
Result<int64_t> maxConcurrentContainers(const std::vector<StageShape>& stages);
double headroom(JobLength type, const HarvestClass& c, double current);
// floor(headroom * capacity_slots) - taken_slots, at least 0; with
// c.nodes, the sum of that over the nodes (each at least 0).
int64_t freeSlots(JobLength type, const ClassState& c);

// The chosen class ids (empty = nothing fits). `draw` in [0, 1).
std::vector<std::string> selectClasses(JobLength type, int64_t max_concurrent,
                                       const std::vector<ClassState>& classes,
                                       const SelectionOptions& o, double draw);

// ---- The ranked fallback ----
// Where a job's containers go when no node of its chosen classes can take
// one now (or Algorithm 1 chose none): Algorithm 1's order for combining
// classes (step 4 above) applied node by node. A node ranks by its class's
// ranking weight for the job's length type, then by its headroomMargin (the
// room its class's history predicts under that type's headroom; the least
// negative is the least predicted overrun). The simulator places each such
// task on the best-ranked node with a container of room now
// (HistoryFallback::kRanked); the RM, which constrains classes rather than
// nodes, adds the class of that node to the job's soft constraint.

// The ranking weight of classes of `p` for jobs of `type` (0 when none).
double rankingWeight(const SelectionOptions& o, JobLength type, UtilPattern p);
// The room left on `n` (a node of class `c`) under the headroom of `type`, in
// containers of the job's size, unrounded: (1 - used) x capacity_slots -
// taken_slots with used = 1 - headroom(type, c, n.current); negative: how
// far the containers there already exceed it.
double headroomMargin(JobLength type, const HarvestClass& c, const NodeSlots& n);
// Containers of the job's size `n` can take now: n.open_slots when known,
// else floor((1 - n.current) x capacity_slots) - taken_slots; at least 0.
int64_t openSlots(const NodeSlots& n);
// True when node (weight_a, margin_a) ranks before (weight_b, margin_b).
bool ranksBefore(double weight_a, double margin_a, double weight_b, double margin_b);
// The classes with a node that can take a container now (openSlots >= 1),
// ordered by their best such node's rank (ranksBefore), best first; equal
// ranks by class id. Classes without such a node are left out.
std::vector<std::string> rankedFallback(JobLength type, const std::vector<ClassState>& classes,
                                        const SelectionOptions& o);

// A soft constraint on node attribute "harvest-class" with `classes` as
// values; nullopt for no classes (no constraint).
std::optional<sched::PlacementConstraint> harvestConstraint(
    const std::vector<std::string>& classes);

}  // namespace morpheus::rm
