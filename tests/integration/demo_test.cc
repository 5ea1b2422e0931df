// The quickstart demo in CI: deploy/demo.sh --profile ci runs the
// same scenario as ./deploy/quickstart.sh against this build's binaries
// (plan step 2 s, a run every minute, ~6 min) on a private var dir and free
// ports, then stops the cluster. The script records what morpheusctl and
// the RM's JSON said at each step under <var>/scenario/; this test asserts every
// step from those records: the proposal came from the RM's telemetry feed,
// the owner's sign-off made a reservation that is in the plan, the next runs
// were bound to it while an ad-hoc flood filled the cluster, the slowed run
// got DRA grants when its demand exceeded its plan and met its deadline, and
// it did so because of DRA: the identically slowed next run, same cluster,
// same plan, same flood, after the owner set the reservation's DRA budget to 0
// with `morpheusctl reservation update`, got no grant and missed its
// deadline. The flood's tasks outlast the demo (DraIT's filler), so no
// container frees for a run beyond its guarantee to borrow (which it would:
// rm/runtime/runtime.cc, borrowing_reservations_share); only DRA's grants, which
// preempt the flood, give the slowed run more than its guarantee.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <set>

#include "harness.h"
#include "test_paths.h"

namespace morpheus::testing {
namespace {

using nlohmann::json;

json readJson(const std::string& path) {
  std::ifstream in(path);
  return json::parse(in, nullptr, false);
}

// The scenario's steps, each asserted from what the system reported.
TEST(DemoIT, QuickstartScenarioSlowedRunMeetsItsDeadlineBecauseOfDra) {
  const std::string var = freshDir("demo");
  auto [code, out] = runCommand({std::string(sourceDir()) + "/deploy/demo.sh", "--profile", "ci",
                                 "--var", var, "--ports", "auto"},
                                {{"MORPHEUS_BIN", std::string(buildBinDir())}});
  std::printf("%s\n", out.c_str());  // the demo's own progress and summary, for the CI log
  EXPECT_EQ(code, 0) << out;

  // local-cluster.sh said where the cluster is (its ports are free ones) and
  // wrote it down for the next shell.
  std::ifstream cluster_env(var + "/cluster.env");
  std::string rm_line;
  std::getline(cluster_env, rm_line);  // RM=127.0.0.1:PORT
  ASSERT_EQ(rm_line.rfind("RM=127.0.0.1:", 0), 0u) << rm_line;
  EXPECT_NE(out.find("\nexport MORPHEUS_RM=" + rm_line.substr(3) + "\n"), std::string::npos) << out;
  std::ifstream env_file(var + "/env");
  std::string env_text((std::istreambuf_iterator<char>(env_file)),
                       std::istreambuf_iterator<char>());
  EXPECT_EQ(env_text.rfind("export MORPHEUS_RM=" + rm_line.substr(3) + "\n", 0), 0u) << env_text;

  // Nothing left running: every daemon stopped, every container gone.
  for (const char* d : {"rm", "inference", "nm1", "nm2", "nm3"}) {
    EXPECT_FALSE(std::filesystem::exists(var + "/run/" + d + ".pid")) << d;
  }
  EXPECT_EQ(stopContainersUnder(var), 0) << "containers left running";

  const std::string dir = var + "/scenario/";
  json summary = readJson(dir + "summary.json");
  ASSERT_FALSE(summary.is_discarded()) << "no summary.json\n" << out;

  // 1-2. The proposal was inferred from the runs the RM fed to inference.
  const json& prop = summary["proposal"];
  ASSERT_TRUE(prop.is_object()) << summary.dump(2);
  EXPECT_EQ(prop["job_key"], "demo-sessions");
  EXPECT_EQ(prop["period_ms"], 60000);
  EXPECT_GE(prop["runs_used"].get<int>(), 3);
  EXPECT_GT(prop["deadline_offset_ms"].get<int64_t>(), prop["start_offset_ms"].get<int64_t>());
  EXPECT_FALSE(prop["skyline"].empty());
  json telemetry = readJson(dir + "telemetry.json");
  ASSERT_TRUE(telemetry.is_array()) << "no telemetry.json";
  size_t finished = 0;  // a killed run has no skyline
  for (const auto& r : summary["runs"]) finished += r["state"] == "FINISHED" ? 1 : 0;
  EXPECT_GE(finished, 4u) << summary["runs"].dump(2);
  EXPECT_EQ(telemetry.size(), finished) << "every finished run's skyline reached the RM's feed";
  json accept = readJson(dir + "accept.json");
  const std::string rid = summary["reservation_id"].get<std::string>();
  ASSERT_FALSE(rid.empty()) << accept.dump(2);
  EXPECT_EQ(accept["reservation_id"], rid);

  // 3. The reservation is in the plan.
  json plan = readJson(dir + "plan.json");
  ASSERT_FALSE(plan.is_discarded()) << "no plan.json";
  EXPECT_EQ(plan["reservation_count"], 1) << plan.dump();
  int64_t planned_vcores = 0;
  for (const auto& s : plan["steps"]) planned_vcores += s["periodic"]["vcores"].get<int64_t>();
  EXPECT_GT(planned_vcores, 0) << plan.dump();
  json ui_plan = readJson(dir + "ui-plan.json");  // the web page's chart data
  ASSERT_FALSE(ui_plan.is_discarded()) << "no ui-plan.json";
  ASSERT_EQ(ui_plan["series"].size(), 1u) << ui_plan.dump();
  EXPECT_EQ(ui_plan["series"][0]["id"], rid);
  int64_t charted = 0;
  for (const auto& v : ui_plan["series"][0]["vcores"]) charted += v.get<int64_t>();
  EXPECT_GT(charted, 0) << ui_plan.dump();

  // 4-6. Runs: learned ones ad hoc, then the reserved ones: the slowed run with
  // the owner's DRA budget, then the same slowed job with the budget 0.
  const json& runs = summary["runs"];
  int learned = 0, reserved = 0;
  const json* slowed = nullptr;
  const json* no_dra = nullptr;
  for (const auto& r : runs) {
    if (r["reservation_id"].get<std::string>().empty()) {
      EXPECT_EQ(r["state"], "FINISHED") << r.dump();
      EXPECT_EQ(reserved, 0) << "a run after the sign-off was not bound: " << r.dump();
      learned++;
      continue;
    }
    reserved++;
    EXPECT_EQ(r["reservation_id"], rid);
    if (r["kind"] == "slowed-no-dra") {
      no_dra = &r;
      continue;
    }
    EXPECT_EQ(r["state"], "FINISHED") << r.dump();
    EXPECT_TRUE(r["met_deadline"].get<bool>()) << r.dump();
    EXPECT_GT(r["dra_budget_container_ms"].get<int64_t>(), 0) << r.dump();
    if (r["kind"] == "slowed") slowed = &r;
  }
  EXPECT_GE(learned, 3);
  EXPECT_EQ(reserved, 2) << runs.dump(2);
  ASSERT_NE(slowed, nullptr) << runs.dump(2);
  ASSERT_NE(no_dra, nullptr) << runs.dump(2);
  EXPECT_GT((*slowed)["dra_grants"].get<int>(), 0) << slowed->dump();
  const int64_t dra_spare =
      (*slowed)["deadline_ms"].get<int64_t>() - (*slowed)["finish_ms"].get<int64_t>();
  EXPECT_GE(dra_spare, 0) << slowed->dump();

  // Because of DRA: the same slowed job, bound to the same reservation with the same
  // plan next to the same flood, but with the owner's DRA budget 0, got no grant (any
  // DRA decision during it is a denial naming the budget) and missed its deadline.
  EXPECT_TRUE((*no_dra)["slowed"].get<bool>()) << no_dra->dump();
  EXPECT_EQ((*no_dra)["dra_budget_container_ms"].get<int64_t>(), 0) << no_dra->dump();
  EXPECT_EQ((*no_dra)["dra_grants"].get<int>(), 0) << no_dra->dump();
  for (const auto& why : (*no_dra)["dra_denials"]) {
    EXPECT_NE(why.get<std::string>().find("budget"), std::string::npos) << why;
  }
  const int64_t no_dra_late =
      (*no_dra)["finish_ms"].get<int64_t>() - (*no_dra)["deadline_ms"].get<int64_t>();
  EXPECT_TRUE((*no_dra)["state"] == "FINISHED" || (*no_dra)["state"] == "KILLED") << no_dra->dump();
  EXPECT_FALSE((*no_dra)["met_deadline"].get<bool>()) << no_dra->dump();
  EXPECT_GT(no_dra_late, 0) << no_dra->dump();
  json dra_on = readJson(dir + "reservation-detail-dra-on.json");
  json dra_off = readJson(dir + "reservation-detail-dra-off.json");
  ASSERT_FALSE(dra_on.is_discarded() || dra_off.is_discarded()) << "no reservation-detail-dra-*";
  EXPECT_GT(dra_on["budget_container_ms"].get<int64_t>(), 0) << dra_on.dump();
  EXPECT_EQ(dra_off["budget_container_ms"], 0) << dra_off.dump();
  EXPECT_EQ(dra_on["planned"], dra_off["planned"]) << "the update changed the plan";
  EXPECT_EQ((*no_dra)["reserved_container_ms"], (*slowed)["reserved_container_ms"]);
  std::printf(
      "margins: the slowed run with DRA finished %.1f s before its deadline (%.1f s "
      "runtime), the same run without DRA finished at deadline %+.1f s (%.1f s runtime, %s, %zu "
      "denials)\n",
      static_cast<double>(dra_spare) / 1000.0, (*slowed)["runtime_ms"].get<double>() / 1000.0,
      static_cast<double>(no_dra_late) / 1000.0, (*no_dra)["runtime_ms"].get<double>() / 1000.0,
      (*no_dra)["state"].get<std::string>().c_str(), (*no_dra)["dra_denials"].size());

  // The flood filled the cluster as each reserved run started and ended.
  json flood = readJson(dir + "flood.json");
  ASSERT_TRUE(flood.is_array() && flood.size() >= 4u)
      << "flood.json: a sample per reserved run start and end";
  for (const auto& sample : flood) {
    EXPECT_GE(sample["flood"]["running_containers"].get<int>(), 8) << sample.dump();
    EXPECT_EQ(sample["flood"]["queue"], "root.adhoc");
  }
  const json& first = flood[0]["cluster"];
  EXPECT_GE(first["used"]["vcores"].get<int64_t>() * 4,
            first["capacity"]["vcores"].get<int64_t>() * 3)
      << first.dump();

  // The reservation's own record lists the reserved runs that finished with their usage
  // (the run without DRA is killed when it is still running half a period past its deadline).
  json detail = readJson(dir + "reservation-detail.json");
  ASSERT_FALSE(detail.is_discarded()) << "no reservation-detail.json";
  std::set<std::string> in_detail;
  for (const auto& r : detail["runs"]) in_detail.insert(r["app"].get<std::string>());
  for (const auto& r : runs) {
    if (!r["reservation_id"].get<std::string>().empty() && r["state"] == "FINISHED") {
      EXPECT_TRUE(in_detail.count(r["app"].get<std::string>())) << detail["runs"].dump();
    }
  }

  // DRA granted the slowed run containers while its demand exceeded its plan.
  int during = 0;
  for (const auto& h : detail["dra_history"]) {
    int64_t t = h["time_ms"].get<int64_t>();
    if (h["granted"].get<bool>() && t >= (*slowed)["start_ms"].get<int64_t>() &&
        t <= (*slowed)["finish_ms"].get<int64_t>()) {
      EXPECT_NE(h["reason"].get<std::string>().find("> planned"), std::string::npos) << h.dump();
      during++;
    }
  }
  EXPECT_EQ(during, (*slowed)["dra_grants"].get<int>()) << detail["dra_history"].dump(2);
}

}  // namespace
}  // namespace morpheus::testing
