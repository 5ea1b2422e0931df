// Unit tests for the YARN reservation JSON translation (REST edge + CLI).
#include <gtest/gtest.h>

#include "rm/http/yarn_json.h"

namespace morpheus::rm {
namespace {

const char* kDoc = R"({
  "queue": "default", "reservation-id": "reservation_1_0001", "user": "alice",
  "reservation-definition": {
    "arrival": "1765541532000", "deadline": 1765542252000, "reservation-name": "res_1",
    "priority": 0, "recurrence-expression": "86400000", "recurrence-key": "etl",
    "reservation-requests": {"reservation-request-interpreter": 3,
      "reservation-request": [{"duration": "60000", "num-containers": 20, "min-concurrency": 2,
                               "capability": {"memory": 1024, "vCores": "1"}}]}}})";

// Every YARN field reaches the wire message; numbers as strings are accepted.
TEST(YarnJsonTest, ParsesSubmitWithStringNumbers) {
  auto r = parseYarnSubmit(kDoc);
  ASSERT_TRUE(r.isOk()) << r.status().toString();
  EXPECT_EQ(r->reservation_id(), "reservation_1_0001");
  EXPECT_EQ(r->user(), "alice");
  const auto& d = r->definition();
  EXPECT_EQ(d.arrival_ms(), 1765541532000);
  EXPECT_EQ(d.period_ms(), 86400000);
  EXPECT_EQ(d.interpreter(), v1::R_ORDER_NO_GAP);
  EXPECT_EQ(d.recurrence_key(), "etl");
  ASSERT_EQ(d.stages_size(), 1);
  EXPECT_EQ(d.stages(0).duration_ms(), 60000);
  EXPECT_EQ(d.stages(0).capability().vcores(), 1);
  EXPECT_EQ(d.stages(0).min_concurrency(), 2);
}

// Serialising and parsing again yields the same definition.
TEST(YarnJsonTest, RoundTripsDefinition) {
  auto r = parseYarnSubmit(kDoc);
  ASSERT_TRUE(r.isOk());
  auto again = parseYarnDefinition(yarnDefinitionJson(r->definition()), "reservation-definition");
  ASSERT_TRUE(again.isOk()) << again.status().toString();
  EXPECT_EQ(again->SerializeAsString(), r->definition().SerializeAsString());
}

// Errors name the JSON path of the bad field.
TEST(YarnJsonTest, ErrorsNameTheFieldPath) {
  auto bad = [](const std::string& from, const std::string& to) {
    std::string doc = kDoc;
    auto pos = doc.find(from);
    EXPECT_NE(pos, std::string::npos) << from;
    doc.replace(pos, from.size(), to);
    auto r = parseYarnSubmit(doc);
    EXPECT_FALSE(r.isOk());
    return r.status().message();
  };
  EXPECT_NE(
      bad("\"num-containers\": 20", "\"num-containers\": \"many\"")
          .find(
              "reservation-definition.reservation-requests.reservation-request[0].num-containers"),
      std::string::npos);
  EXPECT_NE(bad("\"reservation-request-interpreter\": 3", "\"reservation-request-interpreter\": 7")
                .find("reservation-request-interpreter"),
            std::string::npos);
  EXPECT_NE(bad("\"arrival\": \"1765541532000\",", "").find("reservation-definition.arrival"),
            std::string::npos);
  EXPECT_NE(bad("\"memory\": 1024", "\"memory\": -5").find("capability.memory"), std::string::npos);
  EXPECT_FALSE(parseYarnSubmit("{not json").isOk());
  EXPECT_FALSE(parseYarnSubmit("[]").isOk());
}

