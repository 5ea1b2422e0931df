// Phoenix in the scheduler core: constraint matching on resource
// kinds, the Constraint Resource Vector, the phoenix ordering and admission
// control's pending reasons.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "scheduler/policies/crv.h"
#include "scheduler/policies/phoenix_policy.h"
#include "scheduler/policies/policy_factory.h"
#include "scheduler/scheduler.h"

namespace morpheus::sched {
namespace {

const TimePoint kT0 = fromEpochMs(1'800'000'000'000);

PlacementConstraint hard(std::string key, std::vector<std::string> values,
                         ConstraintOp op = ConstraintOp::kIn) {
  PlacementConstraint c;
  c.key = std::move(key);
  c.values = std::move(values);
  c.hard = true;
  c.op = op;
  return c;
}

ResourceRequest job(int32_t count, Millis duration, std::vector<PlacementConstraint> cs = {}) {
  ResourceRequest r;
  r.priority = 1;
  r.capability = Resource(1024, 1);
  r.count = count;
  r.expected_duration = duration;
  r.constraints = std::move(cs);
  return r;
}

// `p` orders root.default, as scheduler.policy {root.default: <p>} in the RM.
std::unique_ptr<Scheduler> make(std::shared_ptr<const QueueOrderingPolicy> p) {
  SchedulerOptions o;
  o.adhoc_queues.push_back({"root.default", 1.0, std::move(p)});
  auto s = Scheduler::create(std::move(o));
  EXPECT_TRUE(s.isOk()) << s.status().toString();
  return std::move(s).value();
}

std::vector<std::string> grantOrder(Scheduler& s, const std::string& node, TimePoint t) {
  auto r = s.nodeUpdate(NodeId(node), t);
  EXPECT_TRUE(r.isOk()) << r.status().toString();
  std::vector<std::string> out;
  for (const auto& a : r->allocations) out.push_back(a.app.value());
  return out;
}

// Lower bounds compare numbers and versions, not strings; a missing or
// non-numeric attribute never matches.
TEST(ConstraintMatchTest, LowerBoundsOnNumbersAndVersions) {
  NodeAttributes n = {{"cores", "32"}, {"kernel", "5.10.0-21-amd64"}, {"isa", "x86_64"}};
  EXPECT_TRUE(constraintMatches(hard("cores", {"16"}, ConstraintOp::kAtLeast), n));
  EXPECT_TRUE(constraintMatches(hard("cores", {"32"}, ConstraintOp::kAtLeast), n));
  EXPECT_FALSE(constraintMatches(hard("cores", {"64"}, ConstraintOp::kAtLeast), n));
  EXPECT_TRUE(constraintMatches(hard("kernel", {"5.4"}, ConstraintOp::kVersionAtLeast), n));
  EXPECT_FALSE(constraintMatches(hard("kernel", {"6.1"}, ConstraintOp::kVersionAtLeast), n));
  EXPECT_FALSE(constraintMatches(hard("isa", {"1"}, ConstraintOp::kAtLeast), n));
  EXPECT_FALSE(constraintMatches(hard("gpu", {}), n));
  EXPECT_TRUE(constraintMatches(hard("isa", {"aarch64", "x86_64"}), n));
  EXPECT_EQ(describeConstraint(hard("isa", {"x86_64", "aarch64"})), "isa in {aarch64,x86_64}");
  EXPECT_EQ(describeConstraint(hard("kernel", {"5.4"}, ConstraintOp::kVersionAtLeast)),
            "kernel >= v5.4");
}

// The CRV's demand, supply, ratio and M/G/1 estimate follow asks and the free
// capacity of matching nodes incrementally; a resource without demand is
// forgotten.
TEST(CrvTest, RatioAndWaitFollowDemandAndSupply) {
  ConstraintResourceVector crv;
  auto* fast = crv.addNode(NodeId("fast"), {{"network_gbps", "40"}}, 8);
  crv.addNode(NodeId("slow"), {{"network_gbps", "10"}}, 8);
  const auto c = hard("network_gbps", {"25"}, ConstraintOp::kAtLeast);
  crv.changeDemand({c}, 1, Millis(10000), 4);
  auto e = crv.entries();
  ASSERT_EQ(e.size(), 1u);
  EXPECT_EQ(e[0].resource, "network_gbps >= 25");
  EXPECT_EQ(e[0].nodes, 1);
  EXPECT_EQ(e[0].demand_vcores, 4);
  EXPECT_EQ(e[0].supply_vcores, 8);
  EXPECT_DOUBLE_EQ(e[0].ratio, 0.5);
  // rho 0.5, deterministic S = 10 s: W = 1 * 10 s / 2 = 5 s.
  EXPECT_EQ(crv.estimatedWait({c}), Millis(5000));
  crv.nodeFreeChanged(fast, -6);  // 2 vcores left: rho capped at 0.95
  EXPECT_EQ(crv.entries()[0].supply_vcores, 2);
  EXPECT_EQ(crv.estimatedWait({c}), Millis(std::llround(0.95 / 0.05 * 5000)));
  crv.changeDemand({c}, 1, Millis(10000), -4);
  EXPECT_TRUE(crv.entries().empty());
  EXPECT_EQ(crv.estimatedWait({c}), Millis(0));
}

// Deferred free-vcore changes (deferFreeChanges): while no resource was ever
// tracked the CRV is dormant and the caller keeps each node's changes; at
// the first track the CRV takes them, so its supply is that of a CRV told of
// every change, and from then on changes are applied as they come.
TEST(CrvTest, DeferredFreeChangesGiveTheSupplyOfEveryChangeApplied) {
  ConstraintResourceVector eager, lazy;
  std::map<std::string, int64_t> kept;
  lazy.deferFreeChanges([&](const NodeId& id) { return std::exchange(kept[id.value()], 0); });
  EXPECT_TRUE(lazy.dormant());
  EXPECT_FALSE(eager.dormant());
  auto* eager_fast = eager.addNode(NodeId("fast"), {{"network_gbps", "40"}}, 8);
  auto* lazy_fast = lazy.addNode(NodeId("fast"), {{"network_gbps", "40"}}, 8);
  eager.addNode(NodeId("slow"), {{"network_gbps", "10"}}, 8);
  lazy.addNode(NodeId("slow"), {{"network_gbps", "10"}}, 8);
  for (int64_t delta : {-5, 2, -1}) {
    eager.nodeFreeChanged(eager_fast, delta);
    kept["fast"] += delta;
  }
  const auto c = hard("network_gbps", {"25"}, ConstraintOp::kAtLeast);
  eager.changeDemand({c}, 1, Millis(10000), 4);
  lazy.changeDemand({c}, 1, Millis(10000), 4);
  EXPECT_FALSE(lazy.dormant());
  EXPECT_EQ(kept["fast"], 0);
  ASSERT_EQ(lazy.entries().size(), 1u);
  EXPECT_EQ(lazy.entries()[0].supply_vcores, 4);
  EXPECT_EQ(eager.entries()[0].supply_vcores, 4);
  EXPECT_EQ(lazy.estimatedWait({c}), eager.estimatedWait({c}));
  eager.nodeFreeChanged(eager_fast, 3);
  lazy.nodeFreeChanged(lazy_fast, 3);
  EXPECT_EQ(lazy.entries()[0].supply_vcores, 7);
  EXPECT_EQ(lazy.estimatedWait({c}), eager.estimatedWait({c}));
}

// Describing a constraint: kIn sorts its values (so the CRV keys equal sets
// alike), the bounds read their one value as given, an empty kIn is
// presence.
TEST(ConstraintMatchTest, DescriptionsOfEachOperator) {
  EXPECT_EQ(describeConstraint(hard("isa", {"x86_64", "aarch64", "riscv"})),
            "isa in {aarch64,riscv,x86_64}");
  EXPECT_EQ(describeConstraint(hard("isa", {"aarch64"})), "isa in {aarch64}");
  EXPECT_EQ(describeConstraint(hard("gpu", {})), "gpu present");
  EXPECT_EQ(describeConstraint(hard("cores", {"32"}, ConstraintOp::kAtLeast)), "cores >= 32");
  EXPECT_EQ(describeConstraint(hard("cores", {}, ConstraintOp::kAtLeast)), "cores >= ?");
  EXPECT_EQ(describeConstraint(hard("kernel", {}, ConstraintOp::kVersionAtLeast)), "kernel >= v?");
}

// estimatedWait through a Resolved cache kept across every kind of CRV
// change (resources tracked and forgotten, nodes added and removed, free
// capacity moving) equals the lookup from scratch, for constraint lists
// naming tracked, untracked, soft and unsorted-kIn constraints.
TEST(CrvTest, ResolvedWaitsEqualFreshLookupsThroughEveryChange) {
  ConstraintResourceVector crv;
  const std::vector<std::vector<PlacementConstraint>> lists = {
      {hard("isa", {"aarch64"})},
      {hard("isa", {"x86_64", "aarch64"})},  // the same resource as {aarch64,x86_64}
      {hard("isa", {"aarch64", "x86_64"}), hard("cores", {"32"}, ConstraintOp::kAtLeast)},
      {hard("cores", {"32"}, ConstraintOp::kAtLeast)},
      {hard("kernel", {"5.10"}, ConstraintOp::kVersionAtLeast)},
      {[] {
        auto c = hard("isa", {"aarch64"});
        c.hard = false;  // soft: never a CRV resource
        return c;
      }()},
      {},
  };
  std::vector<ConstraintResourceVector::Resolved> caches(lists.size());
  std::vector<ConstraintResourceVector::NodeSlot*> slots;
  uint64_t x = 12345;
  auto next = [&x](uint64_t n) {
    x = x * 6364136223846793005ULL + 1442695040888963407ULL;
    return (x >> 33) % n;
  };
  const char* isas[] = {"aarch64", "x86_64"};
  const char* cores[] = {"16", "32", "64"};
  const char* kernels[] = {"5.4", "5.10", "6.1"};
  // Per list, the (count, duration) of each arrival still pending.
  std::vector<std::vector<std::pair<int64_t, Millis>>> outstanding(lists.size());
  int compared = 0, nonzero = 0;
  for (int step = 0; step < 3000; step++) {
    switch (next(5)) {
      case 0: {  // a node joins
        const std::string id = "n" + std::to_string(slots.size());
        slots.push_back(crv.addNode(
            NodeId(id),
            {{"isa", isas[next(2)]}, {"cores", cores[next(3)]}, {"kernel", kernels[next(3)]}},
            static_cast<int64_t>(next(16))));
        break;
      }
      case 1:  // a node leaves
        if (!slots.empty()) {
          const size_t i = next(slots.size());
          if (slots[i] != nullptr) crv.removeNode(NodeId("n" + std::to_string(i)));
          slots[i] = nullptr;
        }
        break;
      case 2:  // free capacity moves
        if (!slots.empty()) {
          const size_t i = next(slots.size());
          crv.nodeFreeChanged(slots[i], static_cast<int64_t>(next(9)) - 4);
        }
        break;
      case 3: {  // asks arrive
        const size_t l = next(lists.size());
        const int64_t n = 1 + static_cast<int64_t>(next(3));
        const Millis d(1000 * (1 + static_cast<int64_t>(next(60))));
        crv.changeDemand(lists[l], 1, d, n);
        outstanding[l].emplace_back(n, d);
        break;
      }
      case 4: {  // asks leave (all of one arrival, so demand may drop to 0)
        const size_t l = next(lists.size());
        if (outstanding[l].empty()) break;
        crv.changeDemand(lists[l], 1, outstanding[l].back().second, -outstanding[l].back().first);
        outstanding[l].pop_back();
        break;
      }
    }
    // Not every list every step: caches also go stale across several changes.
    for (size_t l = 0; l < lists.size(); l++) {
      if (next(3) != 0) continue;
      const Millis fresh = crv.estimatedWait(lists[l]);
      ASSERT_EQ(crv.estimatedWait(lists[l], caches[l]), fresh) << "list " << l << " step " << step;
      compared++;
      if (fresh.count() > 0) nonzero++;
    }
  }
  EXPECT_GT(compared, 1000);
  EXPECT_GT(nonzero, 100);  // the comparison saw real estimates, not only zeros
}

// Phoenix reordering: a short constrained job submitted after two long jobs
// gets the matching node first; FIFO gives it to the long jobs.
TEST(SchedulerPhoenixTest, ShortConstrainedJobOvertakesLongQueue) {
  for (bool phoenix : {false, true}) {
    auto s = make(phoenix ? std::shared_ptr<const QueueOrderingPolicy>(
                                std::make_shared<PhoenixOrderingPolicy>())
                          : std::make_shared<FifoOrderingPolicy>());
    ASSERT_TRUE(s->addNode(NodeId("n1"), Resource(8192, 2), {{"isa", "aarch64"}}).isOk());
    for (const char* app : {"long1", "long2", "short"})
      ASSERT_TRUE(s->addApp(AppId(app), UserId("u"), QueueRef::adhoc("root.default")).isOk());
    ASSERT_TRUE(s->updateAsks(AppId("long1"), {job(10, Millis(600000))}).isOk());
    ASSERT_TRUE(s->updateAsks(AppId("long2"), {job(10, Millis(600000))}).isOk());
    ASSERT_TRUE(
        s->updateAsks(AppId("short"), {job(2, Millis(5000), {hard("isa", {"aarch64"})})}).isOk());
    auto order = grantOrder(*s, "n1", kT0);
    ASSERT_EQ(order.size(), 2u);
    if (phoenix) {
      EXPECT_EQ(order, (std::vector<std::string>{"short", "short"}));
    } else {
      EXPECT_EQ(order, (std::vector<std::string>{"long1", "long1"}));
    }
  }
}

// The CRV estimate advances an app whose hard-constrained resource is
// contended: on the scarce node it goes before a shorter unconstrained app
// (which can run anywhere); without the CRV (shortest first only) it does not.
TEST(SchedulerPhoenixTest, CrvWaitPromotesContendedConstrainedApp) {
  for (bool use_crv : {false, true}) {
    auto s = make(use_crv ? std::shared_ptr<const QueueOrderingPolicy>(
                                std::make_shared<PhoenixOrderingPolicy>())
                          : std::make_shared<PhoenixNoCrvOrderingPolicy>());
    ASSERT_TRUE(s->addNode(NodeId("gpu"), Resource(8192, 2), {{"gpu", "a100"}}).isOk());
    ASSERT_TRUE(s->addNode(NodeId("cpu"), Resource(8192, 2), {}).isOk());
    ASSERT_TRUE(s->addApp(AppId("any"), UserId("u"), QueueRef::adhoc("root.default")).isOk());
    ASSERT_TRUE(s->addApp(AppId("needs"), UserId("u"), QueueRef::adhoc("root.default")).isOk());
    ASSERT_TRUE(s->updateAsks(AppId("any"), {job(2, Millis(20000))}).isOk());
    // 8 vcores of demand on 2 free vcores: rho capped, W = 19 * 30 s / 2.
    ASSERT_TRUE(s->updateAsks(AppId("needs"), {job(8, Millis(30000), {hard("gpu", {})})}).isOk());
    auto order = grantOrder(*s, "gpu", kT0);
    ASSERT_EQ(order.size(), 2u);
    EXPECT_EQ(order[0], use_crv ? "needs" : "any");
  }
}

// scheduler.policy names phoenix like any other leaf policy; it provides the
// constraint-aware app ordering, the others do not.
TEST(PolicyFactoryTest, PhoenixByNameReadsConstraintWaits) {
  auto p = makeOrderingPolicy("phoenix", "scheduler.policy.root.default");
  ASSERT_TRUE(p.isOk()) << p.status().toString();
  EXPECT_EQ((*p)->name(), "phoenix");
  EXPECT_NE(extensionPoints(**p).constrained_apps, nullptr);
  for (const char* n : {"drf", "fifo", "carbyne"}) {
    auto o = makeOrderingPolicy(n, "f");
    ASSERT_TRUE(o.isOk()) << n;
    EXPECT_EQ(extensionPoints(**o).constrained_apps, nullptr) << n;
  }
}

// Each policy provides exactly the extension points it needs: the scheduler
// branches on their presence (ordering_policy.h).
TEST(PolicyFactoryTest, PoliciesProvideTheirExtensionPoints) {
  struct Want {
    const char* name;
    bool dag, no_dag, apps, constrained_apps, users, asks, long_cap;
  };
  for (const Want& w : {Want{"drf", false, false, false, false, false, false, false},
                        Want{"fifo", false, false, false, false, false, false, false},
                        Want{"carbyne", true, true, true, false, true, true, false},
                        Want{"phoenix", false, false, false, true, false, false, true}}) {
    auto p = makeOrderingPolicy(w.name, "f");
    ASSERT_TRUE(p.isOk()) << w.name;
    const PolicyPoints pts = extensionPoints(**p);
    EXPECT_EQ(pts.order, p->get()) << w.name;
    EXPECT_EQ(pts.dag != nullptr, w.dag) << w.name;
    EXPECT_EQ(pts.no_dag != nullptr, w.no_dag) << w.name;
    EXPECT_EQ(pts.apps != nullptr, w.apps) << w.name;
    EXPECT_EQ(pts.constrained_apps != nullptr, w.constrained_apps) << w.name;
    EXPECT_EQ(pts.users != nullptr, w.users) << w.name;
    EXPECT_EQ(pts.asks != nullptr, w.asks) << w.name;
    EXPECT_EQ(pts.long_cap != nullptr, w.long_cap) << w.name;
  }
  const PhoenixNoCrvOrderingPolicy ablation;
  const PolicyPoints no_crv = extensionPoints(ablation);
  EXPECT_NE(no_crv.apps, nullptr);
  EXPECT_EQ(no_crv.constrained_apps, nullptr);
  EXPECT_NE(no_crv.long_cap, nullptr);
}

// The factory's phoenix takes PolicySettings::phoenix (the RM's
// scheduler.phoenix.* keys); by default the cap is off (no cutoff).
TEST(PolicyFactoryTest, PhoenixTakesItsLongWorkSettings) {
  auto def = makeOrderingPolicy("phoenix", "f");
  ASSERT_TRUE(def.isOk());
  const LongWorkCap* cap = extensionPoints(**def).long_cap;
  ASSERT_NE(cap, nullptr);
  EXPECT_EQ(cap->longTask(), Millis(0));
  EXPECT_DOUBLE_EQ(cap->longShare(), kPhoenixLongShare);
  PolicySettings set;
  EXPECT_DOUBLE_EQ(cap->longShareOf(0.01), 1 - kPhoenixReserveFactor * 0.01);
  set.phoenix = {Millis(90000), 0.8, 2.0};
  auto p = makeOrderingPolicy("phoenix", "f", set);
  ASSERT_TRUE(p.isOk());
  EXPECT_EQ(extensionPoints(**p).long_cap->longTask(), Millis(90000));
  EXPECT_DOUBLE_EQ(extensionPoints(**p).long_cap->longShare(), 0.8);
  EXPECT_DOUBLE_EQ(extensionPoints(**p).long_cap->longShareOf(0.05), 0.9);
}

// The long work of a scarce kind (a hard constraint fewer than half of the
// nodes meet): counted per node and kind, kept while the kind has no
// demand, capped at the share only on scarce kinds' nodes, and carried
// through attribute changes and node removal.
TEST(CrvTest, LongWorkHoldsAtMostItsShareOfScarceKinds) {
  ConstraintResourceVector crv;
  auto* gpu = crv.addNode(NodeId("gpu"), {{"gpu", "yes"}, {"ssd", "yes"}}, 8);
  auto* cpu1 = crv.addNode(NodeId("cpu1"), {{"ssd", "yes"}}, 8);
  crv.addNode(NodeId("cpu2"), {{"ssd", "yes"}}, 8);
  crv.addNode(NodeId("cpu3"), {}, 8);
  EXPECT_TRUE(crv.mayHoldLong(gpu, 8, 0.5));  // no kind known yet
  const auto g = hard("gpu", {"yes"}), ssd = hard("ssd", {"yes"});
  crv.changeDemand({g}, 1, Millis(5000), 1);
  crv.changeDemand({g}, 1, Millis(5000), -1);
  crv.changeDemand({ssd}, 1, Millis(5000), 1);
  EXPECT_EQ(crv.entries().size(), 1u);  // gpu has no demand: not in the CRV
  auto kinds = crv.kinds();             // ... but still a kind
  ASSERT_EQ(kinds.size(), 2u);
  EXPECT_EQ(kinds[0].resource, "gpu in {yes}");
  EXPECT_EQ(kinds[0].nodes, 1);
  EXPECT_EQ(kinds[0].vcores, 8);
  EXPECT_TRUE(kinds[0].scarce);
  EXPECT_EQ(kinds[1].nodes, 3);
  EXPECT_FALSE(kinds[1].scarce);  // 3 of 4 nodes
  // 4 of gpu's 8 vcores at share 0.5, not one more; ssd is not capped.
  EXPECT_TRUE(crv.mayHoldLong(gpu, 4, 0.5));
  crv.longHeldChanged(gpu, 3);
  EXPECT_TRUE(crv.mayHoldLong(gpu, 1, 0.5));
  EXPECT_FALSE(crv.mayHoldLong(gpu, 2, 0.5));
  crv.longHeldChanged(gpu, 1);
  EXPECT_FALSE(crv.mayHoldLong(gpu, 1, 0.5));
  EXPECT_TRUE(crv.mayHoldLong(gpu, 4, 1.0));
  EXPECT_TRUE(crv.mayHoldLong(cpu1, 8, 0.5));
  crv.longHeldChanged(cpu1, 8);
  EXPECT_EQ(crv.kinds()[1].long_vcores, 12);
  // A new kind counts the long work already on its nodes.
  crv.changeDemand({hard("gpu", {"yes"}), hard("ssd", {"yes"})}, 1, Millis(5000), 1);
  const auto fast = hard("net", {"40"});
  crv.changeDemand({fast}, 1, Millis(5000), 1);
  EXPECT_EQ(crv.kinds().size(), 3u);
  // Attribute changes keep the node's long work; removal takes it away.
  gpu = crv.setAttributes(NodeId("gpu"), {{"gpu", "yes"}, {"net", "40"}});
  kinds = crv.kinds();
  EXPECT_EQ(kinds[0].long_vcores, 4);  // gpu
  EXPECT_EQ(kinds[1].long_vcores, 4);  // net
  EXPECT_EQ(kinds[2].long_vcores, 8);  // ssd: cpu1 only now
  EXPECT_EQ(kinds[2].nodes, 2);
  EXPECT_FALSE(crv.mayHoldLong(gpu, 1, 0.5));
  crv.longHeldChanged(gpu, -4);
  EXPECT_TRUE(crv.mayHoldLong(gpu, 4, 0.5));
  crv.removeNode(NodeId("cpu1"));
  EXPECT_EQ(crv.kinds()[2].long_vcores, 0);
  EXPECT_EQ(crv.kinds()[2].vcores, 8);
}

// A kind's short share of the work granted to asks requiring it: unknown
// until the grants span one half-life, then short / (short + long) with each
// count halved per half-life since it was added; soft constraints and kinds
// never asked for count nothing. mayHoldLong with a share per kind hands
// each scarce kind its own short share.
TEST(CrvTest, ShortShareOfGrantedWorkDecaysAndWaitsOneHalfLife) {
  ConstraintResourceVector crv;
  auto* gpu = crv.addNode(NodeId("gpu"), {{"gpu", "yes"}}, 8);
  for (const char* n : {"cpu1", "cpu2", "cpu3"}) crv.addNode(NodeId(n), {}, 8);
  const auto g = hard("gpu", {"yes"});
  const Millis h(1000);
  crv.workGranted({g}, 100, false, kT0, h);  // kind not asked for yet: nothing
  crv.changeDemand({g}, 1, Millis(5000), 1);
  ASSERT_EQ(crv.kinds().size(), 1u);
  EXPECT_DOUBLE_EQ(crv.kinds()[0].short_share, -1);
  PlacementConstraint soft = g;
  soft.hard = false;
  crv.workGranted({soft}, 100, false, kT0, h);
  EXPECT_DOUBLE_EQ(crv.kinds()[0].short_share, -1);
  crv.workGranted({g}, 100, false, kT0, h);
  crv.workGranted({g}, 100, true, kT0, h);
  EXPECT_DOUBLE_EQ(crv.kinds()[0].short_share, -1);  // spans 0 < one half-life
  crv.workGranted({g}, 100, true, kT0 + Millis(999), h);
  EXPECT_DOUBLE_EQ(crv.kinds()[0].short_share, -1);
  crv.workGranted({g}, 0, true, kT0 + h, h);
  // 100 short and 100 + 100 long at t0 + 999 ms, each decayed to t0 + 1 s.
  const double d = std::exp2(-1.0 / 1000);
  EXPECT_NEAR(crv.kinds()[0].short_share, 50.0 / (50.0 + 50.0 + 100.0 * d), 1e-9);
  crv.workGranted({g}, 200, false, kT0 + 2 * h, h);
  const double sh = 25 + 200, lo = (50 + 100 * d) / 2;
  EXPECT_NEAR(crv.kinds()[0].short_share, sh / (sh + lo), 1e-9);
  // 8 vcores; no long work held: share_of gets the kind's short share.
  double seen = -2;
  auto share_of = [&seen](double s) {
    seen = s;
    return s > 0.5 ? 0.25 : 1.0;
  };
  EXPECT_TRUE(crv.mayHoldLong(gpu, 2, share_of));
  EXPECT_NEAR(seen, sh / (sh + lo), 1e-9);
  EXPECT_FALSE(crv.mayHoldLong(gpu, 3, share_of));
}

// The share long work may hold of a kind: 1 - reserve_factor x the short
// share, never below long_share nor above 1; long_share while the share is
// unknown or with reserve_factor 0 (the fixed cap).
TEST(PhoenixPolicyTest, KindLongShareFollowsShortShare) {
  const PhoenixLongWork lw{Millis(60000), 0.9, 3.0};
  EXPECT_DOUBLE_EQ(phoenixKindLongShare(lw, -1), 0.9);
  EXPECT_DOUBLE_EQ(phoenixKindLongShare(lw, 0), 1.0);
  EXPECT_DOUBLE_EQ(phoenixKindLongShare(lw, 0.02), 0.94);
  EXPECT_DOUBLE_EQ(phoenixKindLongShare(lw, 0.04), 0.9);  // 0.88 below long_share
  EXPECT_DOUBLE_EQ(phoenixKindLongShare(lw, 0.5), 0.9);
  EXPECT_DOUBLE_EQ(phoenixKindLongShare({Millis(60000), 0.9, 0.0}, 0.0), 0.9);
  EXPECT_DOUBLE_EQ(phoenixKindLongShare({Millis(60000), 0.5, 10.0}, 0.02), 0.8);
  const PhoenixOrderingPolicy p(kPhoenixBypassBound, lw);
  EXPECT_DOUBLE_EQ(p.longShareOf(0.02), 0.94);
  EXPECT_EQ(p.shortShareHalfLife(), kPhoenixShortShareHalfLife);
  const PhoenixNoCrvOrderingPolicy q(kPhoenixBypassBound, lw);
  EXPECT_DOUBLE_EQ(q.longShareOf(0.02), 0.94);
}

// The scheduler core sizes a kind's reserve by its granted work: the gpu
// kind (2 of 5 nodes, 8 vcores) first keeps half of its vcores from long
// work (long_share 0.5; the short share is unknown for one half-life), then,
// its granted work being almost all long, lets long work take all but what
// the short share reserves (reserve_factor 3: about 99% of the kind, 7 of 8
// vcores); with reserve_factor 0 it keeps half all along.
TEST(SchedulerPhoenixTest, KindWhoseWorkIsMostlyLongKeepsLittleFromLongWork) {
  for (double factor : {0.0, 3.0}) {
    const PhoenixLongWork lw{Millis(60000), 0.5, factor};
    auto s = make(std::make_shared<PhoenixOrderingPolicy>(kPhoenixBypassBound, lw));
    for (const char* n : {"gpu", "gpu2"})
      ASSERT_TRUE(s->addNode(NodeId(n), Resource(8192, 4), {{"gpu", "yes"}}).isOk());
    for (const char* n : {"cpu1", "cpu2", "cpu3"})
      ASSERT_TRUE(s->addNode(NodeId(n), Resource(8192, 4), {}).isOk());
    for (const char* app : {"longgpu", "short"})
      ASSERT_TRUE(s->addApp(AppId(app), UserId("u"), QueueRef::adhoc("root.default")).isOk());
    ASSERT_TRUE(
        s->updateAsks(AppId("longgpu"), {job(20, Millis(3 * 3600 * 1000), {hard("gpu", {"yes"})})})
            .isOk());
    EXPECT_EQ(grantOrder(*s, "gpu", kT0).size(), 4u) << factor;
    EXPECT_TRUE(grantOrder(*s, "gpu2", kT0 + Millis(1000)).empty()) << factor;
    ASSERT_TRUE(
        s->updateAsks(AppId("short"), {job(1, Millis(5000), {hard("gpu", {"yes"})})}).isOk());
    const auto later = grantOrder(*s, "gpu2", kT0 + kPhoenixShortShareHalfLife);
    if (factor == 0) {
      EXPECT_EQ(later, (std::vector<std::string>{"short"}));
    } else {
      EXPECT_EQ(later, (std::vector<std::string>{"short", "longgpu", "longgpu", "longgpu"}));
    }
  }
}

// The scheduler core under phoenix with the long-work cap: long work
// (constrained or not) holds at most half of the scarce gpu kind's vcores
// (2 of 5 nodes meet it), so the second gpu node stays free of it and a
// constrained short job that arrives later runs there at once, while the
// long work waits; short work may take every vcore long work leaves. Without
// the cap (long_task 0) long work fills both gpu nodes and the short job
// waits.
TEST(SchedulerPhoenixTest, ConstrainedShortJobFindsScarceNodeFreeWhileLongWaits) {
  for (bool capped : {false, true}) {
    const PhoenixLongWork lw{capped ? Millis(60000) : Millis(0), 0.5};
    auto s = make(std::make_shared<PhoenixOrderingPolicy>(kPhoenixBypassBound, lw));
    for (const char* n : {"gpu", "gpu2"})
      ASSERT_TRUE(s->addNode(NodeId(n), Resource(8192, 4), {{"gpu", "yes"}}).isOk());
    for (const char* n : {"cpu1", "cpu2", "cpu3"})
      ASSERT_TRUE(s->addNode(NodeId(n), Resource(8192, 4), {}).isOk());
    for (const char* app : {"long", "longgpu", "short", "burst"})
      ASSERT_TRUE(s->addApp(AppId(app), UserId("u"), QueueRef::adhoc("root.default")).isOk());
    ASSERT_TRUE(s->updateAsks(AppId("long"), {job(20, Millis(600000))}).isOk());
    ASSERT_TRUE(
        s->updateAsks(AppId("longgpu"), {job(20, Millis(600000), {hard("gpu", {"yes"})})}).isOk());
    auto first = s->nodeUpdate(NodeId("gpu"), kT0);
    ASSERT_TRUE(first.isOk());
    EXPECT_EQ(first->allocations.size(), 4u) << capped;
    EXPECT_EQ(grantOrder(*s, "gpu2", kT0).size(), capped ? 0u : 4u);
    ASSERT_TRUE(
        s->updateAsks(AppId("short"), {job(2, Millis(5000), {hard("gpu", {"yes"})})}).isOk());
    auto second = grantOrder(*s, "gpu2", kT0 + Millis(1000));
    if (capped) {
      EXPECT_EQ(second, (std::vector<std::string>{"short", "short"}));
    } else {
      EXPECT_TRUE(second.empty());
      continue;
    }
    // A long container ends: its room goes back to long work (4 of 8 again).
    ASSERT_TRUE(s->containerCompleted(first->allocations[0].container).isOk());
    auto third = grantOrder(*s, "gpu", kT0 + Millis(2000));
    ASSERT_EQ(third.size(), 1u);
    EXPECT_NE(third[0], "short");
    // Short work takes the rest of the kind's vcores.
    ASSERT_TRUE(s->updateAsks(AppId("burst"), {job(4, Millis(5000))}).isOk());
    EXPECT_EQ(grantOrder(*s, "gpu2", kT0 + Millis(3000)), (std::vector<std::string>(2, "burst")));
  }
}

// Both Phoenix policies key an app by since + its remaining work (pending
// containers x expected duration) less the CRV wait, clamped to [0, bound];
// only the constraint-aware one reads the wait.
TEST(PhoenixPolicyTest, RemainingWorkLessWaitWithinTheBypassBound) {
  const Resource used, cluster(8192, 8);
  const AppHint none;
  const TimePoint since = TimePoint{} + Millis(100000);
  AppInput in{used, none, cluster, Millis(5000), since, 4};  // work 20,000 ms
  EXPECT_DOUBLE_EQ(phoenixRemainingWork(in), 20000.0);
  EXPECT_DOUBLE_EQ(PhoenixOrderingPolicy().appScore(in, Millis(3000)), 117000.0);
  EXPECT_DOUBLE_EQ(PhoenixNoCrvOrderingPolicy().appScore(in), 120000.0);
  // The bound caps the advance over since; a wait beyond the work clamps to since.
  EXPECT_DOUBLE_EQ(PhoenixOrderingPolicy(Millis(10000)).appScore(in, Millis(3000)), 110000.0);
  EXPECT_DOUBLE_EQ(PhoenixNoCrvOrderingPolicy(Millis(10000)).appScore(in), 110000.0);
  EXPECT_DOUBLE_EQ(PhoenixOrderingPolicy().appScore(in, Millis(30000)), 100000.0);
  // Fewer pending containers, less work: a started app moves ahead.
  in.pending_containers = 1;
  EXPECT_DOUBLE_EQ(PhoenixNoCrvOrderingPolicy().appScore(in), 105000.0);
  // Unknown duration or nothing pending: work 0.
  in.expected_duration = Millis(0);
  EXPECT_DOUBLE_EQ(PhoenixOrderingPolicy().appScore(in, Millis(0)), 100000.0);
  EXPECT_EQ(PhoenixOrderingPolicy().bypassBound(), kPhoenixBypassBound);
  EXPECT_EQ(PhoenixNoCrvOrderingPolicy().bypassBound(), kPhoenixBypassBound);
}

// One grant on a one-vcore node at `t`: the app that got it and its container.
std::pair<std::string, ContainerId> grantOne(Scheduler& s, TimePoint t) {
  auto r = s.nodeUpdate(NodeId("n1"), t);
  EXPECT_TRUE(r.isOk()) << r.status().toString();
  if (!r.isOk() || r->allocations.size() != 1) {
    ADD_FAILURE() << "expected one grant at " << toEpochMs(t);
    return {"", ContainerId("")};
  }
  return {r->allocations[0].app.value(), r->allocations[0].container};
}

// A new short job overtakes a backlog of long jobs that joined two hours
// earlier: their remaining work (100 x 10 min) puts them behind it. FIFO,
// and a deadline of since + expected duration (10 min), would serve them
// first.
TEST(SchedulerPhoenixTest, ShortJobOvertakesOlderLongBacklog) {
  for (const char* policy : {"fifo", "phoenix", "phoenix-no-crv"}) {
    std::shared_ptr<const QueueOrderingPolicy> p;
    if (std::string(policy) == "phoenix-no-crv") {
      p = std::make_shared<PhoenixNoCrvOrderingPolicy>();
    } else {
      auto made = makeOrderingPolicy(policy, "test");
      ASSERT_TRUE(made.isOk());
      p = *made;
    }
    auto s = make(p);
    ASSERT_TRUE(s->addNode(NodeId("n1"), Resource(8192, 1), {}).isOk());
    ASSERT_TRUE(s->nodeUpdate(NodeId("n1"), kT0).isOk());
    for (const char* app : {"long1", "long2"}) {
      ASSERT_TRUE(s->addApp(AppId(app), UserId("u"), QueueRef::adhoc("root.default")).isOk());
      ASSERT_TRUE(s->updateAsks(AppId(app), {job(100, Millis(600000))}).isOk());
    }
    auto [first, c1] = grantOne(*s, kT0);
    EXPECT_EQ(first, "long1") << policy;
    const TimePoint later = kT0 + Millis(2 * 3600 * 1000);
    ASSERT_TRUE(s->nodeUpdate(NodeId("n1"), later).isOk());
    ASSERT_TRUE(s->addApp(AppId("short"), UserId("u"), QueueRef::adhoc("root.default")).isOk());
    ASSERT_TRUE(s->updateAsks(AppId("short"), {job(1, Millis(5000))}).isOk());
    ASSERT_TRUE(s->containerCompleted(c1).isOk());
    auto [next, c2] = grantOne(*s, later + Millis(1000));
    EXPECT_EQ(next, std::string(policy) == "fifo" ? "long1" : "short") << policy;
  }
}

// The bypass bound: with a 1 h bound a long app (work far above it) is
// overtaken by a short app that joined 30 min after it, but not by one that
// joined 61 min after it; with a 24 h bound both overtake it.
TEST(SchedulerPhoenixTest, LongJobIsNotBypassedBeyondTheBound) {
  for (bool with_crv : {false, true}) {
    for (int64_t bound_h : {1, 24}) {
      const Millis bound(bound_h * 3600 * 1000);
      auto s = make(with_crv ? std::shared_ptr<const QueueOrderingPolicy>(
                                   std::make_shared<PhoenixOrderingPolicy>(bound))
                             : std::make_shared<PhoenixNoCrvOrderingPolicy>(bound));
      auto add = [&](const char* app, int32_t n, Millis d) {
        ASSERT_TRUE(s->addApp(AppId(app), UserId("u"), QueueRef::adhoc("root.default")).isOk());
        ASSERT_TRUE(s->updateAsks(AppId(app), {job(n, d)}).isOk());
      };
      ASSERT_TRUE(s->addNode(NodeId("n1"), Resource(8192, 1), {}).isOk());
      ASSERT_TRUE(s->nodeUpdate(NodeId("n1"), kT0).isOk());
      add("busy", 1, Millis(1000));
      auto [busy, c] = grantOne(*s, kT0);
      ASSERT_EQ(busy, "busy");
      add("long", 100, Millis(600000));
      ASSERT_TRUE(s->nodeUpdate(NodeId("n1"), kT0 + Millis(30 * 60 * 1000)).isOk());
      add("early", 1, Millis(5000));
      const TimePoint t = kT0 + Millis(61 * 60 * 1000);
      ASSERT_TRUE(s->nodeUpdate(NodeId("n1"), t).isOk());
      add("late", 1, Millis(5000));
      std::vector<std::string> order;
      for (int i = 0; i < 2; i++) {
        ASSERT_TRUE(s->containerCompleted(c).isOk());
        auto [app, next] = grantOne(*s, t + Millis(1000 * (i + 1)));
        order.push_back(app);
        c = next;
      }
      const std::vector<std::string> want{"early", bound_h == 1 ? "long" : "late"};
      EXPECT_EQ(order, want) << "crv " << with_crv << " bound " << bound_h << " h";
    }
  }
}

// Only the leaf configured with phoenix orders by CRV waits: the same apps in
// a drf leaf next to it keep DRF (creation) order on the scarce node.
TEST(SchedulerPhoenixTest, CrvWaitsOnlyInPhoenixLeaf) {
  SchedulerOptions o;
  o.adhoc_queues.push_back({"root.p", 1.0, std::make_shared<PhoenixOrderingPolicy>()});
  o.adhoc_queues.push_back({"root.d", 1.0, std::make_shared<DrfOrderingPolicy>()});
  auto created = Scheduler::create(std::move(o));
  ASSERT_TRUE(created.isOk()) << created.status().toString();
  auto& s = **created;
  ASSERT_TRUE(s.addNode(NodeId("gpu"), Resource(8192, 2), {{"gpu", "a100"}}).isOk());
  ASSERT_TRUE(s.addNode(NodeId("cpu"), Resource(8192, 2), {}).isOk());
  for (const char* leaf : {"root.p", "root.d"}) {
    const std::string l(leaf);
    ASSERT_TRUE(s.addApp(AppId(l + ".any"), UserId("u"), QueueRef::adhoc(l)).isOk());
    ASSERT_TRUE(s.addApp(AppId(l + ".needs"), UserId("u"), QueueRef::adhoc(l)).isOk());
    ASSERT_TRUE(s.updateAsks(AppId(l + ".any"), {job(2, Millis(20000))}).isOk());
    ASSERT_TRUE(
        s.updateAsks(AppId(l + ".needs"), {job(8, Millis(30000), {hard("gpu", {})})}).isOk());
  }
  // One container per grant; the two leaves alternate by weighted DRF.
  auto order = grantOrder(s, "gpu", kT0);
  ASSERT_EQ(order.size(), 2u);
  EXPECT_NE(std::find(order.begin(), order.end(), "root.p.needs"), order.end());
  EXPECT_NE(std::find(order.begin(), order.end(), "root.d.any"), order.end());
}

// Admission control: an ask whose hard constraints no node meets gets a
// pending reason naming them; it clears once such a node registers.
TEST(SchedulerPhoenixTest, PendingReasonForUnmeetableHardConstraint) {
  auto s = make(std::make_shared<PhoenixOrderingPolicy>());
  ASSERT_TRUE(s->addNode(NodeId("n1"), Resource(8192, 4), {{"cores", "4"}}).isOk());
  ASSERT_TRUE(s->addApp(AppId("a"), UserId("u"), QueueRef::adhoc("root.default")).isOk());
  auto r = job(1, Millis(1000), {hard("cores", {"64"}, ConstraintOp::kAtLeast)});
  r.request_id = "big";
  ASSERT_TRUE(s->updateAsks(AppId("a"), {r}).isOk());
  auto reasons = s->pendingReasons(AppId("a"));
  ASSERT_TRUE(reasons.isOk());
  ASSERT_EQ(reasons->size(), 1u);
  EXPECT_NE((*reasons)[0].find("request big"), std::string::npos) << (*reasons)[0];
  EXPECT_NE((*reasons)[0].find("no registered node has cores >= 64"), std::string::npos);
  EXPECT_TRUE(grantOrder(*s, "n1", kT0).empty());
  ASSERT_TRUE(s->addNode(NodeId("n2"), Resource(8192, 64), {{"cores", "64"}}).isOk());
  EXPECT_TRUE(s->pendingReasons(AppId("a"))->empty());
  EXPECT_EQ(grantOrder(*s, "n2", kT0).size(), 1u);
  EXPECT_EQ(s->pendingReasons(AppId("nope")).status().code(), StatusCode::kNotFound);
}

// Which nodes meet an ask's constraints is remembered per node between
// heartbeats (shared by asks with equal lists) and must follow attribute
// changes and new nodes: a node that gains the attribute serves the ask, one
// that loses it no longer serves the next ask with the same list, and a soft
// constraint still only delays.
TEST(SchedulerPhoenixTest, ConstraintMatchesFollowAttributeChangesAndNewNodes) {
  SchedulerOptions o;
  o.adhoc_queues.push_back({"root.default", 1.0, std::make_shared<PhoenixOrderingPolicy>()});
  o.soft_constraint_delay = Millis(5000);
  auto created = Scheduler::create(std::move(o));
  ASSERT_TRUE(created.isOk());
  Scheduler& s = **created;
  ASSERT_TRUE(s.addNode(NodeId("n1"), Resource(8192, 4), {{"isa", "x86_64"}}).isOk());
  auto ask = [&s](const std::string& app, bool hard_c) {
    EXPECT_TRUE(s.addApp(AppId(app), UserId("u"), QueueRef::adhoc("root.default")).isOk());
    auto c = hard("isa", {"aarch64"});
    c.hard = hard_c;
    EXPECT_TRUE(s.updateAsks(AppId(app), {job(1, Millis(1000), {c})}).isOk());
  };
  ask("a", true);
  EXPECT_TRUE(grantOrder(s, "n1", kT0).empty());
  EXPECT_TRUE(grantOrder(s, "n1", kT0 + Seconds(1)).empty());  // the remembered miss
  ASSERT_TRUE(s.setNodeAttribute(NodeId("n1"), "isa", "aarch64").isOk());
  EXPECT_EQ(grantOrder(s, "n1", kT0 + Seconds(2)), std::vector<std::string>{"a"});
  ask("b", true);  // the same list as a's
  EXPECT_EQ(grantOrder(s, "n1", kT0 + Seconds(3)), std::vector<std::string>{"b"});
  ask("c", true);
  ASSERT_TRUE(s.setNodeAttribute(NodeId("n1"), "isa", "x86_64").isOk());
  EXPECT_TRUE(grantOrder(s, "n1", kT0 + Seconds(4)).empty());
  ASSERT_TRUE(s.addNode(NodeId("n2"), Resource(8192, 4), {{"isa", "aarch64"}}).isOk());
  EXPECT_EQ(grantOrder(s, "n2", kT0 + Seconds(5)), std::vector<std::string>{"c"});
  // Soft: passed over on n1 (x86_64) until the delay ends, then placed there.
  ask("d", false);
  EXPECT_TRUE(grantOrder(s, "n1", kT0 + Seconds(6)).empty());
  EXPECT_TRUE(grantOrder(s, "n1", kT0 + Seconds(8)).empty());
  EXPECT_EQ(grantOrder(s, "n1", kT0 + Seconds(12)), std::vector<std::string>{"d"});
}

// A lower bound that is not a number is INVALID_ARGUMENT naming the field and
// leaves the app's asks and the CRV untouched.
TEST(SchedulerPhoenixTest, RejectsMalformedLowerBound) {
  auto s = make(std::make_shared<PhoenixOrderingPolicy>());
  ASSERT_TRUE(s->addApp(AppId("a"), UserId("u"), QueueRef::adhoc("root.default")).isOk());
  auto bad = job(1, Millis(1000), {hard("cores", {"many"}, ConstraintOp::kAtLeast)});
  bad.priority = 2;
  auto st = s->updateAsks(AppId("a"), {job(1, Millis(1000), {hard("isa", {"x86"})}), bad});
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(st.message().find("asks[1].constraints[0].values"), std::string::npos) << st.message();
  EXPECT_EQ(*s->appPending(AppId("a")), 0);
  EXPECT_TRUE(s->constraintResourceVector().empty());
  auto neg = job(1, Millis(-1));
  EXPECT_EQ(s->updateAsks(AppId("a"), {neg}).code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace morpheus::sched
