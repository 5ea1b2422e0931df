// ResourceCollector over a real RM (tests/support/inproc_rm.h): the cluster
// and per-queue gauges it sets at each scrape match what the scheduler holds
// and what the apps still ask for.
#include "rm/runtime/resource_collector.h"

#include <gtest/gtest.h>

#include "../test_db.h"
#include "inproc_rm.h"

namespace morpheus::rm {
namespace {

TEST(ResourceCollectorTest, ClusterAndQueueGaugesFollowTheScheduler) {
  VirtualClock clock(fromEpochMs(1800000000000));
  testing::InProcRmOptions o;
  o.state_store = freshTestDb("resource-collector");
  o.token_secret = "secret";
  o.apps.queues = {"root.a", "root.b"};
  o.runtime.queue_weights = {{"root.a", 1}, {"root.b", 1}};
  auto started = testing::InProcRm::start(clock, std::move(o));
  ASSERT_TRUE(started.isOk()) << started.status().toString();
  auto rm = std::move(started).value();
  ResourceCollector collector(rm->metrics(), rm->core(), rm->runtime(), rm->reservations(), clock);
  auto& m = rm->metrics();
  auto queue = [](const char* q) { return Labels{{"queue", q}}; };

  ASSERT_TRUE(rm->registerNode(testing::nodeRegistration("n1", 4)).isOk());
  AppSpec s;
  s.name = "app";
  s.user = UserId("alice");
  s.queue = "root.a";
  s.am_resource = Resource(1024, 1);
  s.am_launch_context = "x";
  AppId app = rm->apps().submit(s, [](const BindTarget&) { return Status::ok(); })->id;
  auto heartbeat = [&] {
    v1::NodeHeartbeatRequest req;
    req.set_node_id("n1");
    v1::NodeHeartbeatResponse resp;
    ASSERT_TRUE(rm->nodeHeartbeat(req, &resp).isOk());
  };
  heartbeat();  // places the AM
  ASSERT_TRUE(rm->registerAm(app).isOk());
  v1::AllocateResponse resp;
  ASSERT_TRUE(rm->allocate(testing::taskAsk(app, rm->apps().amToken(app, 1), 6), &resp).isOk());
  heartbeat();  // 3 of the 6 tasks fit next to the AM

  std::string text = m.render();  // runs the collector
  EXPECT_EQ(m.valueOf("morpheus_rm_cluster_capacity_vcores"), 4) << text;
  EXPECT_EQ(m.valueOf("morpheus_rm_cluster_capacity_memory_bytes"), 4.0 * 1024 * 1024 * 1024);
  EXPECT_EQ(m.valueOf("morpheus_rm_cluster_allocated_vcores"), 4) << text;
  EXPECT_EQ(m.valueOf("morpheus_rm_cluster_allocated_memory_bytes"), 4.0 * 1024 * 1024 * 1024);
  EXPECT_EQ(m.valueOf("morpheus_rm_containers_running"), 4);
  EXPECT_EQ(m.valueOf("morpheus_rm_cluster_pending_containers"), 3) << text;
  EXPECT_EQ(m.valueOf("morpheus_rm_cluster_pending_vcores"), 3);
  EXPECT_EQ(m.valueOf("morpheus_rm_cluster_reserved_vcores"), 0);
  EXPECT_EQ(m.valueOf("morpheus_rm_queue_allocated_vcores", queue("root.a")), 4) << text;
  EXPECT_EQ(m.valueOf("morpheus_rm_queue_pending_containers", queue("root.a")), 3);
  EXPECT_EQ(m.valueOf("morpheus_rm_queue_pending_memory_bytes", queue("root.a")),
            3.0 * 1024 * 1024 * 1024);
  EXPECT_EQ(m.valueOf("morpheus_rm_queue_apps", queue("root.a")), 1);
  EXPECT_EQ(m.valueOf("morpheus_rm_queue_allocated_vcores", queue("root.b")), 0) << text;
  EXPECT_EQ(m.valueOf("morpheus_rm_queue_allocated_vcores", queue("root")), 4) << text;
}

}  // namespace
}  // namespace morpheus::rm
