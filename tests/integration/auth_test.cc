// Caller identity and queue ACLs on the RM: real RM and
// NM on loopback with the harness's token file; morpheusctl as alice, bob,
// mallory, the admin ops and a node credential. On the old code every refused
// call below succeeded as the user it named (or as $USER).
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "harness.h"

namespace morpheus::testing {
namespace {

using namespace std::chrono_literals;
using nlohmann::json;

class AuthIT : public ClusterTest {
 protected:
  // root.prod: only alice submits, mallory administers; root.dev: open.
  void SetUp() override {
    startCluster(1, {"--set", "scheduler.queues=root.prod=1,root.dev=1", "--set",
                     "rm.queue-acls.submit=root.prod=alice", "--set",
                     "rm.queue-acls.administer=root.prod=mallory", "--set",
                     "rm.reservable-queues=default,prod"});
    job_ = writeJob(
        "name: waits\n"
        "stages:\n"
        "  - name: work\n"
        "    tasks: 1\n"
        "    command: \"sleep 60\"\n"
        "    resources: {memory_mib: 256, vcores: 1}\n");
  }
  static void expectDenied(const std::pair<int, std::string>& r, const std::string& what,
                           const std::string& names = "") {
    EXPECT_EQ(r.first, 1) << what << ": " << r.second;
    EXPECT_NE(r.second.find("PERMISSION_DENIED"), std::string::npos) << what << ": " << r.second;
    if (!names.empty()) {
      EXPECT_NE(r.second.find(names), std::string::npos) << r.second;
    }
  }
  // Polls until the NMs reported every container of `ids` stopped (a killed
  // app leaves no process behind).
  bool waitStopped(const std::vector<std::string>& ids) {
    return waitFor(
        [&] {
          for (const auto& id : ids) {
            json a = app(id);
            if (a.is_discarded() || a["running_containers"] != 0) return false;
          }
          return true;
        },
        30s);
  }
  std::string job_;
};

// Submit needs submit on the queue (a parent's ACL applies), for apps and
// reservations alike; the refusal names the user, the action and the queue.
TEST_F(AuthIT, QueueAclRefusesSubmitToAQueueTheUserMayNotUse) {
  auto denied = ctlAs("bob", {"app", "submit", job_, "--queue", "root.prod"});
  expectDenied(denied, "bob submits to root.prod", "bob may not submit application");
  EXPECT_NE(denied.second.find("queue root.prod"), std::string::npos) << denied.second;
  std::string file = freshDir("res") + "/prod.json";
  int64_t t0 = nowMs() + 3600000;
  json res = {
      {"queue", "prod"},
      {"reservation-definition",
       {{"arrival", t0},
        {"deadline", t0 + 600000},
        {"reservation-requests",
         {{"reservation-request-interpreter", 1},
          {"reservation-request", json::array({{{"capability", {{"memory", 256}, {"vCores", 1}}},
                                                {"num-containers", 1},
                                                {"duration", 60000}}})}}}}}};
  std::ofstream(file) << res.dump();
  expectDenied(ctlAs("bob", {"reservation", "submit", "-f", file}), "bob reserves in prod",
               "queue prod");
  auto [cr, orr] = ctlAs("alice", {"reservation", "submit", "-f", file});
  EXPECT_EQ(cr, 0) << orr;

  auto [ca, oa] = ctlAs("alice", {"app", "submit", job_, "--queue", "root.prod"});
  ASSERT_EQ(ca, 0) << oa;
  std::string alice_app = oa.substr(0, oa.find('\n'));
  auto [cb, ob] = ctlAs("bob", {"app", "submit", job_, "--queue", "root.dev"});
  ASSERT_EQ(cb, 0) << "an unlisted queue is open: " << ob;
  std::string bob_app = ob.substr(0, ob.find('\n'));
  EXPECT_EQ(app(bob_app)["user"], "bob");
  EXPECT_EQ(app(alice_app)["user"], "alice");
  // Killed once their AMs run, so every container is known and stopped.
  ASSERT_TRUE(waitFor(
      [&] { return app(bob_app)["state"] == "RUNNING" && app(alice_app)["state"] == "RUNNING"; },
      90s))  // two AM launches; far longer than needed, for a starved machine
      << rm_.log();
  auto [ck, ok] = ctlAs("bob", {"app", "kill", bob_app});
  EXPECT_EQ(ck, 0) << "the owner kills his own app: " << ok;
  auto [ck2, ok2] = ctlAs("ops", {"app", "kill", alice_app});
  EXPECT_EQ(ck2, 0) << ok2;
  EXPECT_TRUE(waitFinal(bob_app, 30s));
  EXPECT_TRUE(waitFinal(alice_app, 30s));
  EXPECT_TRUE(waitStopped({bob_app, alice_app})) << rm_.log();
}

// Kill and logs need the owner, a queue administrator or an admin; a stated
// user other than the token's, no token and a node credential are refused.
TEST_F(AuthIT, OnlyOwnerQueueAdminOrAdminKillsAndReadsLogs) {
  auto [ca, oa] = ctl({"app", "submit", job_, "--queue", "root.prod"});
  ASSERT_EQ(ca, 0) << oa;
  std::string id = oa.substr(0, oa.find('\n'));
  ASSERT_TRUE(waitFor([&] { return app(id)["state"] == "RUNNING"; }, 30s)) << rm_.log();

  expectDenied(ctlAs("bob", {"app", "kill", id}), "bob kills alice's app", "bob may not kill");
  expectDenied(ctlAs("bob", {"--user", "alice", "app", "kill", id}), "bob acting as alice",
               "only an admin may act for another user");
  expectDenied(ctlAs("nm1", {"app", "kill", id}), "a node credential", "node credential");
  auto none = ctlAs("", {"app", "kill", id});
  EXPECT_EQ(none.first, 1) << none.second;
  EXPECT_NE(none.second.find("refused the credentials"), std::string::npos) << none.second;
  auto none_list = ctlAs("", {"app", "list"});
  EXPECT_EQ(none_list.first, 1) << "reads need a token too: " << none_list.second;
  // `app logs` starts from the app's container list, which needs the same.
  expectDenied(ctlAs("bob", {"app", "logs", id}), "bob reads alice's logs",
               "list the containers of application");
  expectDenied(ctlAs("bob", {"app", "logs", id, "--container",
                             app(id)["am_container_id"].get<std::string>()}),
               "bob reads alice's AM log", "read the logs of application");
  expectDenied(ctlAs("bob", {"app", "containers", id}), "bob lists alice's containers",
               "list the containers of application");
  EXPECT_EQ(app(id)["state"], "RUNNING") << "refused kills change nothing";

  // The owner and mallory (administrator of root.prod) read the AM's logs.
  auto [cl, ol] = ctl({"app", "logs", id});
  EXPECT_EQ(cl, 0) << ol;
  auto [cm, om] = ctlAs("mallory", {"app", "logs", id});
  EXPECT_EQ(cm, 0) << om;
  // The admin acts for alice (--user is an admin's "act for").
  auto [ck, ok] = ctlAs("ops", {"--user", "alice", "app", "kill", id});
  EXPECT_EQ(ck, 0) << ok;
  ASSERT_TRUE(waitFinal(id, 30s));
  EXPECT_EQ(app(id)["state"], "KILLED");
  EXPECT_TRUE(waitStopped({id})) << rm_.log();
}

// Running in a reservation needs its owner, an administrator of its queue or
// an admin: bob can bind neither by alice's recurrence key
// nor by her reservation's id, and nothing is stored; mallory (administrator
// of root.prod), the admin and alice herself bind. On the old code bob's app
// ran in alice's reservation (spending her guarantee and feeding her job's
// history).
TEST_F(AuthIT, OnlyOwnerQueueAdminOrAdminRunsInAReservation) {
  std::string file = freshDir("res") + "/etl.json";
  int64_t t0 = nowMs() + 3600000;
  json res = {
      {"queue", "prod"},
      {"reservation-definition",
       {{"arrival", t0},
        {"deadline", t0 + 600000},
        {"recurrence-key", "alice-etl"},
        {"reservation-requests",
         {{"reservation-request-interpreter", 1},
          {"reservation-request", json::array({{{"capability", {{"memory", 256}, {"vCores", 1}}},
                                                {"num-containers", 1},
                                                {"duration", 60000}}})}}}}}};
  std::ofstream(file) << res.dump();
  auto [cr, orr] = ctlAs("alice", {"reservation", "submit", "-f", file, "--json"});
  ASSERT_EQ(cr, 0) << orr;
  const std::string rid = json::parse(orr)["reservations"][0]["reservation_id"];

  expectDenied(ctlAs("bob", {"app", "submit", job_, "--recurrence", "alice-etl"}),
               "bob binds by alice's recurrence key", "recurrence_key");
  expectDenied(ctlAs("bob", {"app", "submit", job_, "--reservation", rid}),
               "bob binds by alice's reservation id", "reservation_id");
  expectDenied(ctlAs("bob", {"--user", "alice", "app", "submit", job_, "--reservation", rid}),
               "bob acting as alice", "only an admin may act for another user");
  auto [cl, ol] = ctlAs("ops", {"app", "list", "--json"});
  ASSERT_EQ(cl, 0) << ol;
  EXPECT_EQ(ol.find("\"bob\""), std::string::npos) << "refused submissions store nothing: " << ol;

  std::vector<std::string> apps;
  for (const auto& [who, args] : std::vector<std::pair<std::string, std::vector<std::string>>>{
           {"alice", {"--recurrence", "alice-etl"}},
           {"mallory", {"--reservation", rid}},
           {"ops", {"--recurrence", "alice-etl"}}}) {
    std::vector<std::string> argv = {"app", "submit", job_};
    argv.insert(argv.end(), args.begin(), args.end());
    auto [c, o] = ctlAs(who, argv);
    ASSERT_EQ(c, 0) << who << ": " << o;
    apps.push_back(o.substr(0, o.find('\n')));
    EXPECT_EQ(app(apps.back())["reservation_id"], rid) << who;
  }
  for (const auto& id : apps) {
    auto [ck, ok] = ctlAs("ops", {"app", "kill", id});
    EXPECT_EQ(ck, 0) << ok;
    EXPECT_TRUE(waitFinal(id, 30s)) << id;
  }
  EXPECT_TRUE(waitStopped(apps)) << rm_.log();
}

// Secure by default: without rm.token-file the RM does not start.
TEST(AuthStartupIT, RmRefusesToStartWithoutATokenFile) {
  auto [code, out] = runCommand({binary("morpheus-rm"), "--data-dir", freshDir("rm-noauth"),
                                 "--grpc-port", "0", "--http-port", "0"});
  EXPECT_EQ(code, 2) << out;
  EXPECT_NE(out.find("rm.token-file"), std::string::npos) << out;
}

// rm.auth-disabled: everyone is the admin "anonymous", with a warning at start.
TEST(AuthStartupIT, AuthDisabledAcceptsEveryoneAndWarns) {
  Process rm = Process::startDaemon("rm", freshDir("rm-open"), {"--set", "rm.auth-disabled=true"});
  ASSERT_FALSE(rm.grpcAddress().empty()) << rm.log();
  std::string log = rm.log();
  auto at = log.find("rm.auth-disabled: true");
  ASSERT_NE(at, std::string::npos) << log;
  std::string line = log.substr(log.rfind('\n', at) + 1, at - log.rfind('\n', at));
  EXPECT_NE(line.find(" W "), std::string::npos) << "logged as a warning: " << line;
  auto [code, out] =
      runCommand({binary("morpheusctl"), "--rm", rm.grpcAddress(), "reservation", "list"},
                 {{"MORPHEUS_TOKEN", ""}});
  EXPECT_EQ(code, 0) << out;
  EXPECT_EQ(httpRequest(rm.httpAddress(), "GET", "/ws/v1/cluster/reservation/list").status, 200);
}

}  // namespace
}  // namespace morpheus::testing
