// Dynamic reprovisioning (DRA) policies, Morpheus §7. Pure: no I/O, no
// threads, no clock — the RM's monitoring thread gathers a ReprovisionInput
// for each running reservation once per step and asks the configured policy
// for a decision. The RM then asks the planner for room (current instance
// only) and charges the owner's budget; the policy never sees the plan.
//
// Policies are stateless and re-entrant (docs/design/conventions.md "Shape"): anything
// that must persist between steps (Jockey's previous allocation, for its
// hysteresis) comes in through the input.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/ids.h"
#include "common/resource.h"
#include "common/status.h"

namespace morpheus::reprovision {

// One stage of a running job, for Jockey's simulator (EuroSys'12 §4.1: per-
// stage task counts and task durations from the job's own history). A stage
// starts when every stage in `deps` has finished all its tasks.
struct StageState {
  std::string name;
  std::vector<size_t> deps;     // indices into ReprovisionInput::stages; must form a DAG
  int64_t tasks = 0;            // all tasks of the stage
  int64_t completed = 0;        // tasks that succeeded
  std::vector<Millis> running;  // elapsed time of each running task (running.size() tasks)
  // Recorded task duration of the stage: the mean of its tasks that succeeded
  // in this run, else of the same stage in the last run of the job; 0 =
  // unknown (the simulator then takes the mean of the known stages).
  Millis task_duration{0};
};

// What the RM knows about one running reservation at the current step.
// Container counts are in units of the reservation's container size.
struct ReprovisionInput {
  ReservationId reservation;
  TimePoint now;
  Millis step{60000};
  int64_t used_containers = 0;     // containers of the bound apps in use now, AMs included
  int64_t am_containers = 0;       // of used_containers: the AMs' (they run no tasks)
  int64_t pending_containers = 0;  // outstanding asks of the bound apps
  int64_t skyline_now = 0;         // planned containers (guarantee) at the current step,
                                   // excluding extra already granted
  int64_t extra_now = 0;           // extra containers granted earlier and still active
  // Planned containers over the last R_recent, oldest first (current step last).
  std::vector<int64_t> skyline_recent;
  int64_t budget_remaining_container_ms = 0;  // what is left of the owner's signed-off budget
  // Progress against the plan (Morpheus §7: DRA reacts to jobs falling
  // behind their plan), both since the current instance's first review and
  // sampled once per review (containers x interval), this review included:
  // container-ms the bound apps used, and container-ms guaranteed to them
  // (the plan plus extra granted). morpheus-dra grants only while
  // used_container_ms_so_far <= guaranteed_container_ms_so_far: a job that ran
  // ahead on borrowed (opportunistic) capacity is not behind, and a grant to
  // it would only preempt others. A job at its guarantee stays eligible, so a
  // skyline too small for a busy cluster can still be topped up.
  int64_t used_container_ms_so_far = 0;
  int64_t guaranteed_container_ms_so_far = 0;

