// Queue caps (Scheduler::setQueueMaxResources, the Fair Scheduler's
// maxResources): a capped queue's apps get no container beyond the cap, a
// parent's cap covers its children, the cap can change at run time, and the
// pending reason names the queue.
#include <gtest/gtest.h>

#include "scheduler/scheduler.h"

namespace morpheus::sched {
namespace {

const TimePoint kT0 = fromEpochMs(1'800'000'000'000);

std::unique_ptr<Scheduler> make() {
  SchedulerOptions o;
  o.adhoc_queues = {{"root.dev.a", 1.0}, {"root.dev.b", 1.0}, {"root.prod", 1.0}};
  auto s = Scheduler::create(std::move(o));
  EXPECT_TRUE(s.isOk()) << s.status().toString();
  return std::move(s).value();
}

ResourceRequest ask(int32_t count, Resource cap = Resource(1024, 1)) {
  ResourceRequest r;
  r.priority = 1;
  r.capability = cap;
  r.count = count;
  return r;
}

int granted(Scheduler& s, const std::string& app, TimePoint t) {
  auto r = s.nodeUpdate(NodeId("n1"), t);
  EXPECT_TRUE(r.isOk());
  int n = 0;
  for (const auto& a : r->allocations) n += a.app.value() == app ? 1 : 0;
  return n;
}

TEST(QueueCapTest, CappedLeafGetsNoMoreThanItsMax) {
  auto s = make();
  ASSERT_TRUE(s->addNode(NodeId("n1"), Resource(65536, 32), {}).isOk());
  ASSERT_TRUE(s->setQueueMaxResources("root.prod", Resource(3072, 8)).isOk());
  ASSERT_TRUE(s->addApp(AppId("p"), UserId("u"), QueueRef::adhoc("root.prod")).isOk());
  ASSERT_TRUE(s->updateAsks(AppId("p"), {ask(10)}).isOk());
  EXPECT_EQ(granted(*s, "p", kT0), 3);  // memory caps it: 3 x 1024 MiB
  EXPECT_EQ(s->queueUsed(QueueRef::adhoc("root.prod"))->memoryMib(), 3072);
  EXPECT_EQ(granted(*s, "p", kT0 + Millis(1000)), 0);
  // The reason names the queue and its cap.
  auto why = s->pendingReasons(AppId("p"));
  ASSERT_TRUE(why.isOk());
  ASSERT_EQ(why->size(), 1u);
  EXPECT_NE((*why)[0].find("queue root.prod"), std::string::npos) << (*why)[0];
  EXPECT_NE((*why)[0].find("max-resources"), std::string::npos) << (*why)[0];
  EXPECT_FALSE(s->withinQueueMax(AppId("p"), Resource(1024, 1)));
  // Raised at run time (config reload): the rest fits now.
  ASSERT_TRUE(s->setQueueMaxResources("root.prod", Resource(1 << 20, 1 << 10)).isOk());
  EXPECT_EQ(granted(*s, "p", kT0 + Millis(2000)), 7);
  EXPECT_TRUE(s->pendingReasons(AppId("p"))->empty());
}

TEST(QueueCapTest, ParentCapCoversChildrenAndVcoresCountToo) {
  auto s = make();
  ASSERT_TRUE(s->addNode(NodeId("n1"), Resource(65536, 32), {}).isOk());
  ASSERT_TRUE(s->setQueueMaxResources("root.dev", Resource(1 << 20, 4)).isOk());
  ASSERT_TRUE(s->addApp(AppId("a"), UserId("u"), QueueRef::adhoc("root.dev.a")).isOk());
  ASSERT_TRUE(s->addApp(AppId("b"), UserId("v"), QueueRef::adhoc("root.dev.b")).isOk());
  ASSERT_TRUE(s->addApp(AppId("p"), UserId("w"), QueueRef::adhoc("root.prod")).isOk());
  ASSERT_TRUE(s->updateAsks(AppId("a"), {ask(10, Resource(512, 1))}).isOk());
  ASSERT_TRUE(s->updateAsks(AppId("b"), {ask(10, Resource(512, 1))}).isOk());
  ASSERT_TRUE(s->updateAsks(AppId("p"), {ask(10, Resource(512, 1))}).isOk());
  auto r = s->nodeUpdate(NodeId("n1"), kT0);
  ASSERT_TRUE(r.isOk());
  std::map<std::string, int> by;
  for (const auto& a : r->allocations) by[a.app.value()]++;
  EXPECT_EQ(by["a"] + by["b"], 4);  // the parent's 4 vcores, shared by both leaves
  EXPECT_EQ(by["p"], 10);           // an uncapped sibling is not held back
  auto views = s->queues();
  bool seen = false;
  for (const auto& v : views) {
    if (!v.ref.isReservation() && v.ref.adhocPath() == "root.dev") {
      seen = true;
      ASSERT_TRUE(v.max_resources.has_value());
      EXPECT_EQ(v.max_resources->vcores(), 4);
    }
  }
  EXPECT_TRUE(seen);
}

// Asks of different shapes: the room under the cap fits the small ones only,
// so the big ask waits even though it comes first by priority.
TEST(QueueCapTest, AnAskLargerThanTheRoomUnderTheCapWaits) {
  auto s = make();
  ASSERT_TRUE(s->addNode(NodeId("n1"), Resource(65536, 32), {}).isOk());
  ASSERT_TRUE(s->setQueueMaxResources("root.prod", Resource(1024, 8)).isOk());
  ASSERT_TRUE(s->addApp(AppId("p"), UserId("u"), QueueRef::adhoc("root.prod")).isOk());
  ResourceRequest big = ask(1, Resource(2048, 1));
  big.request_id = "big";
  ResourceRequest small = ask(4, Resource(512, 1));
  small.request_id = "small";
  small.priority = 2;
  ASSERT_TRUE(s->updateAsks(AppId("p"), {big, small}).isOk());
  auto r = s->nodeUpdate(NodeId("n1"), kT0);
  ASSERT_TRUE(r.isOk());
  ASSERT_EQ(r->allocations.size(), 2u);
  for (const auto& a : r->allocations) EXPECT_EQ(a.request_id, "small");
  EXPECT_EQ(s->queueUsed(QueueRef::adhoc("root.prod"))->memoryMib(), 1024);
}

TEST(QueueCapTest, UnknownQueueOrNegativeCapIsRefused) {
  auto s = make();
  EXPECT_EQ(s->setQueueMaxResources("root.nope", Resource(1, 1)).code(), StatusCode::kNotFound);
  EXPECT_EQ(s->setQueueMaxResources("root.prod", Resource(-1, 1)).code(),
            StatusCode::kInvalidArgument);
  EXPECT_TRUE(s->setQueueMaxResources("root.prod", std::nullopt).isOk());
}

}  // namespace
}  // namespace morpheus::sched
