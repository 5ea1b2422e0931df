// The RM's config reload without a restart (docs/operator/node-operations.md),
// on a real RM started with --config: `morpheusctl admin reload` and SIGHUP
// apply a changed queue weight, ACL and token file at once; a broken config
// is refused naming the option as written (the CLI prints it, SIGHUP logs it)
// and the old config keeps serving; an option that needs a restart is
// reported, not applied; only admins may reload.
#include <gtest/gtest.h>
#include <signal.h>

#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "harness.h"

namespace morpheus::testing {
namespace {

using namespace std::chrono_literals;
using nlohmann::json;

const char* kJob =
    "name: acl-probe\n"
    "stages:\n"
    "  - name: work\n"
    "    tasks: 1\n"
    "    command: \"true\"\n"
    "    resources: {memory_mib: 256, vcores: 1}\n";

const char* kCarolToken = "carol-token-0123456789abcdef";

class ConfigReloadIT : public ClusterTest {
 protected:
  void SetUp() override {
    dir_ = freshDir("reload");
    tokens_ = dir_ + "/tokens";
    std::ifstream in(testTokenFile());
    std::stringstream ss;
    ss << in.rdbuf();
    base_tokens_ = ss.str();
    writeSecretFile(tokens_, base_tokens_);
    config_ = dir_ + "/rm.yaml";
    writeConfig("1", "bob", "");
    rm_ = Process::startDaemon("rm", freshDir("rm"), {"--config", config_});
    ASSERT_FALSE(rm_.grpcAddress().empty()) << rm_.log();
    job_ = writeJob(kJob);
  }
  // root.a has `weight_a`, root.b's submit ACL is `b_submitters`; `extra`
  // is appended (YAML).
  void writeConfig(const std::string& weight_a, const std::string& b_submitters,
                   const std::string& extra) {
    std::ofstream(config_) << "rm.token-file: " << tokens_ << "\n"
                           << "scheduler.queues:\n"
                           << "  root.a: " << weight_a << "\n"
                           << "  root.b: 1\n"
                           << "rm.queue-acls.submit:\n"
                           << "  root.b: \"" << b_submitters << "\"\n"
                           << extra;
  }
  double weight(const std::string& queue) {
    auto [code, out] = ctl({"queue", "list", "--json"});
    auto j = json::parse(out, nullptr, false);
    if (j.is_discarded()) return -1;
    for (const auto& q : j["queues"]) {
      if (q["name"] == queue) return q["weight"].get<double>();
    }
    return -1;
  }
  // alice's submission to root.b: the exit code.
  int aliceSubmitsToB() { return ctl({"app", "submit", job_, "--queue", "root.b"}).first; }
  std::pair<int, std::string> asCarol(const std::vector<std::string>& args) {
    std::vector<std::string> argv = {binary("morpheusctl"), "--rm", rm_.grpcAddress(), "--token",
                                     kCarolToken};
    argv.insert(argv.end(), args.begin(), args.end());
    return runCommand(argv, {{"MORPHEUS_TOKEN", ""}});
  }

