// The node admin state machine (node_registry.h): drain, undrain and
// decommission, what each does to the plan's capacity, registration and
// heartbeats, and its persistence through RmCore and the state store.
#include "rm/core/node_registry.h"

#include <gtest/gtest.h>

#include "../test_db.h"
#include "common/clock.h"
#include "common/metrics.h"
#include "rm/core/rm_core.h"
#include "store/state/state_store.h"

namespace morpheus::rm {
namespace {

NodeInfo node(const std::string& id, const std::string& address = "127.0.0.1:1") {
  NodeInfo n;
  n.id = NodeId(id);
  n.container_manager_address = address;
  n.total = Resource(4096, 4);
  return n;
}

NodeAdmin at(NodeAdminState s, int64_t deadline_ms = 0) { return {s, fromEpochMs(deadline_ms)}; }

TEST(NodeAdminStateTest, TransitionsFollowTheStateMachine) {
  const TimePoint d = fromEpochMs(5000);
  auto next = [&](NodeAdminState from, NodeAdminOp op) {
    return nextAdminState("nm1", at(from, 100), op, d);
  };
  using S = NodeAdminState;
  EXPECT_EQ(next(S::kInService, NodeAdminOp::kDrain)->state, S::kDrained);
  EXPECT_EQ(next(S::kDrained, NodeAdminOp::kDrain)->state, S::kDrained);  // idempotent
  EXPECT_EQ(next(S::kDrained, NodeAdminOp::kUndrain)->state, S::kInService);
  EXPECT_EQ(next(S::kInService, NodeAdminOp::kUndrain)->state, S::kInService);
  auto dec = next(S::kInService, NodeAdminOp::kDecommission);
  EXPECT_EQ(dec->state, S::kDecommissioning);
  EXPECT_EQ(dec->deadline, d);
  EXPECT_EQ(next(S::kDrained, NodeAdminOp::kDecommission)->state, S::kDecommissioning);
  // A second decommission moves the deadline; one of a decommissioned node changes nothing.
  EXPECT_EQ(next(S::kDecommissioning, NodeAdminOp::kDecommission)->deadline, d);
  auto done = next(S::kDecommissioned, NodeAdminOp::kDecommission);
  EXPECT_EQ(done->state, S::kDecommissioned);
  EXPECT_EQ(done->deadline, fromEpochMs(100));
  // Undrain returns any state to service.
  EXPECT_EQ(next(S::kDecommissioning, NodeAdminOp::kUndrain)->state, S::kInService);
  EXPECT_EQ(next(S::kDecommissioned, NodeAdminOp::kUndrain)->state, S::kInService);
  // Drain of a decommissioning or decommissioned node is refused, naming it.
  for (S s : {S::kDecommissioning, S::kDecommissioned}) {
    auto r = next(s, NodeAdminOp::kDrain);
    ASSERT_FALSE(r.isOk());
    EXPECT_EQ(r.status().code(), StatusCode::kInfeasible);
    EXPECT_NE(r.status().message().find("node nm1 is " + std::string(toString(s))),
              std::string::npos)
        << r.status().message();
  }
  for (S s : {S::kInService, S::kDrained, S::kDecommissioning, S::kDecommissioned}) {
    EXPECT_EQ(parseNodeAdminState(toString(s)), s);
  }
  EXPECT_FALSE(parseNodeAdminState("draining").has_value());
}

TEST(NodeAdminStateTest, NodesOutOfServiceLeaveTheCapacityAndDecommissionedOnesAreRefused) {
  NodeRegistry reg(Millis(10000));
  const TimePoint now = fromEpochMs(1000);
  ASSERT_TRUE(reg.registerNode(node("nm1"), now).isOk());
  ASSERT_TRUE(reg.registerNode(node("nm2", "127.0.0.1:2"), now).isOk());
  EXPECT_EQ(reg.liveCapacity(), Resource(8192, 8));
  EXPECT_EQ(reg.planAdmin(NodeId("nm9"), NodeAdminOp::kDrain, now).status().code(),
            StatusCode::kNotFound);

  reg.setAdmin(NodeId("nm1"), at(NodeAdminState::kDrained));
  EXPECT_EQ(reg.liveCapacity(), Resource(4096, 4));
  EXPECT_EQ(reg.liveCount(), 2) << "a drained node is live: it still runs containers";
  EXPECT_TRUE(reg.heartbeat(NodeId("nm1"), 1, Resource(), 0, 0, 0, now).isOk());
  EXPECT_EQ(reg.find(NodeId("nm1"))->admin.state, NodeAdminState::kDrained);
  reg.setAdmin(NodeId("nm1"), at(NodeAdminState::kInService));
  EXPECT_EQ(reg.liveCapacity(), Resource(8192, 8));

  reg.setAdmin(NodeId("nm2"), at(NodeAdminState::kDecommissioning, 9000));
  EXPECT_EQ(reg.liveCapacity(), Resource(4096, 4));
  ASSERT_EQ(reg.decommissioning().size(), 1u);
  EXPECT_EQ(reg.decommissioning()[0].second, fromEpochMs(9000));
  EXPECT_EQ(reg.adminCount(NodeAdminState::kDecommissioning), 1);
  reg.setAdmin(NodeId("nm2"), at(NodeAdminState::kDecommissioned));
  EXPECT_TRUE(reg.decommissioning().empty());
  EXPECT_EQ(reg.liveCount(), 1);
  EXPECT_EQ(reg.lostCount(), 0) << "decommissioned is not lost";
  EXPECT_EQ(reg.adminCount(NodeAdminState::kDecommissioned), 1);
  Status hb = reg.heartbeat(NodeId("nm2"), 2, Resource(), 0, 0, 0, now);
  EXPECT_EQ(hb.code(), StatusCode::kInfeasible);
  EXPECT_NE(hb.message().find("nm2 is decommissioned"), std::string::npos) << hb.message();
  Status again = reg.registerNode(node("nm2", "127.0.0.1:2"), now);
  EXPECT_EQ(again.code(), StatusCode::kInfeasible);
  EXPECT_NE(again.message().find("morpheusctl node undrain nm2"), std::string::npos)
      << again.message();
  EXPECT_EQ(reg.nodes(false).size(), 1u);
  EXPECT_EQ(reg.nodes(true).size(), 2u);
  // Undrain: the node may register again and counts once it did.
  reg.setAdmin(NodeId("nm2"), at(NodeAdminState::kInService));
  EXPECT_EQ(reg.heartbeat(NodeId("nm2"), 3, Resource(), 0, 0, 0, now).code(), StatusCode::kNotFound)
      << "resync: register again";
  ASSERT_TRUE(reg.registerNode(node("nm2", "127.0.0.1:2"), now).isOk());
  EXPECT_EQ(reg.liveCapacity(), Resource(8192, 8));

  // An admin state set before the node registers (recovered after an RM
  // restart) applies when it does.
  reg.setAdmin(NodeId("nm3"), at(NodeAdminState::kDrained));
  ASSERT_TRUE(reg.registerNode(node("nm3", "127.0.0.1:3"), now).isOk());
  EXPECT_EQ(reg.liveCapacity(), Resource(8192, 8));
  EXPECT_EQ(reg.find(NodeId("nm3"))->admin.state, NodeAdminState::kDrained);
}

// Through the core: a change is committed before it applies, the capacity
// listener hears it, a decommission ends when nothing runs there or at its
// deadline (containers reported lost with the reason), and a new core on
// the same store recovers the states.
TEST(NodeAdminStateTest, CoreChangesAreDurableAndDecommissionsEnd) {
  auto store = store::openStateStore("sqlite", freshTestDb("node-admin"));
  ASSERT_TRUE(store.isOk()) << store.status().toString();
  VirtualClock clock(fromEpochMs(1000000));
  MetricsRegistry metrics;
  RmOptions opts;
  opts.node_expiry = Millis(10000);
  Resource capacity;
  std::vector<std::pair<std::string, std::string>> lost;
  std::map<std::string, int> running = {{"nm1", 0}, {"nm2", 1}};
  {
    RmCore core(opts, clock, metrics, "secret");
    core.setStore(store->get());
    core.setCapacityListener([&](const Resource& live, bool) { capacity = live; });
    core.setNodeLostListener(
        [&](const NodeId& n, const std::string& why) { lost.emplace_back(n.value(), why); });
    core.setRunningContainers([&](const NodeId& n) { return running[n.value()]; });
    ASSERT_TRUE(core.registerNode(node("nm1")).isOk());
    ASSERT_TRUE(core.registerNode(node("nm2", "127.0.0.1:2")).isOk());
    EXPECT_EQ(capacity, Resource(8192, 8));
    auto d = core.drainNode(NodeId("nm1"));
    ASSERT_TRUE(d.isOk());
    EXPECT_EQ(d->admin.state, NodeAdminState::kDrained);
    EXPECT_EQ(capacity, Resource(4096, 4));
    EXPECT_EQ(core.drainNode(NodeId("nope")).status().code(), StatusCode::kNotFound);
    // nm2 runs a container: decommissioning until it ends or 5 s pass.
    auto dec = core.decommissionNode(NodeId("nm2"), Millis(5000));
    ASSERT_TRUE(dec.isOk());
    EXPECT_EQ(dec->admin.state, NodeAdminState::kDecommissioning);
    EXPECT_EQ(capacity, Resource());
    ASSERT_TRUE(core.nodeHeartbeat(NodeId("nm2"), 1, Resource(), 0, 0, 1).isOk());
    core.checkLiveness();
    EXPECT_EQ(core.nodeAdmin(NodeId("nm2")).state, NodeAdminState::kDecommissioning);
    EXPECT_TRUE(lost.empty());
    clock.advance(Millis(5000));
    ASSERT_TRUE(core.nodeHeartbeat(NodeId("nm2"), 2, Resource(), 0, 0, 1).isOk());
    core.checkLiveness();  // the deadline passed with the container still running
    EXPECT_EQ(core.nodeAdmin(NodeId("nm2")).state, NodeAdminState::kDecommissioned);
    ASSERT_EQ(lost.size(), 1u);
    EXPECT_EQ(lost[0].first, "nm2");
    EXPECT_NE(lost[0].second.find("decommission timeout"), std::string::npos) << lost[0].second;
    EXPECT_EQ(core.nodeHeartbeat(NodeId("nm2"), 3, Resource(), 0, 0, 0).code(),
              StatusCode::kInfeasible);
    ClusterSummary s = core.summary();
    EXPECT_EQ(s.decommissioned_nodes, 1);
    EXPECT_EQ(s.live_nodes, 1);
    core.setCapacityListener(nullptr);
    core.setNodeLostListener(nullptr);
    core.setRunningContainers(nullptr);
  }
  // A new RM on the same store: nm1 is still drained, nm2 decommissioned.
  RmCore again(opts, clock, metrics, "secret");
  again.setStore(store->get());
  ASSERT_TRUE(again.recoverNodeAdmin().isOk());
  EXPECT_EQ(again.nodeAdmin(NodeId("nm1")).state, NodeAdminState::kDrained);
  EXPECT_EQ(again.nodeAdmin(NodeId("nm2")).state, NodeAdminState::kDecommissioned);
  EXPECT_EQ(again.registerNode(node("nm2", "127.0.0.1:2")).code(), StatusCode::kInfeasible);
  ASSERT_TRUE(again.registerNode(node("nm1")).isOk());
  EXPECT_EQ(again.summary().total, Resource()) << "drained nm1 is not in the capacity";
  ASSERT_TRUE(again.undrainNode(NodeId("nm1")).isOk());
  ASSERT_TRUE(again.undrainNode(NodeId("nm2")).isOk());
  EXPECT_EQ(again.summary().total, Resource(4096, 4));
  ASSERT_TRUE(again.registerNode(node("nm2", "127.0.0.1:2")).isOk());
  auto rows = (*store)->list("node-admin");
  ASSERT_TRUE(rows.isOk());
  EXPECT_TRUE(rows->empty()) << "in service = no record";
}

}  // namespace
}  // namespace morpheus::rm
