// Scheduler::setAdhocQueues (a config reload of the RM): new weights and leaf
// policies apply to the next decisions (the new policy's extension points,
// including constraint-aware ordering, are looked up again); a bad or
// different set of queues is refused naming the field and changes nothing.
#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "scheduler/policies/phoenix_policy.h"
#include "scheduler/scheduler.h"

namespace morpheus::sched {
namespace {

const TimePoint kT0 = fromEpochMs(1'800'000'000'000);

std::map<std::string, int> split(Scheduler& s) {
  std::map<std::string, int> m;
  for (const auto& a : s.schedulePass(kT0).allocations) m[a.app.value()]++;
  return m;
}

std::unique_ptr<Scheduler> twoQueues() {
  SchedulerOptions o;
  o.adhoc_queues = {{"root.a", 1}, {"root.b", 1}};
  auto s = std::move(Scheduler::create(o)).value();
  for (int i = 0; i < 4; i++)
    EXPECT_TRUE(s->addNode(NodeId("n" + std::to_string(i)), Resource(1 << 20, 4), {}).isOk());
  for (const char* q : {"root.a", "root.b"}) {
    EXPECT_TRUE(s->addApp(AppId(q), UserId("u"), QueueRef::adhoc(q)).isOk());
    ResourceRequest r;
    r.priority = 1;
    r.capability = Resource(1024, 1);
    r.count = 100;
    EXPECT_TRUE(s->updateAsks(AppId(q), {r}).isOk());
  }
  return s;
}

TEST(AdhocReloadTest, NewWeightsApplyToTheNextDecisions) {
  auto s = twoQueues();
  ASSERT_TRUE(s->setAdhocQueues({{"root.a", 3}, {"root.b", 1}}).isOk());
  auto m = split(*s);
  EXPECT_EQ(m["root.a"], 12);
  EXPECT_EQ(m["root.b"], 4);
  for (const auto& q : s->queues()) {
    if (q.ref.adhocPath() == "root.a") {
      EXPECT_EQ(q.weight, 3.0);
    }
  }
}

TEST(AdhocReloadTest, BadQueuesAreRefusedAndChangeNothing) {
  auto s = twoQueues();
  Status st = s->setAdhocQueues({{"root.a", 3}, {"root.c", 1}});
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(st.message().rfind("adhoc_queues[1].path:", 0), 0u) << st.message();
  st = s->setAdhocQueues({{"root.a", 0}, {"root.b", 1}});
  EXPECT_EQ(st.message().rfind("adhoc_queues[0].weight:", 0), 0u) << st.message();
  EXPECT_EQ(s->setAdhocQueues({{"root.a", 3}}).code(), StatusCode::kInvalidArgument)
      << "root.b left out";
  auto m = split(*s);
  EXPECT_EQ(m["root.a"], 8) << "the old weights still hold";
  EXPECT_EQ(m["root.b"], 8);
}

using PolicyPtr = std::shared_ptr<const QueueOrderingPolicy>;

// One leaf root.a ordered by `p` (null = the scheduler's DRF) holding apps
// "first" and "second" of one user, each asking for more than the 16 vcores
// of the 4 nodes.
std::unique_ptr<Scheduler> twoAppsInOneLeaf(PolicyPtr p) {
  SchedulerOptions o;
  o.adhoc_queues = {{"root.a", 1, std::move(p)}};
  auto s = std::move(Scheduler::create(o)).value();
  for (int i = 0; i < 4; i++)
    EXPECT_TRUE(s->addNode(NodeId("n" + std::to_string(i)), Resource(1 << 20, 4), {}).isOk());
  for (const char* app : {"first", "second"}) {
    EXPECT_TRUE(s->addApp(AppId(app), UserId("u"), QueueRef::adhoc("root.a")).isOk());
    ResourceRequest r;
    r.priority = 1;
    r.capability = Resource(1024, 1);
    r.count = 100;
    EXPECT_TRUE(s->updateAsks(AppId(app), {r}).isOk());
  }
  return s;
}

// A reload that changes a leaf's policy changes how its apps are ordered:
// FIFO gives every container to the app created first, DRF (the leaf's own
// or the scheduler's) splits them. Each case starts from the other policy,
// so a leaf that kept its old policy's extension points would keep the old
// split.
TEST(AdhocReloadTest, NewLeafPolicyOrdersTheNextDecisions) {
  struct Case {
    const char* name;
    PolicyPtr before, after;
    int first, second;
  };
  const PolicyPtr fifo = std::make_shared<FifoOrderingPolicy>();
  const PolicyPtr drf = std::make_shared<DrfOrderingPolicy>();
  for (const Case& c :
       {Case{"fifo -> drf", fifo, drf, 8, 8}, Case{"fifo -> default", fifo, nullptr, 8, 8},
        Case{"drf -> fifo", drf, fifo, 16, 0}, Case{"default -> fifo", nullptr, fifo, 16, 0}}) {
    auto s = twoAppsInOneLeaf(c.before);
    ASSERT_TRUE(s->setAdhocQueues({{"root.a", 1, c.after}}).isOk()) << c.name;
    auto m = split(*s);
    EXPECT_EQ(m["first"], c.first) << c.name;
    EXPECT_EQ(m["second"], c.second) << c.name;
  }
}

PlacementConstraint hardGpu() {
  PlacementConstraint c;
  c.key = "gpu";
  c.hard = true;
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

// A leaf switched from DRF to phoenix by a reload is constraint-aware from
// then on: when the CRV moves, its constrained apps are re-keyed at the next
// heartbeat (as in a leaf created with phoenix). "needs" (2 x 60 s, hard
// gpu) at first waits little (2 vcores of demand on 8 of supply: W = 10 s, so
// its key, 120 - 10 s of remaining work, is behind "any"'s 4 x 20 s); once
// three of the four gpu nodes lose the attribute (supply 2, rho capped at
// 0.95: W = 570 s) it goes first on the gpu node. setNodeAttribute re-keys nothing itself, so only
// the heartbeat's CRV re-key can change the order.
TEST(AdhocReloadTest, LeafReloadedToPhoenixFollowsTheCrv) {
  struct Case {
    bool reload, crv_moves;
    const char* want;
  };
  for (const Case& c : {Case{false, true, "any"},    // DRF: creation order
                        Case{true, false, "any"},    // phoenix, small wait
                        Case{true, true, "needs"}})  // phoenix, the CRV moved
  {
    const std::string name =
        "reload " + std::to_string(c.reload) + " crv_moves " + std::to_string(c.crv_moves);
    SchedulerOptions o;
    o.adhoc_queues = {{"root.a", 1, std::make_shared<DrfOrderingPolicy>()}};
    auto s = std::move(Scheduler::create(o)).value();
    for (int i = 0; i < 4; i++) {
      ASSERT_TRUE(
          s->addNode(NodeId("gpu" + std::to_string(i)), Resource(8192, 2), {{"gpu", "a100"}})
              .isOk());
    }
    ASSERT_TRUE(s->addNode(NodeId("cpu"), Resource(8192, 2), {}).isOk());
    ASSERT_TRUE(s->addApp(AppId("any"), UserId("u"), QueueRef::adhoc("root.a")).isOk());
    ASSERT_TRUE(s->addApp(AppId("needs"), UserId("u"), QueueRef::adhoc("root.a")).isOk());
    ASSERT_TRUE(s->updateAsks(AppId("any"), {job(4, Millis(20000))}).isOk());
    ASSERT_TRUE(s->updateAsks(AppId("needs"), {job(2, Millis(60000), {hardGpu()})}).isOk());
    if (c.reload) {
      ASSERT_TRUE(
          s->setAdhocQueues({{"root.a", 1, std::make_shared<PhoenixOrderingPolicy>()}}).isOk());
    }
    if (c.crv_moves) {
      for (int i = 1; i < 4; i++)
        ASSERT_TRUE(s->setNodeAttribute(NodeId("gpu" + std::to_string(i)), "gpu", "").isOk());
    }
    auto r = s->nodeUpdate(NodeId("gpu0"), kT0);
    ASSERT_TRUE(r.isOk()) << r.status().toString();
    ASSERT_FALSE(r->allocations.empty()) << name;
    EXPECT_EQ(r->allocations[0].app.value(), c.want) << name;
  }
}

}  // namespace
}  // namespace morpheus::sched
