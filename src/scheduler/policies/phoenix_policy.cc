#include "scheduler/policies/phoenix_policy.h"

#include <algorithm>

namespace morpheus::sched {

double phoenixRemainingWork(const AppInput& in) {
  return static_cast<double>(std::max<int64_t>(0, in.pending_containers)) *
         static_cast<double>(std::max<int64_t>(0, in.expected_duration.count()));
}

double phoenixKey(const AppInput& in, Millis estimated_wait, Millis bypass_bound) {
  const double since = static_cast<double>(toEpochMs(in.since));
  const double advance =
      std::clamp(phoenixRemainingWork(in) - static_cast<double>(estimated_wait.count()), 0.0,
                 static_cast<double>(std::max<int64_t>(0, bypass_bound.count())));
  return since + advance;
}

double phoenixKindLongShare(const PhoenixLongWork& long_work, double short_share) {
  if (long_work.reserve_factor <= 0 || short_share < 0) return long_work.long_share;
  return std::clamp(1.0 - long_work.reserve_factor * short_share, long_work.long_share, 1.0);
}

double PhoenixOrderingPolicy::score(const Resource& used, double weight,
                                    const Resource& cluster) const {
  return used.dominantShare(cluster) / weight;
}

double PhoenixOrderingPolicy::appScore(const AppInput& in, Millis estimated_wait) const {
  return phoenixKey(in, estimated_wait, bypass_bound_);
}

double PhoenixNoCrvOrderingPolicy::score(const Resource& used, double weight,
                                         const Resource& cluster) const {
  return used.dominantShare(cluster) / weight;
}

double PhoenixNoCrvOrderingPolicy::appScore(const AppInput& in) const {
  return phoenixKey(in, Millis(0), bypass_bound_);
}

}  // namespace morpheus::sched
