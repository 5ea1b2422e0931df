// Unit tests of fitSkylineToWindow (Morpheus §5/§6): a skyline longer than
// its window becomes higher and shorter with the same area, front-loaded.
#include "inference/model/skyline_reshape.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>

namespace morpheus::inference {
namespace {

int64_t area(const std::vector<int64_t>& s) {
  return std::accumulate(s.begin(), s.end(), int64_t{0});
}

// A skyline that already fits its window is returned as it is.
TEST(SkylineReshapeTest, FittingSkylineIsUnchanged) {
  std::vector<int64_t> s{3, 1, 2};
  EXPECT_EQ(*fitSkylineToWindow(s, 3, 1), s);
  EXPECT_EQ(*fitSkylineToWindow(s, 10, 1), s);
}

// Halving the time doubles the height: same area, half as long.
TEST(SkylineReshapeTest, HalvedWindowDoublesTheHeight) {
  EXPECT_EQ(*fitSkylineToWindow({4, 4, 4, 4}, 2, 100), (std::vector<int64_t>{8, 8}));
  EXPECT_EQ(*fitSkylineToWindow({5, 1, 2, 6}, 2, 100), (std::vector<int64_t>{8, 6}));
}

// A history that started slowly (low early, high late: runs that waited for
// capacity) comes out front-loaded: the same steps, highest first, as a DAG
// running at full speed is widest early.
TEST(SkylineReshapeTest, LateBulkComesOutFrontLoaded) {
  // Stretched {2, 2, 8, 8}.
  EXPECT_EQ(*fitSkylineToWindow({1, 1, 1, 1, 4, 4, 4, 4}, 4, 100),
            (std::vector<int64_t>{8, 8, 2, 2}));
  // A skyline that fits its window keeps its shape: only a compressed one's
  // profile is what the waiting showed.
  EXPECT_EQ(*fitSkylineToWindow({1, 4}, 2, 100), (std::vector<int64_t>{1, 4}));
}

// The in-order compression (the alternative when the plan has no room for
// the front-loaded one) keeps the phases where the runs had them.
TEST(SkylineReshapeTest, InOrderCompressionKeepsThePhases) {
  EXPECT_EQ(*compressSkylineToWindow({1, 1, 1, 1, 4, 4, 4, 4}, 4, 100),
            (std::vector<int64_t>{2, 2, 8, 8}));
  EXPECT_EQ(*compressSkylineToWindow({0, 2, 8, 8}, 2, 10), (std::vector<int64_t>{8, 10}));
  EXPECT_EQ(*compressSkylineToWindow({1, 4}, 2, 100), (std::vector<int64_t>{1, 4}));
  EXPECT_EQ(compressSkylineToWindow({6, 6, 6, 6}, 2, 10).status().code(), StatusCode::kInfeasible);
}

// Uneven compression (3 steps into 2): each step takes its share of the time
// axis, rounded up to whole containers, so no area is lost.
TEST(SkylineReshapeTest, UnevenCompressionRoundsUp) {
  // step 0 covers [0, 1.5): 3 + 0.5*1 = 3.5; step 1 covers [1.5, 3): 0.5*1 + 2 = 2.5.
  auto out = fitSkylineToWindow({3, 1, 2}, 2, 100);
  ASSERT_TRUE(out.isOk()) << out.status().message();
  EXPECT_EQ(*out, (std::vector<int64_t>{4, 3}));
  EXPECT_GE(area(*out), 6);
}

// A step above the job's parallelism is capped; its excess runs later.
TEST(SkylineReshapeTest, ParallelismCapSpillsToLaterSteps) {
  // Stretched {16, 2}; capped at 10, the 6 left over go to step 1.
  EXPECT_EQ(*fitSkylineToWindow({8, 8, 0, 2}, 2, 10), (std::vector<int64_t>{10, 8}));
  // Excess at the last step goes back to earlier steps with room (stretched
  // {2, 16}, capped {8, 10}, then front-loaded).
  EXPECT_EQ(*fitSkylineToWindow({0, 2, 8, 8}, 2, 10), (std::vector<int64_t>{10, 8}));
}

// The skyline's own peak is never cut, even above max_parallelism.
TEST(SkylineReshapeTest, OwnPeakAboveParallelismIsKept) {
  EXPECT_EQ(*fitSkylineToWindow({20, 0, 0, 0}, 2, 5), (std::vector<int64_t>{20, 0}));
}

// Area beyond window x parallelism cannot be placed: INFEASIBLE, naming the window.
TEST(SkylineReshapeTest, AreaBeyondWindowTimesParallelismIsInfeasible) {
  auto out = fitSkylineToWindow({6, 6, 6, 6}, 2, 10);
  ASSERT_FALSE(out.isOk());
  EXPECT_EQ(out.status().code(), StatusCode::kInfeasible);
  EXPECT_NE(out.status().message().find("window_steps"), std::string::npos);
  EXPECT_EQ(*fitSkylineToWindow({6, 6, 6, 6}, 2, 12), (std::vector<int64_t>{12, 12}));
}

// Bad inputs name their field.
TEST(SkylineReshapeTest, BadInputsNameTheField) {
  EXPECT_NE(fitSkylineToWindow({1}, 0, 1).status().message().find("window_steps"),
            std::string::npos);
  EXPECT_NE(fitSkylineToWindow({1}, 1, 0).status().message().find("max_parallelism"),
            std::string::npos);
  EXPECT_NE(fitSkylineToWindow({1, -1}, 1, 1).status().message().find("skyline[1]"),
            std::string::npos);
}

// Random skylines: the result fits the window, never loses area, gains less
// than one container per step (rounding), respects the cap and, when
// compressed, is non-increasing.
TEST(SkylineReshapeTest, RandomSkylinesKeepAreaWithinRounding) {
  uint64_t x = 12345;
  auto next = [&x] {
    x = x * 6364136223846793005ULL + 1442695040888963407ULL;
    return static_cast<int64_t>(x >> 33);
  };
  for (int n = 0; n < 300; n++) {
    std::vector<int64_t> s(static_cast<size_t>(1 + next() % 60));
    for (auto& v : s) v = next() % 30;
    const int64_t w = 1 + next() % static_cast<int64_t>(s.size());
    const int64_t cap = 1 + next() % 200;
    auto out = fitSkylineToWindow(s, w, cap);
    if (!out.isOk()) {
      EXPECT_GT(area(s), w * std::max(cap, *std::max_element(s.begin(), s.end())));
      continue;
    }
    const int64_t peak = std::max(cap, *std::max_element(s.begin(), s.end()));
    EXPECT_LE(static_cast<int64_t>(out->size()), w);
    EXPECT_GE(area(*out), area(s));
    EXPECT_LT(area(*out), area(s) + static_cast<int64_t>(out->size()));
    for (int64_t v : *out) EXPECT_LE(v, peak);
    if (static_cast<int64_t>(s.size()) > w) {
      EXPECT_TRUE(std::is_sorted(out->rbegin(), out->rend()));
    }
  }
}

}  // namespace
}  // namespace morpheus::inference
