// Unit tests of the skyline LP (Morpheus §5): hand-checked optima, properties,
// the fast solver against the GLPK reference, resampling and fitRuns.
#include "inference/model/skyline_fit.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <numeric>
#include <random>

namespace morpheus::inference {
namespace {

SkylineProblem problem(std::vector<std::vector<double>> runs, double alpha, double beta,
                       bool relative) {
  SkylineProblem p;
  p.runs = std::move(runs);
  p.alpha = alpha;
  p.beta = beta;
  p.beta_relative = relative;
  return p;
}

double relGap(double a, double b) { return std::fabs(a - b) / std::max(1.0, std::fabs(b)); }

double area(const std::vector<double>& s) { return std::accumulate(s.begin(), s.end(), 0.0); }

store::RunRecord run(Millis step, std::vector<double> skyline) {
  store::RunRecord r;
  r.step = step;
  r.skyline = std::move(skyline);
  return r;
}

// Both solvers on the same problem.
std::vector<SkylineSolution> solveBoth(const SkylineProblem& p) {
  auto fast = solveSkyline(p);
  auto ref = solveSkylineReference(p);
  EXPECT_TRUE(fast.isOk()) << fast.status().toString();
  EXPECT_TRUE(ref.isOk()) << ref.status().toString();
  if (!fast.isOk() || !ref.isOk()) return {};
  return {fast.value(), ref.value()};
}

// The debt term is the Lindley recursion: D_iK = max(0, max_j suffix sum of s_ik - s_k).
TEST(SkylineEvaluateTest, TermsFollowTheDefinitions) {
  auto p = problem({{4, 0, 2}, {1, 3}}, 0.3, 0.5, false);
  // s = (2, 2, 2); run 1: over 0+2+0 = 2, shortfall 2+0+0 = 2, debt (2 -> 0 -> 0) = 0;
  // run 2 (padded to 1, 3, 0): over 1+0+2 = 3, shortfall 0+1+0 = 1, debt (0 -> 1 -> 0) = 0.
  auto e = evaluateSkyline(p, {2, 2, 2}, 0.5);
  EXPECT_DOUBLE_EQ(e.over_allocation, (2.0 + 3.0) / 2);
  EXPECT_DOUBLE_EQ(e.under_allocation, 0.0);
  EXPECT_DOUBLE_EQ(e.epsilon, (2.0 / 6 + 1.0 / 4) / 2);
  EXPECT_DOUBLE_EQ(e.objective, 0.3 * 2.5 + 0.5 * e.epsilon);
  // s = (0, 1, 0): run 1 debt 4 -> 3 -> 5; run 2 debt 1 -> 3 -> 3.
  auto f = evaluateSkyline(p, {0, 1, 0}, 0.0);
  EXPECT_DOUBLE_EQ(f.under_allocation, (5.0 + 3.0) / 2);
}

// A single run is reproduced exactly (zero objective) by both solvers.
TEST(SkylineSolveTest, OneRunGivesItself) {
  std::vector<double> x = {3, 0, 5, 5, 1, 7};
  for (bool relative : {true, false}) {
    auto both = solveBoth(problem({x}, 0.5, 0.1, relative));
    ASSERT_EQ(both.size(), 2u);
    for (const auto& sol : both) {
      ASSERT_EQ(sol.s.size(), x.size());
      for (size_t k = 0; k < x.size(); ++k) EXPECT_NEAR(sol.s[k], x[k], 1e-7) << "k=" << k;
      EXPECT_NEAR(sol.objective, 0.0, 1e-9);
    }
  }
}

// One step, runs {0} and {2}, alpha = 0.25, beta = 0:
//   f(s) = 0.25 * (s + (s-2)+)/2 + 0.75 * ((2-s)+)/2.
// On [0, 2] f = 0.75 - 0.25 s, beyond 2 it grows: s = 2, A_o = 1, A_u = 0, f = 0.25.
TEST(SkylineSolveTest, TwoRunsOneStepHandOptimum) {
  auto both = solveBoth(problem({{0}, {2}}, 0.25, 0.0, false));
  ASSERT_EQ(both.size(), 2u);
  for (const auto& sol : both) {
    ASSERT_EQ(sol.s.size(), 1u);
    EXPECT_NEAR(sol.s[0], 2.0, 1e-7);
    EXPECT_NEAR(sol.over_allocation, 1.0, 1e-7);
    EXPECT_NEAR(sol.under_allocation, 0.0, 1e-7);
    EXPECT_NEAR(sol.objective, 0.25, 1e-7);
  }
}

// Debt carries over: runs a = (4, 0) and b = (0, 4), alpha = 0.4, beta = 0.
//   A_o = ((s1-4)+ + s2 + s1 + (s2-4)+)/2,  debt a = (4-s1-s2)+,  debt b = (4-s2)+.
// Region s1+s2 <= 4: f = 2.4 - 0.1 s1 - 0.4 s2; region s1+s2 >= 4, s <= 4:
// f = 1.2 + 0.2 s1 - 0.1 s2; beyond s2 = 4 f grows. Unique optimum s = (0, 4):
// the late reservation repays run a's early debt. A_o = 2, A_u = 0, f = 0.8.
TEST(SkylineSolveTest, DebtIsRepaidByLaterSteps) {
  auto both = solveBoth(problem({{4, 0}, {0, 4}}, 0.4, 0.0, false));
  ASSERT_EQ(both.size(), 2u);
  for (const auto& sol : both) {
    ASSERT_EQ(sol.s.size(), 2u);
    EXPECT_NEAR(sol.s[0], 0.0, 1e-7);
    EXPECT_NEAR(sol.s[1], 4.0, 1e-7);
    EXPECT_NEAR(sol.over_allocation, 2.0, 1e-7);
    EXPECT_NEAR(sol.under_allocation, 0.0, 1e-7);
    EXPECT_NEAR(sol.objective, 0.8, 1e-7);
  }
}

// Relative mode: beta_eff = beta * V where V is the optimum without the beta term.
TEST(SkylineSolveTest, RelativeBetaScalesByFirstOptimum) {
  // Same instance as DebtIsRepaidByLaterSteps: V = 0.8.
  auto both = solveBoth(problem({{4, 0}, {0, 4}}, 0.4, 0.1, true));
  ASSERT_EQ(both.size(), 2u);
  for (const auto& sol : both) {
    EXPECT_NEAR(sol.v, 0.8, 1e-7);
    EXPECT_NEAR(sol.beta_effective, 0.08, 1e-8);
  }
  auto abs = solveSkyline(problem({{4, 0}, {0, 4}}, 0.4, 0.1, false));
  ASSERT_TRUE(abs.isOk());
  EXPECT_EQ(abs->v, 0.0);
  EXPECT_EQ(abs->beta_effective, 0.1);
}

std::vector<std::vector<double>> randomRuns(std::mt19937_64& rng, int n, int k) {
  std::uniform_int_distribution<int> len(std::max(1, k / 2), k), val(0, 20), zero(0, 9);
  std::vector<std::vector<double>> runs(n);
  for (auto& r : runs) {
    r.resize(len(rng));
    bool idle = zero(rng) == 0;  // a run that used nothing (S_i = 0)
    for (double& v : r) v = idle ? 0.0 : (zero(rng) < 2 ? 0.0 : val(rng));
  }
  return runs;
}

// Raising alpha weighs over-allocation more: A_o does not grow and A_u does not
// shrink (exchange argument on the two optima); the skyline gets smaller.
TEST(SkylinePropertyTest, HigherAlphaGivesTighterSkyline) {
  const uint64_t seed = 20240611;
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937_64 rng(seed);
  for (int t = 0; t < 5; ++t) {
    auto runs = randomRuns(rng, 8, 24);
    auto lo = solveSkyline(problem(runs, 0.1, 0.0, false));
    auto hi = solveSkyline(problem(runs, 0.9, 0.0, false));
    ASSERT_TRUE(lo.isOk() && hi.isOk());
    EXPECT_LE(hi->over_allocation, lo->over_allocation + 1e-9);
    EXPECT_GE(hi->under_allocation, lo->under_allocation - 1e-9);
    EXPECT_LT(area(hi->s), area(lo->s));
  }
}

// s >= 0, reported terms equal evaluateSkyline(s), and the fast method matches
// the reference optimum within 1e-6 relative, in both beta modes.
TEST(SkylinePropertyTest, FastMatchesReferenceOnRandomInstances) {
  const uint64_t seed = 987654321;
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<int> nd(1, 10), kd(1, 48);
  std::uniform_real_distribution<double> ad(0.0, 1.0), bd(0.0, 2.0);
  for (int t = 0; t < 30; ++t) {
    const int n = nd(rng), k = kd(rng);
    double alpha = t == 0 ? 0.0 : t == 1 ? 1.0 : ad(rng);
    auto p = problem(randomRuns(rng, n, k), alpha, bd(rng), t % 2 == 0);
    SCOPED_TRACE("instance " + std::to_string(t) + " n=" + std::to_string(n) +
                 " k=" + std::to_string(k) + " alpha=" + std::to_string(alpha));
    auto both = solveBoth(p);
    ASSERT_EQ(both.size(), 2u);
    const auto& fast = both[0];
    const auto& ref = both[1];
    for (double v : fast.s) EXPECT_GE(v, 0.0);
    auto e = evaluateSkyline(p, fast.s, fast.beta_effective);
    EXPECT_DOUBLE_EQ(fast.objective, e.objective);
    EXPECT_DOUBLE_EQ(fast.over_allocation, e.over_allocation);
    EXPECT_DOUBLE_EQ(fast.under_allocation, e.under_allocation);
    EXPECT_DOUBLE_EQ(fast.epsilon, e.epsilon);
    EXPECT_LE(relGap(fast.v, ref.v), 1e-6);
    EXPECT_LE(relGap(fast.objective, ref.objective), 1e-6)
        << "fast " << fast.objective << " reference " << ref.objective;
  }
}

TEST(SkylineSolveTest, InvalidInputsNameTheField) {
  auto bad = [](SkylineProblem p, const std::string& field) {
    for (auto r : {solveSkyline(p), solveSkylineReference(p)}) {
      ASSERT_FALSE(r.isOk());
      EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
      EXPECT_NE(r.status().message().find(field), std::string::npos) << r.status().toString();
    }
  };
  bad(problem({{1}}, 1.5, 0.1, true), "alpha");
  bad(problem({{1}}, std::nan(""), 0.1, true), "alpha");
  bad(problem({{1}}, 0.5, -0.1, true), "beta");
  bad(problem({{1, -2}}, 0.5, 0.1, true), "runs[0][1]");
  bad(problem({{1}, {std::nan("")}}, 0.5, 0.1, true), "runs[1][0]");
  bad(problem({}, 0.5, 0.1, true), "runs");
}

// 60 s samples to 120 s steps: the last step is half covered and averages with zeros.
TEST(SkylineResampleTest, AverageOverNonMultipleSteps) {
  auto r = run(Millis(60000), {2, 4, 6});
  EXPECT_EQ(resample(r, Millis(120000), SampleMode::kAverage), (std::vector<double>{3, 3}));
  EXPECT_EQ(resample(r, Millis(120000), SampleMode::kMax), (std::vector<double>{4, 6}));
  // 90 s steps: [0,90) = (2*60 + 4*30)/90, [90,180) = (4*30 + 6*60)/90.
  auto a = resample(r, Millis(90000), SampleMode::kAverage);
  ASSERT_EQ(a.size(), 2u);
  EXPECT_DOUBLE_EQ(a[0], 240.0 / 90);
  EXPECT_DOUBLE_EQ(a[1], 480.0 / 90);
  EXPECT_EQ(resample(r, Millis(90000), SampleMode::kMax), (std::vector<double>{4, 6}));
}

TEST(SkylineResampleTest, FinerStepRepeatsSamples) {
  auto r = run(Millis(120000), {5, 1});
  EXPECT_EQ(resample(r, Millis(60000), SampleMode::kAverage), (std::vector<double>{5, 5, 1, 1}));
  EXPECT_EQ(resample(r, Millis(60000), SampleMode::kMax), (std::vector<double>{5, 5, 1, 1}));
  EXPECT_TRUE(resample(run(Millis(60000), {}), Millis(60000), SampleMode::kAverage).empty());
  EXPECT_TRUE(resample(r, Millis(0), SampleMode::kAverage).empty());
}

TEST(SkylineFitTest, TooFewRunsIsInvalid) {
  FitParams params;
  params.min_runs = 3;
  auto r = fitRuns({run(Millis(60000), {1}), run(Millis(60000), {2})}, params);
  ASSERT_FALSE(r.isOk());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(r.status().message(), "runs: need at least 3 runs, got 2");
}

// Identical runs: the LP optimum is the run itself; the skyline rounds it up
// to whole containers, ignoring round-off just above an integer.
TEST(SkylineFitTest, RoundsTheOptimumUp) {
  FitParams params;
  params.step = Millis(60000);
  std::vector<store::RunRecord> runs(3, run(Millis(30000), {1, 2, 2, 2, 3, 3 + 1e-12}));
  auto r = fitRuns(runs, params);
  ASSERT_TRUE(r.isOk()) << r.status().toString();
  EXPECT_EQ(r->skyline, (std::vector<int64_t>{2, 2, 3}));
  EXPECT_EQ(r->runs_used, 3);
  EXPECT_NEAR(r->objective, 0.0, 1e-9);
  EXPECT_NEAR(r->over_allocation, 0.0, 1e-9);
}

TEST(SkylineFitTest, InvalidParamsNameTheField) {
  FitParams params;
  std::vector<store::RunRecord> runs(3, run(Millis(60000), {1, 2}));
  params.alpha = -0.1;
  EXPECT_NE(fitRuns(runs, params).status().message().find("alpha"), std::string::npos);
  params.alpha = 0.5;
  params.step = Millis(0);
  EXPECT_NE(fitRuns(runs, params).status().message().find("step"), std::string::npos);
  params.step = Millis(60000);
  runs[1].skyline[0] = -1;
  auto r = fitRuns(runs, params);
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("runs[1].skyline[0]"), std::string::npos);
}

// max_samples is checked on the runs' lengths before anything is resampled:
// a run of one sample lasting 10^15 ms at a 1 ms step is refused at once
// naming the caller's step field, not allocated.
TEST(SkylineFitTest, MaxSamplesRefusesBeforeResampling) {
  FitParams params;
  params.step = Millis(1);
  params.max_samples = 1000;
  params.step_field = "step_ms";
  std::vector<store::RunRecord> runs(3, run(Millis(int64_t{1000000000000000}), {1}));
  auto r = fitRuns(runs, params);
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(r.status().message().rfind("step_ms: ", 0), 0u) << r.status().message();
  EXPECT_NE(r.status().message().find("skyline.max-fit-samples"), std::string::npos)
      << r.status().message();
  params.step = Millis(60000);
  std::vector<store::RunRecord> fits(3, run(Millis(60000), std::vector<double>(334, 2)));
  EXPECT_FALSE(fitRuns(fits, params).isOk()) << "3 x 334 samples exceed 1000, 3 x 333 do not";
  fits.assign(3, run(Millis(60000), std::vector<double>(333, 2)));
  EXPECT_TRUE(fitRuns(fits, params).isOk());
}

// A fit polls its stop check and ends with the check's status.
TEST(SkylineFitTest, AStopCheckEndsTheFit) {
  FitParams params;
  int polls = 0;
  params.stop = [&polls]() -> Status {
    ++polls;
    return unavailable("stopping");
  };
  std::vector<store::RunRecord> runs(3, run(Millis(60000), {1, 2, 3, 2, 1}));
  auto r = fitRuns(runs, params);
  EXPECT_EQ(r.status().code(), StatusCode::kUnavailable) << r.status().toString();
  EXPECT_EQ(r.status().message(), "stopping");
  EXPECT_GE(polls, 1);
  params.stop = [] { return Status::ok(); };
  EXPECT_TRUE(fitRuns(runs, params).isOk());
}

}  // namespace
}  // namespace morpheus::inference
