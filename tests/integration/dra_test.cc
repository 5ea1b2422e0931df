// Dynamic reprovisioning end to end (Morpheus §7): a real RM, one
// NM and the DAG application master on loopback.
//
// The cluster (8 vcores) is kept full by an ad-hoc job. A daily... here
// every-2-minutes periodic reservation guarantees 3 containers (the AM and 2
// tasks) for 40 s, sized for the job's history: 8 tasks of 4 s on 2
// containers take ~16 s. This run is slowed: its tasks sleep 12 s, so on its
// guarantee alone it needs 4 waves x 12 s = 48 s and misses the deadline.
// With DRA on, the monitor sees demand (used + pending) above the skyline,
// grants extra containers where the plan has room (5 of the rho-capped 6),
// the borrowed ad-hoc containers are preempted, and the run finishes in two
// waves, before the deadline. With DRA off the same run misses it.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "harness.h"

namespace morpheus::testing {
namespace {

using namespace std::chrono_literals;
using nlohmann::json;

struct RunResult {
  int64_t deadline_ms = 0;
  int64_t finish_ms = 0;
  std::string state;
  std::string reservation_show;  // `morpheusctl reservation show ID`
  json reservation_json;         // `morpheusctl reservation show ID --json`
  std::string metrics;           // the RM's /metrics after the run
  json ui_detail;                // the web UI's /ui/api/reservation?id=ID
  std::string rm_log;
  std::string run_app;  // the slowed run's app id
};

class DraIT : public ClusterTest {
 protected:
  // `policy` "" = DRA off.
  void run(const std::string& policy, RunResult* out) {
    const bool dra_on = !policy.empty();
    ASSERT_NO_FATAL_FAILURE(
        startCluster(1,
                     {"--set", "planner.step=1s", "--set", "planner.lcm=120s", "--set",
                      "rm.preemption-grace=1s", "--set", "rm.heartbeat-interval=300ms", "--set",
                      std::string("dra.enabled=") + (dra_on ? "true" : "false"), "--set",
                      "dra.policy=" + (dra_on ? policy : std::string("morpheus-dra")), "--set",
                      "dra.extension=2s"},
                     "memory=8192,vcores=8"));

    // Ad hoc work fills every container.
    auto [c1, o1] = ctl({"app", "submit",
                         writeJob("name: filler\n"
                                  "stages:\n"
                                  "  - name: fill\n"
                                  "    tasks: 20\n"
                                  "    command: \"sleep 300\"\n"
                                  "    resources: {memory_mib: 256, vcores: 1}\n"
                                  "    max_attempts: 20\n"),
                         "--queue", "root.default"});
    ASSERT_EQ(c1, 0) << o1;
    filler_ = o1.substr(0, o1.find('\n'));
    ASSERT_TRUE(waitRunning(filler_, 8, 20s)) << rm_.log();

    // The periodic reservation: 3 containers for the whole 40 s window,
    // every 2 minutes, with a reprovisioning budget of 400 container-s.
    int64_t t0 = (nowMs() / 1000 + 5) * 1000;
    json def = {
        {"arrival", t0},
        {"deadline", t0 + 40000},
        {"reservation-name", "slowed-job"},
        {"recurrence-expression", "120000"},
        {"reprovision-budget", 400000},
        {"reservation-requests",
         {{"reservation-request-interpreter", 1},
          {"reservation-request", json::array({{{"capability", {{"memory", 256}, {"vCores", 1}}},
                                                {"num-containers", 3},
                                                {"min-concurrency", 1},
                                                {"duration", 40000}}})}}}};
    auto n = httpRequest(rm_.httpAddress(), "POST", "/ws/v1/cluster/reservation/new-reservation",
                         "", "application/json", bearer("alice"));
    ASSERT_EQ(n.status, 200) << n.body;
    std::string rid = json::parse(n.body)["reservation-id"];
    auto sub = httpRequest(rm_.httpAddress(), "POST", "/ws/v1/cluster/reservation/submit",
                           json({{"reservation-id", rid},
                                 {"queue", "default"},
                                 {"user", "alice"},
                                 {"reservation-definition", def}})
                               .dump(),
                           "application/json", bearer("alice"));
    ASSERT_EQ(sub.status, 200) << sub.body;
    out->deadline_ms = t0 + 40000;

    // The slowed run, submitted at its arrival.
    std::string job = writeJob(
        "name: slowed-job\n"
        "stages:\n"
        "  - name: work\n"
        "    tasks: 8\n"
        "    command: \"sleep 12\"\n"
        "    resources: {memory_mib: 256, vcores: 1}\n");
    while (nowMs() < t0) std::this_thread::sleep_for(50ms);
    auto [c2, o2] = ctl({"app", "submit", job, "--reservation", rid});
    ASSERT_EQ(c2, 0) << o2;
    std::string id = o2.substr(0, o2.find('\n'));
    ASSERT_TRUE(waitFinal(id, 120s)) << rm_.log();
    json a = app(id);
    out->state = a["state"];
    out->finish_ms = a["finish_ms"].get<int64_t>();
    out->reservation_show = ctl({"reservation", "show", rid}).second;
    out->reservation_json =
        json::parse(ctl({"reservation", "show", rid, "--json"}).second, nullptr, false);
    out->metrics = httpRequest(rm_.httpAddress(), "GET", "/metrics").body;
    out->ui_detail =
        json::parse(httpRequest(rm_.httpAddress(), "GET", "/ui/api/reservation?id=" + rid, "", "",
                                bearer("alice"))
                        .body,
                    nullptr, false);
    out->run_app = id;
    out->rm_log = rm_.log();
    ctl({"app", "kill", filler_});
  }