// Wire-API field paths map to the YARN JSON paths the README promises.
TEST(YarnJsonTest, WireFieldPathsBecomeJsonPaths) {
  const std::string rr = "reservation-definition.reservation-requests.reservation-request";
  EXPECT_EQ(yarnFieldPath("definition.stages[0].duration_ms"), rr + "[0].duration");
  EXPECT_EQ(yarnFieldPath("definition.stages[12].num_containers"), rr + "[12].num-containers");
  EXPECT_EQ(yarnFieldPath("definition.stages[1].min_concurrency"), rr + "[1].min-concurrency");
  EXPECT_EQ(yarnFieldPath("definition.stages[0].capability.memory_mib"),
            rr + "[0].capability.memory");
  EXPECT_EQ(yarnFieldPath("definition.stages"), rr);
  EXPECT_EQ(yarnFieldPath("definition.deadline_ms"), "reservation-definition.deadline");
  EXPECT_EQ(yarnFieldPath("definition.period_ms"), "reservation-definition.recurrence-expression");
  EXPECT_EQ(yarnFieldPath("definition.priority"), "reservation-definition.priority");
  EXPECT_EQ(yarnFieldPath("definition.name"), "reservation-definition.reservation-name");
  EXPECT_EQ(yarnFieldPath("queue"), "queue");
  Status st = withYarnFieldPath(invalidArgument("definition.stages[0].duration_ms", "must be > 0"));
  EXPECT_EQ(st.message(), rr + "[0].duration: must be > 0");
  EXPECT_EQ(withYarnFieldPath(infeasible("definition.x: y")).message(), "definition.x: y");
}

// Out-of-range integers are refused with their path, not truncated to int32.
TEST(YarnJsonTest, OutOfRangeNumbersAreRefusedNotCoerced) {
  auto with = [](const std::string& from, const std::string& to) {
    std::string doc = kDoc;
    doc.replace(doc.find(from), from.size(), to);
    return parseYarnSubmit(doc);
  };
  auto p = with("\"priority\": 0", "\"priority\": 4294967297");
  ASSERT_FALSE(p.isOk()) << "2^32+1 would become priority 1";
  EXPECT_EQ(p.status().message().rfind("reservation-definition.priority:", 0), 0u);
  auto g = with("\"min-concurrency\": 2", "\"min-concurrency\": 4294967298");
  ASSERT_FALSE(g.isOk());
  EXPECT_NE(g.status().message().find("reservation-request[0].min-concurrency"), std::string::npos)
      << g.status().message();
}

// A single reservation-request object (JAXB style) is accepted as a one-stage list.
TEST(YarnJsonTest, AcceptsSingleStageObject) {
  std::string doc = R"({"reservation-definition": {"arrival": 1, "deadline": 2,
    "reservation-requests": {"reservation-request": {"duration": 5, "num-containers": 1,
    "capability": {"memory": 1, "vCores": 1}}}}})";
  auto r = parseYarnSubmit(doc);
  ASSERT_TRUE(r.isOk()) << r.status().toString();
  EXPECT_EQ(r->definition().stages_size(), 1);
  EXPECT_EQ(r->definition().interpreter(), v1::R_ALL) << "YARN's default interpreter is ALL";
  EXPECT_EQ(r->definition().stages(0).min_concurrency(), 1);
}

// Fuzz finding (yarn_json): numbers outside int64 are errors naming the JSON
// path. The old decoder converted a float like 1e300 with undefined behaviour
// and wrapped an unsigned above INT64_MAX to -1 (accepting duration -1).
TEST(YarnJsonTest, NumbersOutsideInt64AreRejectedWithThePath) {
  auto message = [](const std::string& from, const std::string& to) {
    std::string doc = kDoc;
    auto pos = doc.find(from);
    EXPECT_NE(pos, std::string::npos) << from;
    doc.replace(pos, from.size(), to);
    auto r = parseYarnSubmit(doc);
    EXPECT_FALSE(r.isOk()) << to;
    return r.isOk() ? std::string() : r.status().message();
  };
  EXPECT_NE(message("\"deadline\": 1765542252000", "\"deadline\": 1e300")
                .find("reservation-definition.deadline: is out of range"),
            std::string::npos);
  EXPECT_NE(message("\"duration\": \"60000\"", "\"duration\": 18446744073709551615")
                .find("reservation-request[0].duration: is out of range"),
            std::string::npos);
  EXPECT_NE(message("\"duration\": \"60000\"", "\"duration\": 60000.5")
                .find("reservation-request[0].duration: must be an integer"),
            std::string::npos);
}

}  // namespace
}  // namespace morpheus::rm

#include "morpheus/v1/inference.pb.h"
#include "rm/runtime/telemetry.h"

