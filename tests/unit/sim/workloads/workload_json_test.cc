// Unit tests for the morpheus-sim JSON trace format: the
// example parses to the documented values; every error names its JSON path.
#include <gtest/gtest.h>

#include <utility>
#include <vector>

#include "sim/workloads/workload.h"
#include "test_paths.h"

namespace morpheus {
namespace {

// A valid one-job document with `field` of periodic[0] replaced by `value` (raw JSON).
std::string periodicWith(const std::string& field, const std::string& value) {
  std::string doc = R"({"periodic": [{"key": "k", "owner": "o", "period": "1h",
      "stages": [{"tasks": 2, "task_duration": "30s", "task_resource": "memory=1024,vcores=1"}],
      "input_available": "0s", "deadline": "40m", "user_containers": 3)";
  if (!field.empty()) doc += ", \"" + field + "\": " + value;
  return doc + "}]}";
}

// The example trace shipped in examples/sim parses with the values it states and the documented
// defaults.
TEST(WorkloadJsonTest, ParsesExampleTrace) {
  auto w = sim::loadWorkloadJson(std::string(::morpheus::testing::sourceDir()) +
                                 "/examples/sim/trace.json");
  ASSERT_TRUE(w.isOk()) << w.status().toString();
  ASSERT_EQ(w->periodic.size(), 2u);
  ASSERT_EQ(w->adhoc.size(), 2u);
  const auto& a = w->periodic[0];
  EXPECT_EQ(a.key, JobKey("clicks-hourly-rollup"));
  EXPECT_EQ(a.period, Millis(3600000));
  EXPECT_EQ(a.submit_offset, Millis(120000));
  EXPECT_EQ(a.deadline, Millis(1800000));
  ASSERT_EQ(a.stages.size(), 2u);
  EXPECT_EQ(a.stages[1].depends_on, std::vector<int>{0});
  EXPECT_EQ(a.stages[1].task_resource, Resource(4096, 1));
  EXPECT_EQ(a.user_containers, 60);
  EXPECT_DOUBLE_EQ(a.straggler_factor, 2.5);
  const auto& b = w->periodic[1];
  EXPECT_EQ(b.submit_offset, Millis((2 * 60 + 5) * 60000));
  EXPECT_EQ(b.queue, "root.prod");
  EXPECT_EQ(b.input_path, "/warehouse/billing-daily/input");
  EXPECT_EQ(b.code_change_day, 10);
  EXPECT_DOUBLE_EQ(b.failure_probability, 0.0);
  EXPECT_EQ(b.user_container_resource, Resource(2048, 1));
  EXPECT_EQ(b.stages[2].depends_on, (std::vector<int>{0, 1}));
  EXPECT_EQ(w->adhoc[0].name, "analyst-query-1");
  EXPECT_EQ(w->adhoc[1].queue, "root.batch");
  EXPECT_EQ(w->adhoc[1].submit, Millis(3 * 3600000));
}

// Durations concatenate <integer><unit> parts; anything else is refused.
TEST(WorkloadJsonTest, ParsesDurationStrings) {
  auto huge = sim::parseWorkloadJson(R"({"adhoc": [{"name": "a", "user": "u",
      "submit": "999999999999d", "stages": []}]})");
  ASSERT_FALSE(huge.isOk());
  EXPECT_EQ(huge.status().message().rfind("adhoc[0].submit: '999999999999d' is longer than", 0), 0u)
      << huge.status().message();
  auto w = sim::parseWorkloadJson(periodicWith("submit_offset", "\"1m30s250ms\""));
  ASSERT_TRUE(w.isOk()) << w.status().toString();
  EXPECT_EQ(w->periodic[0].submit_offset, Millis(90250));
  for (const char* bad : {"\"\"", "\"5\"", "\"1.5m\"", "\"m\"", "\"3 s\"", "300",
                          "\"999999999999d\"", "\"3650d1ms\""}) {
    auto r = sim::parseWorkloadJson(periodicWith("submit_offset", bad));
    ASSERT_FALSE(r.isOk()) << bad;
    EXPECT_EQ(r.status().message().rfind("periodic[0].submit_offset:", 0), 0u)
        << r.status().message();
  }
}

