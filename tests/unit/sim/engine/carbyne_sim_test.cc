// Carbyne in morpheus-sim: the ad-hoc queue's policy from
// ExperimentOptions, on a hand-computable pair of jobs, and bad options.
#include <gtest/gtest.h>

#include <map>

#include "sim/engine/engine.h"
#include "sim/engine/strategy.h"

namespace morpheus::sim {
namespace {

constexpr int64_t kMin = 60'000;
constexpr int64_t kDayMs = 86'400'000;

SimStage stage(int64_t tasks, int64_t minutes) {
  SimStage s;
  s.name = "s";
  s.tasks = tasks;
  s.task_duration = Millis(minutes * kMin);
  s.task_resource = Resource(1024, 1);
  return s;
}

RealizedInstance unused(const PeriodicJob&, size_t, int64_t, uint64_t) { return {}; }

// One 6-slot node, both jobs submitted at the start of the evaluation day:
// "alt" = a critical 8-min task + 4 side tasks of 1 min; "short" = 4 tasks
// of 3 min. Fair share 3 slots each. Carbyne: alt needs 2 now (the critical
// task, 1 side task: 4 minutes of side work fit before its 8-min end);
// short needs 2 (two waves of 2 keep its 6-min estimate); the 2 leftover go
// to short (6 < 8 min): short ends at 3 min in one wave, alt still at 8.
// DRF splits 3 / 3, and the side tasks' freed slots go back to alt (it
// holds less) until its side stage is running out at 2 min: short's 4th task
// starts then and ends at 5 min.
// `side_first`: alt's side stage is its first (its AM asks it first).
std::map<std::string, double> jctMinutes(const std::string& policy, bool side_first = false) {
  Workload w;
  AdhocJob alt;
  alt.name = "alt";
  alt.user = UserId("u1");
  alt.submit = Millis(kDayMs);
  alt.stages = {stage(1, 8), stage(4, 1)};
  AdhocJob shortjob = alt;
  if (side_first) alt.stages = {stage(4, 1), stage(1, 8)};
  shortjob.name = "short";
  shortjob.user = UserId("u2");
  shortjob.stages = {stage(4, 3)};
  w.adhoc = {alt, shortjob};
  ExperimentOptions o;
  o.nodes = 1;
  o.node_size = Resource(6144, 6);
  o.days = 2;
  o.train_fraction = 0.5;
  o.realize = unused;
  o.adhoc_policy = policy;
  auto r = runExperiment(w, o, *parseStrategies({"baseline"}, {}, 0.5));
  EXPECT_TRUE(r.isOk()) << r.status().toString();
  std::map<std::string, double> out;
  for (const auto& a : r->strategies.at(0).adhoc)
    out[a.job] = static_cast<double>(a.completion.count()) / kMin;
  return out;
}

// The altruistic job yields its slack to the short job, which finishes in one
// wave, and alt itself finishes no later than under DRF.
TEST(CarbyneSimTest, AltruisticJobYieldsWithoutFinishingLater) {
  auto drf = jctMinutes("drf");
  auto car = jctMinutes("carbyne");
  EXPECT_NEAR(drf["short"], 5.0, 0.05);
  EXPECT_NEAR(car["short"], 3.0, 0.05);
  EXPECT_NEAR(drf["alt"], 8.0, 0.05);
  EXPECT_NEAR(car["alt"], 8.0, 0.05);
}

// The simulator's AM names each stage's ask in its report (as the RM's
// dag_report does), so alt runs the task its plan needs now (the critical
// one) though its AM asks the side stage first: alt still ends at 8 min.
// Without the names it ran side tasks first on its share, held its need
// with them, and its critical task started later: 10 min.
TEST(CarbyneSimTest, NeededStageRunsBeforeTheAmsFirstAsk) {
  auto car = jctMinutes("carbyne", true);
  EXPECT_NEAR(car["alt"], 8.0, 0.05);
  EXPECT_NEAR(car["short"], 3.0, 0.05);
}

// Unknown policy and out-of-range knobs name the option.
TEST(CarbyneSimTest, BadCarbyneOptionsNameTheField) {
  Workload w;
  ExperimentOptions o;
  o.realize = unused;
  o.adhoc_policy = "bogus";
  EXPECT_NE(validateExperiment(w, o).message().find("adhoc_policy"), std::string::npos);
  o.adhoc_policy = "carbyne";
  o.altruistic_share = 1.5;
  EXPECT_NE(validateExperiment(w, o).message().find("altruistic_share"), std::string::npos);
  o.altruistic_share = 0.5;
  o.estimate_noise = 1.0;
  EXPECT_NE(validateExperiment(w, o).message().find("estimate_noise"), std::string::npos);
  o.estimate_noise = 0.3;
  EXPECT_TRUE(validateExperiment(w, o).isOk());
}

}  // namespace
}  // namespace morpheus::sim