namespace morpheus::rm {
namespace {

// Skyline = average containers in use per step, intervals clipped to the run.
TEST(TelemetryTest, SkylineAveragesContainersPerStep) {
  TimePoint t0 = fromEpochMs(1000000);
  const Resource c(1024, 1);
  std::vector<ContainerInterval> iv = {
      {t0, t0 + Millis(120000), c},                   // 2 full steps
      {t0 + Millis(30000), t0 + Millis(90000), c},    // half of step 0, half of step 1
      {t0 - Millis(60000), t0 + Millis(60000), c},    // clipped: step 0 only
      {t0 + Millis(120000), t0 + Millis(135000), c},  // 15 s of the last, 30 s long, step
  };
  auto s = computeSkyline(iv, t0, t0 + Millis(150000), Millis(60000), c);
  ASSERT_EQ(s.size(), 3u);
  EXPECT_DOUBLE_EQ(s[0], 1.0 + 0.5 + 1.0);
  EXPECT_DOUBLE_EQ(s[1], 1.0 + 0.5);
  // 15 s busy in a 30 s partial step is 0.5 containers (0.25 if averaged over a full step).
  EXPECT_DOUBLE_EQ(s[2], 0.5) << "last partial step averages over its own length";
  EXPECT_TRUE(computeSkyline(iv, t0, t0, Millis(60000), c).empty());
}

// Containers count as DRA counts them: the AM too, and resources covered by the unit.
TEST(TelemetryTest, SkylineCountsInUnitsOfTheContainerAmIncluded) {
  TimePoint t0 = fromEpochMs(1000000);
  const Resource c(2048, 1);
  std::vector<ContainerInterval> iv = {
      {t0, t0 + Millis(60000), Resource(1024, 1), true},  // a small AM: 1 unit
      {t0, t0 + Millis(60000), c},
      {t0, t0 + Millis(30000), Resource(4096, 2)},  // a double container: 2 units, half the step
  };
  auto s = computeSkyline(iv, t0, t0 + Millis(60000), Millis(60000), c);
  ASSERT_EQ(s.size(), 1u);
  // 0-30 s: 1024 + 2048 + 4096 MiB = 7168 -> 4 units; 30-60 s: 3072 -> 2 units.
  EXPECT_DOUBLE_EQ(s[0], (4.0 + 2.0) / 2);
  EXPECT_EQ(typicalContainer(iv), c) << "task containers first (tie: the first seen)";
  EXPECT_EQ(typicalContainer({iv[0]}), Resource(1024, 1)) << "only an AM";
}

// The record sent to inference carries the run's final status next to its
// times, skyline and file events (succeeded, failed and killed each map).
TEST(TelemetryTest, IngestRequestCarriesTheFinalStatus) {
  AppTelemetryRecord rec;
  rec.app = AppId("app_1");
  rec.recurrence_key = JobKey("etl");
  rec.user = UserId("alice");
  rec.submit = fromEpochMs(1000);
  rec.start = fromEpochMs(2000);
  rec.finish = fromEpochMs(62000);
  rec.skyline = {2, 3};
  rec.container = Resource(1024, 1);
  rec.files = {{"/out", fromEpochMs(60000), true}};
  const std::pair<AppOutcome, v1::RunStatus> cases[] = {
      {AppOutcome::kSucceeded, v1::RUN_STATUS_SUCCEEDED},
      {AppOutcome::kFailed, v1::RUN_STATUS_FAILED},
      {AppOutcome::kKilled, v1::RUN_STATUS_KILLED}};
  for (const auto& [outcome, wire] : cases) {
    rec.outcome = outcome;
    v1::IngestRunsRequest req;
    toIngestRequest(rec, &req);
    ASSERT_EQ(req.runs_size(), 1);
    EXPECT_EQ(req.runs(0).status(), wire);
    EXPECT_EQ(req.runs(0).job_key(), "etl");
    EXPECT_EQ(req.runs(0).end_ms(), 62000);
    ASSERT_EQ(req.events_size(), 1);
    EXPECT_EQ(req.events(0).kind(), v1::ProvenanceEvent::KIND_WRITE);
  }
}

}  // namespace
}  // namespace morpheus::rm