  // Jockey (EuroSys'12 §4): the job's stages as its simulator sees them,
  // and the instance's deadline. Empty stages = the AM reports none (the
  // jockey policy then makes no decision).
  TimePoint deadline;
  std::vector<StageState> stages;
  // The allocation (plan + extra, containers) this policy chose at the
  // previous review of the same instance (ReprovisionDecision::allocation);
  // 0 = none, i.e. the first review or no decision last time. Jockey's
  // hysteresis smooths from it; the caller (DraMonitor) keeps it.
  int64_t previous_allocation = 0;
};

// A proposal: hold `extra_containers` on top of the plan for `duration`,
// starting now. It replaces any earlier grant (grants are re-evaluated every
// step and lapse after their duration); nullopt means "no extra needed".
struct ReprovisionDecision {
  int64_t extra_containers = 0;
  Millis duration{0};
  std::string rationale;  // for logs and `reservation show`
  // The total allocation (plan + extra, containers) the policy aims at; the
  // caller feeds it back as ReprovisionInput::previous_allocation.
  int64_t allocation = 0;
};

class ReprovisionPolicy {
 public:
  virtual ~ReprovisionPolicy() = default;
  virtual std::string name() const = 0;
  // nullopt: no change needed. A decision never exceeds what the job asks for
  // (demand above the plan) nor the remaining budget.
  virtual std::optional<ReprovisionDecision> decide(const ReprovisionInput& in) const = 0;
};

// Morpheus §7: grants only to a job not ahead of its plan (used so far <=
// guaranteed so far, ReprovisionInput); then, when demand exceeds the
// skyline, min(demand - skyline(t), rho * max(skyline over R_recent)) for T.
// rho, T and R_recent as in the paper (defaults rho = 2, T = 60 s,
// R_recent = 2 min; R_recent is applied by the caller when it fills
// skyline_recent, and kept here for documentation and validation).
// The planned containers of a reservation's current instance (placement,
// extras excluded) over the R_recent ending at `now`, oldest first, the
// current step last (ReprovisionInput::skyline_recent; steps before
// `instance.start` count as nothing planned). When nothing is planned over
// that span but an earlier step of the instance had something and its window
// is still open (now < instance.end), the R_recent ending at the instance's
// last planned step instead: a run that overran its
// skyline is the one most behind its plan, and morpheus-dra's cap, rho x
// max(skyline over R_recent), read over wall-clock time would be 0 for it
// R_recent after its skyline ended, so nothing could reach it in the rest of
// its window (a skyline held whole, planner::SkylineSteps, ends where the LP
// fitted it, not stretched to the deadline). The RM's DRA monitor and
// morpheus-sim both read the recent skyline through this.
std::vector<Resource> recentPlanned(const std::function<Resource(TimePoint)>& planned_at,
                                    TimePoint now, TimePoint instance_start, TimePoint instance_end,
                                    Millis recent, Millis step);

struct MorpheusDraOptions {
  double rho = 2.0;
  Millis extension{60000};  // T: how long a grant lasts before re-evaluation
  Millis recent{120000};    // R_recent
  // false (default): no grant to a job ahead of its plan (aheadOfPlan).
  // true: the rule is off and any job whose demand exceeds its skyline may
  // get a grant; for measuring what the rule costs jobs that borrowed early
  // and then fell behind (dra.grant-when-ahead, morpheus-sim
  // --dra-grant-when-ahead).
  bool grant_when_ahead = false;
  // Over how long "ahead" is judged (reviewInput): 0 (default, the RM's)
  // since the instance's first review; > 0 the last ahead_window only
  // (morpheus-sim --dra-ahead-window, for measuring whether early borrowing
  // is what the rule misreads).
  Millis ahead_window{0};
};

// The "not ahead of its plan" rule's test: the job used more container-ms so
// far in its instance than it was guaranteed (plan + extra). Such a job ran
// ahead on borrowed capacity, even when a late stage now leaves it behind in
// time; morpheus-dra withholds grants from it unless grant_when_ahead.
bool aheadOfPlan(const ReprovisionInput& in);

// Jockey (EuroSys'12 §4.3), the control loop run once per review:
//  - progress p = the fraction of the job's total task time completed
//    (jockeyProgress);
//  - C(p, a) = predicted time to completion with a containers, from the job's
//    recorded per-stage task counts and durations (jockeyRemaining); a counts
//    task containers, the allocation is a + the AMs' containers (the plan and
//    the skyline count both);
//  - utility: full when the job finishes by the deadline, falling after it, so
//    the raw allocation is the least a with C(p, a) * (1 + slack) <= time left,
//    or, when none meets it, the a that finishes soonest (all remaining tasks
//    at once);
//  - dead zone: while the previous allocation is predicted (with slack) to
//    finish neither late nor more than `dead_zone` early, it is kept;
//  - hysteresis: a = prev + hysteresis * (raw - prev), rounded away from prev.
// Extra = a - plan, never more than the job asks for above the plan, nor
// max_extra_containers, nor the budget. The decision carries a (allocation),
// which the caller returns as previous_allocation at the next review. Cost
// per decision: O(log T) simulations (binary search on a), T = remaining
// tasks.
struct JockeyOptions {
  double slack = 0.2;       // predicted remaining time is multiplied by 1 + slack
  Millis dead_zone{60000};  // D: width of the no-change band before the deadline
  double hysteresis = 0.5;  // alpha in (0, 1]: share of the step towards the raw allocation
  Millis extension{60000};  // T: how long a grant lasts before re-evaluation
  int64_t max_extra_containers = 1 << 30;
};

// Jockey's progress indicator: sum over stages of task time done (completed
// tasks x duration + running tasks' elapsed time, capped at the duration),
// over the total task time. Stages of unknown duration take the mean of the
// known ones. 1 for an empty or fully unknown job. Pure.
double jockeyProgress(const std::vector<StageState>& stages);

// Jockey's C(p, a): the time the rest of the job takes with `allocation`
// containers, by list-scheduling the remaining tasks (Jockey's simulator):
// running tasks keep their containers and end after duration - elapsed (at
// once when already over); a stage's tasks become ready when all its `deps`
// finished; ready tasks take free containers in stage order. nullopt when no
// stage duration is known, the deps are not a DAG or out of range, or
// allocation < 1. Cost O(tasks x log allocation). Pure.
std::optional<Millis> jockeyRemaining(const std::vector<StageState>& stages, int64_t allocation);

std::unique_ptr<ReprovisionPolicy> makeMorpheusDra(const MorpheusDraOptions& opts);
std::unique_ptr<ReprovisionPolicy> makeJockey(const JockeyOptions& opts);

// Chooses by name: "morpheus-dra" or "jockey". INVALID_ARGUMENT naming
// `field` otherwise.
Result<std::unique_ptr<ReprovisionPolicy>> makePolicy(const std::string& name,
                                                      const MorpheusDraOptions& dra,
                                                      const JockeyOptions& jockey,
                                                      const std::string& field);

}  // namespace morpheus::reprovision
