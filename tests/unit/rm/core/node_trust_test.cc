// Node trust in the RM core: per-node
// container-token keys with an expiry, the rm.container-token-expiry option,
// and refusing a second registration of a live node id from another address.
#include <gtest/gtest.h>

#include "common/token.h"
#include "rm/core/rm_core.h"

namespace morpheus::rm {
namespace {

class NodeTrustTest : public ::testing::Test {
 protected:
  NodeInfo nodeAt(const std::string& id, const std::string& address) {
    NodeInfo n;
    n.id = NodeId(id);
    n.container_manager_address = address;
    n.http_address = address;
    n.total = Resource(4096, 4);
    return n;
  }
  std::string addressOf(const std::string& id) {
    for (const auto& n : core_->nodes(true)) {
      if (n.id.value() == id) return n.container_manager_address;
    }
    return "";
  }

  VirtualClock clock_{fromEpochMs(1800000000000)};
  MetricsRegistry metrics_;
  RmOptions opts_ = [] {
    RmOptions o;
    o.node_expiry = Millis(10000);
    o.container_token_expiry = Millis(90000);
    return o;
  }();
  std::unique_ptr<RmCore> core_ = std::make_unique<RmCore>(opts_, clock_, metrics_, "master");
};

// The RM signs a container token with the key of the node it names (the key
// that node's NM gets at registration), never with the master secret, and it
// expires rm.container-token-expiry after issue.
TEST_F(NodeTrustTest, ContainerTokensAreSignedWithTheNodesKeyAndExpire) {
  EXPECT_EQ(core_->nodeKey(NodeId("nm1")), deriveNodeKey("master", NodeId("nm1")));
  std::string tok = core_->issueContainerToken({ContainerId("application_1_0001_1_1"),
                                                AppId("application_1_0001"), NodeId("nm1"),
                                                Resource(128, 1), TimePoint()});
  auto info = verifyContainerToken(TokenSigner(core_->nodeKey(NodeId("nm1"))), tok);
  ASSERT_TRUE(info.isOk()) << info.status().toString();
  EXPECT_EQ(info->expires, clock_.now() + Millis(90000));
  EXPECT_FALSE(verifyContainerToken(TokenSigner(core_->nodeKey(NodeId("nm2"))), tok).isOk());
  EXPECT_FALSE(verifyContainerToken(core_->signer(), tok).isOk()) << "not the master key";
  EXPECT_NE(core_->nodeKey(NodeId("nm1")), core_->signer().secret());
}

// rm.container-token-expiry: 10 minutes by default (YARN's allocation
// expiry), parsed as a duration, at least 1 s.
TEST_F(NodeTrustTest, ContainerTokenExpiryOptionParses) {
  RmOptions o;
  ConfigSchema s("morpheus-rm");
  declareRmOptions(s, &o);
  EXPECT_EQ(o.container_token_expiry, Millis(600000));
  ASSERT_TRUE(s.set("rm.container-token-expiry", "30s").isOk());
  EXPECT_EQ(o.container_token_expiry, Millis(30000));
  Status st = s.set("rm.container-token-expiry", "0s");
  EXPECT_FALSE(st.isOk());
  EXPECT_NE(st.message().find("rm.container-token-expiry"), std::string::npos) << st.message();
  EXPECT_FALSE(s.set("rm.container-token-expiry", "soon").isOk());
}

// While nm1 is live at A, a registration of nm1 from B is
// ALREADY_EXISTS naming the node and A, and the record keeps A; A itself may
// re-register (an NM restart); once nm1 is lost, or after it unregistered, B
// is accepted. Before, B silently took the record over.
TEST_F(NodeTrustTest, LiveNodeIdFromAnotherAddressIsRefusedUntilTheNodeIsLost) {
  ASSERT_TRUE(core_->registerNode(nodeAt("nm1", "10.0.0.1:8040")).isOk());
  Status st = core_->registerNode(nodeAt("nm1", "10.0.0.2:8040"));
  EXPECT_EQ(st.code(), StatusCode::kAlreadyExists);
  EXPECT_NE(st.message().find("node nm1 is live at 10.0.0.1:8040"), std::string::npos)
      << st.message();
  EXPECT_EQ(addressOf("nm1"), "10.0.0.1:8040");
  EXPECT_TRUE(core_->registerNode(nodeAt("nm1", "10.0.0.1:8040")).isOk()) << "same address";

  clock_.advance(Millis(10001));
  core_->checkLiveness();
  ASSERT_EQ(core_->summary().lost_nodes, 1);
  EXPECT_TRUE(core_->registerNode(nodeAt("nm1", "10.0.0.2:8040")).isOk()) << "after loss";
  EXPECT_EQ(addressOf("nm1"), "10.0.0.2:8040");

  ASSERT_TRUE(core_->unregisterNode(NodeId("nm1")).isOk());
  EXPECT_TRUE(core_->registerNode(nodeAt("nm1", "10.0.0.3:8040")).isOk()) << "after unregister";
  EXPECT_EQ(addressOf("nm1"), "10.0.0.3:8040");
}

}  // namespace
}  // namespace morpheus::rm
