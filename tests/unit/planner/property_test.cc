// Randomised property tests over both agents (docs/design/conventions.md "Tests": the same
// suite runs over every implementation; seeds are logged).
#include <gtest/gtest.h>

#include <iostream>
#include <random>
#include <set>

#include "test_util.h"

namespace morpheus::planner {
namespace {

using namespace morpheus::planner::testing;  // NOLINT

class PlannerPropertyTest : public ::testing::TestWithParam<std::string> {};

ReservationDefinition randomDefinition(std::mt19937_64& rng, int64_t now_min) {
  auto uni = [&](int64_t a, int64_t b) {
    return std::uniform_int_distribution<int64_t>(a, b)(rng);
  };
  const int64_t periods[] = {0, 0, 60, 360, 1440};
  int64_t period = periods[uni(0, 4)];
  int64_t window = period == 0 ? uni(30, 600) : uni(std::min<int64_t>(20, period), period);
  int64_t arrival = period == 0 ? now_min + uni(0, 1440) : uni(0, 1440 - window);
  int nstages = static_cast<int>(uni(1, 4));
  Interpreter in = static_cast<Interpreter>(uni(0, 3));
  std::vector<ReservationStage> stages;
  int64_t budget =
      in == Interpreter::kOrder || in == Interpreter::kOrderNoGap ? window / nstages : window;
  for (int i = 0; i < nstages; ++i) {
    int64_t n = uni(1, 40);
    stages.push_back(stage(n, uni(1, n), uni(1, std::max<int64_t>(1, budget / 2))));
  }
  if (uni(0, 4) == 0) {  // a skyline
    std::vector<int64_t> sky;
    int64_t len = std::min<int64_t>(window, uni(3, 30));
    for (int64_t i = 0; i < len; ++i) sky.push_back(uni(0, 30));
    sky[0] = std::max<int64_t>(sky[0], 1);
    stages = skylineStages(sky, kOne, Millis(60'000), SkylineSteps::kStretchable);
    in = Interpreter::kOrderNoGap;
  }
  auto d = def(arrival, arrival + window, stages, in, period);
  d.problematic = uni(0, 5) == 0;
  return d;
}

// Invariants after a random online sequence: no step over capacity; every
// accepted reservation gets its full demand inside [arrival, deadline);
// R_ORDER_NO_GAP allocations are contiguous; all instances identical.
TEST_P(PlannerPropertyTest, RandomSequencesKeepPlanInvariants) {
  for (uint64_t seed : {1u, 2u, 3u, 4u, 5u, 6u}) {
    uint64_t s = seed * 7919 + std::hash<std::string>()(GetParam()) % 1000;
    std::cout << "agent=" << GetParam() << " seed=" << s << std::endl;
    RecordProperty("seed_" + std::to_string(seed), std::to_string(s));
    std::mt19937_64 rng(s);
    PlannerOptions o;
    o.one_off_horizon = Millis(3 * 1440 * 60'000LL);
    auto p = makePlanner(GetParam(), 100, o);
    const int64_t now = 0;
    std::vector<std::pair<ReservationId, ReservationDefinition>> accepted;
    std::set<ReservationId> at_risk;  // one-offs displaced by a periodic admission, kept
    for (int i = 0; i < 60; ++i) {
      ReservationId id("r" + std::to_string(i));
      auto d = randomDefinition(rng, now);
      DisplacementReport rep;
      auto r = p->submit(id, d, minute(now), nullptr, &rep);
      if (r.isOk()) {
        accepted.emplace_back(id, d);
        at_risk.insert(rep.at_risk.begin(), rep.at_risk.end());
      } else {
        ASSERT_TRUE(r.status().code() == StatusCode::kInfeasible ||
                    r.status().code() == StatusCode::kInvalidArgument)
            << r.status().toString();
      }
    }
    ASSERT_GT(accepted.size(), 5u) << "seed " << s;
    // Periodic load never exceeds capacity; total load only where an at-risk one-off sits.
    for (int64_t m = 0; m < 3 * 1440; ++m) {
      ASSERT_TRUE(p->view().periodicLoadAt(minute(m)).fitsIn(containers(100))) << "seed " << s;
      if (p->loadAt(minute(m)).fitsIn(containers(100))) continue;
      bool explained = false;
      for (const auto& id : at_risk) explained |= !p->guaranteedAt(id, minute(m)).isZero();
      ASSERT_TRUE(explained) << "seed " << s << " minute " << m;
    }
    for (const auto& [id, d] : accepted) {
      const Placement* pl = p->placement(id);
      ASSERT_NE(pl, nullptr);
      int64_t got = containerMinutes(pl->allocations);
      std::vector<int64_t> demand;
      for (const auto& st : d.stages)
        demand.push_back(st.num_containers * (st.duration.count() / 60'000));
      if (d.interpreter == Interpreter::kAny) {
        ASSERT_EQ(pl->stages.size(), 1u);
        EXPECT_EQ(got, demand[static_cast<size_t>(pl->stages[0].stage)]) << id << " seed " << s;
      } else {
        int64_t sum = 0;
        for (int64_t v : demand) sum += v;
        EXPECT_EQ(got, sum) << id << " seed " << s;
      }
      ASSERT_FALSE(pl->allocations.empty());
      EXPECT_GE(pl->allocations.front().start, d.arrival) << id << " seed " << s;
      EXPECT_LE(pl->allocations.back().end, d.deadline) << id << " seed " << s;
      if (d.interpreter == Interpreter::kOrderNoGap) {
        for (size_t i = 0; i + 1 < pl->allocations.size(); ++i) {
          EXPECT_EQ(pl->allocations[i].end, pl->allocations[i + 1].start) << id << " seed " << s;
          if (pl->allocations[i].end != pl->allocations[i + 1].start) {
            for (const auto& sp : pl->stages) {
              std::cout << "stage " << sp.stage << ":";
              for (const auto& a : sp.allocations)
                std::cout << " [" << toEpochMs(a.start) / 60000 << "," << toEpochMs(a.end) / 60000
                          << ")x" << a.resource.vcores();
              std::cout << " d=" << d.stages[sp.stage].duration.count() / 60000
                        << " n=" << d.stages[sp.stage].num_containers
                        << " g=" << d.stages[sp.stage].min_concurrency << "\n";
            }
          }
        }
      }
      if (d.interpreter == Interpreter::kOrder || d.interpreter == Interpreter::kOrderNoGap) {
        for (size_t k = 0; k + 1 < pl->stages.size(); ++k) {
          EXPECT_LE(pl->stages[k].allocations.back().end,
                    pl->stages[k + 1].allocations.front().start)
              << id << " seed " << s;
        }
      }
      if (d.period.count() > 0) {
        int64_t pm = d.period.count() / 60'000;
        for (int64_t m = 0; m < pm; ++m) {
          Resource g = p->guaranteedAt(id, d.arrival + Millis(m * 60'000));
          for (int64_t k = 1; k * pm < 1440; ++k) {
            ASSERT_EQ(p->guaranteedAt(id, d.arrival + Millis((m + k * pm) * 60'000)), g)
                << id << " seed " << s;
          }
        }
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Agents, PlannerPropertyTest, ::testing::Values("lowcost", "greedy"));

}  // namespace
}  // namespace morpheus::planner
