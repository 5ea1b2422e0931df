// Reservation system end to end (issue #2): RM + one NM advertising
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
    std::vector<std::string> nm_args = {
        "--rm", rm_.grpcAddress(), "--resources", "memory=102400,vcores=100", "--node-id", "nm1"};
    for (auto& a : nmAuthArgs("nm1")) nm_args.push_back(std::move(a));
    nm_ = Process::startDaemon("nm", freshDir("nm"), nm_args);
    ASSERT_FALSE(nm_.grpcAddress().empty()) << nm_.log();
    ASSERT_TRUE(waitFor(
        [&] {
          auto [code, out] = runCommand({binary("morpheusctl"), "--rm", rm_.grpcAddress(), "plan",
                                         "show", "--json", "--to", "+2m"});
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
    auto r = httpRequest(rm_.httpAddress(), "GET",
                         "/ws/v1/cluster/reservation/list?include-resource-allocations=true");
    EXPECT_EQ(r.status, 200) << r.body;
    return json::parse(r.body, nullptr, false);
  }
  std::string rm_dir_, rm_token_file_;
  Process rm_, nm_;
};

// REST new-reservation + submit, CLI submit, errors, restart: identical allocations.
TEST_F(ReservationIT, SubmitThroughRestAndCliSurvivesRestart) {
  int64_t t0 = nowMs() + 3600000;
  // REST: new id, then a periodic (hourly) reservation of 20 containers x 10 min.
  auto n = httpRequest(rm_.httpAddress(), "POST", "/ws/v1/cluster/reservation/new-reservation");
  ASSERT_EQ(n.status, 200) << n.body;
  std::string id = json::parse(n.body)["reservation-id"];
  json sub = {{"reservation-id", id},
              {"queue", "default"},
              {"user", "alice"},
              {"reservation-definition", definition(t0, t0 + 1800000, 3600000, 20, 20, 600000)}};
  auto s = httpRequest(rm_.httpAddress(), "POST", "/ws/v1/cluster/reservation/submit", sub.dump());
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
  auto [code, out] = runCommand({binary("morpheusctl"), "--rm", rm_.grpcAddress(), "--user", "bob",
                                 "reservation", "submit", "-f", file, "--json"});
  ASSERT_EQ(code, 0) << out;
  std::string id2 = json::parse(out)["reservation-id"];

  // Bad input: unknown queue, infeasible gang, bad field; nothing is added.
  json bad = sub;
  bad["reservation-id"] = "r-bad-1";
  bad["queue"] = "nope";
  auto b1 = httpRequest(rm_.httpAddress(), "POST", "/ws/v1/cluster/reservation/submit", bad.dump());
  EXPECT_EQ(b1.status, 400) << b1.body;
  EXPECT_NE(b1.body.find("queue"), std::string::npos) << b1.body;
  bad["queue"] = "default";
  bad["reservation-definition"] = definition(t0, t0 + 600000, 0, 101, 101, 60000);
  auto b2 = httpRequest(rm_.httpAddress(), "POST", "/ws/v1/cluster/reservation/submit", bad.dump());
  EXPECT_EQ(b2.status, 400) << "gang larger than the cluster: " << b2.body;
  bad["reservation-definition"] = definition(t0, t0 + 600000, 0, 100, 100, 600000);
  bad["reservation-id"] = "r-bad-2";
  // 100 containers for the whole window while 20 are already held at some steps: infeasible.
  auto b3 = httpRequest(rm_.httpAddress(), "POST", "/ws/v1/cluster/reservation/submit", bad.dump());
  EXPECT_EQ(b3.status, 409) << b3.body;
  bad["reservation-definition"]["reservation-requests"]["reservation-request"][0]
     ["num-containers"] = "x";
  auto b4 = httpRequest(rm_.httpAddress(), "POST", "/ws/v1/cluster/reservation/submit", bad.dump());
  EXPECT_EQ(b4.status, 400);
  EXPECT_NE(b4.body.find("num-containers"), std::string::npos) << b4.body;

  json before = listAll();
  ASSERT_EQ(before["reservations"].size(), 2u) << before.dump();

  // Restart (SIGKILL: nothing acknowledged may be lost).
  ASSERT_EQ(rm_.signalAndWait(SIGKILL, 5s), 128 + SIGKILL);
  startRm();
  json after = listAll();
  EXPECT_EQ(after, before);
  auto [c2, shown] =
      runCommand({binary("morpheusctl"), "--rm", rm_.grpcAddress(), "reservation", "show", id2});
  EXPECT_EQ(c2, 0) << shown;
  EXPECT_NE(shown.find("bob"), std::string::npos) << shown;

  // Delete frees the capacity: the once-infeasible request now fits.
  auto d = httpRequest(rm_.httpAddress(), "POST", "/ws/v1/cluster/reservation/delete",
                       json({{"reservation-id", id}, {"user", "alice"}}).dump());
  EXPECT_EQ(d.status, 200) << d.body;
  auto [c3, o3] = runCommand({binary("morpheusctl"), "--rm", rm_.grpcAddress(), "reservation",
                              "delete", id2, "--user", "mallory"});
  (void)o3;
  EXPECT_NE(c3, 0) << "only the owner may delete";
}

// `plan show` draws load and capacity; a bad range is a clear error.
TEST_F(ReservationIT, PlanShowChartsLoad) {
  int64_t t0 = nowMs() + 600000;
  json sub = {{"queue", "default"},
              {"reservation-definition", definition(t0, t0 + 1200000, 0, 60, 60, 600000)}};
  std::string file = rm_dir_ + "-p.json";
  std::ofstream(file) << sub.dump();
  auto [code, out] = runCommand(
      {binary("morpheusctl"), "--rm", rm_.grpcAddress(), "reservation", "submit", "-f", file});
  ASSERT_EQ(code, 0) << out;
  auto [c2, chart] = runCommand({binary("morpheusctl"), "--rm", rm_.grpcAddress(), "plan", "show",
                                 "--to", "+1h", "--width", "60"});
  ASSERT_EQ(c2, 0) << chart;
  EXPECT_NE(chart.find("memory (capacity 102400 MiB)"), std::string::npos) << chart;
  EXPECT_NE(chart.find('+'), std::string::npos) << "one-off load drawn: " << chart;
  auto [c3, err] = runCommand({binary("morpheusctl"), "--rm", rm_.grpcAddress(), "plan", "show",
                               "--from", "+1h", "--to", "+1m"});
  EXPECT_EQ(c3, 2) << err;
}

}  // namespace
}  // namespace morpheus::testing
