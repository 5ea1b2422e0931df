// Harvesting in the RM (Zhang et al., OSDI'16 §4): bounded
// downsampled utilisation series, FFT labelling and k-means classes (§4.1),
// class selection (Algorithm 1), replica placement (Algorithm 2) and the
// hold's prediction (harvest_forecast.h), on hand-made series and clusters.
#include <gtest/gtest.h>

#include <cmath>
#include <numbers>
#include <set>

#include "harvest/harvest_classes.h"
#include "harvest/harvest_forecast.h"
#include "harvest/harvest_replicas.h"
#include "harvest/harvest_selection.h"
#include "harvest/harvest_series.h"

namespace morpheus::rm {
namespace {

using namespace std::chrono_literals;

// A full series doubles its step and merges buckets: bounded, average
// weighted by samples, peak kept.
TEST(UtilSeriesTest, DownsamplesWhenFullKeepingAverageAndPeak) {
  UtilSeries s(1000ms, 4);
  for (int i = 0; i < 8; i++) s.add(fromEpochMs(i * 1000), i == 5 ? 0.9 : 0.1);
  ASSERT_EQ(s.buckets().size(), 4u);
  EXPECT_EQ(s.step(), 2000ms);
  EXPECT_DOUBLE_EQ(s.buckets()[2].avg, 0.5);  // samples 4 (0.1) and 5 (0.9)
  EXPECT_DOUBLE_EQ(s.buckets()[2].peak, 0.9);
  for (int i = 8; i < 100; i++) s.add(fromEpochMs(i * 1000), 0.2);
  EXPECT_LE(s.buckets().size(), 4u);
  EXPECT_FALSE(s.add(fromEpochMs(0), 0.3));  // out of order: dropped
  EXPECT_EQ(s.regular().size(), s.buckets().size());
}

// Samples from two nodes of one tenant average in its series; nodes keep their own.
TEST(HarvestHistoryTest, TenantSeriesAveragesItsNodes) {
  HarvestHistory h(60s, 16);
  h.record(NodeId("n1"), "web", fromEpochMs(0), 0.2, 0.5);
  h.record(NodeId("n2"), "web", fromEpochMs(1000), 0.6, 0.1);
  ASSERT_NE(h.tenantCpu("web"), nullptr);
  EXPECT_DOUBLE_EQ(h.tenantCpu("web")->buckets()[0].avg, 0.4);
  EXPECT_DOUBLE_EQ(h.tenantCpu("web")->buckets()[0].peak, 0.6);
  EXPECT_DOUBLE_EQ(h.nodeCpu(NodeId("n1"))->buckets()[0].avg, 0.2);
  EXPECT_EQ(h.tenantOf(NodeId("n2")), "web");
  EXPECT_EQ(h.tenants(), std::vector<std::string>{"web"});
}

std::vector<double> sine(int n, int cycles, double mean, double amp) {
  std::vector<double> v;
  for (int i = 0; i < n; i++)
    v.push_back(mean + amp * std::sin(2 * std::numbers::pi * cycles * i / n));
  return v;
}

// Deterministic noise in [0, 1).
std::vector<double> noise(int n, uint32_t seed, double lo, double hi) {
  std::vector<double> v;
  uint32_t x = seed;
  for (int i = 0; i < n; i++) {
    x = x * 1664525u + 1013904223u;
    v.push_back(lo + (hi - lo) * static_cast<double>(x >> 8) / static_cast<double>(1u << 24));
  }
  return v;
}

// The FFT of a pure tone has its energy in the tone's bin.
TEST(HarvestFftTest, PureToneLandsInItsBin) {
  auto spec = fft(sine(64, 5, 0, 1));
  ASSERT_EQ(spec.size(), 64u);
  size_t best = 1;
  for (size_t k = 1; k <= 32; k++)
    if (std::abs(spec[k]) > std::abs(spec[best])) best = k;
  EXPECT_EQ(best, 5u);
  EXPECT_NEAR(std::abs(spec[5]), 32, 1e-9);
}

// Flat series are constant, daily waves periodic (with their period), noise unpredictable.
TEST(HarvestClassesTest, LabelsThreePatterns) {
  ClassifierOptions o;
  auto c = profileTenant({"db", std::vector<double>(256, 0.3)}, o);
  ASSERT_TRUE(c.isOk());
  EXPECT_EQ(c->pattern, UtilPattern::kConstant);
  auto p = profileTenant({"web", sine(256, 4, 0.5, 0.3)}, o);
  ASSERT_TRUE(p.isOk());
  EXPECT_EQ(p->pattern, UtilPattern::kPeriodic);
  EXPECT_DOUBLE_EQ(p->period_samples, 64);
  EXPECT_NEAR(p->peak, 0.8, 1e-3);
  auto u = profileTenant({"adhoc", noise(256, 7, 0.0, 0.9)}, o);
  ASSERT_TRUE(u.isOk());
  EXPECT_EQ(u->pattern, UtilPattern::kUnpredictable);
  EXPECT_FALSE(profileTenant({"empty", {}}, o).isOk());
}

// A daily wave over two days of 5-minute samples (576, padded to 1024 for
// the FFT) is periodic at every phase, with a one-day period: its frequency
// lies between padded bins 3 and 4, and read off bin 3 unrounded the series
// would hold 1.69 cycles, fewer than the 2 required, so most phases were
// labelled unpredictable.
TEST(HarvestClassesTest, DailyWaveOverTwoDaysIsPeriodicAtEveryPhase) {
  ClassifierOptions o;
  for (int k = 0; k < 24; k++) {
    const double phase = k / 24.0;
    std::vector<double> v;
    for (int i = 0; i < 576; i++)
      v.push_back(0.6 + 0.2 * std::sin(2 * std::numbers::pi * (i / 288.0 + phase)));
    auto p = profileTenant({"web", v}, o);
    ASSERT_TRUE(p.isOk());
    EXPECT_EQ(p->pattern, UtilPattern::kPeriodic) << "phase " << phase;
    EXPECT_DOUBLE_EQ(p->period_samples, 288) << "phase " << phase;
  }
  // One cycle over the whole series stays below 2: it peaks at padded bin
  // 2, 1.1 cycles, rounded to 1.
  std::vector<double> one;
  for (int i = 0; i < 576; i++)
    one.push_back(0.6 + 0.2 * std::sin(2 * std::numbers::pi * i / 576.0));
  auto p = profileTenant({"batch", one}, o);
  ASSERT_TRUE(p.isOk());
  EXPECT_EQ(p->pattern, UtilPattern::kUnpredictable);
}

// k-means separates low and high constant tenants and tags each class.
TEST(HarvestClassesTest, KMeansSplitsLowAndHighWithinALabel) {
  ClassifierOptions o;
  o.max_classes_per_label = 2;
  std::vector<TenantSeries> in = {{"a", std::vector<double>(64, 0.10)},
                                  {"b", std::vector<double>(64, 0.12)},
                                  {"c", std::vector<double>(64, 0.70)},
                                  {"d", std::vector<double>(64, 0.74)},
                                  {"w", sine(64, 4, 0.5, 0.3)}};
  auto cls = clusterTenants(in, o);
  ASSERT_TRUE(cls.isOk()) << cls.status().message();
  ASSERT_EQ(cls->size(), 3u);
  EXPECT_EQ((*cls)[0].id, "periodic-0");
  EXPECT_EQ((*cls)[1].id, "constant-0");
  EXPECT_EQ((*cls)[1].tenants, (std::vector<std::string>{"a", "b"}));
  EXPECT_NEAR((*cls)[1].average, 0.11, 1e-9);
  EXPECT_DOUBLE_EQ((*cls)[1].peak, 0.12);
  EXPECT_EQ((*cls)[2].tenants, (std::vector<std::string>{"c", "d"}));
  in.push_back({"e", {}});
  auto bad = clusterTenants(in, o);
  ASSERT_FALSE(bad.isOk());
  EXPECT_NE(bad.status().message().find("series[5].util"), std::string::npos);
}

// Length type thresholds; unseen jobs are medium.
TEST(HarvestSelectionTest, LengthTypeFromLastRun) {
  SelectionOptions o;
  EXPECT_EQ(lengthType(std::nullopt, o), JobLength::kMedium);
  EXPECT_EQ(lengthType(Millis(60000), o), JobLength::kShort);
  EXPECT_EQ(lengthType(Millis(30 * 60000), o), JobLength::kMedium);
  EXPECT_EQ(lengthType(Millis(2 * 3600000), o), JobLength::kLong);
}

// Breadth-first over the DAG: the widest depth's task sum; unknown deps and cycles named.
TEST(HarvestSelectionTest, MaxConcurrentContainersOfADiamond) {
  std::vector<StageShape> dag = {{"extract", 4, {}},
                                 {"left", 10, {"extract"}},
                                 {"right", 6, {"extract"}},
                                 {"join", 2, {"left", "right"}}};
  auto m = maxConcurrentContainers(dag);
  ASSERT_TRUE(m.isOk());
  EXPECT_EQ(*m, 16);
  dag[0].depends_on = {"join"};
  auto cyc = maxConcurrentContainers(dag);
  ASSERT_FALSE(cyc.isOk());
  EXPECT_NE(cyc.status().message().find("depends_on"), std::string::npos);
  auto unknown = maxConcurrentContainers({{"a", 1, {"zzz"}}});
  ASSERT_FALSE(unknown.isOk());
  EXPECT_NE(unknown.status().message().find("stages[0].depends_on"), std::string::npos);
}

// Headroom per type: short uses current, medium max(avg, current), long max(peak, current).
TEST(HarvestSelectionTest, HeadroomPerLengthType) {
  HarvestClass c;
  c.average = 0.3;
  c.peak = 0.8;
  EXPECT_DOUBLE_EQ(headroom(JobLength::kShort, c, 0.1), 0.9);
  EXPECT_DOUBLE_EQ(headroom(JobLength::kMedium, c, 0.1), 0.7);
  EXPECT_DOUBLE_EQ(headroom(JobLength::kMedium, c, 0.5), 0.5);
  EXPECT_NEAR(headroom(JobLength::kLong, c, 0.1), 0.2, 1e-12);
}

ClassState state(const std::string& id, UtilPattern p, double avg, double peak, double cur,
                 int64_t slots) {
  ClassState s;
  s.cls.id = id;
  s.cls.pattern = p;
  s.cls.average = avg;
  s.cls.peak = peak;
  s.current = cur;
  s.capacity_slots = slots;
  return s;
}

// Fitting classes are drawn by weight; a class that cannot hold the job is never drawn.
TEST(HarvestSelectionTest, ProbabilisticChoiceAmongFittingClasses) {
  SelectionOptions o;
  std::vector<ClassState> cs = {
      state("constant-0", UtilPattern::kConstant, 0.2, 0.3, 0.2, 100),
      state("periodic-0", UtilPattern::kPeriodic, 0.3, 0.6, 0.3, 100),
      state("unpredictable-0", UtilPattern::kUnpredictable, 0.5, 1.0, 0.5, 100)};
  // Long job, 50 containers: constant 70 slots, periodic 40, unpredictable 0 -> only constant.
  for (double d : {0.0, 0.5, 0.99}) {
    EXPECT_EQ(selectClasses(JobLength::kLong, 50, cs, o, d),
              std::vector<std::string>{"constant-0"});
  }
  // Medium job, 30 containers: periodic (w3) and constant (w2) fit, unpredictable (w1, 50 slots)
  // too.
  EXPECT_EQ(selectClasses(JobLength::kMedium, 30, cs, o, 0.0),
            std::vector<std::string>{"constant-0"});
  EXPECT_EQ(selectClasses(JobLength::kMedium, 30, cs, o, 0.5),
            std::vector<std::string>{"periodic-0"});
  EXPECT_EQ(selectClasses(JobLength::kMedium, 30, cs, o, 0.95),
            std::vector<std::string>{"unpredictable-0"});
}

// No single class holds the job: best-ranked classes combined; nothing fits: none.
TEST(HarvestSelectionTest, CombinesClassesOrNoneWhenNothingFits) {
  SelectionOptions o;
  std::vector<ClassState> cs = {state("constant-0", UtilPattern::kConstant, 0.2, 0.3, 0.2, 100),
                                state("periodic-0", UtilPattern::kPeriodic, 0.3, 0.6, 0.3, 100)};
  // Long: constant 70 + periodic 40 = 110 >= 100.
  EXPECT_EQ(selectClasses(JobLength::kLong, 100, cs, o, 0.3),
            (std::vector<std::string>{"constant-0", "periodic-0"}));
  EXPECT_TRUE(selectClasses(JobLength::kLong, 111, cs, o, 0.3).empty());
  auto c = harvestConstraint({"constant-0", "periodic-0"});
  ASSERT_TRUE(c.has_value());
  EXPECT_EQ(c->key, "harvest-class");
  EXPECT_FALSE(c->hard);
  EXPECT_FALSE(harvestConstraint({}).has_value());
}

// What other secondaries already hold counts in full against the headroom:
// long job, peak 0.6 of 100 slots = 40, 25 taken -> 15 free, a 20-wide job
// no longer fits the periodic class and goes to the constant one.
TEST(HarvestSelectionTest, SlotsTakenByOtherJobsLeaveTheHeadroom) {
  SelectionOptions o;
  o.weights[JobLength::kLong] = {{UtilPattern::kPeriodic, 3}, {UtilPattern::kConstant, 1}};
  ClassState periodic = state("periodic-0", UtilPattern::kPeriodic, 0.3, 0.6, 0.3, 100);
  ClassState constant = state("constant-0", UtilPattern::kConstant, 0.5, 0.5, 0.5, 100);
  EXPECT_EQ(freeSlots(JobLength::kLong, periodic), 40);
  periodic.taken_slots = 25;
  EXPECT_EQ(freeSlots(JobLength::kLong, periodic), 15);
  EXPECT_EQ(freeSlots(JobLength::kShort, periodic), 45);  // 70 - 25
  periodic.taken_slots = 90;
  EXPECT_EQ(freeSlots(JobLength::kLong, periodic), 0);
  periodic.taken_slots = 25;
  for (double d : {0.0, 0.9}) {
    EXPECT_EQ(selectClasses(JobLength::kLong, 20, {periodic, constant}, o, d),
              std::vector<std::string>{"constant-0"});
  }
  periodic.taken_slots = 0;
  EXPECT_EQ(selectClasses(JobLength::kLong, 20, {periodic, constant}, o, 0.0),
            std::vector<std::string>{"periodic-0"});
}

// Given per node, the free slots are whole containers per node: 30 nodes
// of 16 slots with a long headroom of 1 - 0.89 = 1.76 slots each, 1 taken
// by the reserve, hold no container (0.76 each); pooled, the class would
// count floor(0.11 x 480) - 30 = 22 slots and take a 20-wide long job that
// none of its nodes has room for.
TEST(HarvestSelectionTest, FreeSlotsCountWholeContainersPerNode) {
  SelectionOptions o;
  ClassState periodic = state("periodic-0", UtilPattern::kPeriodic, 0.6, 0.89, 0.6, 30 * 16);
  periodic.taken_slots = 30;
  ClassState constant = state("constant-0", UtilPattern::kConstant, 0.7, 0.7, 0.7, 10 * 16);
  constant.taken_slots = 10;
  EXPECT_EQ(freeSlots(JobLength::kLong, periodic), 22);  // pooled
  for (int i = 0; i < 30; i++) periodic.nodes.push_back({0.6, 16, 1});
  for (int i = 0; i < 10; i++) constant.nodes.push_back({0.7, 16, 1});
  EXPECT_EQ(freeSlots(JobLength::kLong, periodic), 0);
  EXPECT_EQ(freeSlots(JobLength::kLong, constant), 30);        // floor(0.3 x 16) - 1 = 3 per node
  EXPECT_EQ(freeSlots(JobLength::kMedium, periodic), 30 * 5);  // floor(0.4 x 16) - 1
  // Each node's own current: one node at 0.95 now has no short room left.
  periodic.nodes[0].current = 0.95;
  EXPECT_EQ(freeSlots(JobLength::kShort, periodic), 29 * 5);
  // A node over its headroom does not take room from the others.
  constant.nodes[0].taken_slots = 9;
  EXPECT_EQ(freeSlots(JobLength::kLong, constant), 27);
  o.weights[JobLength::kLong] = {{UtilPattern::kPeriodic, 3}, {UtilPattern::kConstant, 1}};
  for (double d : {0.0, 0.5, 0.99}) {
    EXPECT_EQ(selectClasses(JobLength::kLong, 20, {periodic, constant}, o, d),
              std::vector<std::string>{"constant-0"});
  }
}

// The ranked fallback, Algorithm 1's combining order node by node: the
// ranking weight for the job's length type first, then the most room under
// that type's headroom on a node that can take a container now; a class
// without such a node is left out. open_slots, when known (the NM's offer),
// says which nodes can take one.
TEST(HarvestSelectionTest, RankedFallbackOrdersByWeightThenHeadroom) {
  SelectionOptions o;  // long: constant 3, periodic 2, unpredictable 1
  ClassState bursty = state("unpredictable-0", UtilPattern::kUnpredictable, 0.2, 0.95, 0.1, 16);
  bursty.nodes = {{0.1, 16, 0}};  // long margin 16 x 0.05 = 0.8
  ClassState tight = state("constant-0", UtilPattern::kConstant, 0.7, 0.75, 0.7, 32);
  // Margins 0 (not open: floor(0.3 x 16) - 4 = 0) and 1 (open).
  tight.nodes = {{0.7, 16, 4}, {0.7, 16, 3}};
  ClassState roomy = state("constant-1", UtilPattern::kConstant, 0.3, 0.4, 0.3, 16);
  roomy.nodes = {{0.3, 16, 2}};  // margin 16 x 0.6 - 2 = 7.6
  ClassState wave = state("periodic-0", UtilPattern::kPeriodic, 0.3, 0.5, 0.3, 16);
  wave.nodes = {{0.3, 16, 0}};  // margin 8, but a lower weight
  ClassState full = state("constant-2", UtilPattern::kConstant, 0.1, 0.1, 0.1, 16);
  full.nodes = {{0.1, 16, 14}};  // floor(0.9 x 16) - 14 = 0 open
  const std::vector<ClassState> all = {bursty, tight, roomy, wave, full};
  EXPECT_EQ(
      rankedFallback(JobLength::kLong, all, o),
      (std::vector<std::string>{"constant-1", "constant-0", "periodic-0", "unpredictable-0"}));
  EXPECT_EQ(
      rankedFallback(JobLength::kShort, all, o),
      (std::vector<std::string>{"unpredictable-0", "periodic-0", "constant-1", "constant-0"}));
  EXPECT_DOUBLE_EQ(headroomMargin(JobLength::kLong, tight.cls, tight.nodes[0]), 0.0);
  EXPECT_NEAR(headroomMargin(JobLength::kLong, bursty.cls, bursty.nodes[0]), 0.8, 1e-9);
  EXPECT_NEAR(headroomMargin(JobLength::kLong, roomy.cls, roomy.nodes[0]), 7.6, 1e-9);
  EXPECT_EQ(openSlots(tight.nodes[0]), 0);
  EXPECT_EQ(openSlots(tight.nodes[1]), 1);
  // The NM's offer says roomy's node is full, tight's first node has room.
  std::vector<ClassState> offered = all;
  offered[2].nodes[0].open_slots = 0;
  offered[1].nodes[0].open_slots = 2;
  EXPECT_EQ(rankedFallback(JobLength::kLong, offered, o),
            (std::vector<std::string>{"constant-0", "periodic-0", "unpredictable-0"}));
  // Equal weights: the headroom alone; equal ranks by id.
  o.weights[JobLength::kLong] = {
      {UtilPattern::kPeriodic, 1}, {UtilPattern::kConstant, 1}, {UtilPattern::kUnpredictable, 1}};
  EXPECT_EQ(
      rankedFallback(JobLength::kLong, all, o),
      (std::vector<std::string>{"periodic-0", "constant-1", "constant-0", "unpredictable-0"}));
  ClassState twin = roomy;
  twin.cls.id = "constant-3";
  EXPECT_EQ(rankedFallback(JobLength::kLong, {twin, roomy}, o),
            (std::vector<std::string>{"constant-1", "constant-3"}));
  EXPECT_EQ(rankingWeight(o, JobLength::kLong, UtilPattern::kConstant), 1);
  o.weights[JobLength::kLong].erase(UtilPattern::kUnpredictable);
  EXPECT_EQ(rankingWeight(o, JobLength::kLong, UtilPattern::kUnpredictable), 0);
}

std::vector<StorageServer> grid() {
  // 9 servers, 3 reimage rates x 3 peak utilisations, 3 racks.
  std::vector<StorageServer> s;
  for (int r = 0; r < 3; r++)
    for (int u = 0; u < 3; u++)
      s.push_back({NodeId("s" + std::to_string(r) + std::to_string(u)), "rack" + std::to_string(u),
                   1.0 + 5.0 * r, 0.2 + 0.3 * u, 10});
  return s;
}

// Three replicas land in three different reimage classes and utilisation
// classes (and racks), reproducibly per block.
TEST(ReplicaPlacerTest, ReplicasSpreadAcrossBothClassDimensions) {
  auto p = ReplicaPlacer::create(grid(), {});
  ASSERT_TRUE(p.isOk());
  auto q = ReplicaPlacer::create(grid(), {});
  for (int b = 0; b < 20; b++) {
    Block blk{"blk" + std::to_string(b), 3};
    auto nodes = p->PlaceReplicas(blk);
    ASSERT_TRUE(nodes.isOk());
    ASSERT_EQ(nodes->size(), 3u);
    std::set<int> rc, uc;
    for (const auto& n : *nodes) {
      rc.insert(p->cellOf(n).first);
      uc.insert(p->cellOf(n).second);
    }
    EXPECT_EQ(rc.size(), 3u) << blk.id;
    EXPECT_EQ(uc.size(), 3u) << blk.id;
    EXPECT_EQ(*q->PlaceReplicas(blk), *nodes) << "same block, same seed: same servers";
  }
}

// Not enough servers with space: INFEASIBLE and no space taken; bad input named.
TEST(ReplicaPlacerTest, InfeasibleTakesNothingAndInputIsValidated) {
  auto servers = grid();
  for (auto& s : servers) s.free_blocks = 0;
  servers[0].free_blocks = 1;
  servers[1].free_blocks = 1;
  auto p = ReplicaPlacer::create(servers, {});
  ASSERT_TRUE(p.isOk());
  auto r = p->PlaceReplicas({"b", 3});
  ASSERT_FALSE(r.isOk());
  EXPECT_EQ(r.status().code(), StatusCode::kInfeasible);
  EXPECT_EQ(p->freeBlocks(servers[0].id), 1);
  auto two = p->PlaceReplicas({"b", 2});
  ASSERT_TRUE(two.isOk());
  EXPECT_EQ(p->freeBlocks(servers[0].id), 0);
  EXPECT_FALSE(p->PlaceReplicas({"", 1}).isOk());
  servers[3].id = servers[2].id;
  auto dup = ReplicaPlacer::create(servers, {});
  ASSERT_FALSE(dup.isOk());
  EXPECT_NE(dup.status().message().find("servers[3].id"), std::string::npos);
}

// Best-first puts every replica on the calmest servers; random on distinct ones.
TEST(ReplicaPlacerTest, BaselinesBestFirstAndRandom) {
  auto s = grid();
  auto best = placeBestFirst(s, {"b", 3});
  ASSERT_TRUE(best.isOk());
  EXPECT_EQ((*best)[0].value(), "s00");
  EXPECT_EQ((*best)[1].value(), "s01");
  auto rnd = placeRandom(s, {"b", 3}, 42);
  ASSERT_TRUE(rnd.isOk());
  EXPECT_EQ(std::set<NodeId>(rnd->begin(), rnd->end()).size(), 3u);
}

// ---- The hold's prediction (harvest_forecast.h) ----

// A constant or unpredictable tenant: the current share plus the rise its
// history shows over the run's span at the quantile. Every other step of
// the history jumps from 0.1 to 0.9, so half the one-step windows rise 0.8
// and the rest not at all: the 0.9 quantile plans for the jump, the 0.4
// quantile does not. A run within the current step spans no step: no rise.
TEST(TenantForecastTest, NonPeriodicAddsTheHistorysRiseAtTheQuantile) {
  std::vector<double> h;
  for (int i = 0; i < 40; i++) h.push_back(i % 2 == 0 ? 0.1 : 0.9);
  const TimePoint start = fromEpochMs(0);
  const TimePoint now = start + 100min;  // the start of a step
  TenantForecast f(h, start, 1min, 0.9);
  EXPECT_NEAR(f.share(UtilPattern::kConstant, 0.1, now, 2min), 0.9, 1e-9);
  EXPECT_NEAR(f.share(UtilPattern::kUnpredictable, 0.1, now, 2min), 0.9, 1e-9);
  EXPECT_DOUBLE_EQ(f.share(UtilPattern::kConstant, 0.1, now, 1min), 0.1);
  EXPECT_DOUBLE_EQ(f.share(UtilPattern::kConstant, 0.5, now, 30min), 1.0);  // capped
  TenantForecast low(h, start, 1min, 0.4);
  EXPECT_DOUBLE_EQ(low.share(UtilPattern::kConstant, 0.1, now, 2min), 0.1);
  // A flat history predicts what the primary uses now.
  TenantForecast flat(std::vector<double>(40, 0.3), start, 1min, 0.9);
  EXPECT_DOUBLE_EQ(flat.share(UtilPattern::kConstant, 0.6, now, 20min), 0.6);
}

// A periodic tenant: the largest share its history shows over the run's
// times of day (or what it uses now, if more). Two days of 5-minute steps
// at 0.2 but for 12:00-13:00 at 0.8: a run from 11:00 that reaches noon
// plans for 0.8, one that ends before it does not, and a run from 23:30
// crossing midnight reads the next morning.
TEST(TenantForecastTest, PeriodicTakesTheLargestShareOverTheSameTimesOfDay) {
  std::vector<double> h;
  for (int i = 0; i < 2 * 288; i++) h.push_back(i % 288 >= 144 && i % 288 < 156 ? 0.8 : 0.2);
  const TimePoint midnight = fromEpochMs(1800000000000 - 1800000000000 % 86400000);
  TenantForecast f(h, midnight, 5min, 0.9);
  const TimePoint day3 = midnight + 72h;
  EXPECT_DOUBLE_EQ(f.share(UtilPattern::kPeriodic, 0.1, day3 + 11h, 90min), 0.8);
  EXPECT_DOUBLE_EQ(f.share(UtilPattern::kPeriodic, 0.1, day3 + 11h, 55min), 0.2);
  EXPECT_DOUBLE_EQ(f.share(UtilPattern::kPeriodic, 0.5, day3 + 11h, 55min), 0.5);
  EXPECT_DOUBLE_EQ(f.share(UtilPattern::kPeriodic, 0.1, day3 + 23h + 30min, 13h), 0.8);
  EXPECT_DOUBLE_EQ(f.share(UtilPattern::kPeriodic, 0.1, day3 + 23h + 30min, 2h), 0.2);
  // The same tenant read as constant adds its largest rise at the quantile.
  EXPECT_DOUBLE_EQ(f.share(UtilPattern::kConstant, 0.2, day3 + 11h, 55min), 0.2);
}

// The margin counts the node's containers until their expected ends: a
// node of 10 containers, 1 taken for the whole run, a tenant predicted at
// 0.5 over any span and two containers ending after 10 and 20 minutes
// leaves 10 x 0.5 - 1 - 2 = 2 at first; one ending later than the run
// counts for all of it.
TEST(TenantForecastTest, MarginCountsContainersUntilTheirExpectedEnds) {
  TenantForecast f(std::vector<double>(20, 0.5), fromEpochMs(0), 1min, 0.9);
  const TimePoint now = fromEpochMs(0) + 60min;
  EXPECT_DOUBLE_EQ(
      predictedMargin(f, UtilPattern::kConstant, 0.5, 10, 1, {10min, 20min}, now, 30min), 2.0);
  EXPECT_DOUBLE_EQ(predictedMargin(f, UtilPattern::kConstant, 0.5, 10, 1, {}, now, 30min), 4.0);
  EXPECT_DOUBLE_EQ(
      predictedMargin(f, UtilPattern::kConstant, 0.5, 10, 1, {40min, 40min}, now, 30min), 2.0);
  // A rising tenant: the margin is the least over the run, at its end.
  std::vector<double> h;
  for (int i = 0; i < 40; i++) h.push_back(i % 2 == 0 ? 0.1 : 0.6);
  TenantForecast rising(h, fromEpochMs(0), 1min, 1.0);
  EXPECT_NEAR(predictedMargin(rising, UtilPattern::kConstant, 0.1, 10, 0, {}, now, 5min), 4.0,
              1e-9);
  EXPECT_NEAR(predictedMargin(rising, UtilPattern::kConstant, 0.1, 10, 0, {}, now, 1min), 9.0,
              1e-9);
}

}  // namespace
}  // namespace morpheus::rm
