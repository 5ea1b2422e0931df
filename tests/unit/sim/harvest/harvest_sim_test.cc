// The harvesting simulator: generated primary series carry the
// three patterns the classifier recovers, real series parse with the
// documented format, and small deterministic runs show kills only where the
// primary grows and replicas diversified by Algorithm 2.
#include "sim/harvest/harvest_sim.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <numbers>

#include "harvest/harvest_selection.h"

namespace morpheus::sim {
namespace {

using namespace std::chrono_literals;

// Each generated tenant's two history days is labelled with its generated pattern.
TEST(HarvestSimTest, GeneratedPatternsAreRecoveredByTheClassifier) {
  PrimaryGenOptions g;
  g.tenants = 12;
  g.seed = 7;
  auto traces = generatePrimaryTraces(g).value();
  ASSERT_EQ(traces.size(), 12u);
  int right = 0;
  for (const auto& t : traces) {
    std::vector<double> history(t.util.begin(), t.util.begin() + 2 * 288);
    auto p = rm::profileTenant({t.tenant, history}, rm::ClassifierOptions{});
    ASSERT_TRUE(p.isOk());
    right += p->pattern == t.truth ? 1 : 0;
  }
  EXPECT_GE(right, 10) << "seed 7";
  EXPECT_EQ(generatePrimaryTraces(g)->at(3).util, traces[3].util) << "same seed, same series";
}

// The mix sets each pattern's share in round-robin order; bad shares are refused.
TEST(HarvestSimTest, MixSetsThePatternShares) {
  PrimaryGenOptions g;
  g.tenants = 8;
  g.mix = {2, 1, 1};
  auto traces = generatePrimaryTraces(g);
  ASSERT_TRUE(traces.isOk());
  std::vector<rm::UtilPattern> got;
  for (const auto& t : *traces) got.push_back(t.truth);
  using P = rm::UtilPattern;
  EXPECT_EQ(got, (std::vector<P>{P::kPeriodic, P::kConstant, P::kUnpredictable, P::kPeriodic,
                                 P::kPeriodic, P::kConstant, P::kUnpredictable, P::kPeriodic}));
  g.mix = {1, 1, 1};
  auto equal = generatePrimaryTraces(g);
  ASSERT_TRUE(equal.isOk());
  for (size_t t = 0; t < equal->size(); t++)
    EXPECT_EQ(equal->at(t).truth, static_cast<P>(t % 3)) << "tenant " << t;
  g.mix = {0, 0, 0};
  auto bad = generatePrimaryTraces(g);
  ASSERT_FALSE(bad.isOk());
  EXPECT_NE(bad.status().message().find("mix"), std::string::npos);
  g.mix = {1, -1, 1};
  EXPECT_FALSE(generatePrimaryTraces(g).isOk());
}

// Class shares from the CLI form "P,C,U"; bad specs are refused naming "mix"
// and the spec, and the generator refuses shares no spec could give.
TEST(HarvestSimTest, ParsesClassSharesAndNamesBadOnes) {
  auto m = parseClassMix("2,1,1");
  ASSERT_TRUE(m.isOk()) << m.status().message();
  EXPECT_EQ(*m, (std::array<double, 3>{2, 1, 1}));
  auto spaced = parseClassMix(" 0.5, 0.3 ,0.2");
  ASSERT_TRUE(spaced.isOk()) << spaced.status().message();
  EXPECT_EQ(*spaced, (std::array<double, 3>{0.5, 0.3, 0.2}));
  auto zero_one = parseClassMix("0,0,1");
  ASSERT_TRUE(zero_one.isOk()) << "one class alone is a valid mix";
  for (const std::string bad :
       {"", "1,1", "1,1,1,1", "1,,1", "a,1,1", "1,1,1x", "-1,1,1", "0,0,0", "nan,1,1", "1,inf,1"}) {
    auto r = parseClassMix(bad);
    ASSERT_FALSE(r.isOk()) << "'" << bad << "'";
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument) << bad;
    EXPECT_EQ(r.status().message().rfind("mix: '" + bad + "'", 0), 0u) << r.status().message();
  }
  PrimaryGenOptions g;
  g.mix = {1, std::numeric_limits<double>::quiet_NaN(), 1};
  auto nan = generatePrimaryTraces(g);
  ASSERT_FALSE(nan.isOk()) << "a NaN share passes 'x < 0'";
  EXPECT_NE(nan.status().message().find("mix"), std::string::npos);
  g.mix = {1, std::numeric_limits<double>::infinity(), 1};
  EXPECT_FALSE(generatePrimaryTraces(g).isOk());
}

// Ranking weights from the CLI form; bad specs name "weights" and change nothing.
TEST(HarvestSimTest, ParsesRankingWeights) {
  rm::SelectionOptions o;
  ASSERT_TRUE(parseRankingWeights("short:2,3,1", o).isOk());
  using P = rm::UtilPattern;
  EXPECT_EQ(o.weights[rm::JobLength::kShort],
            (std::map<P, double>{{P::kPeriodic, 2}, {P::kConstant, 3}, {P::kUnpredictable, 1}}));
  const auto before = o.weights;
  for (const char* bad :
       {"short:1,2", "tiny:1,2,3", "short:1,x,3", "short:1,2,3,4", "long:1,-1,2", "medium"}) {
    Status st = parseRankingWeights(bad, o);
    ASSERT_FALSE(st.isOk()) << bad;
    EXPECT_EQ(st.message().rfind("weights: ", 0), 0u) << st.message();
  }
  EXPECT_EQ(o.weights, before);
}

// The real-series format: lines of fractions, equal lengths, errors name the line.
TEST(HarvestSimTest, ParsesRealSeriesAndNamesBadLines) {
  auto ok = parsePrimaryTraces("# tenant samples\nweb 0.1 0.2 0.3\ndb 0.5 0.5 0.5\n");
  ASSERT_TRUE(ok.isOk());
  EXPECT_EQ(ok->size(), 2u);
  auto bad = parsePrimaryTraces("web 0.1 0.2\ndb 0.5 1.5\n");
  ASSERT_FALSE(bad.isOk());
  EXPECT_NE(bad.status().message().find("line 2"), std::string::npos);
  EXPECT_FALSE(parsePrimaryTraces("web 0.1\ndb 0.5 0.5\n").isOk());
  auto crlf = parsePrimaryTraces("web 0.1 0.2\r\ndb 0.5 0.5\r\n");
  ASSERT_TRUE(crlf.isOk()) << crlf.status().message();
  EXPECT_EQ(crlf->at(1).util, (std::vector<double>{0.5, 0.5}));
  auto dup = parsePrimaryTraces("web 0.1 0.2\n# again\nweb 0.3 0.3\n");
  ASSERT_FALSE(dup.isOk());
  EXPECT_NE(dup.status().message().find("line 3"), std::string::npos);
  EXPECT_NE(dup.status().message().find("'web' appears twice"), std::string::npos);
}

// Two days: 0.1 all day but `high` from 12:00 to 13:00 (5-min steps).
PrimaryTrace middaySpike(const std::string& name, double high) {
  PrimaryTrace t;
  t.tenant = name;
  t.util.assign(2 * 288, 0.1);
  for (int d = 0; d < 2; d++)
    for (int i = 144; i < 156; i++) t.util[d * 288 + i] = high;
  return t;
}

// All SWIM jobs kept, 8-core servers, 1-minute ticks.
HarvestSimOptions minuteTicks(int servers_per_tenant) {
  HarvestSimOptions o;
  o.servers_per_tenant = servers_per_tenant;
  o.cores = 8;
  o.job_sample = 1.0;
  o.tick = std::chrono::seconds(60);
  return o;
}

// `n` jobs of `tasks` map tasks of 3 h (long), submitted at 10:00 + 5 min * k.
std::vector<SwimJob> longJobs(int n, int64_t tasks) {
  std::vector<SwimJob> jobs;
  for (int k = 0; k < n; k++) {
    SwimJob j;
    j.name = "long" + std::to_string(k);
    j.submit = Millis((10 * 60 + 5 * k) * 60 * 1000);
    j.map_tasks = tasks;
    j.map_task_duration = 3h;
    jobs.push_back(j);
  }
  return jobs;
}

// Algorithm 1 in the simulator: long jobs go to the flat tenant (the spiky
// one's peak leaves no headroom) and are never killed; primary-aware
// placement puts some on the spiky tenant, which kills them at noon (all kills on its pattern).
TEST(HarvestSimTest, HistoryKeepsLongJobsOffTheSpikyTenant) {
  std::vector<PrimaryTrace> traces = {middaySpike("spiky", 0.95), {}};
  traces[0].truth = rm::UtilPattern::kUnpredictable;
  traces[1].tenant = "flat";
  traces[1].truth = rm::UtilPattern::kConstant;
  traces[1].util.assign(2 * 288, 0.5);
  HarvestSimOptions o = minuteTicks(2);
  auto jobs = longJobs(3, 2);
  auto history = runHarvestSim(traces, jobs, PlacementStrategy::kHistory, o);
  auto aware = runHarvestSim(traces, jobs, PlacementStrategy::kPrimaryAware, o);
  ASSERT_TRUE(history.isOk()) << history.status().message();
  ASSERT_TRUE(aware.isOk());
  EXPECT_EQ(history->jobs_by_length[static_cast<size_t>(rm::JobLength::kLong)], 3);
  EXPECT_EQ(history->task_kills, 0);
  EXPECT_EQ(history->jobs_without_class, 0);
  EXPECT_GT(aware->task_kills, 0) << "seed 1";
  EXPECT_EQ(aware->kills_by_pattern[static_cast<size_t>(rm::UtilPattern::kUnpredictable)],
            aware->task_kills);
  EXPECT_GT(aware->lost_core_s, 0);
  EXPECT_LT(history->mean_jct_s, aware->mean_jct_s);
  EXPECT_EQ(aware->jobs_finished, 3) << "killed tasks rerun";
}

// A long job arriving while the flat tenant's headroom is taken (3 slots,
// all held by an earlier 1-hour job) fits no class: run unconstrained at
// once by the ranked fallback, its only room is on the spiky tenant, which
// kills it at noon; held (no_class_wait), it waits until 11:00, then runs
// on the flat tenant unharmed. The hold fallback, run at once, keeps its
// tasks off the spiky tenant too: its history's rise (0.85 within a step)
// leaves them no predicted core.
TEST(HarvestSimTest, HoldingAJobNoClassFitsAvoidsTheSpikyTenant) {
  std::vector<PrimaryTrace> traces = {middaySpike("spiky", 0.95), {}};
  traces[1].tenant = "flat";
  traces[1].util.assign(2 * 288, 0.5);
  std::vector<SwimJob> jobs = longJobs(1, 3);
  jobs[0].map_task_duration = 1h;
  jobs.push_back(longJobs(1, 2)[0]);
  jobs[1].name = "late";
  jobs[1].submit = Millis((10 * 60 + 30) * 60 * 1000);
  HarvestSimOptions o = minuteTicks(1);
  o.history_fallback = HistoryFallback::kHold;
  auto hold = runHarvestSim(traces, jobs, PlacementStrategy::kHistory, o);
  o.history_fallback = HistoryFallback::kRanked;
  auto at_once = runHarvestSim(traces, jobs, PlacementStrategy::kHistory, o);
  o.no_class_wait = 1h;
  auto held = runHarvestSim(traces, jobs, PlacementStrategy::kHistory, o);
  ASSERT_TRUE(at_once.isOk()) << at_once.status().message();
  ASSERT_TRUE(held.isOk());
  EXPECT_EQ(at_once->jobs_without_class, 1);
  EXPECT_EQ(at_once->task_kills, 2);
  ASSERT_TRUE(hold.isOk());
  EXPECT_EQ(hold->jobs_without_class, 1);
  EXPECT_EQ(hold->task_kills, 0) << "the spiky tenant's history predicts its noon peak";
  EXPECT_EQ(held->jobs_without_class, 0);
  EXPECT_EQ(held->task_kills, 0);
  EXPECT_EQ(held->jobs_finished, 2);
  EXPECT_EQ(held->tasks_run, 5);
  o.no_class_wait = -1s;
  auto bad = runHarvestSim(traces, jobs, PlacementStrategy::kHistory, o);
  ASSERT_FALSE(bad.isOk());
  EXPECT_NE(bad.status().message().find("no_class_wait"), std::string::npos);
}

// A long job of 3 tasks fits no class: the flat tenant (0.5, once 0.625 in
// its history) has 8 - 5 - 1 = 2 cores under its peak, the spiky one none.
// Falling back to any server with a core now, tasks land on the spiky
// tenant (6 cores free at 10:00) and die at its noon peak. Falling back in
// Algorithm 1's ranking (long jobs: constant first), then the most room
// under the length type's headroom (flat: 2, 1, then 0 cores left under its
// peak; spiky: -0.6), all three run on the flat one, which has 3 cores now
// and keeps them. With equal weights the headroom alone picks the flat
// tenant; with weights that rank the spiky tenant's class first, the
// ranking wins and the tasks die at noon.
TEST(HarvestSimTest, HistoryFallsBackInAlgorithm1sRankingThenByHeadroom) {
  std::vector<PrimaryTrace> traces = {middaySpike("spiky", 0.95), {}};
  traces[1].tenant = "flat";
  traces[1].util.assign(2 * 288, 0.5);
  traces[1].util[100] = 0.625;  // history (day 0) only
  HarvestSimOptions o = minuteTicks(1);
  auto jobs = longJobs(1, 3);
  o.history_fallback = HistoryFallback::kAnyServer;
  auto any = runHarvestSim(traces, jobs, PlacementStrategy::kHistory, o);
  o.history_fallback = HistoryFallback::kRanked;
  auto ranked = runHarvestSim(traces, jobs, PlacementStrategy::kHistory, o);
  ASSERT_TRUE(any.isOk()) << any.status().message();
  ASSERT_TRUE(ranked.isOk());
  EXPECT_EQ(ranked->jobs_without_class, 1);
  EXPECT_EQ(ranked->tasks_by_placement[2], 3);
  EXPECT_EQ(ranked->task_kills, 0);
  EXPECT_EQ(ranked->tasks_run, 3);
  EXPECT_GT(any->task_kills, 0) << "seed 1";
  EXPECT_LT(ranked->mean_jct_s, any->mean_jct_s);
  o.selection.weights[rm::JobLength::kLong] = {{rm::UtilPattern::kPeriodic, 1},
                                               {rm::UtilPattern::kConstant, 1},
                                               {rm::UtilPattern::kUnpredictable, 1}};
  for (uint64_t seed : {1, 2, 3}) {
    o.seed = seed;
    auto equal = runHarvestSim(traces, jobs, PlacementStrategy::kHistory, o);
    ASSERT_TRUE(equal.isOk());
    EXPECT_EQ(equal->task_kills, 0) << "seed " << seed;
  }
  o.selection.weights[rm::JobLength::kLong] = {{rm::UtilPattern::kPeriodic, 3},
                                               {rm::UtilPattern::kConstant, 1},
                                               {rm::UtilPattern::kUnpredictable, 3}};
  auto spiky_first = runHarvestSim(traces, jobs, PlacementStrategy::kHistory, o);
  ASSERT_TRUE(spiky_first.isOk());
  EXPECT_GT(spiky_first->task_kills, 0);
  EXPECT_EQ(historyFallbackName(*parseHistoryFallback("any")), std::string("any"));
  EXPECT_EQ(historyFallbackName(*parseHistoryFallback("ranked")), std::string("ranked"));
  auto bad = parseHistoryFallback("random");
  ASSERT_FALSE(bad.isOk());
  EXPECT_NE(bad.status().message().find("history-fallback"), std::string::npos);
}

// Algorithm 1 in the simulator counts a class's room in whole cores per
// server, as its tasks are then placed: the "tight" tenant (0.5, once 0.85
// in its history) leaves 8 x 0.15 - 1 = 0.2 of a core under its peak on
// each of its 10 servers, none for a task, though pooled the class would
// count floor(0.15 x 80) - 10 = 2 slots and take some of six 2-task long
// jobs, whose tasks then fall outside their class. Counted per server,
// every job goes to the flat tenant (3 cores under its peak per server).
TEST(HarvestSimTest, HistoryCountsClassRoomInWholeCoresPerServer) {
  std::vector<PrimaryTrace> traces(2);
  traces[0].tenant = "tight";
  traces[0].util.assign(2 * 288, 0.5);
  traces[0].util[100] = 0.85;  // history (day 0) only
  traces[1].tenant = "flat";
  traces[1].util.assign(2 * 288, 0.5);
  HarvestSimOptions o = minuteTicks(10);
  auto r = runHarvestSim(traces, longJobs(6, 2), PlacementStrategy::kHistory, o);
  ASSERT_TRUE(r.isOk()) << r.status().message();
  EXPECT_EQ(r->jobs_without_class, 0);
  EXPECT_EQ(r->tasks_outside_class, 0);
  EXPECT_EQ(r->tasks_by_placement[0], 12);
  EXPECT_EQ(r->task_kills, 0);
}

// Within its class a long job uses only the headroom under the class's peak
// (8 cores - 0.5 peak - 1 reserve = 3 per server), so the noon peak kills
// nothing; primary-aware placement fills a server up to what the primary
// leaves now and loses tasks at noon.
TEST(HarvestSimTest, HistoryPlacesLongTasksWithinThePeakHeadroom) {
  std::vector<PrimaryTrace> traces = {middaySpike("wave", 0.5)};
  HarvestSimOptions o = minuteTicks(2);
  auto jobs = longJobs(1, 6);
  auto history = runHarvestSim(traces, jobs, PlacementStrategy::kHistory, o);
  auto aware = runHarvestSim(traces, jobs, PlacementStrategy::kPrimaryAware, o);
  ASSERT_TRUE(history.isOk()) << history.status().message();
  ASSERT_TRUE(aware.isOk());
  EXPECT_EQ(history->jobs_without_class, 0);
  EXPECT_EQ(history->task_kills, 0);
  EXPECT_EQ(history->tasks_run, 6);
  EXPECT_GT(aware->task_kills, 0) << "seed 1";
}

// A primary that grows at noon kills tasks placed without regard to it; a
// flat primary never does; all jobs finish (killed tasks rerun).
TEST(HarvestSimTest, KillsFollowPrimaryGrowthAndJobsRecover) {
  std::vector<PrimaryTrace> traces(3);
  for (int t = 0; t < 3; t++) {
    traces[t].tenant = "t" + std::to_string(t);
    traces[t].util.assign(2 * 288, 0.2);
  }
  for (int i = 288 + 12; i < 288 + 24; i++) traces[0].util[i] = 0.95;  // day 1, 1:00-2:00
  std::vector<SwimJob> jobs;
  for (int j = 0; j < 20; j++) {
    SwimJob s;
    s.name = "j" + std::to_string(j);
    s.submit = Millis(j * 4 * 60 * 1000);
    s.map_tasks = 8;
    s.map_task_duration = 10min;
    s.reduce_tasks = 2;
    s.reduce_task_duration = 5min;
    jobs.push_back(s);
  }
  HarvestSimOptions o = minuteTicks(2);
  auto random = runHarvestSim(traces, jobs, PlacementStrategy::kRandom, o);
  ASSERT_TRUE(random.isOk()) << random.status().message();
  EXPECT_EQ(random->jobs_finished, 20);
  EXPECT_GT(random->task_kills, 0);
  EXPECT_GT(random->harvested_util, 0);
  for (auto& t : traces) t.util.assign(2 * 288, 0.2);
  auto flat = runHarvestSim(traces, jobs, PlacementStrategy::kHistory, o);
  ASSERT_TRUE(flat.isOk());
  EXPECT_EQ(flat->task_kills, 0);
  EXPECT_EQ(flat->jobs_finished, 20);
  // No kill and room for every task at once: each job takes its floor, a
  // 10-minute map wave then a 5-minute reduce wave; the kills cost above it.
  EXPECT_DOUBLE_EQ(flat->floor_mean_jct_s, 15 * 60);
  EXPECT_DOUBLE_EQ(flat->mean_jct_s, flat->floor_mean_jct_s);
  EXPECT_DOUBLE_EQ(flat->p95_jct_s, flat->floor_p95_jct_s);
  EXPECT_DOUBLE_EQ(random->floor_mean_jct_s, 15 * 60);
  EXPECT_GT(random->mean_jct_s, random->floor_mean_jct_s);
}

// A job submitted late on the evaluation day: without a drain the run ends
// at midnight and the job is left out; with one it finishes, on primaries
// that repeat the evaluation day (a spike at 01:00 on it kills the job's
// tasks again at 01:00 the next day, and they rerun).
TEST(HarvestSimTest, DrainRunsLateJobsToTheEndOnTheRepeatedDay) {
  std::vector<PrimaryTrace> traces(1);
  traces[0].tenant = "t";
  traces[0].util.assign(2 * 288, 0.2);
  for (int i = 288 + 12; i < 288 + 24; i++) traces[0].util[i] = 0.95;  // day 1, 01:00-02:00
  std::vector<SwimJob> jobs = longJobs(1, 2);
  jobs[0].submit = Millis((23 * 60 + 30) * 60 * 1000);
  HarvestSimOptions o = minuteTicks(2);
  auto cut = runHarvestSim(traces, jobs, PlacementStrategy::kPrimaryAware, o);
  ASSERT_TRUE(cut.isOk()) << cut.status().message();
  EXPECT_EQ(cut->jobs_finished, 0);
  EXPECT_EQ(cut->task_kills, 0);
  o.drain = 12h;
  auto drained = runHarvestSim(traces, jobs, PlacementStrategy::kPrimaryAware, o);
  ASSERT_TRUE(drained.isOk());
  EXPECT_EQ(drained->jobs_finished, 1);
  EXPECT_EQ(drained->task_kills, 2) << "the repeated 01:00 spike";
  // Killed at 01:00, rerun from 02:00 (the spike leaves no room before): 3 h.
  EXPECT_DOUBLE_EQ(drained->mean_jct_s, (2.5 + 3) * 3600);
  EXPECT_DOUBLE_EQ(drained->floor_mean_jct_s, 3 * 3600);  // one 3 h wave, no reduce stage
  EXPECT_DOUBLE_EQ(drained->floor_mean_jct_by_length_s[static_cast<size_t>(rm::JobLength::kLong)],
                   3 * 3600);
  o.drain = -1s;
  auto bad = runHarvestSim(traces, jobs, PlacementStrategy::kRandom, o);
  ASSERT_FALSE(bad.isOk());
  EXPECT_NE(bad.status().message().find("drain"), std::string::npos);
}

// The throttle: tasks that fit run at full speed; past what the primary
// leaves they share it equally, never below the cgroup quota's 1%.
TEST(HarvestSimTest, ThrottleSpeedSharesWhatThePrimaryLeaves) {
  EXPECT_DOUBLE_EQ(throttleSpeed(3, 2), 1.0);
  EXPECT_DOUBLE_EQ(throttleSpeed(2, 2), 1.0);
  EXPECT_DOUBLE_EQ(throttleSpeed(1.5, 3), 0.5);
  EXPECT_DOUBLE_EQ(throttleSpeed(0.5, 1), 0.5);
  EXPECT_DOUBLE_EQ(throttleSpeed(0.02, 4), 0.01);
  EXPECT_DOUBLE_EQ(throttleSpeed(-2, 4), 0.01);
  EXPECT_DOUBLE_EQ(throttleSpeed(-2, 0), 1.0);
}

// One 1-hour task on an 8-core server from 09:30; 10:00-11:00 the primary
// takes 6.5 cores, leaving 0.5 after the 1-core reserve.
struct ThrottleCase {
  std::vector<PrimaryTrace> traces;
  std::vector<SwimJob> jobs;
  HarvestSimOptions o;
};
ThrottleCase throttleCase() {
  ThrottleCase c;
  c.traces.resize(1);
  c.traces[0].tenant = "web";
  c.traces[0].util.assign(2 * 288, 0.1);
  for (int i = 288 + 120; i < 288 + 132; i++) c.traces[0].util[i] = 6.5 / 8;
  SwimJob j;
  j.name = "one";
  j.submit = Millis((9 * 60 + 30) * 60 * 1000);
  j.map_tasks = 1;
  j.map_task_duration = 1h;
  c.jobs = {j};
  c.o = minuteTicks(1);
  c.o.primary_memory = 0.5;  // memory fits: 8 - 3.25 - 1 >= 1 task
  return c;
}

// Throttled, not killed: 30 min at full speed, then an hour at half speed
// for the other 30 min of work: done at 11:00, 90 min after submission.
TEST(HarvestSimTest, AThrottledTaskRunsAtTheSpeedThePrimaryLeaves) {
  ThrottleCase c = throttleCase();
  c.o.cpu_kill_after = 2h;
  auto r = runHarvestSim(c.traces, c.jobs, PlacementStrategy::kPrimaryAware, c.o);
  ASSERT_TRUE(r.isOk()) << r.status().message();
  EXPECT_EQ(r->jobs_finished, 1);
  EXPECT_EQ(r->task_kills, 0);
  EXPECT_DOUBLE_EQ(r->mean_jct_s, 90 * 60);
  EXPECT_DOUBLE_EQ(r->floor_mean_jct_s, 60 * 60);
  EXPECT_DOUBLE_EQ(r->throttled_task_s, 60 * 60);
  EXPECT_DOUBLE_EQ(r->throttle_lost_core_s, 30 * 60);
}

// Throttled for cpu_kill_after (30 min: 15 min of work at half speed), then
// killed with 45 min of work lost; the primary leaves no core until 11:00,
// when the task reruns for an hour: done at 12:00.
TEST(HarvestSimTest, ThrottledPastCpuKillAfterTheTaskIsKilledAndReruns) {
  ThrottleCase c = throttleCase();
  c.o.cpu_kill_after = 30min;
  auto r = runHarvestSim(c.traces, c.jobs, PlacementStrategy::kPrimaryAware, c.o);
  ASSERT_TRUE(r.isOk()) << r.status().message();
  EXPECT_EQ(r->task_kills, 1);
  EXPECT_EQ(r->memory_kills, 0);
  EXPECT_DOUBLE_EQ(r->lost_core_s, 45 * 60);
  EXPECT_DOUBLE_EQ(r->throttled_task_s, 30 * 60);
  EXPECT_DOUBLE_EQ(r->mean_jct_s, 150 * 60);
  EXPECT_EQ(r->tasks_run, 2);
}

// Memory is not throttled: a primary whose memory grows with its CPU kills
// the task at 10:00 whatever cpu_kill_after says; it reruns at 11:00.
TEST(HarvestSimTest, AMemoryOverlapKillsAtOnce) {
  ThrottleCase c = throttleCase();
  c.o.cpu_kill_after = 2h;
  c.o.primary_memory = 1.0;
  auto r = runHarvestSim(c.traces, c.jobs, PlacementStrategy::kPrimaryAware, c.o);
  ASSERT_TRUE(r.isOk()) << r.status().message();
  EXPECT_EQ(r->task_kills, 1);
  EXPECT_EQ(r->memory_kills, 1);
  EXPECT_DOUBLE_EQ(r->throttled_task_s, 0);
  EXPECT_DOUBLE_EQ(r->lost_core_s, 30 * 60);
  EXPECT_DOUBLE_EQ(r->mean_jct_s, 150 * 60);
  c.o.primary_memory = 1.5;
  auto bad = runHarvestSim(c.traces, c.jobs, PlacementStrategy::kPrimaryAware, c.o);
  ASSERT_FALSE(bad.isOk());
  EXPECT_NE(bad.status().message().find("primary_memory"), std::string::npos);
  c.o.primary_memory = 0.5;
  c.o.cpu_kill_after = -1s;
  bad = runHarvestSim(c.traces, c.jobs, PlacementStrategy::kPrimaryAware, c.o);
  ASSERT_FALSE(bad.isOk());
  EXPECT_NE(bad.status().message().find("cpu_kill_after"), std::string::npos);
}

// Two days of 8-core servers: `base` all day but `high` over minutes
// [from, to) of each day.
PrimaryTrace stepUp(const std::string& name, double base, double high, int from, int to) {
  PrimaryTrace t;
  t.tenant = name;
  t.util.assign(2 * 288, base);
  for (int d = 0; d < 2; d++)
    for (int i = from / 5; i < to / 5; i++) t.util[d * 288 + i] = high;
  return t;
}

// One job of `tasks` map tasks of `minutes`, submitted at `at` (minutes into the day).
SwimJob mapJob(const std::string& name, int at, int64_t tasks, int minutes) {
  SwimJob j;
  j.name = name;
  j.submit = Millis(static_cast<int64_t>(at) * 60 * 1000);
  j.map_tasks = tasks;
  j.map_task_duration = Millis(static_cast<int64_t>(minutes) * 60 * 1000);
  return j;
}

// A task whose work ran out during the tick before the primary grows has
// ended: at the next tick's memory check (09:30, the primary at 5.5 of 8
// cores, memory for 8 - 5.5 - 1 = 1.5 tasks) only the other task is there,
// and it fits. Counted, the two would not, and the newest would die: the
// 1-hour task when the short one came first, the finished short task itself
// (rerun from scratch) when it came last.
TEST(HarvestSimTest, ATaskDoneDuringATickHoldsNoMemoryAtTheNextCheck) {
  PrimaryTrace web;
  web.tenant = "web";
  web.util.assign(2 * 288, 0.1);
  for (int i = 288 + 114; i < 288 + 126; i++) web.util[i] = 5.5 / 8;  // 09:30-10:30
  HarvestSimOptions o = minuteTicks(1);
  o.primary_memory = 1.0;
  o.cpu_kill_after = 48h;
  const std::vector<std::vector<SwimJob>> cases = {
      {mapJob("short", 9 * 60, 1, 30), mapJob("long", 9 * 60 + 1, 1, 60)},
      {mapJob("long", 9 * 60, 1, 60), mapJob("short", 9 * 60 + 1, 1, 29)}};
  for (size_t k = 0; k < cases.size(); k++) {
    auto r = runHarvestSim({web}, cases[k], PlacementStrategy::kPrimaryAware, o);
    ASSERT_TRUE(r.isOk()) << r.status().message();
    EXPECT_EQ(r->task_kills, 0) << "case " << k;
    EXPECT_EQ(r->tasks_run, 2) << "case " << k;
    EXPECT_EQ(r->jobs_finished, 2) << "case " << k;
    EXPECT_DOUBLE_EQ(r->mean_jct_s, r->floor_mean_jct_s) << "case " << k;
  }
}

// Throttled only (never killed), the primary's memory at half its CPU share.
HarvestSimOptions throttleOnly() {
  HarvestSimOptions o = minuteTicks(1);
  o.primary_memory = 0.5;
  o.cpu_kill_after = 48h;
  return o;
}

// A 1-hour task at 09:30. "idle" leaves 6.2 cores now and "tight" exactly
// one, but both leave half a core from 10:00 to 11:00; "steady" leaves 3
// all day. Only steady fits the task's whole hour: both clairvoyant rules
// put it there (no throttle, the floor's JCT), whatever the seed, while a
// placement that sees only the present picks idle (most room now) or tight
// (best fit now), and primary-aware draws among all three.
TEST(HarvestSimTest, ClairvoyantPlacementAvoidsTheComingPeakPrimaryAwareDoesNot) {
  std::vector<PrimaryTrace> traces = {stepUp("idle", 0.1, 6.5 / 8, 600, 660),
                                      stepUp("tight", 6.0 / 8, 6.5 / 8, 600, 660),
                                      stepUp("steady", 0.5, 0.5, 0, 0)};
  std::vector<SwimJob> jobs = {mapJob("one", 9 * 60 + 30, 1, 60)};
  double aware_throttled = 0;
  for (uint64_t seed = 1; seed <= 8; seed++) {
    HarvestSimOptions o = throttleOnly();
    o.seed = seed;
    for (auto s :
         {PlacementStrategy::kClairvoyantBestFit, PlacementStrategy::kClairvoyantMostRoom}) {
      auto r = runHarvestSim(traces, jobs, s, o);
      ASSERT_TRUE(r.isOk()) << r.status().message();
      EXPECT_EQ(r->jobs_finished, 1);
      EXPECT_EQ(r->throttled_task_s, 0) << strategyName(s) << " seed " << seed;
      EXPECT_DOUBLE_EQ(r->mean_jct_s, r->floor_mean_jct_s) << strategyName(s) << " seed " << seed;
    }
    auto aware = runHarvestSim(traces, jobs, PlacementStrategy::kPrimaryAware, o);
    ASSERT_TRUE(aware.isOk());
    aware_throttled += aware->throttled_task_s;
  }
  EXPECT_GT(aware_throttled, 0) << "primary-aware lands on idle or tight in some of 8 seeds";
}

// No server fits: "short" is busy 10:00-10:10 and "long" 10:00-10:30 (half
// a core left), so the 1-hour task goes where it adds the fewest throttled
// ticks: short, 10 min at half speed.
TEST(HarvestSimTest, ClairvoyantPlacementWithoutAFitTakesTheLeastThrottle) {
  std::vector<PrimaryTrace> traces = {stepUp("long", 0.1, 6.5 / 8, 600, 630),
                                      stepUp("short", 0.1, 6.5 / 8, 600, 610)};
  std::vector<SwimJob> jobs = {mapJob("one", 9 * 60 + 30, 1, 60)};
  for (auto s : {PlacementStrategy::kClairvoyantBestFit, PlacementStrategy::kClairvoyantMostRoom}) {
    auto r = runHarvestSim(traces, jobs, s, throttleOnly());
    ASSERT_TRUE(r.isOk()) << r.status().message();
    EXPECT_DOUBLE_EQ(r->throttled_task_s, 10 * 60) << strategyName(s);
    EXPECT_DOUBLE_EQ(r->mean_jct_s, 65 * 60) << strategyName(s);
  }
}

// Best fit keeps the big gap: a 20-min task at 09:30 fits "narrow" (one core,
// none from 10:00 to 11:00) and "wide" (5 cores all day). Best fit takes
// narrow, so at 09:35 the five 1-hour tasks of the next job all fit wide;
// most room takes wide, leaving it 4 cores until 09:50, and the fifth task
// runs throttled (on narrow from 10:00, the least throttle then).
TEST(HarvestSimTest, ClairvoyantBestFitKeepsRoomForLaterTasks) {
  std::vector<PrimaryTrace> traces = {stepUp("narrow", 6.0 / 8, 7.0 / 8, 600, 660),
                                      stepUp("wide", 0.25, 0.25, 0, 0)};
  std::vector<SwimJob> jobs = {mapJob("first", 9 * 60 + 30, 1, 20),
                               mapJob("next", 9 * 60 + 35, 5, 60)};
  auto best = runHarvestSim(traces, jobs, PlacementStrategy::kClairvoyantBestFit, throttleOnly());
  auto most = runHarvestSim(traces, jobs, PlacementStrategy::kClairvoyantMostRoom, throttleOnly());
  ASSERT_TRUE(best.isOk()) << best.status().message();
  ASSERT_TRUE(most.isOk());
  EXPECT_EQ(best->throttled_task_s, 0);
  EXPECT_DOUBLE_EQ(best->mean_jct_s, best->floor_mean_jct_s);
  EXPECT_GT(most->throttled_task_s, 0);
  EXPECT_GT(most->mean_jct_s, best->mean_jct_s);
}

// The primary leaves no core from 10:00 to 11:00. Best fit places the
// 1-hour task of 09:30 at once (no server fits) and it runs throttled through
// that hour; clairvoyant-wait holds it until its whole hour fits, 11:00 to
// 12:00: no throttle, 150 min after submission.
TEST(HarvestSimTest, ClairvoyantWaitHoldsATaskUntilItFits) {
  std::vector<PrimaryTrace> traces = {stepUp("web", 0.1, 7.0 / 8, 600, 660)};
  std::vector<SwimJob> jobs = {mapJob("one", 9 * 60 + 30, 1, 60)};
  auto wait = runHarvestSim(traces, jobs, PlacementStrategy::kClairvoyantWait, throttleOnly());
  auto now = runHarvestSim(traces, jobs, PlacementStrategy::kClairvoyantBestFit, throttleOnly());
  ASSERT_TRUE(wait.isOk()) << wait.status().message();
  ASSERT_TRUE(now.isOk());
  EXPECT_EQ(wait->throttled_task_s, 0);
  EXPECT_DOUBLE_EQ(wait->mean_jct_s, 150 * 60);
  EXPECT_DOUBLE_EQ(now->throttled_task_s, 60 * 60);
}

// A daily wave: 0.5 - 0.45 cos(2 pi t / day), 0.05 at midnight, 0.95 at
// noon, over three days (two of history: the classifier labels it
// periodic; jobs run on the third). A 3-hour task
// submitted at 06:00 (long: no class holds it under its 0.95 peak) finds 3
// cores now, but the wave leaves it less than a core from about 08:15 to
// 15:45. The ranked fallback places it at once and it runs throttled. The
// hold predicts that from the history day (the largest share over the same
// 3 hours of the day, counted for every tick of the run) and holds the task
// until a 3-hour window fits (from 15:45: the wave falls from 0.75), so it
// runs at full speed; held for only 1 hour, it then takes the ranked
// fallback and runs throttled.
TEST(HarvestSimTest, HoldKeepsATaskOffAServerItsHistoryPredictsWillThrottleIt) {
  PrimaryTrace wave;
  wave.tenant = "wave";
  for (int i = 0; i < 3 * 288; i++)
    wave.util.push_back(0.5 - 0.45 * std::cos(2 * std::numbers::pi * i / 288.0));
  std::vector<SwimJob> jobs = {mapJob("etl", 6 * 60, 1, 180)};
  HarvestSimOptions o = throttleOnly();
  o.history_fallback = HistoryFallback::kRanked;
  auto ranked = runHarvestSim({wave}, jobs, PlacementStrategy::kHistory, o);
  o.history_fallback = HistoryFallback::kHold;
  o.history_hold = 12h;
  auto hold = runHarvestSim({wave}, jobs, PlacementStrategy::kHistory, o);
  o.history_hold = 1h;
  auto short_hold = runHarvestSim({wave}, jobs, PlacementStrategy::kHistory, o);
  ASSERT_TRUE(ranked.isOk()) << ranked.status().message();
  ASSERT_TRUE(hold.isOk());
  ASSERT_TRUE(short_hold.isOk());
  EXPECT_EQ(ranked->jobs_without_class, 1);
  EXPECT_GT(ranked->throttled_task_s, 3600);
  EXPECT_EQ(ranked->held_task_s, 0);
  EXPECT_EQ(hold->jobs_finished, 1);
  EXPECT_EQ(hold->throttled_task_s, 0);
  EXPECT_EQ(hold->tasks_placed_after_hold, 0);
  // Held from 06:00 until the window from about 15:45 fits.
  EXPECT_GT(hold->held_task_s, 9 * 3600);
  EXPECT_LT(hold->held_task_s, 10 * 3600);
  EXPECT_DOUBLE_EQ(hold->mean_jct_s, hold->held_task_s + 3 * 3600);
  EXPECT_DOUBLE_EQ(short_hold->held_task_s, 3600);
  EXPECT_EQ(short_hold->tasks_placed_after_hold, 1);
  EXPECT_GT(short_hold->throttled_task_s, 0);
  EXPECT_EQ(historyFallbackName(*parseHistoryFallback("hold")), std::string("hold"));
  EXPECT_EQ(HarvestSimOptions{}.history_fallback, HistoryFallback::kHold);
}

TEST(HarvestSimTest, ParsesStrategyNamesAndNamesBadOnes) {
  for (auto s : {PlacementStrategy::kHistory, PlacementStrategy::kPrimaryAware,
                 PlacementStrategy::kRandom, PlacementStrategy::kClairvoyantBestFit,
                 PlacementStrategy::kClairvoyantMostRoom, PlacementStrategy::kClairvoyantWait}) {
    auto p = parsePlacementStrategy(strategyName(s));
    ASSERT_TRUE(p.isOk()) << strategyName(s);
    EXPECT_EQ(*p, s);
  }
  auto bad = parsePlacementStrategy("clairvoyant");
  ASSERT_FALSE(bad.isOk());
  EXPECT_NE(bad.status().message().find("strategy"), std::string::npos);
  EXPECT_NE(bad.status().message().find("'clairvoyant'"), std::string::npos);
  EXPECT_NE(bad.status().message().find("clairvoyant-best-fit"), std::string::npos);
}

// The sweep's generator: the tenants' mean CPU share lands near the asked
// mean, and the patterns stay what the classifier recovers.
TEST(HarvestSimTest, MeanUtilSetsThePrimariesMeanLoad) {
  for (double want : {0.2, 0.5, 0.8}) {
    PrimaryGenOptions g;
    g.tenants = 30;
    g.seed = 5;
    g.mean_util = want;
    auto traces = generatePrimaryTraces(g);
    ASSERT_TRUE(traces.isOk()) << traces.status().message();
    double sum = 0, n = 0;
    int right = 0;
    for (const auto& t : *traces) {
      for (double x : t.util) sum += x;
      n += static_cast<double>(t.util.size());
      std::vector<double> history(t.util.begin(), t.util.begin() + 2 * 288);
      auto p = rm::profileTenant({t.tenant, history}, rm::ClassifierOptions{});
      right += p.isOk() && p->pattern == t.truth ? 1 : 0;
    }
    EXPECT_NEAR(sum / n, want, 0.05) << "mean_util " << want;
    EXPECT_GE(right, 22) << "mean_util " << want << ", seed 5 (23 of 30 at 0.2 and 0.5)";
  }
  PrimaryGenOptions g;
  g.mean_util = 0.99;
  auto bad = generatePrimaryTraces(g);
  ASSERT_FALSE(bad.isOk());
  EXPECT_NE(bad.status().message().find("mean_util"), std::string::npos);
}

// The storage tests' primaries: nine generated tenants, seed 3.
std::vector<PrimaryTrace> nineTenants() {
  PrimaryGenOptions g;
  g.tenants = 9;
  g.seed = 3;
  return generatePrimaryTraces(g).value();
}

// With tenant-wide reimages, best-first (all replicas on the calmest tenant)
// loses at least as many blocks as Algorithm 2, which spreads them.
TEST(HarvestSimTest, Algorithm2LosesNoMoreBlocksThanBestFirst) {
  auto traces = nineTenants();
  ReplicaSimOptions o;
  o.servers_per_tenant = 4;
  o.blocks = 500;
  o.free_blocks_per_server = 1000;
  o.days = 365;
  o.rereplicate = Millis(24 * 3600 * 1000);
  auto a2 = runReplicaSim(traces, ReplicaStrategy::kAlgorithm2, o);
  auto bf = runReplicaSim(traces, ReplicaStrategy::kBestFirst, o);
  ASSERT_TRUE(a2.isOk());
  ASSERT_TRUE(bf.isOk());
  EXPECT_EQ(a2->blocks, 500);
  EXPECT_LE(a2->lost, bf->lost) << "seed 3";
  EXPECT_GT(bf->lost, 0) << "seed 3: best-first keeps every replica in one tenant";
  // By distinct tenants: best-first's replicas share the calmest tenant,
  // Algorithm 2's are on three tenants (three reimage classes).
  EXPECT_EQ(bf->lost_by_tenants[1], bf->lost);
  EXPECT_EQ(a2->lost_by_tenants[3], a2->lost);
  for (const auto* r : {&*a2, &*bf}) {
    EXPECT_EQ(r->lost_by_tenants[0], 0);
    EXPECT_EQ(r->lost_by_tenants[1] + r->lost_by_tenants[2] + r->lost_by_tenants[3] +
                  r->lost_by_tenants[4],
              r->lost);
  }
}

// With four replicas, Algorithm 2's fourth repeats a reimage class: every
// block is counted once by the rate of its fourth replica's tenant, losses
// too; with three replicas nothing is counted. With best-first, whose
// replicas all sit on the least reimaged tenant, every fourth is in the 0.5
// class.
TEST(HarvestSimTest, FourthReplicasAreCountedByTheirReimageRate) {
  auto traces = nineTenants();
  ReplicaSimOptions o;
  o.servers_per_tenant = 4;
  o.blocks = 300;
  o.replicas = 4;
  o.days = 365;
  o.rereplicate = Millis(24 * 3600 * 1000);
  auto a2 = runReplicaSim(traces, ReplicaStrategy::kAlgorithm2, o);
  auto bf = runReplicaSim(traces, ReplicaStrategy::kBestFirst, o);
  ASSERT_TRUE(a2.isOk());
  ASSERT_TRUE(bf.isOk());
  ASSERT_EQ(a2->fourth_by_rate.size(), 3u);
  EXPECT_EQ(a2->fourth_by_rate[0] + a2->fourth_by_rate[1] + a2->fourth_by_rate[2], 300);
  EXPECT_EQ(a2->lost_fourth_by_rate[0] + a2->lost_fourth_by_rate[1] + a2->lost_fourth_by_rate[2],
            a2->lost);
  for (size_t i = 0; i < 3; i++) EXPECT_GT(a2->fourth_by_rate[i], 0) << "rate class " << i;
  ASSERT_EQ(bf->fourth_by_rate.size(), 3u);
  EXPECT_EQ(bf->fourth_by_rate[0], 300);
  o.replicas = 3;
  auto three = runReplicaSim(traces, ReplicaStrategy::kAlgorithm2, o);
  ASSERT_TRUE(three.isOk());
  EXPECT_TRUE(three->fourth_by_rate.empty());
}

// Random placement's losses split by distinct tenants add up, and with few
// tenants some blocks share one (the cheaper way to lose a block).
TEST(HarvestSimTest, RandomPlacementLosesBlocksSharingATenant) {
  PrimaryGenOptions g;
  g.tenants = 3;
  g.seed = 5;
  auto traces = generatePrimaryTraces(g).value();
  ReplicaSimOptions o;
  o.servers_per_tenant = 10;
  o.blocks = 300;
  o.free_blocks_per_server = 1000;
  o.days = 365;
  o.rereplicate = Millis(6 * 3600 * 1000);
  auto rnd = runReplicaSim(traces, ReplicaStrategy::kRandom, o);
  ASSERT_TRUE(rnd.isOk());
  EXPECT_GT(rnd->lost, 0) << "seed 5";
  EXPECT_GT(rnd->lost_by_tenants[1] + rnd->lost_by_tenants[2], 0) << "seed 5";
  EXPECT_EQ(rnd->lost_by_tenants[1] + rnd->lost_by_tenants[2] + rnd->lost_by_tenants[3] +
                rnd->lost_by_tenants[4],
            rnd->lost);
}

// The interval of a ratio over seed resamples: equal per-seed ratios give
// that ratio at both ends; one seed with all the losses widens it to
// infinity; bad input is named.
TEST(HarvestSimTest, SeedRatioIntervalResamplesSeeds) {
  auto same = seedRatioInterval({10, 20, 30}, {1, 2, 3});
  ASSERT_TRUE(same.isOk());
  EXPECT_DOUBLE_EQ(same->first, 10);
  EXPECT_DOUBLE_EQ(same->second, 10);
  auto spread = seedRatioInterval({50, 50, 50, 50}, {4, 0, 0, 0});
  ASSERT_TRUE(spread.isOk());
  // A resample holds the seed with the loss k times: ratio 200 / (4k). k = 3
  // has 4.7% of the draws and k = 4 0.4%, so the 2.5% point is at k = 3.
  EXPECT_NEAR(spread->first, 50.0 / 3, 1e-9);
  EXPECT_TRUE(std::isinf(spread->second)) << "resamples missing the one seed with a loss";
  EXPECT_EQ(*seedRatioInterval({1, 2}, {1, 2}), *seedRatioInterval({1, 2}, {1, 2}))
      << "fixed resampling seed";
  auto bad = seedRatioInterval({1, 2}, {1});
  ASSERT_FALSE(bad.isOk());
  EXPECT_NE(bad.status().message().find("num"), std::string::npos);
  EXPECT_FALSE(seedRatioInterval({}, {}).isOk());
  EXPECT_FALSE(seedRatioInterval({1}, {1}, 0).isOk());
}

}  // namespace
}  // namespace morpheus::sim
