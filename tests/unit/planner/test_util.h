// Shared helpers for the planner unit tests.
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "planner/planner.h"

namespace morpheus::planner::testing {

inline TimePoint minute(int64_t m) { return fromEpochMs(m * 60'000); }
inline Resource containers(int64_t n) { return Resource(1024 * n, n); }
inline const Resource kOne(1024, 1);

inline std::unique_ptr<Planner> makePlanner(const std::string& agent, int64_t capacity = 100,
                                            PlannerOptions o = {}) {
  o.agent = agent;
  auto r = Planner::create(o, containers(capacity));
  EXPECT_TRUE(r.isOk()) << r.status().toString();
  return std::move(r).value();
}

inline ReservationStage stage(int64_t n, int64_t gang, int64_t minutes) {
  return ReservationStage{kOne, n, gang, Millis(minutes * 60'000)};
}

inline ReservationDefinition def(int64_t arrival_min, int64_t deadline_min,
                                 std::vector<ReservationStage> stages,
                                 Interpreter in = Interpreter::kAll, int64_t period_min = 0) {
  ReservationDefinition d;
  d.user = UserId("alice");
  d.queue = "default";
  d.name = "job";
  d.arrival = minute(arrival_min);
  d.deadline = minute(deadline_min);
  d.period = Millis(period_min * 60'000);
  d.stages = std::move(stages);
  d.interpreter = in;
  return d;
}

// Containers (vcores) held by `p` in total over its allocations, in container-minutes.
inline int64_t containerMinutes(const std::vector<AllocationInterval>& allocs) {
  int64_t s = 0;
  for (const auto& a : allocs) {
    s += a.resource.vcores() * (toEpochMs(a.end) - toEpochMs(a.start)) / 60'000;
  }
  return s;
}

}  // namespace morpheus::planner::testing
