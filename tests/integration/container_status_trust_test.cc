// A node speaks only for its own containers: a real RM and two NMs on
// loopback with authentication on. The test plays a node (its own valid node
// token) that reports another node's container as failed in its heartbeat.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "common/wire.h"
#include "harness.h"
#include "morpheus/v1/resource_tracker.grpc.pb.h"

namespace morpheus::testing {
namespace {

using namespace std::chrono_literals;
using json = nlohmann::json;

class ContainerStatusTrustIT : public ClusterTest {};

// Before: with nm2's token, a NodeHeartbeat listing alice's AM container (on
// nm1) as COMPLETE ended her attempt, and a second one failed her app. Now the
// RM ignores statuses for containers it allocated to another node (counted in
// morpheus_rm_container_statuses_refused_total): her first attempt keeps
// running and the app finishes.
TEST_F(ContainerStatusTrustIT, ANodeCannotFailAnotherNodesContainer) {
  ASSERT_NO_FATAL_FAILURE(startCluster(2));
  // The task waits for a file the test creates after the attack.
  const std::string go = freshDir("go") + "/go";
  std::string job = writeJob(
      "name: alice-long\n"
      "stages:\n"
      "  - name: work\n"
      "    tasks: 1\n"
      "    command: \"while [ ! -e " +
      go +
      " ]; do sleep 0.1; done\"\n"
      "    resources: {memory_mib: 128, vcores: 1}\n"
      "    max_attempts: 1\n");
  auto [code, out] = ctl({"app", "submit", job, "--max-am-attempts", "2"});
  ASSERT_EQ(code, 0) << out;
  const std::string id = out.substr(0, out.find('\n'));
  ASSERT_TRUE(waitRunning(id, 2, 60s)) << app(id).dump() << rm_.log();
  json before = app(id);
  const std::string am = before["am_container_id"];
  const std::string am_node = before["am_node_id"];
  ASSERT_FALSE(am.empty()) << before.dump();
  ASSERT_EQ(before["am_attempt"], 1) << before.dump();
  const std::string other = am_node == "nm1" ? "nm2" : "nm1";

  auto tracker = v1::ResourceTracker::NewStub(makeChannel(rm_.grpcAddress(), TlsOptions{}));
  for (int i = 0; i < 2; i++) {
    v1::NodeHeartbeatRequest req;
    req.set_node_id(other);
    req.set_sequence(1000000 + i);
    req.set_changes_only(true);
    toProto(Resource(0, 0), req.mutable_used());
    auto* st = req.add_container_statuses();
    st->set_container_id(am);
    st->set_state(v1::CONTAINER_COMPLETE);
    st->set_exit_status(1);
    st->set_diagnostics("spoofed by " + other);
    v1::NodeHeartbeatResponse resp;
    auto ctx = makeContext(Millis(5000));
    ctx->AddMetadata("authorization", "Bearer " + testToken(other));
    // The RM answers a heartbeat after applying its report.
    grpc::Status s = tracker->NodeHeartbeat(ctx.get(), req, &resp);
    ASSERT_TRUE(s.ok()) << s.error_message();
    for (const auto& ack : resp.containers_to_acknowledge()) {
      EXPECT_NE(ack, am) << "the RM acknowledged another node's container as done";
    }
  }

  json after = app(id);
  EXPECT_EQ(after["state"], "RUNNING") << after.dump();
  EXPECT_EQ(after["am_attempt"], 1) << "the spoofed report ended an attempt: " << after.dump();
  EXPECT_EQ(after["am_container_id"], am) << after.dump();
  EXPECT_EQ(after["diagnostics"].get<std::string>().find("spoofed"), std::string::npos)
      << after.dump();
  auto metrics = httpRequest(rm_.httpAddress(), "GET", "/metrics");
  EXPECT_NE(metrics.body.find("morpheus_rm_container_statuses_refused_total 2"), std::string::npos)
      << metrics.body.substr(0, 2000);

  // Her job goes on to finish on its first attempt.
  std::ofstream(go).flush();
  ASSERT_TRUE(waitFinal(id, 60s)) << app(id).dump() << rm_.log();
  json done = app(id);
  EXPECT_EQ(done["state"], "FINISHED") << done.dump();
  EXPECT_EQ(done["am_attempt"], 1) << done.dump();
}

}  // namespace
}  // namespace morpheus::testing
