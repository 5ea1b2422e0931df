// morpheus-sim strategies (Morpheus OSDI'16 §9, Fig.
// 10a ablations). A strategy says how each periodic job is provisioned in the
// evaluation days and which DRA policy runs:
//
//  baseline        user provisioning: the user's request — user_containers
//                  from each instance's submit to its deadline — submitted to
//                  the reservation system (greedy agent, as YARN's), which
//                  admits it only if the plan can hold it; a refused job runs
//                  in its ad-hoc queue. Plus fair share of the rest (work
//                  conserving). Training runs under it (the status quo).
//  morpheus        inferred SLO (§4) + LP skyline (§5) + LowCost packing (§6) +
//                  DRA "morpheus-dra" (§7).
//  slo-packing     inferred SLO + LowCost packing of the user's provisioning
//                  (user_containers for the median training runtime); no DRA.
//  lp-skyline      LP skyline reserved at the job's submit time, as the user
//                  would request it (no packing, no inferred window); no DRA.
//  no-dra          morpheus without DRA.
//  greedy-planner  morpheus with the greedy agent instead of LowCost.
//  jockey-dra      morpheus with the Jockey DRA policy.
//  morpheus-alphaA morpheus with skyline alpha A (--alpha sweep).
//
// Jobs a strategy cannot reserve for (SLO not actionable, too few runs, plan
// full) run without a reservation in their ad-hoc queue (counted in the
// strategy's extra "unreserved_jobs").
#pragma once

#include <string>
#include <vector>

#include "common/status.h"

namespace morpheus::sim {

enum class Provisioning {
  kUserReservation,  // baseline
  kPackedUser,       // slo-packing
  kSkylineAtSubmit,  // lp-skyline
  kPackedSkyline,    // morpheus and its variants
};

struct StrategySpec {
  std::string name;
  Provisioning provisioning = Provisioning::kUserReservation;
  std::string agent = "lowcost";  // planner agent for planned provisionings
  std::string dra;                // "" (none), "morpheus-dra" or "jockey"
  double alpha = 0.5;             // skyline LP alpha (Morpheus §5)
};

// Every strategy name `parseStrategies` accepts, in the default run order.
std::vector<std::string> strategyNames();

// The specs for `names` (empty = all of strategyNames()), followed by one
// "morpheus-alpha<A>" per alpha in `alphas`. `default_alpha` is the morpheus
// alpha when no sweep names it. INVALID_ARGUMENT naming "strategy" for an
// unknown or repeated name, "alpha" for a value outside [0, 1].
Result<std::vector<StrategySpec>> parseStrategies(const std::vector<std::string>& names,
                                                  const std::vector<double>& alphas,
                                                  double default_alpha);

// "0.01,0.1,0.5" -> values; INVALID_ARGUMENT naming "alpha" otherwise.
Result<std::vector<double>> parseAlphaList(const std::string& text);

}  // namespace morpheus::sim
