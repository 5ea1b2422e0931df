#include "scheduler/ordering_policy.h"

namespace morpheus::sched {

double DrfOrderingPolicy::score(const Resource& used, double weight,
                                const Resource& cluster) const {
  return used.dominantShare(cluster) / weight;
}

}  // namespace morpheus::sched
