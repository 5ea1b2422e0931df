// Unit tests for the DRA review arithmetic the RM's DraMonitor and
// ReservationManager and morpheus-sim share (reprovision/review.h).
#include <gtest/gtest.h>

#include "reprovision/review.h"

namespace morpheus::reprovision {
namespace {

TimePoint at(int64_t s) { return fromEpochMs(s * 1000); }

// A grant's unexpired part is refunded while it runs, nothing once it lapsed.
TEST(ReviewBudgetTest, GrantRefundsItsUnexpiredPart) {
  const Grant g{3, at(100)};
  EXPECT_TRUE(g.activeAt(at(40)));
  EXPECT_EQ(g.refundAt(at(40)), 3 * 60000);
  EXPECT_FALSE(g.activeAt(at(100)));
  EXPECT_EQ(g.refundAt(at(100)), 0);
  EXPECT_EQ(g.refundAt(at(130)), 0);
  EXPECT_EQ((Grant{0, at(100)}).refundAt(at(40)), 0);
}

// The budget is per instance: what instance 4 used does not count against
// instance 5; the active grant's refund counts as given back.
TEST(ReviewBudgetTest, RemainingIsPerInstanceWithTheRefund) {
  const InstanceBudget b{100000, 70000, 4};
  EXPECT_EQ(b.remaining(4, 0), 30000);
  EXPECT_EQ(b.remaining(4, 5000), 35000);
  EXPECT_EQ(b.remaining(5, 0), 100000);
  EXPECT_EQ((InstanceBudget{100000, 120000, 4}).remaining(4, 0), 0);
}

// A swap: the replaced grant's unexpired part is refunded before pricing,
// the request is capped at what the budget affords, what the planner placed
// is charged and becomes the grant.
TEST(ReviewBudgetTest, SwapRefundsCapsAndCharges) {
  InstanceBudget b{600000, 300000, 2};
  Grant g{2, at(30)};  // 2 x 20 s left at t = 10 s: 40000 refunded
  const Millis minute(60000);
  SwapQuote q = quoteSwap(b, g, 2, 10, minute, at(10));
  EXPECT_EQ(q.refund, 40000);
  EXPECT_EQ(q.affordable, (600000 - 300000 + 40000) / 60000);  // 5
  EXPECT_EQ(q.want, 5);
  settleSwap(b, g, q, 4, minute, at(10));  // the plan had room for 4
  EXPECT_EQ(b.used_container_ms, 300000 - 40000 + 4 * 60000);
  EXPECT_EQ(g.count, 4);
  EXPECT_EQ(g.until, at(70));
  // Nothing placed: the grant ends, its refund still counted.
  q = quoteSwap(b, g, 2, 1, minute, at(40));
  settleSwap(b, g, q, 0, minute, at(40));
  EXPECT_FALSE(g.activeAt(at(40)));
  EXPECT_EQ(b.used_container_ms, 500000 - 4 * 30000);
}

// A new instance starts with the whole budget; a request the budget cannot
// afford at all wants nothing.
TEST(ReviewBudgetTest, NewInstanceStartsUnspentAndExhaustedWantsNothing) {
  InstanceBudget b{120000, 120000, 1};
  const Grant none;
  SwapQuote q = quoteSwap(b, none, 1, 3, Millis(60000), at(0));
  EXPECT_EQ(q.want, 0);
  EXPECT_EQ(b.instance, 1);
  q = quoteSwap(b, none, 2, 3, Millis(60000), at(0));
  EXPECT_EQ(b.instance, 2);
  EXPECT_EQ(b.used_container_ms, 0);
  EXPECT_EQ(q.want, 2);
}

// Releasing gives the unexpired part back and ends the grant; the use never
// goes below zero.
TEST(ReviewBudgetTest, ReleaseRefundsAndEnds) {
  InstanceBudget b{600000, 180000, 0};
  Grant g{3, at(60)};
  releaseGrant(b, g, at(20));
  EXPECT_EQ(b.used_container_ms, 180000 - 3 * 40000);
  EXPECT_FALSE(g.activeAt(at(20)));
  InstanceBudget small{600000, 1000, 0};
  Grant big{3, at(60)};
  releaseGrant(small, big, at(0));
  EXPECT_EQ(small.used_container_ms, 0);
}

class FixedPolicy final : public ReprovisionPolicy {
 public:
  std::string name() const override { return "fixed"; }
  std::optional<ReprovisionDecision> decide(const ReprovisionInput& in) const override {
    if (in.pending_containers == 0) return std::nullopt;
    return ReprovisionDecision{in.pending_containers, Millis(60000), "fixed", 42};
  }
};

// The input counts in containers of the unit; the progress sums add up over
// the reviews of one instance and restart at the next, as does the
// allocation passed back.
TEST(ReviewInputTest, CountsInUnitsAndKeepsProgressPerInstance) {
  const Resource unit(1024, 1);
  auto view = [&](int64_t instance, int64_t used, int64_t pending) {
    ReviewView v;
    v.unit = unit;
    v.used = unit * used;
    v.am = unit;
    v.pending = unit * pending;
    v.planned_now = unit * 4;
    v.extra_now = unit * 2;
    v.planned_recent = {unit * 3, Resource(1536, 1)};  // 1.5 units of memory: 2
    v.instance = instance;
    v.deadline = at(3600);
    v.budget_remaining_container_ms = 777;
    return v;
  };
  const Millis step(60000);
  ReviewState st;
  FixedPolicy p;
  ReprovisionInput in = reviewInput(ReservationId("r"), at(60), step, Millis(0), view(7, 5, 3), st);
  EXPECT_EQ(in.used_containers, 5);
  EXPECT_EQ(in.am_containers, 1);
  EXPECT_EQ(in.pending_containers, 3);
  EXPECT_EQ(in.skyline_now, 4);
  EXPECT_EQ(in.extra_now, 2);
  EXPECT_EQ(in.skyline_recent, (std::vector<int64_t>{3, 2}));
  EXPECT_EQ(in.budget_remaining_container_ms, 777);
  EXPECT_EQ(in.deadline, at(3600));
  EXPECT_EQ(in.step, step);
  EXPECT_EQ(in.previous_allocation, 0);
  EXPECT_EQ(in.used_container_ms_so_far, 5 * 60000);
  EXPECT_EQ(in.guaranteed_container_ms_so_far, 6 * 60000);
  ASSERT_TRUE(decideReview(p, in, st).has_value());
  EXPECT_EQ(st.allocation, 42);

  in = reviewInput(ReservationId("r"), at(120), step, Millis(0), view(7, 7, 0), st);
  EXPECT_EQ(in.previous_allocation, 42);
  EXPECT_EQ(in.used_container_ms_so_far, 12 * 60000);
  EXPECT_EQ(in.guaranteed_container_ms_so_far, 12 * 60000);
  EXPECT_FALSE(decideReview(p, in, st).has_value());
  EXPECT_EQ(st.allocation, 0);

  st.allocation = 9;
  in = reviewInput(ReservationId("r"), at(180), step, Millis(0), view(8, 1, 1), st);
  EXPECT_EQ(in.previous_allocation, 0);
  EXPECT_EQ(in.used_container_ms_so_far, 60000);
  EXPECT_EQ(st.instance, 8);
}

// With an ahead window the progress sums cover its last reviews only: a job
// far ahead early (10 used against 2 guaranteed) that then uses less than its
// guarantee is judged on the later reviews once the early ones leave the
// window; with no window it stays ahead for the whole instance.
TEST(ReviewInputTest, AheadWindowJudgesTheLastReviewsOnly) {
  const Resource unit(1024, 1);
  auto view = [&](int64_t used) {
    ReviewView v;
    v.unit = unit;
    v.used = unit * used;
    v.planned_now = unit * 2;
    v.instance = 3;
    v.deadline = at(3600);
    return v;
  };
  const Millis step(60000);
  ReviewState windowed, whole;
  const int64_t used[] = {10, 10, 1, 1, 1};
  ReprovisionInput w, a;
  for (size_t i = 0; i < 5; i++) {
    w = reviewInput(ReservationId("r"), at(60 * (i + 1)), step, Millis(150000), view(used[i]),
                    windowed);
    a = reviewInput(ReservationId("r"), at(60 * (i + 1)), step, Millis(0), view(used[i]), whole);
    if (i == 1) {
      EXPECT_TRUE(aheadOfPlan(w));
    }
  }
  // 150 s at 60 s steps: the last 3 reviews, 1 + 1 + 1 used against 2 + 2 + 2.
  EXPECT_EQ(w.used_container_ms_so_far, 3 * 60000);
  EXPECT_EQ(w.guaranteed_container_ms_so_far, 6 * 60000);
  EXPECT_FALSE(aheadOfPlan(w));
  EXPECT_EQ(windowed.recent.size(), 3u);
  EXPECT_EQ(a.used_container_ms_so_far, 23 * 60000);
  EXPECT_TRUE(aheadOfPlan(a));
}

}  // namespace
}  // namespace morpheus::reprovision
