#include "scheduler/policies/phoenix_policy.h"

namespace morpheus::sched {

double phoenixDeadline(const AppInput& in, Millis estimated_wait) {
  const double since = static_cast<double>(toEpochMs(in.since));
  return since + static_cast<double>(in.expected_duration.count()) -
         static_cast<double>(estimated_wait.count());
}

double PhoenixOrderingPolicy::score(const Resource& used, double weight,
                                    const Resource& cluster) const {
  return used.dominantShare(cluster) / weight;
}

double PhoenixOrderingPolicy::appScore(const AppInput& in, Millis estimated_wait) const {
  return phoenixDeadline(in, estimated_wait);
}

double PhoenixNoCrvOrderingPolicy::score(const Resource& used, double weight,
                                         const Resource& cluster) const {
  return used.dominantShare(cluster) / weight;
}

double PhoenixNoCrvOrderingPolicy::appScore(const AppInput& in) const {
  return phoenixDeadline(in, Millis(0));
}

}  // namespace morpheus::sched
