// The aggregate ad-hoc model's capacity split (sim/engine/aggregate_adhoc.h).
#include "sim/engine/aggregate_adhoc.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>

namespace morpheus::sim {

std::vector<double> maxMinShares(const std::vector<double>& want, double total) {
  std::vector<double> out(want.size(), 0.0);
  std::vector<size_t> order(want.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return want[a] < want[b]; });
  double left = std::max(0.0, total);
  for (size_t i = 0; i < order.size(); i++) {
    const double level = left / static_cast<double>(order.size() - i);
    const double w = std::max(0.0, want[order[i]]);
    out[order[i]] = std::min(w, level);
    left -= out[order[i]];
  }
  return out;
}

std::vector<int64_t> aggregateAdhocShares(const AggregateInput& in) {
  return aggregateAdhocSplit(in).held;
}

AggregateSplit aggregateAdhocSplit(const AggregateInput& in) {
  AggregateSplit split;
  split.held.assign(in.pools.size(), 0);
  split.fair.assign(in.pools.size(), 0);
  if (in.capacity.isZero() || in.pools.empty()) return split;
  auto share = [&](const Resource& r) { return r.dominantShare(in.capacity); };
  auto positive = [](const Resource& r) { return Resource::max(r, Resource()); };

  // 1. Reservations' claims within their guarantees, and what they still need.
  double claimed = 0;
  Resource periodic_used, unmet;
  std::vector<double> borrow;  // per reservation borrowing beyond its guarantee
  for (const auto& r : in.reservations) {
    const Resource demand = r.used + r.pending;
    const Resource claim = Resource::min(r.guarantee, demand);
    claimed += share(claim);
    unmet += positive(claim - r.used);
    periodic_used += r.used;
    const Resource beyond = positive(demand - r.guarantee);
    if (!beyond.isZero()) borrow.push_back(share(beyond));
  }

  // 2. Leaf queues (in name order) and borrowing reservations share the rest.
  std::map<std::string, std::vector<size_t>> pools_of;  // queue -> pool indices
  std::map<std::string, Resource> periodic_of;          // queue -> unreserved demand
  for (size_t p = 0; p < in.pools.size(); p++) pools_of[in.pools[p].queue].push_back(p);
  for (const auto& q : in.periodic) {
    periodic_of[q.queue] += q.used + q.pending;
    periodic_used += q.used;
  }
  std::vector<std::string> queues;
  std::vector<double> want;
  for (const auto& [q, pools] : pools_of) {
    double w = 0;
    for (size_t p : pools) w += share(in.pools[p].shape * in.pools[p].demand);
    auto it = periodic_of.find(q);
    if (it != periodic_of.end()) w += share(it->second);
    queues.push_back(q);
    want.push_back(w);
  }
  for (const auto& [q, d] : periodic_of) {
    if (pools_of.count(q) == 0) want.push_back(share(d));  // a periodic-only queue
  }
  want.insert(want.end(), borrow.begin(), borrow.end());
  const std::vector<double> got = maxMinShares(want, 1.0 - claimed);

  // 3. Inside a queue: its pools and its periodic apps, max-min.
  std::vector<double> pool_share(in.pools.size(), 0.0);
  for (size_t qi = 0; qi < queues.size(); qi++) {
    const auto& pools = pools_of[queues[qi]];
    std::vector<double> w;
    for (size_t p : pools) w.push_back(share(in.pools[p].shape * in.pools[p].demand));
    auto it = periodic_of.find(queues[qi]);
    if (it != periodic_of.end()) w.push_back(share(it->second));
    const std::vector<double> inner = maxMinShares(w, got[qi]);
    for (size_t k = 0; k < pools.size(); k++) pool_share[pools[k]] = inner[k];
  }

  // 4. Never over periodic containers, nor over the reservations' unmet need.
  split.unmet = unmet;
  Resource free = positive(in.capacity - periodic_used - unmet);
  for (size_t p = 0; p < in.pools.size(); p++) {
    const AggregatePool& pool = in.pools[p];
    if (pool.shape.isZero() || pool.demand <= 0) continue;
    const double unit = share(pool.shape);
    // The tolerance absorbs rounding of the shares (a pool given its whole
    // demand must get all of it).
    auto fair = static_cast<int64_t>(std::floor(pool_share[p] / unit + 1e-9));
    fair = std::max<int64_t>(0, std::min(fair, pool.demand));
    const int64_t n = std::max<int64_t>(0, std::min(fair, free.countFitting(pool.shape)));
    split.fair[p] = fair;
    split.held[p] = n;
    free -= pool.shape * n;
  }
  return split;
}

Resource refillAggregate(Resource room, const std::vector<Resource>& shapes,
                         const std::vector<int64_t>& fair, std::vector<int64_t>& held,
                         Resource& unmet) {
  auto positive = [](const Resource& r) { return Resource::max(r, Resource()); };
  room = positive(room);
  const Resource served = Resource::min(room, unmet);
  room -= served;
  unmet -= served;
  Resource taken;
  for (size_t p = 0; p < shapes.size(); p++) {
    if (shapes[p].isZero() || held[p] >= fair[p]) continue;
    const int64_t k = std::min(fair[p] - held[p], room.countFitting(shapes[p]));
    if (k <= 0) continue;
    held[p] += k;
    room -= shapes[p] * k;
    taken += shapes[p] * k;
  }
  return taken;
}

}  // namespace morpheus::sim
