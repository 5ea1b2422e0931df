// Scheduler::setNodeTotal: a node's capacity follows what its
// primary tenant leaves; running containers stay, nothing new is placed
// beyond the new capacity, and capacity given back is used again.
#include <gtest/gtest.h>

#include "scheduler/scheduler.h"

namespace morpheus::sched {
namespace {

const TimePoint kT0 = fromEpochMs(1'800'000'000'000);

ResourceRequest ask(int32_t count) {
  ResourceRequest r;
  r.priority = 1;
  r.capability = Resource(1024, 1);
  r.count = count;
  return r;
}

// Shrinking below what runs blocks placement until it grows back; bad input is named.
TEST(SchedulerHarvestTest, NodeTotalShrinksAndGrowsWithThePrimary) {
  auto s = Scheduler::create({});
  ASSERT_TRUE(s.isOk());
  auto& sch = **s;
  ASSERT_TRUE(sch.addNode(NodeId("n1"), Resource(4096, 4), {}).isOk());
  ASSERT_TRUE(sch.addApp(AppId("a"), UserId("u"), QueueRef::adhoc("root.default")).isOk());
  ASSERT_TRUE(sch.updateAsks(AppId("a"), {ask(6)}).isOk());
  ASSERT_TRUE(sch.setNodeTotal(NodeId("n1"), Resource(2048, 2)).isOk());
  EXPECT_EQ(sch.nodeUpdate(NodeId("n1"), kT0)->allocations.size(), 2u);
  // The primary grows: the two containers stay, nothing more is placed.
  ASSERT_TRUE(sch.setNodeTotal(NodeId("n1"), Resource(0, 0)).isOk());
  EXPECT_TRUE(sch.nodeUpdate(NodeId("n1"), kT0)->allocations.empty());
  EXPECT_EQ(sch.nodeUsed(NodeId("n1")).value(), Resource(2048, 2));
  // It shrinks again: room for two more.
  ASSERT_TRUE(sch.setNodeTotal(NodeId("n1"), Resource(4096, 4)).isOk());
  EXPECT_EQ(sch.nodeUpdate(NodeId("n1"), kT0)->allocations.size(), 2u);
  EXPECT_EQ(sch.setNodeTotal(NodeId("zz"), Resource(1, 1)).code(), StatusCode::kNotFound);
  Status neg = sch.setNodeTotal(NodeId("n1"), Resource(-1, 1));
  EXPECT_EQ(neg.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(neg.message().find("total"), std::string::npos);
}

// setNodeTotals: node totals set in one batch re-sort the queues once, and
// the next grant follows the new cluster total exactly as after one
// setNodeTotal per node. Root.a holds a memory-heavy container, root.b a
// vcore-heavy one: on two 8 GiB / 8-vcore nodes root.b's dominant share is
// the lower, after n2 grows to 64 GiB / 1 vcore root.a's is, so n2's only
// free vcore goes to root.a (with the old order, to root.b).
TEST(SchedulerHarvestTest, NodeTotalsInOneBatchOrderAsOneCallPerNode) {
  auto grantOnN2 = [](bool batch) -> std::string {
    SchedulerOptions o;
    o.adhoc_queues = {{"root.a", 1}, {"root.b", 1}};
    auto s = Scheduler::create(o);
    EXPECT_TRUE(s.isOk());
    auto& sch = **s;
    EXPECT_TRUE(sch.addNode(NodeId("n1"), Resource(8192, 8), {}).isOk());
    EXPECT_TRUE(sch.addNode(NodeId("n2"), Resource(8192, 8), {}).isOk());
    EXPECT_TRUE(sch.addApp(AppId("mem"), UserId("u"), QueueRef::adhoc("root.a")).isOk());
    EXPECT_TRUE(sch.addApp(AppId("cpu"), UserId("v"), QueueRef::adhoc("root.b")).isOk());
    ResourceRequest big = ask(1);
    big.capability = Resource(6144, 1);
    EXPECT_TRUE(sch.updateAsks(AppId("mem"), {big}).isOk());
    big.capability = Resource(1024, 5);
    EXPECT_TRUE(sch.updateAsks(AppId("cpu"), {big}).isOk());
    EXPECT_EQ(sch.nodeUpdate(NodeId("n1"), kT0)->allocations.size(), 2u);
    ResourceRequest one = ask(1);
    one.priority = 2;
    EXPECT_TRUE(sch.updateAsks(AppId("mem"), {one}).isOk());
    EXPECT_TRUE(sch.updateAsks(AppId("cpu"), {one}).isOk());
    const Resource n1(8192, 8), n2(65536, 1);
    if (batch) {
      EXPECT_TRUE(
          sch.setNodeTotals({{*sch.nodeSlot(NodeId("n1")), n1}, {*sch.nodeSlot(NodeId("n2")), n2}})
              .isOk());
    } else {
      EXPECT_TRUE(sch.setNodeTotal(NodeId("n1"), n1).isOk());
      EXPECT_TRUE(sch.setNodeTotal(NodeId("n2"), n2).isOk());
    }
    EXPECT_EQ(sch.clusterTotal(), Resource(73728, 9));
    auto r = sch.nodeUpdate(NodeId("n2"), kT0);
    EXPECT_TRUE(r.isOk());
    return r->allocations.size() == 1 ? r->allocations[0].app.value() : "none";
  };
  EXPECT_EQ(grantOnN2(false), "mem");
  EXPECT_EQ(grantOnN2(true), "mem");
}

// setNodeTotals is all-or-nothing: an unknown slot or a negative total
// (named by its index) changes no node.
TEST(SchedulerHarvestTest, NodeTotalsRejectABadEntryAndChangeNothing) {
  auto s = Scheduler::create({});
  ASSERT_TRUE(s.isOk());
  auto& sch = **s;
  ASSERT_TRUE(sch.addNode(NodeId("n1"), Resource(4096, 4), {}).isOk());
  const NodeSlot n1 = *sch.nodeSlot(NodeId("n1"));
  EXPECT_EQ(sch.setNodeTotals({{n1, Resource(1024, 1)}, {NodeSlot{7}, Resource(1, 1)}}).code(),
            StatusCode::kNotFound);
  Status neg = sch.setNodeTotals({{n1, Resource(1024, 1)}, {n1, Resource(-1, 1)}});
  EXPECT_EQ(neg.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(neg.message().rfind("totals[1].total", 0), 0u) << neg.message();
  EXPECT_EQ(sch.clusterTotal(), Resource(4096, 4));
  ASSERT_TRUE(sch.setNodeTotals({{n1, Resource(1024, 1)}, {n1, Resource(2048, 2)}}).isOk());
  EXPECT_EQ(sch.clusterTotal(), Resource(2048, 2));
}

// A node attribute set after the node joined (the RM's harvest class) is
// what constraints match from then on; removing it stops the matches.
TEST(SchedulerHarvestTest, NodeAttributeSetLaterIsMatchedByConstraints) {
  auto s = Scheduler::create({});
  ASSERT_TRUE(s.isOk());
  auto& sch = **s;
  ASSERT_TRUE(sch.addNode(NodeId("n1"), Resource(8192, 8), {{"isa", "x86"}}).isOk());
  ASSERT_TRUE(sch.addApp(AppId("a"), UserId("u"), QueueRef::adhoc("root.default")).isOk());
  ResourceRequest r = ask(4);
  r.constraints.push_back({"harvest-class", {"constant-0"}, true});
  ASSERT_TRUE(sch.updateAsks(AppId("a"), {r}).isOk());
  EXPECT_TRUE(sch.nodeUpdate(NodeId("n1"), kT0)->allocations.empty());
  ASSERT_TRUE(sch.setNodeAttribute(NodeId("n1"), "harvest-class", "constant-0").isOk());
  EXPECT_EQ(sch.nodeUpdate(NodeId("n1"), kT0)->allocations.size(), 4u);
  r.count = 2;
  ASSERT_TRUE(sch.updateAsks(AppId("a"), {r}).isOk());
  ASSERT_TRUE(sch.setNodeAttribute(NodeId("n1"), "harvest-class", "").isOk());
  EXPECT_TRUE(sch.nodeUpdate(NodeId("n1"), kT0)->allocations.empty());
  EXPECT_EQ(sch.setNodeAttribute(NodeId("zz"), "harvest-class", "x").code(), StatusCode::kNotFound);
  Status empty = sch.setNodeAttribute(NodeId("n1"), "", "x");
  EXPECT_EQ(empty.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(empty.message().find("key"), std::string::npos);
}

}  // namespace
}  // namespace morpheus::sched
