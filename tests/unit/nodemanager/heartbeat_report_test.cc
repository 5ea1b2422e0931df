#include "nodemanager/heartbeat_report.h"

#include <gtest/gtest.h>

#include <set>

using namespace morpheus;
using namespace morpheus::nm;

namespace {

ContainerSnapshot running(const std::string& id) {
  ContainerSnapshot c;
  c.id = ContainerId(id);
  c.running = true;
  c.resource = Resource(1024, 1);
  c.rss_mib = 10;
  return c;
}

ContainerSnapshot completed(const std::string& id) {
  ContainerSnapshot c = running(id);
  c.running = false;
  return c;
}

std::set<std::string> listed(const v1::NodeHeartbeatRequest& req) {
  std::set<std::string> out;
  for (const auto& s : req.container_statuses()) out.insert(s.container_id());
  return out;
}

v1::NodeHeartbeatRequest build(HeartbeatReporter& r, const std::vector<ContainerSnapshot>& snap) {
  v1::NodeHeartbeatRequest req;
  r.build(snap, &req);
  return req;
}

}  // namespace

// After a registration the report is full; then only new and completed containers are listed,
// while the totals always cover every running container.
TEST(HeartbeatReporterTest, ListsOnlyChangesAfterAFullReport) {
  HeartbeatReporter r(10);
  r.reset();
  auto first = build(r, {running("a"), running("b")});
  EXPECT_FALSE(first.changes_only());
  EXPECT_EQ(listed(first), (std::set<std::string>{"a", "b"}));
  r.delivered();
  auto second = build(r, {running("a"), running("b"), running("c"), completed("d")});
  EXPECT_TRUE(second.changes_only());
  EXPECT_EQ(listed(second), (std::set<std::string>{"c", "d"}));
  EXPECT_EQ(second.running_containers(), 3);
  EXPECT_EQ(second.used().memory_mib(), 3 * 1024);
  EXPECT_EQ(second.used_rss_mib(), 30);
  r.delivered();
  auto third = build(r, {running("a"), running("b"), running("c"), completed("d")});
  EXPECT_EQ(listed(third), (std::set<std::string>{"d"}));  // completed until acknowledged
}

// A report the RM did not answer is not counted: its new containers are listed again.
TEST(HeartbeatReporterTest, UndeliveredChangesAreRepeated) {
  HeartbeatReporter r(10);
  r.reset();
  build(r, {running("a")});
  r.delivered();
  EXPECT_EQ(listed(build(r, {running("a"), running("b")})), (std::set<std::string>{"b"}));
  EXPECT_EQ(listed(build(r, {running("a"), running("b")})), (std::set<std::string>{"b"}));
  r.delivered();
  EXPECT_TRUE(listed(build(r, {running("a"), running("b")})).empty());
}

// Every full_every-th delivered report and the one after reset() list every container.
TEST(HeartbeatReporterTest, FullReportEveryNAndAfterReset) {
  HeartbeatReporter r(3);
  r.reset();
  std::vector<ContainerSnapshot> snap = {running("a")};
  std::vector<bool> full;
  for (int i = 0; i < 7; i++) {
    full.push_back(!build(r, snap).changes_only());
    r.delivered();
  }
  EXPECT_EQ(full, (std::vector<bool>{true, false, false, true, false, false, true}));
  r.reset();
  EXPECT_FALSE(build(r, snap).changes_only());
}

// After a registration's full report the next one comes at the node's own
// phase, then every full_every-th: nodes registering together do not send
// their full reports in the same heartbeat forever.
TEST(HeartbeatReporterTest, FullReportsFollowTheNodesPhaseAfterARegistration) {
  std::vector<ContainerSnapshot> snap = {running("a")};
  std::set<int> second_full_at;
  for (uint64_t seed = 0; seed < 4; seed++) {
    HeartbeatReporter r(4, seed);
    r.reset();
    std::vector<int> full_at;
    for (int i = 0; i < 12; i++) {
      if (!build(r, snap).changes_only()) full_at.push_back(i);
      r.delivered();
    }
    ASSERT_GE(full_at.size(), 3u) << "seed " << seed;
    EXPECT_EQ(full_at[0], 0);
    EXPECT_EQ(full_at[1], 4 - static_cast<int>(seed));  // at most full_every later
    EXPECT_EQ(full_at[2] - full_at[1], 4);
    second_full_at.insert(full_at[1]);
    r.reset();  // a re-registration: full again, then the same phase
    EXPECT_FALSE(build(r, snap).changes_only());
  }
  EXPECT_EQ(second_full_at.size(), 4u);  // four phases, four different heartbeats
}

// full_every 1 is the old behaviour: every report lists every container.
TEST(HeartbeatReporterTest, FullEveryOneAlwaysListsEverything) {
  HeartbeatReporter r(1);
  r.reset();
  for (int i = 0; i < 3; i++) {
    auto req = build(r, {running("a"), completed("b")});
    EXPECT_FALSE(req.changes_only());
    EXPECT_EQ(listed(req), (std::set<std::string>{"a", "b"}));
    r.delivered();
  }
}

// A container that ended and is started again under the same id (never in practice, but the
// known set must not grow without bound) is forgotten once it stops running.
TEST(HeartbeatReporterTest, ForgetsContainersThatStopRunning) {
  HeartbeatReporter r(100);
  r.reset();
  build(r, {running("a")});
  r.delivered();
  build(r, {});
  r.delivered();
  EXPECT_EQ(listed(build(r, {running("a")})), (std::set<std::string>{"a"}));
}
