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

// A soft constraint on node attribute "harvest-class" with `classes` as
// values; nullopt for no classes (no constraint).
std::optional<sched::PlacementConstraint> harvestConstraint(
    const std::vector<std::string>& classes);

}  // namespace morpheus::rm
