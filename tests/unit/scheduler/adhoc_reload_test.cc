// Scheduler::setAdhocQueues (a config reload of the RM): new weights apply to
// the next decisions; a bad or different set of queues is refused naming the
// field and changes nothing.
#include <gtest/gtest.h>

#include <map>
#include <string>

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

}  // namespace
}  // namespace morpheus::sched