  std::string filler_;
};

// The run finished, before its deadline (prints the margin as `label`).
void expectMetDeadline(const RunResult& r, const char* label) {
  EXPECT_EQ(r.state, "FINISHED") << r.rm_log;
  EXPECT_LE(r.finish_ms, r.deadline_ms)
      << "finished " << (r.finish_ms - r.deadline_ms) << " ms after the deadline\n"
      << r.reservation_show << r.rm_log;
  std::printf("%s: finished %.1f s before the deadline\n", label,
              static_cast<double>(r.deadline_ms - r.finish_ms) / 1000.0);
}

// Whether `reservation show`'s reprovisioning history has a row of `policy`
// with `decision` (its cells are separated by two or more spaces).
bool historyHas(const std::string& show, const std::string& policy, const std::string& decision) {
  std::istringstream in(show);
  for (std::string l; std::getline(in, l);) {
    if (l.find("  " + policy + "  ") != std::string::npos &&
        l.find("  " + decision + "  ") != std::string::npos) {
      return true;
    }
  }
  return false;
}

TEST_F(DraIT, SlowedReservedJobMeetsItsDeadlineWithDra) {
  RunResult r;
  ASSERT_NO_FATAL_FAILURE(run("morpheus-dra", &r));
  expectMetDeadline(r, "DRA on");
  // Visible: the history lists grants, metrics count them, the log names ids.
  EXPECT_NE(r.reservation_show.find("reprovisioning history:"), std::string::npos)
      << r.reservation_show;
  EXPECT_TRUE(historyHas(r.reservation_show, "morpheus-dra", "granted")) << r.reservation_show;
  // The counter exists at 0 from the start: a grant makes it positive.
  const std::string grants = "\nmorpheus_rm_dra_grants_total ";
  const size_t at = r.metrics.find(grants);
  ASSERT_NE(at, std::string::npos) << r.metrics;
  EXPECT_GT(std::atof(r.metrics.c_str() + at + grants.size()), 0) << r.metrics;
  ASSERT_FALSE(r.reservation_json.is_discarded());
  const json& dra = r.reservation_json["reservations"][0];
  ASSERT_FALSE(dra["reprovision_history"].empty()) << dra.dump();
  EXPECT_TRUE(dra["reprovision_history"][0]["granted"].get<bool>()) << dra.dump();
  EXPECT_GT(dra["reprovision_budget_used_container_ms"].get<int64_t>(), 0) << dra.dump();
  EXPECT_LE(dra["reprovision_budget_used_container_ms"].get<int64_t>(), 400000) << dra.dump();
  EXPECT_NE(r.rm_log.find("DRA morpheus-dra: reservation reservation_"), std::string::npos);
  // The web UI's reservation detail shows the same grants and the run's actual skyline.
  ASSERT_FALSE(r.ui_detail.is_discarded());
  ASSERT_EQ(r.ui_detail["dra_history"].size(), dra["reprovision_history"].size())
      << r.ui_detail.dump();
  EXPECT_TRUE(r.ui_detail["dra_history"][0]["granted"].get<bool>()) << r.ui_detail.dump();
  EXPECT_FALSE(r.ui_detail["planned"].empty()) << r.ui_detail.dump();
  ASSERT_EQ(r.ui_detail["runs"].size(), 1u) << r.ui_detail.dump();
  EXPECT_EQ(r.ui_detail["runs"][0]["app"], r.run_app);
  EXPECT_FALSE(r.ui_detail["runs"][0]["memory_mib"].empty()) << r.ui_detail.dump();
}

// Jockey on the same run (no earlier run of the job: no history). Once the
// first wave shows 12 s tasks, the AM's stage report (2 done, 2 running, 4
// pending) simulated on the 2 task containers of the plan predicts 36 s for
// the ~22 s left; 6 task containers (12 s x 1.2 slack) meet the deadline, and
// the hysteresis steps the allocation there (AM included): 3 -> 5 -> 6 -> 7.
TEST_F(DraIT, SlowedReservedJobMeetsItsDeadlineWithJockey) {
  RunResult r;
  ASSERT_NO_FATAL_FAILURE(run("jockey", &r));
  expectMetDeadline(r, "Jockey");
  EXPECT_TRUE(historyHas(r.reservation_show, "jockey", "granted")) << r.reservation_show;
  // The grants come from the simulation of the AM's stage reports.
  EXPECT_NE(r.reservation_show.find("of task time"), std::string::npos) << r.reservation_show;
  EXPECT_NE(r.reservation_show.find("task containers predicted to finish"), std::string::npos)
      << r.reservation_show;
  std::printf("%s", r.reservation_show.c_str());  // the control loop's decisions, for the log
}

TEST_F(DraIT, SameRunMissesItsDeadlineWithDraOff) {
  RunResult r;
  ASSERT_NO_FATAL_FAILURE(run("", &r));
  EXPECT_EQ(r.state, "FINISHED") << r.rm_log;
  EXPECT_GT(r.finish_ms, r.deadline_ms) << r.reservation_show << r.rm_log;
  EXPECT_EQ(r.reservation_show.find("reprovisioning history:"), std::string::npos)
      << r.reservation_show;
  EXPECT_TRUE(r.reservation_json["reservations"][0]["reprovision_history"].empty());
  std::printf("DRA off: finished %.1f s after the deadline\n",
              static_cast<double>(r.finish_ms - r.deadline_ms) / 1000.0);
}

}  // namespace
}  // namespace morpheus::testing
