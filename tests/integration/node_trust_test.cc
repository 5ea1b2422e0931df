// Node trust against a real RM and NMs on
// loopback with authentication on (ClusterTest: rm.token-file holds node
// tokens for nm1..nm9; each NM has its own nm.token-file). The test plays an
// attacker calling the RM's ResourceTracker and the NMs' ContainerManager.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "common/token.h"
#include "common/wire.h"
#include "harness.h"
#include "morpheus/v1/container_manager.grpc.pb.h"
#include "morpheus/v1/resource_tracker.grpc.pb.h"

namespace morpheus::testing {
namespace {

using namespace std::chrono_literals;
using json = nlohmann::json;

// "" = no authorization metadata.
std::unique_ptr<grpc::ClientContext> contextWith(const std::string& bearer) {
  auto ctx = makeContext(Millis(5000));
  if (!bearer.empty()) ctx->AddMetadata("authorization", "Bearer " + bearer);
  return ctx;
}

class NodeTrustIT : public ClusterTest {
 protected:
  // A cluster of `nms` NMs (nm1..) with authentication on.
  void start(int nms) {
    ASSERT_NO_FATAL_FAILURE(startCluster(nms));
    tracker_ = v1::ResourceTracker::NewStub(makeChannel(rm_.grpcAddress(), TlsOptions{}));
  }
  // RegisterNode of `node` at `address` presenting `bearer`.
  std::pair<grpc::Status, v1::RegisterNodeResponse> registerNode(const std::string& node,
                                                                 const std::string& address,
                                                                 const std::string& bearer) {
    v1::RegisterNodeRequest req;
    req.set_node_id(node);
    req.set_container_manager_address(address);
    req.set_http_address(address);
    toProto(Resource(1024, 1), req.mutable_total());
    v1::RegisterNodeResponse resp;
    auto ctx = contextWith(bearer);
    grpc::Status st = tracker_->RegisterNode(ctx.get(), req, &resp);
    return {st, resp};
  }
  // The RM's view of node `id` from `cluster status --json` (null if absent).
  json node(const std::string& id) {
    auto [code, out] = ctl({"cluster", "status", "--json"});
    json st = json::parse(out, nullptr, false);
    if (code != 0 || st.is_discarded()) return json();
    for (const auto& n : st["nodes"]) {
      if (n["node_id"] == id) return n;
    }
    return json();
  }
  // The NM process serving node `id` (nms_[i] is nm<i+1>).
  Process& nm(int i) { return nms_[static_cast<size_t>(i - 1)]; }

