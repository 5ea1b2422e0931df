// Shared helpers for the planner unit tests.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
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

// Portable fixed-seed generator: splitmix64, uniform by modulo (the
// distributions of <random> differ between standard libraries), so the
// generated instances are the same everywhere.
class Rng {
 public:
  explicit Rng(uint64_t seed) : s_(seed) {}
  int64_t uni(int64_t a, int64_t b) {
    s_ += 0x9e3779b97f4a7c15ULL;
    uint64_t z = s_;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    z ^= z >> 31;
    return a + static_cast<int64_t>(z % static_cast<uint64_t>(b - a + 1));
  }

 private:
  uint64_t s_;
};

}  // namespace morpheus::planner::testing