// The first bad field is named by its JSON path and nothing is returned.
TEST(WorkloadJsonTest, ErrorsNameTheJsonPath) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {periodicWith("stages",
                    R"([{"tasks": 1, "task_duration": "1s", "task_resource": "memory=1,vcores=1"},
                        {"tasks": 0, "task_duration": "1s", "task_resource": "memory=1,vcores=1"}])"),
       "periodic[0].stages[1].tasks:"},
      {periodicWith("stages",
                    R"([{"tasks": 1, "task_duration": "1s", "task_resource": "memory=1,vcores=1",
                         "depends_on": [0]}])"),
       "periodic[0].stages[0].depends_on[0]:"},
      {periodicWith("stages",
                    R"([{"tasks": 1, "task_duration": "1s", "task_resource": "memory=lots"}])"),
       "periodic[0].stages[0].task_resource"},
      {periodicWith("taks", "1"), "periodic[0].taks: unknown field"},
      {periodicWith("user_containers", "18446744073709551615"), "periodic[0].user_containers:"},
      {periodicWith("failure_probability", "1.5"), "periodic[0].failure_probability:"},
      {periodicWith("user_containers", "\"many\""), "periodic[0].user_containers:"},
      {periodicWith("submit_offset", "\"2h\""), "periodic[0].submit_offset:"},
      {R"({"periodic": [{"key": "k"}]})", "periodic[0].owner: is required"},
      {R"({"periodic": [], "adhoc": [{"name": "a", "submit": "1s", "stages": []}]})",
       "adhoc[0].user: is required"},
      {R"({"adhoc": [{"name": "a", "user": "u", "submit": "1s", "stages": []}]})",
       "adhoc[0].stages: must hold at least one stage"},
      {R"({"periodic": {}})", "periodic: must be an array"},
      {R"({"jobs": []})", "jobs: unknown field"},
      {"{\"periodic\": [\n  {\"key\": }\n]}", "json: line 2, column"},
  };
  for (const auto& [doc, prefix] : cases) {
    auto r = sim::parseWorkloadJson(doc);
    ASSERT_FALSE(r.isOk()) << prefix;
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
    EXPECT_EQ(r.status().message().rfind(prefix, 0), 0u) << r.status().message();
  }
  const std::string job = R"({"key": "same", "owner": "o", "period": "1h", "input_available": "0s",
      "deadline": "1h", "user_containers": 1,
      "stages": [{"tasks": 1, "task_duration": "1s", "task_resource": "memory=1,vcores=1"}]})";
  auto dup = sim::parseWorkloadJson("{\"periodic\": [" + job + ", " + job + "]}");
  ASSERT_FALSE(dup.isOk());
  EXPECT_EQ(dup.status().message().rfind("periodic[1].key:", 0), 0u) << dup.status().message();
}

// A generated workload written as JSON parses back to the same workload (and so passes the strict
// checks).
TEST(WorkloadJsonTest, GeneratedWorkloadRoundTrips) {
  sim::GeneratorOptions o;
  o.periodic_jobs = 300;
  o.days = 20;
  o.nodes = 100;
  o.node_size = Resource(32768, 8);
  auto w = sim::generatePeriodic(o);
  ASSERT_TRUE(w.isOk());
  sim::AdhocJob a;
  a.name = "q\"1";
  a.user = UserId("u");
  a.submit = Millis(90061001);
  a.stages = w->periodic[0].stages;
  w->adhoc.push_back(a);
  const std::string text = sim::workloadJson(*w);
  EXPECT_NE(text.find("\"submit\": \"1d1h1m1s1ms\""), std::string::npos);
  auto back = sim::parseWorkloadJson(text);
  ASSERT_TRUE(back.isOk()) << back.status().toString();
  ASSERT_EQ(back->periodic.size(), w->periodic.size());
  EXPECT_EQ(back->periodic[7].deadline, w->periodic[7].deadline);
  EXPECT_EQ(back->periodic[7].stages[0].tasks, w->periodic[7].stages[0].tasks);
  EXPECT_EQ(back->periodic[7].straggler_factor, w->periodic[7].straggler_factor);
  EXPECT_EQ(back->adhoc[0].name, "q\"1");
  EXPECT_EQ(sim::workloadJson(*back), text);
}

// A file that cannot be read is reported with its path.
TEST(WorkloadJsonTest, MissingFileNamesThePath) {
  auto r = sim::loadWorkloadJson("/nonexistent/trace.json");
  ASSERT_FALSE(r.isOk());
  EXPECT_NE(r.status().message().find("/nonexistent/trace.json"), std::string::npos);
}

}  // namespace
}  // namespace morpheus
