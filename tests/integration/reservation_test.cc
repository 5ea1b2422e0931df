// Reservation system end to end: RM + one NM advertising
// memory=102400,vcores=100; submissions through YARN REST and morpheusctl;
// restart of the RM; allocations identical afterwards.
#include <gtest/gtest.h>
#include <signal.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "harness.h"

namespace morpheus::testing {
namespace {

using namespace std::chrono_literals;
using nlohmann::json;

json definition(int64_t arrival, int64_t deadline, int64_t period, int containers, int gang,
                int64_t duration, int interpreter = 1) {
  return {{"arrival", arrival},
          {"deadline", deadline},
          {"reservation-name", "test"},
          {"priority", 0},
          {"recurrence-expression", std::to_string(period)},
          {"reservation-requests",
           {{"reservation-request-interpreter", interpreter},
            {"reservation-request", json::array({{{"capability", {{"memory", 1024}, {"vCores", 1}}},
                                                  {"num-containers", containers},
                                                  {"min-concurrency", gang},
                                                  {"duration", duration}}})}}}};
}

class ReservationIT : public ::testing::Test {
 protected:
  void SetUp() override {
    rm_dir_ = freshDir("rm");
    startRm();
    startNm();
  }
  // (Re)starts the NM against the current RM and waits until the plan has its capacity.
  void startNm() {
    std::vector<std::string> nm_args = {
        "--rm", rm_.grpcAddress(), "--resources", "memory=102400,vcores=100", "--node-id", "nm1"};
    for (auto& a : nmAuthArgs("nm1")) nm_args.push_back(std::move(a));
    nm_ = Process::startDaemon("nm", freshDir("nm"), nm_args);
    ASSERT_FALSE(nm_.grpcAddress().empty()) << nm_.log();
    ASSERT_TRUE(waitFor(
        [&] {
          auto [code, out] = ctl("alice", {"plan", "show", "--json", "--to", "+2m"});
          auto j = json::parse(out, nullptr, false);
          return code == 0 && !j.is_discarded() && j["capacity"]["vcores"] == 100;
        },
        15s))
        << rm_.log();
  }
  void startRm() {
    if (rm_token_file_.empty()) rm_token_file_ = testTokenFile();
    rm_ = Process::startDaemon("rm", rm_dir_, {"--set", "rm.token-file=" + rm_token_file_});
    ASSERT_FALSE(rm_.httpAddress().empty()) << rm_.log();
  }
  json listAll() {
    auto r = rest("alice", "GET", "/list?include-resource-allocations=true");
    EXPECT_EQ(r.status, 200) << r.body;
    return json::parse(r.body, nullptr, false);
  }
  // morpheusctl as `principal` (a testToken name).
  std::pair<int, std::string> ctl(const std::string& principal, std::vector<std::string> args) {
    std::vector<std::string> argv = {binary("morpheusctl"), "--rm", rm_.grpcAddress(), "--token",
                                     testToken(principal)};
    argv.insert(argv.end(), args.begin(), args.end());
    return runCommand(argv, {{"MORPHEUS_TOKEN", ""}});
  }
  // A reservation REST call (path under /ws/v1/cluster/reservation) as `principal`.
  HttpResult rest(const std::string& principal, const std::string& method, const std::string& path,
                  const std::string& body = "") {
    return httpRequest(rm_.httpAddress(), method, "/ws/v1/cluster/reservation" + path, body,
                       "application/json", bearer(principal));
  }
  bool listed(const std::string& id) {
    return rest("alice", "GET", "/list?reservation-id=" + id).body.find(id) != std::string::npos;
  }
  std::string rm_dir_, rm_token_file_;
  Process rm_, nm_;
};

// REST new-reservation + submit, CLI submit, errors, restart: identical allocations.
TEST_F(ReservationIT, SubmitThroughRestAndCliSurvivesRestart) {
  // Step-aligned (planner.step 1 min), so a window holds whole steps only.
  int64_t t0 = (nowMs() / 60000 + 60) * 60000;
  // REST: new id, then a periodic (hourly) reservation of 20 containers x 10 min.
  auto n = rest("alice", "POST", "/new-reservation");
  ASSERT_EQ(n.status, 200) << n.body;
  std::string id = json::parse(n.body)["reservation-id"];
  json sub = {{"reservation-id", id},
              {"queue", "default"},
              {"user", "alice"},
              {"reservation-definition", definition(t0, t0 + 1800000, 3600000, 20, 20, 600000)}};
  auto s = rest("alice", "POST", "/submit", sub.dump());
  ASSERT_EQ(s.status, 200) << s.body;
  auto sj = json::parse(s.body);
  ASSERT_FALSE(sj["resource-allocations"].empty());
  for (const auto& a : sj["resource-allocations"]) {
    EXPECT_GE(a["startTime"].get<int64_t>(), t0);
    EXPECT_LE(a["endTime"].get<int64_t>(), t0 + 1800000);
  }

  // CLI: one-off, numbers given as strings (YARN clients do this).
  std::string file = rm_dir_ + "-res.json";
  json cli = {{"queue", "default"},
              {"reservation-definition", definition(t0, t0 + 7200000, 0, 50, 1, 300000, 1)}};
  cli["reservation-definition"]["arrival"] = std::to_string(t0);
  std::ofstream(file) << cli.dump();
  auto [code, out] = ctl("bob", {"reservation", "submit", "-f", file, "--json"});
  ASSERT_EQ(code, 0) << out;
  std::string id2 = json::parse(out)["reservations"][0]["reservation_id"];

  // Bad input: unknown queue, infeasible gang, bad field; nothing is added.
  // (Ids from new-reservation: a made-up one is refused, 403, before planning.)
  auto issued = [&] {
    auto r = rest("alice", "POST", "/new-reservation");
    EXPECT_EQ(r.status, 200) << r.body;
    return json::parse(r.body, nullptr, false).value("reservation-id", "");
  };
  json bad = sub;
  bad["reservation-id"] = issued();
  bad["queue"] = "nope";
  auto b1 = rest("alice", "POST", "/submit", bad.dump());
  EXPECT_EQ(b1.status, 400) << b1.body;
  EXPECT_NE(b1.body.find("queue"), std::string::npos) << b1.body;
  bad["queue"] = "default";
  bad["reservation-definition"] = definition(t0, t0 + 600000, 0, 101, 101, 60000);
  auto b2 = rest("alice", "POST", "/submit", bad.dump());
  EXPECT_EQ(b2.status, 400) << "gang larger than the cluster: " << b2.body;
  bad["reservation-definition"] = definition(t0, t0 + 1800000, 0, 100, 100, 1800000);
  bad["reservation-id"] = issued();
  // 100 containers for the whole of the periodic reservation's window, where it
  // already holds 20 at some steps: infeasible (old code: a 10-step request in
  // an unaligned 10-step window, refused whatever the plan held).
  auto b3 = rest("alice", "POST", "/submit", bad.dump());
  EXPECT_EQ(b3.status, 409) << b3.body;
  bad["reservation-definition"]["reservation-requests"]["reservation-request"][0]
     ["num-containers"] = "x";
  auto b4 = rest("alice", "POST", "/submit", bad.dump());
  EXPECT_EQ(b4.status, 400);
  EXPECT_NE(b4.body.find("num-containers"), std::string::npos) << b4.body;

  json before = listAll();
  ASSERT_EQ(before["reservations"].size(), 2u) << before.dump();

  // Restart (SIGKILL: nothing acknowledged may be lost).
  ASSERT_EQ(rm_.signalAndWait(SIGKILL, 5s), 128 + SIGKILL);
  startRm();
  json after = listAll();
  EXPECT_EQ(after, before);
  auto [c2, shown] = ctl("alice", {"reservation", "show", id2});
  EXPECT_EQ(c2, 0) << shown;
  EXPECT_NE(shown.find("bob"), std::string::npos) << shown;

  // Only the owner (or an admin) deletes: mallory is refused over gRPC and
  // bob's reservation stays (old code: `--user mallory` after the subcommand
  // was a CLI parse error, so the RM was never asked).
  auto [c3, o3] = ctl("mallory", {"reservation", "delete", id2});
  EXPECT_EQ(c3, 1) << o3;
  EXPECT_NE(o3.find("PERMISSION_DENIED"), std::string::npos) << o3;
  EXPECT_NE(o3.find("mallory"), std::string::npos) << o3;
  EXPECT_TRUE(listed(id2)) << "a refused delete leaves the reservation";

  // The owners delete; the freed capacity admits the once-infeasible request
  // (the restarted RM listens on a new port: point the NM at it).
  ASSERT_NO_FATAL_FAILURE(startNm());
  auto d = rest("alice", "POST", "/delete", json({{"reservation-id", id}}).dump());
  EXPECT_EQ(d.status, 200) << d.body;
  auto [c4, o4] = ctl("bob", {"reservation", "delete", id2});
  EXPECT_EQ(c4, 0) << o4;
  auto n2 = rest("alice", "POST", "/new-reservation");
  ASSERT_EQ(n2.status, 200) << n2.body;
  bad["reservation-id"] = json::parse(n2.body)["reservation-id"];
  bad["reservation-definition"] = definition(t0, t0 + 1800000, 0, 100, 100, 1800000);
  auto fits = rest("alice", "POST", "/submit", bad.dump());
  EXPECT_EQ(fits.status, 200) << "100 containers for the whole window now fit: " << fits.body;
}

// Over REST, gRPC and the CLI: the caller is its token's
// principal. bob cannot update or delete alice's reservation (also not by
// naming her as the user), missing or node credentials are refused, and the
// owner's REST /update (never called by a test before) succeeds. On the old
// code every request below succeeded as the user it named.
TEST_F(ReservationIT, OnlyOwnerOrAdminChangesAReservation) {
  int64_t t0 = nowMs() + 3600000;
  auto n = rest("alice", "POST", "/new-reservation");
  ASSERT_EQ(n.status, 200) << n.body;
  std::string id = json::parse(n.body)["reservation-id"];
  json sub = {{"reservation-id", id},
              {"queue", "default"},
              {"reservation-definition", definition(t0, t0 + 1800000, 0, 10, 1, 600000)}};
  auto s = rest("alice", "POST", "/submit", sub.dump());
  ASSERT_EQ(s.status, 200) << s.body;
  json before = listAll();

  json upd = sub;
  upd["reservation-definition"] = definition(t0, t0 + 1800000, 0, 20, 1, 600000);
  // bob, as himself and claiming to be alice (body user and user.name).
  EXPECT_EQ(rest("bob", "POST", "/update", upd.dump()).status, 403);
  json as_alice = upd;
  as_alice["user"] = "alice";
  EXPECT_EQ(rest("bob", "POST", "/update", as_alice.dump()).status, 403);
  EXPECT_EQ(rest("bob", "POST", "/delete", json({{"reservation-id", id}}).dump()).status, 403);
  EXPECT_EQ(
      rest("bob", "POST", "/delete?user.name=alice", json({{"reservation-id", id}}).dump()).status,
      403);
  // No credentials: 401; unknown token: 401; a node's credential is no user: 403.
  auto none = httpRequest(rm_.httpAddress(), "POST", "/ws/v1/cluster/reservation/delete",
                          json({{"reservation-id", id}, {"user", "alice"}}).dump());
  EXPECT_EQ(none.status, 401) << none.body;
  auto forged = httpRequest(rm_.httpAddress(), "POST", "/ws/v1/cluster/reservation/delete",
                            json({{"reservation-id", id}}).dump(), "application/json",
                            {{"Authorization", "Bearer not-a-token-of-anyone"}});
  EXPECT_EQ(forged.status, 401) << forged.body;
  EXPECT_EQ(rest("nm1", "POST", "/delete", json({{"reservation-id", id}}).dump()).status, 403);
  EXPECT_EQ(httpRequest(rm_.httpAddress(), "GET", "/ws/v1/cluster/reservation/list").status, 401);

  // gRPC through the CLI: bob's update and delete, and alice's name stated by bob.
  std::string file = rm_dir_ + "-upd.json";
  std::ofstream(file) << upd.dump();
  auto [cu, ou] = ctl("bob", {"reservation", "update", "-f", file});
  EXPECT_EQ(cu, 1) << ou;
  EXPECT_NE(ou.find("PERMISSION_DENIED"), std::string::npos) << ou;
  auto [cd, od] = ctl("bob", {"--user", "alice", "reservation", "delete", id});
  EXPECT_EQ(cd, 1) << od;
  EXPECT_NE(od.find("PERMISSION_DENIED"), std::string::npos) << od;
  // No token at all: one clear line naming the remedy.
  auto [cn, on] =
      runCommand({binary("morpheusctl"), "--rm", rm_.grpcAddress(), "reservation", "delete", id},
                 {{"MORPHEUS_TOKEN", ""}});
  EXPECT_EQ(cn, 1) << on;
  EXPECT_NE(on.find("refused the credentials"), std::string::npos) << on;
  EXPECT_NE(on.find("MORPHEUS_TOKEN"), std::string::npos) << on;
  EXPECT_EQ(listAll(), before) << "refused requests change nothing";

  // The owner updates over REST; the admin deletes over gRPC.
  auto ok = rest("alice", "POST", "/update", upd.dump());
  EXPECT_EQ(ok.status, 200) << ok.body;
  json after = listAll();
  ASSERT_EQ(after["reservations"].size(), 1u) << after.dump();
  EXPECT_NE(after, before) << "the owner's update is applied";
  auto [ca, oa] = ctl("ops", {"reservation", "delete", id});
  EXPECT_EQ(ca, 0) << oa;
  EXPECT_FALSE(listed(id));
}

// Reservation ids belong to the caller NewReservation issued them to:
// bob cannot squat the id alice is issued next, nor use
// one issued to her; issues survive an RM restart (kill -9). On the old code
// bob's submit under the guessed id was accepted and alice's got 409.
TEST_F(ReservationIT, IdsFromNewReservationBelongToTheirCaller) {
  int64_t t0 = nowMs() + 3600000;
  auto submit = [&](const std::string& who, const std::string& id) {
    json sub = {{"reservation-id", id},
                {"queue", "default"},
                {"reservation-definition", definition(t0, t0 + 1800000, 0, 2, 1, 600000)}};
    return rest(who, "POST", "/submit", sub.dump());
  };
  auto issue = [&](const std::string& who) {
    auto n = rest(who, "POST", "/new-reservation");
    EXPECT_EQ(n.status, 200) << n.body;
    return json::parse(n.body, nullptr, false).value("reservation-id", "");
  };
  // bob learns the sequence from his own id and takes the next one.
  const std::string bobs = issue("bob");
  const size_t cut = bobs.rfind('_');
  ASSERT_NE(cut, std::string::npos) << bobs;
  char next[16];
  std::snprintf(next, sizeof next, "%04d", std::stoi(bobs.substr(cut + 1)) + 1);
  const std::string guessed = bobs.substr(0, cut + 1) + next;
  auto squat = submit("bob", guessed);
  EXPECT_EQ(squat.status, 403) << squat.body;
  EXPECT_NE(squat.body.find("reservation_id"), std::string::npos) << squat.body;
  EXPECT_FALSE(listed(guessed)) << "a refused submit stores nothing";
  // Over gRPC too.
  std::string file = rm_dir_ + "-squat.json";
  std::ofstream(file) << json({{"reservation-id", guessed},
                               {"queue", "default"},
                               {"reservation-definition",
                                definition(t0, t0 + 1800000, 0, 2, 1, 600000)}})
                             .dump();
  auto [cg, og] = ctl("bob", {"reservation", "submit", "-f", file});
  EXPECT_EQ(cg, 1) << og;
  EXPECT_NE(og.find("PERMISSION_DENIED"), std::string::npos) << og;

  const std::string alices = issue("alice");
  EXPECT_EQ(alices, guessed) << "the id bob guessed is issued to alice";
  auto ok = submit("alice", alices);
  EXPECT_EQ(ok.status, 200) << ok.body;

  // An id issued to alice is hers: bob is refused, she submits it after a restart.
  const std::string later = issue("alice");
  EXPECT_EQ(submit("bob", later).status, 403);
  ASSERT_EQ(rm_.signalAndWait(SIGKILL, 5s), 128 + SIGKILL);
  startRm();
  startNm();
  EXPECT_EQ(submit("bob", later).status, 403) << "the issue survived the restart";
  auto after = submit("alice", later);
  EXPECT_EQ(after.status, 200) << after.body;
  EXPECT_EQ(submit("alice", later).status, 409) << "an id admits one reservation";
  const std::string fresh = issue("bob");
  EXPECT_NE(fresh, bobs);
  EXPECT_NE(fresh, alices);
  EXPECT_NE(fresh, later);
  // The admin may submit under an id nobody was issued (services that choose ids).
  auto admin = submit("ops", "reservation_chosen_by_ops");
  EXPECT_EQ(admin.status, 200) << admin.body;
}

// `plan show` draws load and capacity; a bad range is a clear error.
TEST_F(ReservationIT, PlanShowChartsLoad) {
  int64_t t0 = nowMs() + 600000;
  json sub = {{"queue", "default"},
              {"reservation-definition", definition(t0, t0 + 1200000, 0, 60, 60, 600000)}};
  std::string file = rm_dir_ + "-p.json";
  std::ofstream(file) << sub.dump();
  auto [code, out] = ctl("alice", {"reservation", "submit", "-f", file});
  ASSERT_EQ(code, 0) << out;
  auto [c2, chart] = ctl("alice", {"plan", "show", "--to", "+1h", "--width", "60"});
  ASSERT_EQ(c2, 0) << chart;
  EXPECT_NE(chart.find("memory, MiB (capacity 100 GiB)"), std::string::npos) << chart;
  EXPECT_NE(chart.find('+'), std::string::npos) << "one-off load drawn: " << chart;
  auto [c3, err] = ctl("alice", {"plan", "show", "--from", "+1h", "--to", "+1m"});
  EXPECT_EQ(c3, 2) << err;
}

}  // namespace
}  // namespace morpheus::testing
