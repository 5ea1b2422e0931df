#include "scheduler/policies/phoenix_policy.h"

namespace morpheus::sched {

double PhoenixOrderingPolicy::score(const Resource& used, double weight,
                                    const Resource& cluster) const {
  return used.dominantShare(cluster) / weight;
}

double PhoenixOrderingPolicy::appScore(const AppInput& in) const {
  const double wait = use_crv_ ? static_cast<double>(in.estimated_wait.count()) : 0.0;
  const double since = static_cast<double>(toEpochMs(in.since));
  return since + static_cast<double>(in.expected_duration.count()) - wait;
}

}  // namespace morpheus::sched
