// Morpheus §4 statistics and SLO inference on hand-computed cases.
#include "inference/model/slo_inference.h"

#include <gtest/gtest.h>

#include <cmath>

namespace morpheus::inference {
namespace {

constexpr int64_t kMin = 60000, kHour = 3600000, kDay = 86400000;
const int64_t kDay0 = 1'700'006'400'000 - (1'700'006'400'000 % kDay);  // a midnight, UTC

store::RunRecord run(const std::string& job, int i, int64_t submit, int64_t start, int64_t end) {
  store::RunRecord r;
  r.job = JobKey(job);
  r.run = RunId(job + "-" + std::to_string(i));
  r.user = "alice";
  r.submit = fromEpochMs(submit);
  r.start = fromEpochMs(start);
  r.end = fromEpochMs(end);
  r.skyline = {1, 2, 3};
  r.container = Resource(1024, 1);
  return r;
}

store::FileEvent ev(const std::string& job, const std::string& run, const std::string& path,
                    store::FileAccess kind, int64_t t) {
  return {JobKey(job), RunId(run), path, kind, fromEpochMs(t)};
}

TEST(SloStats, MedianPercentileMadCv) {
  EXPECT_DOUBLE_EQ(median({4, 1, 3, 2}), 2.5);
  EXPECT_DOUBLE_EQ(median({5}), 5);
  EXPECT_DOUBLE_EQ(percentile({0, 10}, 0.95), 9.5);
  EXPECT_DOUBLE_EQ(percentile({3, 1, 2}, 0.0), 1);
  EXPECT_DOUBLE_EQ(percentile({3, 1, 2}, 1.0), 3);
  // median 3; |deviations| {2,1,0,1,97} -> median 1.
  EXPECT_DOUBLE_EQ(mad({1, 2, 3, 4, 100}), 1);
  EXPECT_DOUBLE_EQ(cv({1, 2, 3, 4, 100}), 1.0 / 3.0);
  EXPECT_DOUBLE_EQ(cv({7, 7, 7}), 0);
  EXPECT_TRUE(std::isinf(cv({0, 0, 5, -5, 1})));
  EXPECT_DOUBLE_EQ(median({}), 0);
}

// Any divisor of the one-day LCM that is whole minutes snaps, not only a
// list of natural periods; off-kilter gaps snap to nothing.
TEST(SloPeriod, SnapsToDivisorsOfTheLcm) {
  const Millis lcm(kDay), step(kMin);
  EXPECT_EQ(snapPeriod(Millis(kHour + 3 * kMin), 0.1, lcm, step), Millis(kHour));
  EXPECT_EQ(snapPeriod(Millis(kDay - 20 * kMin), 0.1, lcm, step), Millis(kDay));
  EXPECT_EQ(snapPeriod(Millis(14 * kMin), 0.1, lcm, step), Millis(15 * kMin));
  EXPECT_EQ(snapPeriod(Millis(2 * kHour + kMin), 0.1, lcm, step), Millis(2 * kHour));
  EXPECT_EQ(snapPeriod(Millis(3 * kHour - 2 * kMin), 0.1, lcm, step), Millis(3 * kHour));
  EXPECT_EQ(snapPeriod(Millis(8 * kHour), 0.1, lcm, step), Millis(8 * kHour));
  EXPECT_EQ(snapPeriod(Millis(20 * kMin + 20000), 0.1, lcm, step), Millis(20 * kMin));
  EXPECT_EQ(snapPeriod(Millis(kHour + 12 * kMin), 0.1, lcm, step), Millis(72 * kMin));
  EXPECT_EQ(snapPeriod(Millis(7 * kHour), 0.1, lcm, step), std::nullopt);  // 6 h, 8 h too far
  EXPECT_EQ(snapPeriod(Millis(7 * kDay), 0.1, lcm, step), std::nullopt);   // beyond the LCM
}

// Periods inferred from submissions: 2 h, 3 h and 20 min divide the day and
// are periodic; 7 h, weekly and monthly (30/31-day gaps) are not periodic in
// the LCM and get one-off reservations per instance, with their own period.
TEST(SloPeriod, DivisorsArePeriodicOthersAreOneOffPerInstance) {
  struct Case {
    int64_t gap;
    int64_t want;
    bool divides;
  };
  const Case cases[] = {{2 * kHour, 2 * kHour, true},
                        {3 * kHour, 3 * kHour, true},
                        {20 * kMin, 20 * kMin, true},
                        {7 * kHour, 7 * kHour, false},
                        {7 * kDay, 7 * kDay, false}};
  for (const Case& c : cases) {
    std::vector<store::RunRecord> runs;
    for (int i = 0; i < 6; i++) {
      int64_t t = kDay0 + i * c.gap + (i % 2) * 20000;  // 20 s of jitter
      runs.push_back(run("j", i, t, t, t + kMin));
    }
    double cvo = 0;
    std::string why;
    auto per = inferPeriod(runs, SloParams{}, &cvo, &why);
    ASSERT_TRUE(per.has_value()) << c.gap << ": " << why;
    EXPECT_EQ(per->period, Millis(c.want)) << c.gap;
    EXPECT_EQ(per->divides_lcm, c.divides) << c.gap;
  }
  std::vector<store::RunRecord> monthly;
  int64_t t = kDay0;
  for (int64_t days : {31, 30, 31, 30, 31, 31}) {
    monthly.push_back(run("m", static_cast<int>(monthly.size()), t, t, t + kHour));
    t += days * kDay;
  }
  double cvo = 0;
  std::string why;
  auto per = inferPeriod(monthly, SloParams{}, &cvo, &why);
  ASSERT_TRUE(per.has_value()) << why;
  EXPECT_FALSE(per->divides_lcm);
  EXPECT_EQ(per->period, Millis(31 * kDay));
}

// A true period near a divisor of the day (5 h by 4.8 h, 11 h by 12 h, 25 h
// by 1 day, 50 min by 48 min) is within the snapping tolerance, but the
// submissions drift from the divisor's schedule instance after instance: the
// job keeps its own period, with per-instance reservations. A true divisor
// with jitter and a missing run does not drift and still snaps.
TEST(SloPeriod, NearDivisorPeriodsThatDriftAreNotSnapped) {
  for (int64_t gap : {5 * kHour, 11 * kHour, 25 * kHour, 50 * kMin}) {
    std::vector<store::RunRecord> runs;
    for (int i = 0; i < 12; i++) {
      const int64_t t = kDay0 + i * gap + (i % 2) * 20000;  // 20 s of jitter
      runs.push_back(run("j", i, t, t, t + kMin));
    }
    double cvo = 0;
    std::string why;
    auto per = inferPeriod(runs, SloParams{}, &cvo, &why);
    ASSERT_TRUE(per.has_value()) << gap << ": " << why;
    EXPECT_EQ(per->period, Millis(gap)) << gap;
    EXPECT_FALSE(per->divides_lcm) << gap;
  }
  std::vector<store::RunRecord> five;
  for (int i = 0; i < 12; i++) {
    const int64_t t = kDay0 + i * 5 * kHour;
    five.push_back(run("j", i, t, t, t + kMin));
  }
  EXPECT_EQ(phaseDrift(five, Millis(288 * kMin)), Millis(11 * 12 * kMin));
  EXPECT_EQ(phaseDrift(five, Millis(5 * kHour)), Millis(0));

  std::vector<store::RunRecord> daily;
  for (int i = 0; i < 30; i++) {
    if (i == 9) continue;
    const int64_t t = kDay0 + i * kDay + 2 * kHour + ((i * 7) % 11 - 5) * kMin;  // +-5 min
    daily.push_back(run("d", i, t, t, t + kHour));
  }
  EXPECT_LT(phaseDrift(daily, Millis(kDay)), Millis(10 * kMin));
  double cvo = 0;
  std::string why;
  auto per = inferPeriod(daily, SloParams{}, &cvo, &why);
  ASSERT_TRUE(per.has_value()) << why;
  EXPECT_EQ(per->period, Millis(kDay));
  EXPECT_TRUE(per->divides_lcm);
}

TEST(SloPeriod, HourlyWithJitterAndAMissingRun) {
  std::vector<store::RunRecord> runs;
  for (int i = 0; i < 48; i++) {
    if (i == 20) continue;  // one missing run doubles one gap; MAD ignores it
    int64_t t = kDay0 + i * kHour + 5 * kMin + (i % 3) * 30000;
    runs.push_back(run("j", i, t, t, t + 10 * kMin));
  }
  SloParams p;
  double c = -1;
  std::string why;
  auto per = inferPeriod(runs, p, &c, &why);
  ASSERT_TRUE(per.has_value()) << why;
  EXPECT_EQ(per->period, Millis(kHour));
  EXPECT_TRUE(per->divides_lcm);
  EXPECT_LT(c, 0.05);
}

TEST(SloPeriod, DispersedGapsAreNotPeriodicAndSayWhy) {
  std::vector<store::RunRecord> runs;
  int64_t t = kDay0;
  int64_t gaps[] = {10, 70, 25, 200, 40, 90, 15, 130};
  for (int i = 0; i < 8; i++) {
    t += gaps[i] * kMin;
    runs.push_back(run("j", i, t, t, t + kMin));
  }
  double c = 0;
  std::string why;
  EXPECT_FALSE(inferPeriod(runs, SloParams{}, &c, &why).has_value());
  EXPECT_NE(why.find("not periodic"), std::string::npos) << why;
  EXPECT_GT(c, 0.1);
}

TEST(SloPeriod, TooFewRunsAndWeeklyPeriods) {
  SloParams p;
  p.min_runs = 3;
  double c = 0;
  std::string why;
  std::vector<store::RunRecord> two = {run("j", 0, kDay0, kDay0, kDay0 + 1),
                                       run("j", 1, kDay0 + kDay, kDay0 + kDay, kDay0 + kDay + 1)};
  EXPECT_FALSE(inferPeriod(two, p, &c, &why).has_value());
  EXPECT_EQ(why, "needs at least 3 runs, has 2");
  std::vector<store::RunRecord> weekly;
  for (int i = 0; i < 5; i++)
    weekly.push_back(
        run("j", i, kDay0 + i * 7 * kDay, kDay0 + i * 7 * kDay, kDay0 + i * 7 * kDay + 1));
  auto per = inferPeriod(weekly, p, &c, &why);
  ASSERT_TRUE(per.has_value()) << why;  // not rejected: one-off reservations per instance
  EXPECT_EQ(per->period, Millis(7 * kDay));
  EXPECT_FALSE(per->divides_lcm);
}

// A daily ETL job: its input is written by "ingest" at 01:30 + jitter, it
// runs 02:00..03:00, and "report" reads its output at 05:00 + jitter.
JobHistory dailyEtl(std::vector<store::FileEvent>* all, int days, int64_t read_jitter_min) {
  JobHistory h;
  h.job = JobKey("etl");
  for (int i = 0; i < days; i++) {
    int64_t base = kDay0 + i * kDay;
    std::string rid = "etl-" + std::to_string(i);
    std::string in = "/in/" + std::to_string(i), out = "/out/" + std::to_string(i);
    int64_t avail = base + 90 * kMin + (i % 5) * kMin;  // 01:30 .. 01:34
    int64_t start = base + 2 * kHour;
    int64_t end = base + 3 * kHour;
    h.runs.push_back(run("etl", i, start - 30000, start, end));
    auto e1 = ev("etl", rid, in, store::FileAccess::kRead, start + kMin);
    auto e2 = ev("etl", rid, out, store::FileAccess::kWrite, end - kMin);
    h.events.push_back(e1);
    h.events.push_back(e2);
    all->push_back(e1);
    all->push_back(e2);
    all->push_back(
        ev("ingest", "ingest-" + std::to_string(i), in, store::FileAccess::kWrite, avail));
    all->push_back(ev("report", "report-" + std::to_string(i), out, store::FileAccess::kRead,
                      base + 5 * kHour + (i % 2) * read_jitter_min * kMin));
  }
  return h;
}

// Submitted at 00:30, before its input (01:30..01:34): the run could start
// only once the input was there, so a = p95 of T_inAvail = 01:34.
TEST(SloDeadline, StartIsTheInputWhenTheJobIsSubmittedBeforeIt) {
  std::vector<store::FileEvent> all;
  JobHistory h = dailyEtl(&all, 20, 2);
  for (auto& r : h.runs) r.submit = r.start - Millis(90 * kMin);
  auto v = inferSlos({h}, all, SloParams{});
  ASSERT_TRUE(v[0].slo.has_value()) << v[0].reason;
  EXPECT_EQ(v[0].slo->start_offset, Millis(94 * kMin));
}

TEST(SloDeadline, RecoversStartAndDeadlineOfADailyJob) {
  std::vector<store::FileEvent> all;
  JobHistory h = dailyEtl(&all, 20, 2);
  auto v = inferSlos({h}, all, SloParams{});
  ASSERT_EQ(v.size(), 1u);
  ASSERT_TRUE(v[0].slo.has_value()) << v[0].reason;
  const auto& s = *v[0].slo;
  EXPECT_EQ(s.period, Millis(kDay));
  // a = p95 of max(submit 01:59:30, input 01:30..01:34) = 01:59:30: the
  // earliest a run can start is its submission, after the input is there.
  EXPECT_EQ(s.start_offset, Millis(2 * kHour - 30000));
  // d = p50 of {05:00, 05:02} alternating = 05:01.
  EXPECT_EQ(s.deadline_offset, Millis(5 * kHour + kMin));
  // slack = (05:01 - 03:00) / 1 h ~ 2.
  EXPECT_NEAR(s.median_slack, 2.0, 0.05);
  EXPECT_FALSE(s.problematic);
}

// With owners, another owner's job's reads and writes say nothing about a
// job: bob's reads of etl's output an hour after each run and his writes of
// its input just before each start move neither d nor a; the same events as
// alice's own (or of a job without an owner) do.
TEST(SloDeadline, AnotherOwnersProvenanceDoesNotMoveTheWindow) {
  std::vector<store::FileEvent> all;
  JobHistory h = dailyEtl(&all, 20, 2);
  for (int i = 0; i < 20; i++) {
    const int64_t base = kDay0 + i * kDay;
    all.push_back(ev("bob-report", "b-" + std::to_string(i), "/out/" + std::to_string(i),
                     store::FileAccess::kRead, base + 3 * kHour + 2 * kMin));
    all.push_back(ev("bob-report", "b-" + std::to_string(i), "/in/" + std::to_string(i),
                     store::FileAccess::kWrite, base + 2 * kHour - 10000));
  }
  JobOwners owners = {{JobKey("etl"), "alice"}, {JobKey("bob-report"), "bob"}};
  auto kept = inferSlos({h}, all, SloParams{}, {}, &owners);
  ASSERT_TRUE(kept[0].slo.has_value()) << kept[0].reason;
  EXPECT_EQ(kept[0].slo->start_offset, Millis(2 * kHour - 30000));
  EXPECT_EQ(kept[0].slo->deadline_offset, Millis(5 * kHour + kMin));

  owners[JobKey("bob-report")] = "alice";
  auto moved = inferSlos({h}, all, SloParams{}, {}, &owners);
  ASSERT_TRUE(moved[0].slo.has_value()) << moved[0].reason;
  EXPECT_EQ(moved[0].slo->deadline_offset, Millis(3 * kHour + 2 * kMin));
  EXPECT_EQ(moved[0].slo->start_offset, Millis(2 * kHour - 10000));
}

// Morpheus §6/§7: a job whose start lags its input availability by widely
// varying amounts (high CV of T_start - T_inAvail) is flagged problematic, so
// the planner applies the alignment penalty to it (the flag travels in the
// recurring reservation the service submits: rm_client_test).
TEST(SloDeadline, ErraticStartIsFlaggedProblematic) {
  std::vector<store::FileEvent> all;
  JobHistory h = dailyEtl(&all, 20, 2);
  // Same input times (01:30..01:34), but the start lags them by ~26-30 min or ~1-5 min.
  for (size_t i = 0; i < h.runs.size(); i++) {
    Millis shift = i % 2 == 0 ? Millis(-25 * kMin) : Millis(0);
    h.runs[i].start += shift;
    h.runs[i].submit += shift;
    h.runs[i].end += shift;
  }
  auto v = inferSlos({h}, all, SloParams{});
  ASSERT_TRUE(v[0].slo.has_value()) << v[0].reason;
  EXPECT_TRUE(v[0].slo->problematic);
}

TEST(SloDeadline, DispersedReadsAreNotActionable) {
  std::vector<store::FileEvent> all;
  JobHistory h = dailyEtl(&all, 20, 180);  // reads at 05:00 or 08:00
  auto v = inferSlos({h}, all, SloParams{});
  ASSERT_FALSE(v[0].slo.has_value());
  EXPECT_NE(v[0].reason.find("T_outRead too dispersed"), std::string::npos) << v[0].reason;
}

TEST(SloDeadline, NoConsumerMeansNoDeadline) {
  std::vector<store::FileEvent> all;
  JobHistory h = dailyEtl(&all, 10, 0);
  std::erase_if(all, [](const auto& e) { return e.job.value() == "report"; });
  auto v = inferSlos({h}, all, SloParams{});
  ASSERT_FALSE(v[0].slo.has_value());
  EXPECT_NE(v[0].reason.find("no other job reads its output"), std::string::npos) << v[0].reason;
}

TEST(SloDeadline, NegativeSlackFailsTheThreshold) {
  std::vector<store::FileEvent> all;
  JobHistory h = dailyEtl(&all, 10, 0);
  for (auto& e : all) {
    if (e.job.value() == "report") e.time -= Millis(kHour + 30 * kMin);  // read at 03:30: slack 0.5
  }
  SloParams p;
  p.min_slack = 1.0;  // demand a read at least one run-time after the end
  auto v = inferSlos({h}, all, p);
  ASSERT_FALSE(v[0].slo.has_value());
  EXPECT_NE(v[0].reason.find("median slack"), std::string::npos) << v[0].reason;
}

TEST(SloDeadline, LongerPeriodConsumerForcesTheDeadlineToThePeriodEnd) {
  // Hourly producer at :05..:20 writing one file per hour; a daily consumer
  // (itself periodic) reads all of yesterday's files at 00:30.
  std::vector<store::FileEvent> all;
  JobHistory prod;
  prod.job = JobKey("hourly");
  JobHistory cons;
  cons.job = JobKey("daily");
  for (int d = 0; d < 5; d++) {
    int64_t day = kDay0 + d * kDay;
    for (int h = 0; h < 24; h++) {
      int i = d * 24 + h;
      int64_t base = day + h * kHour;
      std::string rid = "hourly-" + std::to_string(i), out = "/h/" + std::to_string(i);
      prod.runs.push_back(run("hourly", i, base + 5 * kMin, base + 5 * kMin, base + 20 * kMin));
      auto w = ev("hourly", rid, out, store::FileAccess::kWrite, base + 19 * kMin);
      prod.events.push_back(w);
      all.push_back(w);
      auto r = ev("daily", "daily-" + std::to_string(d), out, store::FileAccess::kRead,
                  day + kDay + 30 * kMin);
      cons.events.push_back(r);
      all.push_back(r);
    }
    cons.runs.push_back(
        run("daily", d, day + kDay + 25 * kMin, day + kDay + 25 * kMin, day + kDay + 50 * kMin));
  }
  auto v = inferSlos({prod, cons}, all, SloParams{});
  ASSERT_TRUE(v[0].slo.has_value()) << v[0].reason;
  EXPECT_EQ(v[0].slo->period, Millis(kHour));
  EXPECT_EQ(v[0].slo->deadline_offset, Millis(kHour));
  // Reads nothing others write: a = its submission, 5 min past the hour.
  EXPECT_EQ(v[0].slo->start_offset, Millis(5 * kMin));
}

// A daily job running 02:00..end whose consumer "report" is a scheduled job:
// it starts at 05:00 every day and reads the output then, or as soon as it is
// written when the job is late. The job is late (ends 06:00..08:20) in 12 of
// 20 runs, so the reads follow its late ends.
JobHistory lateProducer(std::vector<store::FileEvent>* all,
                        std::vector<store::RunRecord>* readers) {
  JobHistory h;
  h.job = JobKey("etl");
  for (int i = 0; i < 20; i++) {
    const int64_t base = kDay0 + i * kDay;
    const std::string rid = "etl-" + std::to_string(i), out = "/out/" + std::to_string(i);
    const int64_t start = base + 2 * kHour;
    const int64_t end = i % 5 < 3 ? base + 6 * kHour + i * 7 * kMin : base + 4 * kHour;
    h.runs.push_back(run("etl", i, start, start, end));
    auto w = ev("etl", rid, out, store::FileAccess::kWrite, end);
    h.events.push_back(w);
    all->push_back(w);
    const int64_t sched = base + 5 * kHour;
    readers->push_back(run("report", i, sched, sched, std::max(sched, end) + kMin));
    all->push_back(ev("report", "report-" + std::to_string(i), out, store::FileAccess::kRead,
                      std::max(sched, end)));
  }
  return h;
}

// §4 T_need: with the scheduled consumer's run records the late job's
// deadline is the consumer's start (05:00) although most reads came later;
// without them (reads only) its reads are too dispersed for a deadline.
TEST(SloDeadline, ScheduledConsumerGivesALateProducerItsTrueDeadline) {
  std::vector<store::FileEvent> all;
  std::vector<store::RunRecord> readers;
  JobHistory h = lateProducer(&all, &readers);
  auto without = inferSlos({h}, all, SloParams{});
  ASSERT_FALSE(without[0].slo.has_value());
  EXPECT_NE(without[0].reason.find("T_outRead too dispersed"), std::string::npos)
      << without[0].reason;
  auto with = inferSlos({h}, all, SloParams{}, readers);
  ASSERT_TRUE(with[0].slo.has_value()) << with[0].reason;
  EXPECT_EQ(with[0].slo->deadline_offset, Millis(5 * kHour));
  EXPECT_DOUBLE_EQ(with[0].slo->outread_cv, 0);
}

// morpheus-inference passes every stored job: a consumer that is one of the
// jobs (its runs in its JobHistory) gives T_need the same way.
TEST(SloDeadline, ConsumerAmongTheJobsGivesTNeedToo) {
  std::vector<store::FileEvent> all;
  std::vector<store::RunRecord> readers;
  JobHistory h = lateProducer(&all, &readers);
  JobHistory consumer;
  consumer.job = JobKey("report");
  consumer.runs = readers;
  auto v = inferSlos({h, consumer}, all, SloParams{});
  ASSERT_TRUE(v[0].slo.has_value()) << v[0].reason;
  EXPECT_EQ(v[0].slo->deadline_offset, Millis(5 * kHour));
}

// A reader run whose record starts after its read (clock skew, or a record
// of another run under the same id) is ignored: T_need is the read.
TEST(SloDeadline, ReaderRunStartingAfterTheReadLeavesTheRead) {
  std::vector<store::FileEvent> all;
  JobHistory h = dailyEtl(&all, 10, 0);
  std::vector<store::RunRecord> readers;
  for (int i = 0; i < 10; i++) {
    const int64_t late = kDay0 + i * kDay + 7 * kHour;
    readers.push_back(run("report", i, late, late, late + kMin));
  }
  auto v = inferSlos({h}, all, SloParams{}, readers);
  ASSERT_TRUE(v[0].slo.has_value()) << v[0].reason;
  EXPECT_EQ(v[0].slo->deadline_offset, Millis(5 * kHour));
}

// A reader whose run started before the producing run was submitted (a
// long-running reader) says nothing about this instance: T_need is the read.
TEST(SloDeadline, ReaderRunningSinceBeforeTheProducerLeavesTheRead) {
  std::vector<store::FileEvent> all;
  JobHistory h = dailyEtl(&all, 10, 0);
  std::vector<store::RunRecord> readers;
  for (int i = 0; i < 10; i++) {
    const int64_t early = kDay0 + i * kDay + kHour;  // 01:00, the producer submits ~02:00
    readers.push_back(run("report", i, early, early, early + 5 * kHour));
  }
  auto v = inferSlos({h}, all, SloParams{}, readers);
  ASSERT_TRUE(v[0].slo.has_value()) << v[0].reason;
  EXPECT_EQ(v[0].slo->deadline_offset, Millis(5 * kHour));
}

}  // namespace
}  // namespace morpheus::inference