  std::unique_ptr<v1::ResourceTracker::Stub> tracker_;
};

// The shared-secret attack end to end. Before: RegisterNode answered anyone
// with the RM's one container-token secret, and a token signed with it ran
// `/bin/sh -c id` on every node. Now: no token, a user's or an admin's token,
// or another node's token is PERMISSION_DENIED with no key; nm3's own token
// gets nm3's key only, which signs nothing nm2 accepts.
TEST_F(NodeTrustIT, RegisterNodeHandsAKeyOnlyToThatNodesTokenAndItOpensNoOtherNode) {
  ASSERT_NO_FATAL_FAILURE(start(2));
  for (const std::string& bearer : {std::string(), testToken("alice"), testToken("ops"),
                                    testToken("nm1"), std::string("not-a-known-token-at-all")}) {
    auto [st, resp] = registerNode("nm3", "127.0.0.1:1", bearer);
    EXPECT_EQ(st.error_code(), grpc::StatusCode::PERMISSION_DENIED)
        << "bearer '" << bearer << "': " << st.error_message();
    EXPECT_TRUE(resp.container_token_secret().empty()) << "no key without nm3's token";
  }
  EXPECT_TRUE(node("nm3").is_null()) << "a refused registration leaves no node behind";

  auto [st, resp] = registerNode("nm3", "127.0.0.1:1", testToken("nm3"));
  ASSERT_TRUE(st.ok()) << st.error_message();
  const std::string key = resp.container_token_secret();
  ASSERT_EQ(key.size(), 32u) << "nm3's HMAC-SHA256 key";

  // With nm3's key the attacker signs container tokens naming nm2 and nm3 and
  // asks nm2 to run `/bin/sh -c id`: both are refused and nothing runs.
  auto cm = v1::ContainerManager::NewStub(makeChannel(nm(2).grpcAddress(), TlsOptions{}));
  TimePoint exp = fromEpochMs(nowMs()) + std::chrono::minutes(10);
  for (std::string named_node : {"nm2", "nm3"}) {
    std::string id = "application_1_0001_1_" + named_node;
    v1::StartContainersRequest req;
    auto* r = req.add_requests();
    r->mutable_container()->set_container_id(id);
    r->mutable_container()->set_node_id("nm2");
    const std::string forged = issueContainerToken(
        TokenSigner(key),
        {ContainerId(id), AppId("application_1_0001"), NodeId(named_node), Resource(128, 1), exp});
    r->mutable_container()->set_token(forged);
    r->mutable_launch_context()->set_command("/bin/sh");
    r->mutable_launch_context()->add_args("-c");
    r->mutable_launch_context()->add_args("id");
    v1::StartContainersResponse out;
    auto ctx = makeContext(Millis(5000));
    ASSERT_TRUE(cm->StartContainers(ctx.get(), req, &out).ok());
    EXPECT_EQ(out.started_size(), 0) << out.DebugString();
    ASSERT_EQ(out.failed_size(), 1) << out.DebugString();
    EXPECT_EQ(out.failed(0).code(), "PERMISSION_DENIED") << out.DebugString();

    v1::GetContainerStatusesRequest sreq;
    sreq.add_container_ids(id);
    sreq.set_token(forged);
    v1::GetContainerStatusesResponse sresp;
    auto sctx = makeContext(Millis(5000));
    EXPECT_EQ(cm->GetContainerStatuses(sctx.get(), sreq, &sresp).error_code(),
              grpc::StatusCode::PERMISSION_DENIED)
        << "nm3's key lists nothing on nm2";
    EXPECT_FALSE(std::filesystem::exists(nm_dirs_[1] + "/local/containers/" + id))
        << "no container exists on nm2";
  }

  // nm3's own token may also take its node away again.
  v1::UnregisterNodeRequest ureq;
  ureq.set_node_id("nm3");
  v1::UnregisterNodeResponse uresp;
  auto uctx = contextWith(testToken("nm3"));
  EXPECT_TRUE(tracker_->UnregisterNode(uctx.get(), ureq, &uresp).ok());
}

// Heartbeats and UnregisterNode need the node's own token too. Before, anyone
// could unregister a live node (and drop its capacity) or heartbeat for it.
TEST_F(NodeTrustIT, HeartbeatAndUnregisterWithoutTheNodesTokenAreRefused) {
  ASSERT_NO_FATAL_FAILURE(start(2));
  for (const std::string& bearer : {std::string(), testToken("alice"), testToken("nm2")}) {
    v1::UnregisterNodeRequest ureq;
    ureq.set_node_id("nm1");
    v1::UnregisterNodeResponse uresp;
    auto uctx = contextWith(bearer);
    EXPECT_EQ(tracker_->UnregisterNode(uctx.get(), ureq, &uresp).error_code(),
              grpc::StatusCode::PERMISSION_DENIED)
        << "bearer '" << bearer << "'";

    v1::NodeHeartbeatRequest hreq;
    hreq.set_node_id("nm1");
    hreq.set_sequence(1000000);
    toProto(Resource(4096, 4), hreq.mutable_used());
    v1::NodeHeartbeatResponse hresp;
    auto hctx = contextWith(bearer);
    EXPECT_EQ(tracker_->NodeHeartbeat(hctx.get(), hreq, &hresp).error_code(),
              grpc::StatusCode::PERMISSION_DENIED)
        << "bearer '" << bearer << "'";
  }
  json n1 = node("nm1");
  ASSERT_FALSE(n1.is_null()) << "nm1 is still registered";
  EXPECT_EQ(n1["state"], "RUNNING") << n1.dump();
  EXPECT_EQ(n1["used"]["memory_mib"], 0) << "no forged usage was recorded: " << n1.dump();
  auto [code, out] = ctl({"cluster", "status", "--json"});
  EXPECT_EQ(json::parse(out, nullptr, false)["live_nodes"], 2) << out;
}

// A registration for a live node id from another address is
// ALREADY_EXISTS naming the node and its live address, even with that node's
// token; the real node keeps its record and runs an app's AM. Before, the
// impostor took the record over and AMs were sent to its address.
TEST_F(NodeTrustIT, ImpostorOfALiveNodeIsRefusedAndTheRealNodeKeepsWorking) {
  ASSERT_NO_FATAL_FAILURE(start(1));
  const std::string real = nm(1).grpcAddress();
  auto [st, resp] = registerNode("nm1", "127.0.0.1:1", testToken("nm1"));
  EXPECT_EQ(st.error_code(), grpc::StatusCode::ALREADY_EXISTS) << st.error_message();
  EXPECT_NE(st.error_message().find("nm1"), std::string::npos) << st.error_message();
  EXPECT_NE(st.error_message().find(real), std::string::npos) << st.error_message();
  EXPECT_TRUE(resp.container_token_secret().empty());
  EXPECT_EQ(node("nm1")["address"], real) << node("nm1").dump();

  // A second NM process configured as nm1 is refused the same way.
  std::vector<std::string> args = {"--rm", rm_.grpcAddress(), "--node-id", "nm1"};
  for (auto& a : nmAuthArgs("nm1")) args.push_back(std::move(a));
  Process impostor = Process::startDaemon("nm", freshDir("nm-impostor"), args);
  ASSERT_FALSE(impostor.grpcAddress().empty()) << impostor.log();
  ASSERT_TRUE(waitFor(
      [&] {
        return impostor.log().find("ALREADY_EXISTS: node nm1 is live at") != std::string::npos;
      },
      10s))
      << impostor.log();
  EXPECT_EQ(node("nm1")["address"], real) << node("nm1").dump();

  // The real nm1 (the only node) still runs work: an app's AM launches there
  // on its first attempt and the app finishes.
  std::string job = writeJob(
      "name: on-the-real-nm1\n"
      "stages:\n"
      "  - name: work\n"
      "    tasks: 1\n"
      "    command: \"echo done\"\n"
      "    resources: {memory_mib: 128, vcores: 1}\n"
      "    max_attempts: 1\n");
  auto [code, out] = ctl({"app", "submit", job});
  ASSERT_EQ(code, 0) << out;
  std::string id = out.substr(0, out.find('\n'));
  ASSERT_TRUE(waitFinal(id, 60s)) << rm_.log();
  json a = app(id);
  EXPECT_EQ(a["state"], "FINISHED") << a.dump();
  EXPECT_EQ(a["am_node_id"], "nm1") << a.dump();
  EXPECT_EQ(a["am_attempt"], 1) << "the first AM launched: " << a.dump();
}

// The RM refuses to start without rm.token-file (one line naming the
// option) unless rm.auth-disabled, which it logs as a warning and under
// which a node registers without credentials. The NM likewise needs
// nm.token-file unless nm.auth-disabled. Before, both started open.
TEST(NodeAuthStartup, DaemonsNeedTokenFilesUnlessAuthIsExplicitlyDisabled) {
  auto [code, out] = runCommand({binary("morpheus-rm"), "--data-dir", freshDir("rm-noauth"),
                                 "--grpc-port", "0", "--http-port", "0"});
  EXPECT_EQ(code, 2) << out;
  EXPECT_NE(out.find("morpheus-rm: config error: rm.token-file: is required"), std::string::npos)
      << out;
  EXPECT_EQ(std::count(out.begin(), out.end(), '\n'), 1) << out;

  auto [nm_code, nm_out] =
      runCommand({binary("morpheus-nm"), "--data-dir", freshDir("nm-noauth"), "--grpc-port", "0",
                  "--http-port", "0", "--rm", "127.0.0.1:1"});
  EXPECT_EQ(nm_code, 2) << nm_out;
  EXPECT_NE(nm_out.find("morpheus-nm: config error: nm.token-file: required"), std::string::npos)
      << nm_out;
  EXPECT_EQ(std::count(nm_out.begin(), nm_out.end(), '\n'), 1) << nm_out;

  Process rm = Process::startDaemon("rm", freshDir("rm-open"), {"--set", "rm.auth-disabled=true"});
  ASSERT_FALSE(rm.grpcAddress().empty()) << rm.log();
  EXPECT_NE(rm.log().find("rm.auth-disabled: true: every caller is the admin"), std::string::npos)
      << rm.log();
  auto tracker = v1::ResourceTracker::NewStub(makeChannel(rm.grpcAddress(), TlsOptions{}));
  v1::RegisterNodeRequest req;
  req.set_node_id("dev-node");
  req.set_container_manager_address("127.0.0.1:1");
  toProto(Resource(1024, 1), req.mutable_total());
  v1::RegisterNodeResponse resp;
  auto ctx = makeContext(Millis(5000));
  grpc::Status st = tracker->RegisterNode(ctx.get(), req, &resp);
  EXPECT_TRUE(st.ok()) << st.error_message();
  EXPECT_EQ(resp.container_token_secret().size(), 32u) << "the node's key, not the master";

  Process nm = Process::startDaemon(
      "nm", freshDir("nm-open"),
      {"--rm", rm.grpcAddress(), "--node-id", "dev-nm", "--set", "nm.auth-disabled=true"});
  ASSERT_FALSE(nm.grpcAddress().empty()) << nm.log();
  EXPECT_NE(nm.log().find("nm.auth-disabled"), std::string::npos) << nm.log();
  EXPECT_TRUE(
      waitFor([&] { return nm.log().find("registered with RM") != std::string::npos; }, 10s))
      << nm.log();
}

}  // namespace
}  // namespace morpheus::testing
