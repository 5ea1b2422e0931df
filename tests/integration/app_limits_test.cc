// Per-user bounds on applications and well-formed names, against a real RM on
// loopback with authentication on. The test plays a user flooding the RM with
// applications, and names built to mislead whoever reads them.
#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <string>

#include "common/wire.h"
#include "harness.h"
#include "morpheus/v1/client.grpc.pb.h"

namespace morpheus::testing {
namespace {

using namespace std::chrono_literals;
using json = nlohmann::json;

class AppLimitsIT : public ClusterTest {
 protected:
  // SubmitApplication as `principal` of an app named `name` whose AM would
  // run `/bin/true` with `env_bytes` bytes of environment.
  grpc::Status submit(const std::string& principal, const std::string& name, size_t env_bytes = 0,
                      std::string* id = nullptr) {
    if (!stub_) stub_ = v1::ClientService::NewStub(makeChannel(rm_.grpcAddress(), TlsOptions{}));
    v1::SubmitApplicationRequest req;
    req.set_name(name);
    toProto(Resource(128, 1), req.mutable_am_resource());
    req.mutable_am_launch_context()->set_command("/bin/true");
    if (env_bytes > 0)
      (*req.mutable_am_launch_context()->mutable_env())["X"] = std::string(env_bytes, 'x');
    v1::SubmitApplicationResponse resp;
    auto ctx = makeContext(Millis(10000));
    ctx->AddMetadata("authorization", "Bearer " + testToken(principal));
    grpc::Status st = stub_->SubmitApplication(ctx.get(), req, &resp);
    if (id != nullptr) *id = resp.application_id();
    return st;
  }
  // Resident memory of the RM, MiB (from /proc).
  int64_t rmRssMib() {
    std::ifstream in("/proc/" + std::to_string(rm_.pid()) + "/status");
    std::string line;
    while (std::getline(in, line)) {
      if (line.rfind("VmRSS:", 0) == 0) return std::stoll(line.substr(6)) / 1024;
    }
    return -1;
  }
  std::unique_ptr<v1::ClientService::Stub> stub_;
};

// The attack: 2,000 applications as alice, none of which can start (no
// node). Before, every one was accepted and stored (the RM grew by hundreds
// of MiB). Now the default rm.max-pending-apps-per-user (200) holds: the rest
// are PERMISSION_DENIED naming the option and store nothing; bob still
// submits, and alice can again once she kills some of hers.
TEST_F(AppLimitsIT, OneUserCannotFloodTheRmWithPendingApplications) {
  ASSERT_NO_FATAL_FAILURE(startCluster(0));
  const int64_t rss_before = rmRssMib();
  int accepted = 0;
  grpc::Status first_refusal;
  std::vector<std::string> ids;
  for (int i = 0; i < 2000; i++) {
    std::string id;
    grpc::Status st = submit("alice", "flood-" + std::to_string(i), 0, &id);
    if (st.ok()) {
      accepted++;
      ids.push_back(id);
    } else if (first_refusal.ok()) {
      first_refusal = st;
    }
  }
  std::cout << "alice: " << accepted << " of 2000 applications accepted; RM RSS " << rss_before
            << " -> " << rmRssMib() << " MiB\n";
  EXPECT_EQ(accepted, 200);
  EXPECT_EQ(first_refusal.error_code(), grpc::StatusCode::PERMISSION_DENIED)
      << first_refusal.error_message();
  EXPECT_NE(first_refusal.error_message().find("rm.max-pending-apps-per-user"), std::string::npos)
      << first_refusal.error_message();
  EXPECT_NE(first_refusal.error_message().find("alice"), std::string::npos)
      << first_refusal.error_message();
  auto [code, out] = ctl({"app", "list", "--json"});
  ASSERT_EQ(code, 0) << out;
  json listed = json::parse(out, nullptr, false);
  ASSERT_FALSE(listed.is_discarded()) << out;
  EXPECT_EQ(listed["applications"].size(), 200u)
      << "a refused submission left an application behind";

  EXPECT_TRUE(submit("bob", "bobs-app").ok()) << "the bound is per user";
  ASSERT_FALSE(ids.empty());
  auto [kc, ko] = ctl({"app", "kill", ids.front()});
  ASSERT_EQ(kc, 0) << ko;
  grpc::Status again = submit("alice", "after-kill");
  EXPECT_TRUE(again.ok()) << "a killed app no longer counts: " << again.error_message();
}

// rm.max-apps-per-user bounds a user's unfinished applications, and the AM
// launch context is bounded by rm.max-launch-context-bytes (INVALID_ARGUMENT
// naming am_launch_context).
TEST_F(AppLimitsIT, UnfinishedAppsAndLaunchContextsAreBounded) {
  ASSERT_NO_FATAL_FAILURE(startCluster(
      0, {"--set", "rm.max-pending-apps-per-user=10", "--set", "rm.max-apps-per-user=3"}));
  for (int i = 0; i < 3; i++) EXPECT_TRUE(submit("alice", "a" + std::to_string(i)).ok());
  grpc::Status st = submit("alice", "a3");
  EXPECT_EQ(st.error_code(), grpc::StatusCode::PERMISSION_DENIED) << st.error_message();
  EXPECT_NE(st.error_message().find("rm.max-apps-per-user"), std::string::npos)
      << st.error_message();

  grpc::Status big = submit("bob", "big-context", 1 << 20);
  EXPECT_EQ(big.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << big.error_message();
  EXPECT_EQ(big.error_message().rfind("am_launch_context: ", 0), 0u) << big.error_message();
  EXPECT_NE(big.error_message().find("rm.max-launch-context-bytes"), std::string::npos)
      << big.error_message();
  EXPECT_TRUE(submit("bob", "small-context", 1000).ok());
}

// Application and reservation names with a right-to-left override (U+202E)
// or a NUL are refused naming the field; nothing is stored. Before, both were
// accepted and shown as written.
TEST_F(AppLimitsIT, NamesWithControlOrBidiCharactersAreRefused) {
  ASSERT_NO_FATAL_FAILURE(startCluster(1));
  const std::string rlo =
      "invoice\xE2\x80\xAE"
      "fdp.exe";
  const std::string nul("a\0b", 3);
  for (const std::string& name : {rlo, nul, std::string("tab\there")}) {
    grpc::Status st = submit("alice", name);
    EXPECT_EQ(st.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << st.error_message();
    EXPECT_EQ(st.error_message().rfind("name: contains U+", 0), 0u) << st.error_message();
  }
  EXPECT_NE(submit("alice", rlo).error_message().find("U+202E"), std::string::npos);
  EXPECT_TRUE(submit("alice", "plain name, ünïcode ok").ok());
  auto [code, out] = ctl({"app", "list", "--json"});
  json listed = json::parse(out, nullptr, false);
  ASSERT_FALSE(listed.is_discarded()) << out;
  EXPECT_EQ(listed["applications"].size(), 1u) << out;

  for (const std::string& name : {rlo, nul}) {
    json def = {
        {"arrival", nowMs() + 3600000},
        {"deadline", nowMs() + 7200000},
        {"reservation-name", name},
        {"reservation-requests",
         {{"reservation-request-interpreter", 1},
          {"reservation-request", json::array({{{"capability", {{"memory", 1024}, {"vCores", 1}}},
                                                {"num-containers", 1},
                                                {"min-concurrency", 1},
                                                {"duration", 60000}}})}}}};
    std::string path = freshDir("res") + "/r.json";
    std::ofstream(path) << json({{"queue", "default"}, {"reservation-definition", def}}).dump();
    auto [rc, rout] = ctl({"reservation", "submit", "-f", path, "--json"});
    EXPECT_NE(rc, 0) << rout;
    EXPECT_NE(rout.find("name: contains U+"), std::string::npos) << rout;
  }
  auto [lc, lout] = ctl({"reservation", "list", "--json"});
  EXPECT_EQ(lout.find("fdp.exe"), std::string::npos) << lout;
}

}  // namespace
}  // namespace morpheus::testing
