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