  std::string dir_, tokens_, base_tokens_, config_, job_;
};

TEST_F(ConfigReloadIT, AdminReloadAppliesWeightsAclsAndTokensAndRefusesABrokenConfig) {
  EXPECT_EQ(weight("root.a"), 1.0);
  EXPECT_EQ(aliceSubmitsToB(), 1) << "root.b is bob's";
  EXPECT_NE(asCarol({"queue", "list"}).first, 0) << "carol has no token yet";

  writeConfig("3", "alice bob", "");
  writeSecretFile(tokens_ + ".new", base_tokens_ + kCarolToken + " carol\n");
  ASSERT_EQ(std::rename((tokens_ + ".new").c_str(), tokens_.c_str()), 0);
  auto [denied, dout] = ctl({"admin", "reload"});
  EXPECT_EQ(denied, 1) << dout;
  EXPECT_NE(dout.find("alice may not reload the RM's config"), std::string::npos) << dout;
  EXPECT_EQ(weight("root.a"), 1.0) << "a refused reload applies nothing";

  auto [code, out] = ctlAs("ops", {"admin", "reload", "--json"});
  ASSERT_EQ(code, 0) << out << rm_.log();
  json r = json::parse(out, nullptr, false);
  ASSERT_FALSE(r.is_discarded()) << out;
  EXPECT_EQ(r["changed"], json({"scheduler.queues", "rm.queue-acls.submit", "rm.token-file"}))
      << out;
  EXPECT_EQ(r["restart_required"], json::array()) << out;
  EXPECT_EQ(weight("root.a"), 3.0);
  EXPECT_EQ(aliceSubmitsToB(), 0);
  EXPECT_EQ(asCarol({"queue", "list"}).first, 0) << "the re-read token file is in force";

  // Broken: refused naming the option as written; the old config still serves.
  writeConfig("2", "bob", "rm.queue-acls.administer:\n  root.a: \"\"\n");
  auto [bc, bout] = ctlAs("ops", {"admin", "reload"});
  EXPECT_EQ(bc, 2) << bout;
  EXPECT_NE(bout.find("INVALID_ARGUMENT"), std::string::npos) << bout;
  EXPECT_NE(bout.find("rm.queue-acls.administer.root.a"), std::string::npos) << bout;
  EXPECT_EQ(weight("root.a"), 3.0) << "nothing half-applied";
  EXPECT_EQ(aliceSubmitsToB(), 0) << "the old ACL still serves";
  writeConfig("lots", "alice bob", "");
  auto [wc, wout] = ctlAs("ops", {"admin", "reload"});
  EXPECT_EQ(wc, 2) << wout;
  EXPECT_NE(wout.find("scheduler.queues.root.a: weight must be a number > 0, got 'lots'"),
            std::string::npos)
      << wout;
  EXPECT_EQ(weight("root.a"), 3.0);
  auto metrics = httpRequest(rm_.httpAddress(), "GET", "/metrics").body;
  EXPECT_NE(metrics.find("morpheus_rm_config_reloads_total{result=\"applied\"} 1\n"),
            std::string::npos)
      << metrics;
  EXPECT_NE(metrics.find("morpheus_rm_config_reloads_total{result=\"refused\"} 2\n"),
            std::string::npos)
      << "the two broken configs; the non-admin's call never reached the reloader\n"
      << metrics;

  // An option that needs a restart is reported and left as it is.
  writeConfig("3", "alice bob", "rm.node-expiry: 42s\n");
  auto [rc, rout] = ctlAs("ops", {"admin", "reload"});
  EXPECT_EQ(rc, 0) << rout;
  EXPECT_NE(rout.find("needs an RM restart: rm.node-expiry"), std::string::npos) << rout;
}

TEST_F(ConfigReloadIT, SighupReloadsAndLogsARefusalNamingTheOption) {
  writeConfig("4", "alice", "");
  ASSERT_EQ(::kill(rm_.pid(), SIGHUP), 0);
  ASSERT_TRUE(waitFor([&] { return weight("root.a") == 4.0; }, 10s)) << rm_.log();
  EXPECT_EQ(aliceSubmitsToB(), 0);
  EXPECT_NE(rm_.log().find("config reloaded from " + config_), std::string::npos) << rm_.log();

  writeConfig("5", "alice", "scheduler.policy:\n  root.a: round-robin\n");
  ASSERT_EQ(::kill(rm_.pid(), SIGHUP), 0);
  ASSERT_TRUE(waitFor(
      [&] {
        return rm_.log().find(
                   "config reload refused, the running config is unchanged: "
                   "scheduler.policy.root.a") != std::string::npos;
      },
      10s))
      << rm_.log();
  EXPECT_TRUE(rm_.running()) << "SIGHUP does not stop the RM";
  EXPECT_EQ(weight("root.a"), 4.0) << "the old config keeps serving";
  EXPECT_EQ(aliceSubmitsToB(), 0);
}

}  // namespace
}  // namespace morpheus::testing
