// Run-history import: both formats, line-numbered errors, all-or-nothing.
#include "inference/model/run_import.h"

#include "inference/model/skyline_fit.h"

#include <gtest/gtest.h>

#include <sstream>

namespace morpheus::inference {
namespace {

Result<store::IngestBatch> parse(const char* text, const char* format) {
  std::istringstream in{std::string(text)};
  ImportOptions o;
  o.format = format;
  o.default_user = "bob";
  return parseRunHistory(in, o);
}

TEST(RunImport, NativeLinesBecomeRunsAtFiveSecondSteps) {
  auto b = parse(
      "# comment\n"
      "pipe1 1 1000 2000 22000 run1 1024:0|4096:10 1:0|4:10|2:15\n"
      "\n"
      "pipe1 1 90000 91000 101000 run2 1024:0 3:0\n",
      "native");
  ASSERT_TRUE(b.isOk()) << b.status().message();
  ASSERT_EQ(b->runs.size(), 2u);
  const auto& r = b->runs[0];
  EXPECT_EQ(r.job.value(), "pipe1");
  EXPECT_EQ(r.run.value(), "run1");
  EXPECT_EQ(r.user, "bob");
  EXPECT_EQ(toEpochMs(r.start), 2000);
  EXPECT_EQ(r.step, Millis(5000));
  EXPECT_EQ(r.container, Resource(1024, 1));
  // Each sample is one 5 s step; nothing holds between samples (Hadoop):
  // 1 (0-5 s), 0 (5-10 s), 4 (10-15 s), 2 (15-20 s).
  EXPECT_EQ(r.skyline, (std::vector<double>{1, 0, 4, 2}));
  EXPECT_EQ(r.status, store::RunStatus::kSucceeded);
  // One sample = one step, although the line ends 10 s after its start.
  EXPECT_EQ(b->runs[1].skyline, (std::vector<double>{3}));
}

// A native run whose endTimeMs is minutes after its last sample has exactly
// its samples as skyline (the end does not extend the last value), and the
// LP fits what Hadoop's estimator would: three identical runs give their own
// 3-step skyline, not one held for 10 minutes.
TEST(RunImport, NativeEndTimeDoesNotExtendTheLastSample) {
  auto b = parse(
      "pipe 1 0 1000 601000 r1 1024:0 2:0|4:5|3:10\n"
      "pipe 1 86400000 86401000 87001000 r2 1024:0 2:0|4:5|3:10\n"
      "pipe 1 172800000 172801000 173401000 r3 1024:0 2:0|4:5|3:10\n",
      "native");
  ASSERT_TRUE(b.isOk()) << b.status().message();
  ASSERT_EQ(b->runs.size(), 3u);
  EXPECT_EQ(b->runs[0].skyline, (std::vector<double>{2, 4, 3}));
  EXPECT_EQ(toEpochMs(b->runs[0].end), 601000);  // kept for the SLO statistics
  FitParams fp;
  fp.step = Millis(5000);
  auto fit = fitRuns(b->runs, fp);
  ASSERT_TRUE(fit.isOk()) << fit.status().message();
  EXPECT_EQ(fit->skyline, (std::vector<int64_t>{2, 4, 3}));
}

// Samples at one offset add up and an off-grid sample covers the two steps
// its 5 s interval touches (Hadoop's per-second max within a step).
TEST(RunImport, NativeSamplesAddUpAndCoverFiveSeconds) {
  auto b = parse("pipe 1 0 0 60000 r1 1024:0 1:0|2:0|3:7\n", "native");
  ASSERT_TRUE(b.isOk()) << b.status().message();
  // [0,5): 1+2; [7,12): 3 -> steps 0-5 s: 3, 5-10 s: 3 (from 7 s), 10-15 s: 3 (to 12 s).
  EXPECT_EQ(b->runs[0].skyline, (std::vector<double>{3, 3, 3}));
}

// jsonl runs may say how they ended; the default is succeeded, anything but
// succeeded/failed/killed is refused naming the field.
TEST(RunImport, JsonLinesCarryRunStatus) {
  auto b = parse(
      R"({"type":"run","job":"etl","run":"r1","submit_ms":1,"start_ms":1,"end_ms":2,"skyline":[1]})"
      "\n"
      R"({"type":"run","job":"etl","run":"r2","submit_ms":1,"start_ms":1,"end_ms":2,"skyline":[1],"status":"failed"})"
      "\n"
      R"({"type":"run","job":"etl","run":"r3","submit_ms":1,"start_ms":1,"end_ms":2,"skyline":[1],"status":"killed"})"
      "\n",
      "jsonl");
  ASSERT_TRUE(b.isOk()) << b.status().message();
  EXPECT_EQ(b->runs[0].status, store::RunStatus::kSucceeded);
  EXPECT_EQ(b->runs[1].status, store::RunStatus::kFailed);
  EXPECT_EQ(b->runs[2].status, store::RunStatus::kKilled);
  auto bad = parse(
      R"({"type":"run","job":"etl","run":"r1","submit_ms":1,"start_ms":1,"end_ms":2,"skyline":[1],"status":"lost"})"
      "\n",
      "jsonl");
  ASSERT_FALSE(bad.isOk());
  EXPECT_NE(bad.status().message().find("line 1: status: must be"), std::string::npos)
      << bad.status().message();
}

TEST(RunImport, BadLinesAreListedWithNumbersAndNothingIsImported) {
  auto b = parse(
      "pipe1 1 1000 2000 22000 run1 1024:0 1:0\n"
      "pipe1 1 1000 2000\n"
      "pipe1 1 1000 2000 22000 run3 1024:0 x:0\n"
      "pipe1 1 5000 2000 22000 run4 1024:0 1:0\n",
      "native");
  ASSERT_FALSE(b.isOk());
  EXPECT_EQ(b.status().code(), StatusCode::kInvalidArgument);
  const std::string m = b.status().message();
  EXPECT_NE(m.find("3 bad line(s), nothing imported"), std::string::npos) << m;
  EXPECT_NE(m.find("line 2: line: expected 8 space-separated fields"), std::string::npos) << m;
  EXPECT_NE(m.find("line 3: containerSkyline: sample 'x:0'"), std::string::npos) << m;
  EXPECT_NE(m.find("line 4: startTimeMs: is before submitTimeMs"), std::string::npos) << m;
}

TEST(RunImport, JsonLinesCarryRunsAndEvents) {
  auto b = parse(
      R"({"type":"run","job":"etl","run":"r1","user":"alice","submit_ms":1000,"start_ms":1000,"end_ms":61000,"step_ms":30000,"skyline":[2,3],"container":{"memory_mib":2048,"vcores":2}})"
      "\n"
      R"({"type":"event","job":"etl","run":"r1","path":"/out/x","kind":"write","time_ms":60000})"
      "\n",
      "jsonl");
  ASSERT_TRUE(b.isOk()) << b.status().message();
  ASSERT_EQ(b->runs.size(), 1u);
  ASSERT_EQ(b->events.size(), 1u);
  EXPECT_EQ(b->runs[0].user, "alice");
  EXPECT_EQ(b->runs[0].container, Resource(2048, 2));
  EXPECT_EQ(b->runs[0].skyline, (std::vector<double>{2, 3}));
  EXPECT_EQ(b->events[0].kind, store::FileAccess::kWrite);
  EXPECT_EQ(b->events[0].path, "/out/x");
}

TEST(RunImport, JsonLineErrorsNameTheField) {
  auto b = parse(
      R"({"type":"run","job":"etl","run":"r1","submit_ms":1000,"start_ms":500,"end_ms":61000,"skyline":[1]})"
      "\n"
      R"({"type":"event","job":"etl","path":"/x","kind":"append","time_ms":1})"
      "\n"
      R"({"type":"run","job":"etl","run":"r2","submit_ms":1,"start_ms":1,"end_ms":2,"skyline":[-1]})"
      "\n"
      "not json\n"
      R"({"type":"thing","job":"x"})"
      "\n",
      "jsonl");
  ASSERT_FALSE(b.isOk());
  const std::string m = b.status().message();
  EXPECT_NE(m.find("line 1: run.start_ms: is before submit_ms"), std::string::npos) << m;
  EXPECT_NE(m.find("line 2: kind: must be \"read\" or \"write\""), std::string::npos) << m;
  EXPECT_NE(m.find("line 3: run.skyline[0]"), std::string::npos) << m;
  EXPECT_NE(m.find("line 4: line: is not a JSON object"), std::string::npos) << m;
  EXPECT_NE(m.find("line 5: type: must be \"run\" or \"event\""), std::string::npos) << m;
}

TEST(RunImport, UnknownFormatAndEmptyInput) {
  EXPECT_EQ(parse("x", "csv").status().message(), "format: must be native or jsonl, got \"csv\"");
  EXPECT_EQ(parse("# nothing\n\n", "jsonl").status().message(), "input: holds no runs or events");
}

// Fuzz finding (history_native): a native run or sample offset beyond 30 days
// is refused instead of sizing the skyline from it (a 500-year line asked for
// 26 GB). The old parser accepted both lines below.
TEST(RunImport, NativeRunsAndOffsetsBeyondThirtyDaysAreRefused) {
  // 31 days: 535680 steps of 5 s.
  auto longRun = parse("pipe1 1 0 0 2678400000 run1 1024:0 1:0\n", "native");
  ASSERT_FALSE(longRun.isOk());
  EXPECT_NE(longRun.status().message().find("endTimeMs: run longer than 30 days"),
            std::string::npos)
      << longRun.status().message();
  auto farSample = parse("pipe1 1 0 0 5000 run1 1024:0 1:0|2:2678400\n", "native");
  ASSERT_FALSE(farSample.isOk());
  EXPECT_NE(
      farSample.status().message().find("containerSkyline: sample '2:2678400': offset beyond"),
      std::string::npos)
      << farSample.status().message();
  // Exactly 30 days is still a run.
  EXPECT_TRUE(parse("pipe1 1 0 0 2592000000 run1 1024:0 1:0|2:2592000\n", "native").isOk());
}

// Fuzz finding (history_jsonl): integer fields given as numbers outside int64
// (1e31, 2^64-1) or with a fraction are errors naming the field; the old
// parser converted them (undefined behaviour for 1e31, -1 for 2^64-1, 1000
// for 1000.5) and failed later on a different field, or not at all.
TEST(RunImport, JsonIntegersOutOfRangeOrFractionalNameTheField) {
  auto huge =
      parse(R"({"type":"event","job":"j","path":"/p","kind":"read","time_ms":1.7935e31})", "jsonl");
  ASSERT_FALSE(huge.isOk());
  EXPECT_NE(huge.status().message().find("line 1: time_ms: is out of range"), std::string::npos)
      << huge.status().message();
  auto wrapped = parse(
      R"({"type":"run","job":"j","run":"r","submit_ms":0,"start_ms":0,"end_ms":18446744073709551615,"skyline":[1]})",
      "jsonl");
  ASSERT_FALSE(wrapped.isOk());
  EXPECT_NE(wrapped.status().message().find("line 1: end_ms: is out of range"), std::string::npos)
      << wrapped.status().message();
  auto fraction = parse(
      R"({"type":"run","job":"j","run":"r","submit_ms":1000.5,"start_ms":2000,"end_ms":3000,"skyline":[1]})",
      "jsonl");
  ASSERT_FALSE(fraction.isOk());
  EXPECT_NE(fraction.status().message().find("line 1: submit_ms: must be an integer"),
            std::string::npos)
      << fraction.status().message();
}

}  // namespace
}  // namespace morpheus::inference
