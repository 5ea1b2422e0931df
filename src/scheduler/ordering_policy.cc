#include "scheduler/ordering_policy.h"

namespace morpheus::sched {

PolicyPoints extensionPoints(const QueueOrderingPolicy& policy) {
  PolicyPoints p;
  p.order = &policy;
  p.dag = dynamic_cast<const DagPlanner*>(&policy);
  p.no_dag = dynamic_cast<const NoDagPlanner*>(&policy);
  p.apps = dynamic_cast<const AppOrdering*>(&policy);
  p.constrained_apps = dynamic_cast<const ConstraintAwareAppOrdering*>(&policy);
  p.users = dynamic_cast<const UserOrdering*>(&policy);
  p.asks = dynamic_cast<const AskChooser*>(&policy);
  p.pack = dynamic_cast<const CrossAppPacker*>(&policy);
  p.long_cap = dynamic_cast<const LongWorkCap*>(&policy);
  return p;
}

double DrfOrderingPolicy::score(const Resource& used, double weight,
                                const Resource& cluster) const {
  return used.dominantShare(cluster) / weight;
}

}  // namespace morpheus::sched
