// morpheus-sim CLI: a small run writes the report, the
// same seed gives a byte-identical summary.json, bad inputs get one clear
// line and exit code 2.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "harness.h"
#include "test_paths.h"

namespace morpheus::testing {
namespace {

std::string readFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::vector<std::string> smallRun(const std::string& out) {
  return {binary("morpheus-sim"),
          "run",
          "--nodes",
          "4",
          "--days",
          "3",
          "--periodic-jobs",
          "8",
          "--periodic-load",
          "0.1",
          "--adhoc-trace",
          std::string(sourceDir()) + "/data/swim/swim-fb2009-24h.tsv",
          "--adhoc-load",
          "0.1",
          "--strategy",
          "baseline",
          "--strategy",
          "morpheus",
          "--seed",
          "7",
          "--out",
          out};
}

// Same seed and inputs: byte-identical summary.json; the report files exist.
TEST(SimCliTest, SameSeedWritesIdenticalSummary) {
  std::string a = freshDir("sim-a"), b = freshDir("sim-b");
  auto [code_a, out_a] = runCommand(smallRun(a));
  ASSERT_EQ(code_a, 0) << out_a;
  auto [code_b, out_b] = runCommand(smallRun(b));
  ASSERT_EQ(code_b, 0) << out_b;
  std::string sa = readFile(a + "/summary.json");
  ASSERT_FALSE(sa.empty());
  EXPECT_EQ(sa, readFile(b + "/summary.json"));
  EXPECT_NE(sa.find("\"morpheus\""), std::string::npos);
  EXPECT_NE(sa.find("\"worst_case_violation_rate\""), std::string::npos);
  EXPECT_FALSE(readFile(a + "/report.md").empty());
}

// Bad inputs: exit 2 and one line naming the problem.
TEST(SimCliTest, BadInputsExitTwoWithOneLine) {
  std::string dir = freshDir("sim-bad");
  auto [c1, o1] =
      runCommand({binary("morpheus-sim"), "run", "--strategy", "fastest", "--out", dir});
  EXPECT_EQ(c1, 2);
  EXPECT_NE(o1.find("unknown strategy 'fastest'"), std::string::npos) << o1;
  EXPECT_EQ(std::count(o1.begin(), o1.end(), '\n'), 1) << o1;

  auto [c2, o2] = runCommand({binary("morpheus-sim"), "run", "--nodes", "0", "--out", dir});
  EXPECT_EQ(c2, 2);
  EXPECT_NE(o2.find("nodes: must be > 0"), std::string::npos) << o2;

  auto [c4, o4] =
      runCommand({binary("morpheus-sim"), "run", "--preemption-grace", "-1", "--out", dir});
  EXPECT_EQ(c4, 2);
  EXPECT_NE(o4.find("preemption-grace: must be in [0, 86400] seconds"), std::string::npos) << o4;
  EXPECT_EQ(std::count(o4.begin(), o4.end(), '\n'), 1) << o4;

  auto [c5, o5] =
      runCommand({binary("morpheus-sim"), "run", "--dra-budget-fraction", "11", "--out", dir});
  EXPECT_EQ(c5, 2);
  EXPECT_NE(o5.find("dra-budget-fraction: must be in [0, 10]"), std::string::npos) << o5;
  EXPECT_EQ(std::count(o5.begin(), o5.end(), '\n'), 1) << o5;

  auto [c7, o7] =
      runCommand({binary("morpheus-sim"), "run", "--dra-ahead-window", "-60", "--out", dir});
  EXPECT_EQ(c7, 2);
  EXPECT_NE(o7.find("dra-ahead-window: must be in [0, 86400] seconds"), std::string::npos) << o7;
  EXPECT_EQ(std::count(o7.begin(), o7.end(), '\n'), 1) << o7;

  auto [c6, o6] =
      runCommand({binary("morpheus-sim"), "run", "--skyline-steps", "gang", "--out", dir});
  EXPECT_EQ(c6, 2);
  EXPECT_NE(o6.find("skyline-steps: 'gang' is not one of whole, stretchable"), std::string::npos)
      << o6;
  EXPECT_EQ(std::count(o6.begin(), o6.end(), '\n'), 1) << o6;

  for (const auto& [sizes, why] : std::vector<std::pair<std::string, std::string>>{
           {"12,x", "sizes: 'x' is not a node count"},
           {"0", "sizes: 0 is not in [1, --nodes = 20]"},
           {"12,12", "sizes: 12 is given twice"},
           {"", "sizes: empty list"}}) {
    auto [c, o] =
        runCommand({binary("morpheus-sim"), "min-cluster", "--sizes", sizes, "--out", dir});
    EXPECT_EQ(c, 2) << sizes;
    EXPECT_NE(o.find(why), std::string::npos) << o;
    EXPECT_EQ(std::count(o.begin(), o.end(), '\n'), 1) << o;
  }

  for (const auto& [flag, value, why] : std::vector<std::array<std::string, 3>>{
           {"--train-size", "half", "train-size: must be nodes or each, got 'half'"},
           {"--adhoc-fill", "yes", "adhoc-fill: must be on or off, got 'yes'"}}) {
    auto [c, o] = runCommand({binary("morpheus-sim"), "min-cluster", flag, value, "--out", dir});
    EXPECT_EQ(c, 2) << flag;
    EXPECT_NE(o.find(why), std::string::npos) << o;
    EXPECT_EQ(std::count(o.begin(), o.end(), '\n'), 1) << o;
  }

  std::string trace = dir + "/bad.tsv";
  {
    std::ofstream f(trace);
    f << "job0\t0\t0\t100\t10\t10\n"
      << "job1\tnot-a-number\n";
  }
  auto [c3, o3] =
      runCommand({binary("morpheus-sim"), "run", "--nodes", "2", "--days", "2", "--periodic-jobs",
                  "4", "--periodic-load", "0.1", "--adhoc-trace", trace, "--out", dir});
  EXPECT_EQ(c3, 2);
  EXPECT_NE(o3.find("line 2"), std::string::npos) << o3;
  EXPECT_EQ(std::count(o3.begin(), o3.end(), '\n'), 1) << o3;
}

// morpheus-sim phoenix: the floor row (no job waits) is printed
// beside the schedulers and is never above them; an unknown policy is one
// line naming --policies and the known ones, before any table.
TEST(SimCliTest, PhoenixPrintsTheNoWaitFloorAndRejectsUnknownPolicies) {
  auto [code, out] =
      runCommand({binary("morpheus-sim"), "phoenix", "--nodes", "20", "--arrivals-min", "20",
                  "--seeds", "2", "--policies", "phoenix", "eagle-c", "floor", "--json"});
  ASSERT_EQ(code, 0) << out;
  auto rows = nlohmann::json::parse(out);
  ASSERT_EQ(rows.size(), 3u) << out;
  EXPECT_EQ(rows[2]["policy"], "floor");
  for (int i : {0, 1}) {
    EXPECT_LE(rows[2]["short"]["p99_s"].get<double>(), rows[i]["short"]["p99_s"].get<double>());
    EXPECT_EQ(rows[2]["rejected"], rows[i]["rejected"]);
  }

  auto [c2, o2] = runCommand({binary("morpheus-sim"), "phoenix", "--policies", "eagle"});
  EXPECT_EQ(c2, 2);
  EXPECT_NE(
      o2.find("--policies: unknown policy 'eagle' (fifo, drf, carbyne, phoenix, "
              "phoenix-no-crv, eagle-c, phoenix-hybrid, phoenix-hybrid-placement, "
              "phoenix-hybrid-steer, phoenix-hybrid-placement-steer, "
              "phoenix-hybrid-no-crv, phoenix-hybrid-steal, eagle-c-steal, queue-order-bound, "
              "floor)"),
      std::string::npos)
      << o2;
  EXPECT_EQ(std::count(o2.begin(), o2.end(), '\n'), 1) << o2;
}

// morpheus-sim phoenix --wait-breakdown: the Eagle runs carry the p95 and p99
// tails' breakdown, whose parts add up to the tail's mean response time; the
// stealing policy runs by name.
TEST(SimCliTest, PhoenixWaitBreakdownPartsAddUpInJson) {
  auto [code, out] = runCommand({binary("morpheus-sim"), "phoenix", "--nodes", "20",
                                 "--arrivals-min", "20", "--seeds", "2", "--policies", "eagle-c",
                                 "phoenix-hybrid-steal", "--wait-breakdown", "--json"});
  ASSERT_EQ(code, 0) << out;
  auto rows = nlohmann::json::parse(out);
  ASSERT_EQ(rows.size(), 2u) << out;
  EXPECT_EQ(rows[1]["policy"], "phoenix-hybrid-steal");
  for (const auto& row : rows) {
    ASSERT_EQ(row["wait_breakdown"].size(), 2u) << row.dump();
    for (const auto& t : row["wait_breakdown"]) {
      double sum = 0;
      for (const char* k : {"behind_long_full_s", "behind_long_free_s", "behind_short_full_s",
                            "behind_short_free_s", "own_tasks_s", "dispatch_s", "run_s"})
        sum += t[k].get<double>();
      EXPECT_NEAR(sum, t["response_mean_s"].get<double>(), 1e-6) << t.dump();
      EXPECT_GE(t["jobs"].get<int64_t>(), 1);
    }
    EXPECT_EQ(row["wait_breakdown"][1]["quantile"], 0.99);
  }
}

// morpheus-sim phoenix --policies queue-order-bound (bench-only): every
// pass's p99 and placement-bound p99, the first pass Eagle-C itself, the
// row the best pass, no pass below its own bound.
TEST(SimCliTest, PhoenixQueueOrderBoundPrintsEveryPassAndItsBound) {
  auto [code, out] =
      runCommand({binary("morpheus-sim"), "phoenix", "--nodes", "20", "--arrivals-min", "20",
                  "--seeds", "2", "--policies", "eagle-c", "queue-order-bound", "--json"});
  ASSERT_EQ(code, 0) << out;
  auto rows = nlohmann::json::parse(out);
  ASSERT_EQ(rows.size(), 2u) << out;
  const auto& q = rows[1];
  EXPECT_EQ(q["policy"], "queue-order-bound");
  ASSERT_EQ(q["passes"].size(), 6u) << q.dump();
  EXPECT_EQ(q["passes"][0]["order"], "srpt");
  EXPECT_EQ(q["passes"][0]["short_p99_s"], rows[0]["short"]["p99_s"]);
  double best = 1e18;
  for (const auto& p : q["passes"]) {
    EXPECT_LE(p["bound_p99_s"].get<double>(), p["short_p99_s"].get<double>()) << p.dump();
    best = std::min(best, p["short_p99_s"].get<double>());
  }
  EXPECT_EQ(q["short"]["p99_s"].get<double>(), best);
  EXPECT_LE(q["bound_short_p99_s"].get<double>(), best);
}

// morpheus-sim phoenix-calibrate: runs every calibration seed per
// iteration, checks the kept shares on the held-out seed, writes the file
// (shares, both measurements, history) that phoenix --calibration reads; a
// check seed among the calibration seeds is one line and exit 2.
TEST(SimCliTest, PhoenixCalibrateChecksOnAHeldOutSeedAndWritesTheFile) {
  const std::string dir = freshDir("sim-calibrate");
  const std::string file = dir + "/google.json";
  auto [code, out] = runCommand({binary("morpheus-sim"), "phoenix-calibrate", "--mix", "google",
                                 "--nodes", "40", "--arrivals-min", "30", "--seeds", "3", "4",
                                 "--check-seed", "9", "--iterations", "2", "--out", file});
  ASSERT_TRUE(code == 0 || code == 1) << out;  // 1: the tolerance not met, file written
  EXPECT_NE(out.find("seed 3"), std::string::npos) << out;
  EXPECT_NE(out.find("seed 4"), std::string::npos) << out;
  EXPECT_NE(out.find("check (seed 9"), std::string::npos) << out;
  auto j = nlohmann::json::parse(readFile(file));
  EXPECT_EQ(j["seeds"], (std::vector<int>{3, 4}));
  EXPECT_EQ(j["check_seed"], 9);
  ASSERT_EQ(j["kinds"].size(), 9u);
  int measured = 0;  // a 30 min run leaves some kinds without short jobs: 0
  for (const auto& k : j["kinds"]) {
    EXPECT_GE(k["check_slowdown"].get<double>(), 0) << k.dump();
    EXPECT_GE(k["measured_slowdown"].get<double>(), 0) << k.dump();
    measured += k["check_slowdown"].get<double>() > 0 && k["measured_slowdown"].get<double>() > 0;
  }
  EXPECT_GE(measured, 5) << j.dump();
  EXPECT_GE(j["history"].size(), 1u);
  EXPECT_LE(j["history"].size(), 2u);
  for (const auto& k : j["kinds"]) EXPECT_GE(k["short_nodes"].get<int>(), -1) << k.dump();
  // After the first step every kind's short-partition count is fixed: the
  // short partition of 40 nodes at 17% has 6, all of them min disks'.
  if (j["history"].size() == 2) {
    const auto& counts = j["history"][1]["short_nodes"];
    ASSERT_EQ(counts.size(), 9u);
    for (const auto& c : counts) {
      EXPECT_GE(c.get<int>(), 0) << counts.dump();
      EXPECT_LE(c.get<int>(), 6) << counts.dump();
    }
    EXPECT_EQ(counts[8].get<int>(), 6) << counts.dump();
  }
  EXPECT_EQ(code == 0,
            j["worst_error"].get<double>() <= 0.15 && j["check_worst_error"].get<double>() <= 0.15)
      << j.dump();

  auto [c2, o2] = runCommand({binary("morpheus-sim"), "phoenix", "--mix", "google", "--calibration",
                              file, "--nodes", "40", "--arrivals-min", "30", "--seeds", "5",
                              "--policies", "eagle-c", "--json"});
  EXPECT_EQ(c2, 0) << o2;

  auto [c3, o3] = runCommand({binary("morpheus-sim"), "phoenix-calibrate", "--mix", "google",
                              "--seeds", "3", "4", "--check-seed", "4", "--out", file});
  EXPECT_EQ(c3, 2);
  EXPECT_NE(o3.find("--check-seed: must not be a calibration seed"), std::string::npos) << o3;
  EXPECT_EQ(std::count(o3.begin(), o3.end(), '\n'), 1) << o3;
}

}  // namespace
}  // namespace morpheus::testing
