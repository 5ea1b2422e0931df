// LowCost against an independent brute force on small instances (Morpheus
// OSDI'16 §5-§6): every placement of every gang of the request is enumerated
// on a random background plan, each feasible one costed by a cost function
// written here from its definition, not with the planner's code, and the
// cheapest kept. The cost of a placement (agent.h): the highest step cost
// c(t) = max over resources of (load(t) + allocation(t)) / capacity over the
// steps the allocation holds something, plus 0.01 x the allocation-weighted
// average of c(t) over those steps (weights: the allocation's own dominant
// share at t). The checks:
//  - LowCost's reported cost is the cost of its own placement (relative
//    tolerance, not printed digits);
//  - no placement beats the brute-force minimum (the enumeration is
//    complete), and LowCost finds a placement whenever one exists, except
//    for R_ORDER, where it places stages last to first without going back
//    and can refuse a feasible request (counted and printed);
//  - one gang per stage (each LowCost decision is then a single choice):
//    LowCost's cost is the minimum;
//  - one-step gangs of a single stage (water filling): LowCost reaches the
//    minimum peak c(t), the cost's first term.
// The gap of the other instances is reported, not asserted: LowCost is a
// greedy heuristic, and its known gaps are docs/experiments/benchmarks.md's.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "planner/agent.h"
#include "test_util.h"

namespace morpheus::planner {
namespace {

using namespace morpheus::planner::testing;  // NOLINT

// Relative comparison of costs (an absolute floor for costs near 0).
bool sameCost(double a, double b) {
  return std::abs(a - b) <= 1e-9 * std::max({1.0, std::abs(a), std::abs(b)});
}

// Memory (MiB) and vcores held at each window step.
struct Load {
  std::vector<int64_t> mem, cpu;
  explicit Load(int64_t w) : mem(static_cast<size_t>(w), 0), cpu(static_cast<size_t>(w), 0) {}
};

// The cost of the definition above, from per-step load and allocation.
// Infinity when some step is over capacity.
double independentCost(const Load& load, const Load& alloc, int64_t cap_mem, int64_t cap_cpu) {
  double peak = 0, weighted = 0, weights = 0;
  bool any = false;
  for (size_t s = 0; s < load.mem.size(); ++s) {
    if (alloc.mem[s] == 0 && alloc.cpu[s] == 0) continue;
    const int64_t m = load.mem[s] + alloc.mem[s], c = load.cpu[s] + alloc.cpu[s];
    if (m > cap_mem || c > cap_cpu) return std::numeric_limits<double>::infinity();
    const double ct = std::max(static_cast<double>(m) / static_cast<double>(cap_mem),
                               static_cast<double>(c) / static_cast<double>(cap_cpu));
    const double own = std::max(static_cast<double>(alloc.mem[s]) / static_cast<double>(cap_mem),
                                static_cast<double>(alloc.cpu[s]) / static_cast<double>(cap_cpu));
    peak = std::max(peak, ct);
    weighted += own * ct;
    weights += own;
    any = true;
  }
  if (!any) return 0;
  return peak + 0.01 * weighted / weights;
}

// The peak term alone.
double independentPeak(const Load& load, const Load& alloc, int64_t cap_mem, int64_t cap_cpu) {
  double peak = 0;
  for (size_t s = 0; s < load.mem.size(); ++s) {
    if (alloc.mem[s] == 0 && alloc.cpu[s] == 0) continue;
    peak = std::max(
        {peak, static_cast<double>(load.mem[s] + alloc.mem[s]) / static_cast<double>(cap_mem),
         static_cast<double>(load.cpu[s] + alloc.cpu[s]) / static_cast<double>(cap_cpu)});
  }
  return peak;
}

// One gang: `containers` of the stage's capability for `len` steps.
struct Gang {
  int stage;
  int64_t containers;
  int64_t len;
};

struct Best {
  double cost = std::numeric_limits<double>::infinity();
  double peak = std::numeric_limits<double>::infinity();  // least peak of any placement
  int64_t placements = 0;                                 // feasible ones enumerated
};

// Every placement of `gangs` (each at any start in [0, window - len]),
// R_ORDER: every gang of stage k ends before any gang of stage k+1 starts.
// Gangs of one stage of equal size are interchangeable: their starts are
// enumerated in non-decreasing order only.
Best bruteForce(const std::vector<Gang>& gangs, const ReservationDefinition& def, const Load& load,
                int64_t window, int64_t cap_mem, int64_t cap_cpu) {
  Best best;
  Load alloc(window);
  std::vector<int64_t> start(gangs.size(), 0);
  const bool ordered = def.interpreter == Interpreter::kOrder;
  std::function<void(size_t)> place = [&](size_t g) {
    if (g == gangs.size()) {
      if (ordered) {
        for (size_t a = 0; a < gangs.size(); ++a) {
          for (size_t b = 0; b < gangs.size(); ++b) {
            if (gangs[a].stage < gangs[b].stage && start[a] + gangs[a].len > start[b]) return;
          }
        }
      }
      const double c = independentCost(load, alloc, cap_mem, cap_cpu);
      if (!std::isfinite(c)) return;
      best.placements++;
      best.cost = std::min(best.cost, c);
      best.peak = std::min(best.peak, independentPeak(load, alloc, cap_mem, cap_cpu));
      return;
    }
    const Gang& x = gangs[g];
    const Resource& unit = def.stages[static_cast<size_t>(x.stage)].capability;
    int64_t from = 0;
    if (g > 0 && gangs[g - 1].stage == x.stage && gangs[g - 1].containers == x.containers) {
      from = start[g - 1];
    }
    for (int64_t p = from; p + x.len <= window; ++p) {
      start[g] = p;
      for (int64_t s = p; s < p + x.len; ++s) {
        alloc.mem[static_cast<size_t>(s)] += x.containers * unit.memoryMib();
        alloc.cpu[static_cast<size_t>(s)] += x.containers * unit.vcores();
      }
      place(g + 1);
      for (int64_t s = p; s < p + x.len; ++s) {
        alloc.mem[static_cast<size_t>(s)] -= x.containers * unit.memoryMib();
        alloc.cpu[static_cast<size_t>(s)] -= x.containers * unit.vcores();
      }
    }
  };
  place(0);
  return best;
}

// What a placement holds at each window step of `p`.
Load allocationOf(const Placement& placement, const PlanningProblem& p) {
  Load a(p.window);
  const int64_t step = p.step.count();
  for (const auto& iv : placement.allocations) {
    for (int64_t t = toEpochMs(iv.start); t < toEpochMs(iv.end); t += step) {
      const int64_t s = t / step - p.first_step;
      EXPECT_TRUE(s >= 0 && s < p.window) << "allocation outside the window";
      if (s < 0 || s >= p.window) continue;
      a.mem[static_cast<size_t>(s)] += iv.resource.memoryMib();
      a.cpu[static_cast<size_t>(s)] += iv.resource.vcores();
    }
  }
  return a;
}

enum class Shape { kOneGangPerStage, kOneStepGangs, kGeneral };

struct Instance {
  std::unique_ptr<Planner> plan;
  ReservationDefinition def;
  int64_t cap = 0;
};

// A random plan of `cap` containers with a few background reservations
// (rectangles of random height and length), and a request of `shape` in
// [0, window).
Instance randomInstance(Rng& rng, Shape shape) {
  Instance in;
  in.cap = rng.uni(4, 10);
  const int64_t window = rng.uni(3, 7);
  in.plan = makePlanner("greedy", in.cap);
  for (int i = 0, n = static_cast<int>(rng.uni(0, 4)); i < n; ++i) {
    const int64_t a = rng.uni(0, window - 1), len = rng.uni(1, window - a);
    const int64_t h = rng.uni(1, in.cap - 1);
    (void)in.plan->submit(ReservationId("bg" + std::to_string(i)),
                          def(a, a + len, {stage(h, h, len)}), minute(0));
  }
  std::vector<ReservationStage> stages;
  const int nstages = shape == Shape::kOneStepGangs ? 1 : static_cast<int>(rng.uni(1, 2));
  for (int i = 0; i < nstages; ++i) {
    int64_t n = 0, gang = 0, len = 0;
    switch (shape) {
      case Shape::kOneGangPerStage:
        n = rng.uni(1, 4);
        gang = n;
        len = rng.uni(1, 3);
        break;
      case Shape::kOneStepGangs:
        n = rng.uni(2, 6);
        gang = rng.uni(1, 2);
        len = 1;
        break;
      case Shape::kGeneral:
        n = rng.uni(2, 4);
        gang = rng.uni(1, n);
        len = rng.uni(1, 2);
        break;
    }
    stages.push_back(stage(n, gang, len));
  }
  const Interpreter how =
      nstages > 1 && rng.uni(0, 1) == 0 ? Interpreter::kOrder : Interpreter::kAll;
  in.def = def(0, window, stages, how);
  return in;
}

std::vector<Gang> gangsOf(const ReservationDefinition& d, const PlanningProblem& p) {
  std::vector<Gang> out;
  for (size_t i = 0; i < d.stages.size(); ++i) {
    const auto& st = d.stages[i];
    const int64_t len = p.duration[i];
    for (int64_t k = 0; k < st.num_containers / st.min_concurrency; ++k) {
      out.push_back({static_cast<int>(i), st.min_concurrency, len});
    }
    if (st.num_containers % st.min_concurrency != 0) {
      out.push_back({static_cast<int>(i), st.num_containers % st.min_concurrency, len});
    }
  }
  return out;
}

// The instance, for a failure message: window, load, capacity, stages.
std::string describe(const ReservationDefinition& d, const PlanningProblem& p) {
  std::string out = std::string(interpreterName(d.interpreter)) + ", window " +
                    std::to_string(p.window) + " steps, capacity " +
                    std::to_string(p.capacity.vcores()) + ", load";
  for (const auto& l : p.load) out += " " + std::to_string(l.vcores());
  for (size_t i = 0; i < d.stages.size(); ++i) {
    out += "; stage " + std::to_string(i) + ": " + std::to_string(d.stages[i].num_containers) +
           " in gangs of " + std::to_string(d.stages[i].min_concurrency) + " x " +
           std::to_string(p.duration[i]) + " steps";
  }
  return out;
}

struct Tally {
  int instances = 0, feasible = 0, optimal = 0, missed = 0;
  double worst_ratio = 1;
};

// Runs `count` random instances of `shape` under every tie-break.
Tally run(Shape shape, uint64_t seed, int count) {
  Tally t;
  Rng rng(seed);
  for (int i = 0; i < count; ++i) {
    Instance in = randomInstance(rng, shape);
    const PlanningProblem p = in.plan->view().problemFor(in.def, minute(0));
    Load load(p.window);
    for (int64_t s = 0; s < p.window; ++s) {
      load.mem[static_cast<size_t>(s)] = p.load[static_cast<size_t>(s)].memoryMib();
      load.cpu[static_cast<size_t>(s)] = p.load[static_cast<size_t>(s)].vcores();
    }
    const int64_t cap_mem = p.capacity.memoryMib(), cap_cpu = p.capacity.vcores();
    const Best best = bruteForce(gangsOf(in.def, p), in.def, load, p.window, cap_mem, cap_cpu);
    for (TieBreak tie : {TieBreak::kEarliest, TieBreak::kLatest, TieBreak::kSlack}) {
      SCOPED_TRACE("seed " + std::to_string(seed) + " instance " + std::to_string(i) +
                   " tie-break " + tieBreakName(tie));
      AgentOptions o;
      o.tie_break = tie;
      auto got = makeAgent("lowcost", o).value()->propose(p, nullptr);
      t.instances++;
      if (best.placements == 0) {
        EXPECT_FALSE(got.isOk()) << "LowCost placed what the enumeration found infeasible";
        continue;
      }
      t.feasible++;
      if (!got.isOk()) {
        // R_ORDER: LowCost places the stages last to first without going
        // back, so a late stage spread for cost can leave an earlier one no
        // room (a known limit of the heuristic: reported, not asserted).
        t.missed++;
        if (in.def.interpreter == Interpreter::kOrder) {
          std::printf("R_ORDER instance LowCost refuses though it can be placed (%s): %s\n",
                      got.status().toString().c_str(), describe(in.def, p).c_str());
        } else {
          ADD_FAILURE() << "a placement exists but LowCost found none: " << got.status().toString()
                        << "\n"
                        << describe(in.def, p);
        }
        continue;
      }
      const Load alloc = allocationOf(*got, p);
      const double mine = independentCost(load, alloc, cap_mem, cap_cpu);
      if (!std::isfinite(mine)) {
        ADD_FAILURE() << "LowCost's placement exceeds the capacity";
        continue;
      }
      EXPECT_TRUE(sameCost(got->cost, mine))
          << "reported cost " << got->cost << ", its placement costs " << mine;
      EXPECT_GE(mine, best.cost - 1e-9) << "cheaper than every enumerated placement";
      if (sameCost(mine, best.cost)) t.optimal++;
      t.worst_ratio = std::max(t.worst_ratio, mine / best.cost);
      if (shape == Shape::kOneGangPerStage && in.def.stages.size() == 1) {
        EXPECT_TRUE(sameCost(mine, best.cost)) << "LowCost " << mine << ", minimum " << best.cost;
      }
      if (shape == Shape::kOneStepGangs) {
        const double peak = independentPeak(load, alloc, cap_mem, cap_cpu);
        EXPECT_TRUE(sameCost(peak, best.peak))
            << "LowCost's peak " << peak << ", least peak " << best.peak;
      }
    }
  }
  return t;
}

void report(const char* what, const Tally& t) {
  std::printf(
      "%s: %d runs, %d feasible, %d of them refused by LowCost, %d at the brute-force minimum, "
      "worst cost ratio %.4f\n",
      what, t.instances, t.feasible, t.missed, t.optimal, t.worst_ratio);
}

// One gang per stage: each LowCost decision is one choice among all starts,
// so a single stage is placed at the minimum cost exactly.
TEST(LowCostBruteForceTest, OneGangPerStageMatchesTheMinimum) {
  Tally t = run(Shape::kOneGangPerStage, 501, 150);
  report("one gang per stage", t);
  EXPECT_GE(t.feasible, 150) << "the instances must exercise placement, not only rejection";
}

// One-step gangs of one stage: greedy water filling reaches the least peak.
TEST(LowCostBruteForceTest, OneStepGangsReachTheLeastPeak) {
  Tally t = run(Shape::kOneStepGangs, 502, 150);
  report("one-step gangs", t);
  EXPECT_GE(t.feasible, 150);
}

// Any small instance (several gangs, one or two stages, R_ALL or R_ORDER):
// LowCost's cost is never below the enumerated minimum and is its own
// placement's; it places whatever can be placed under R_ALL.
TEST(LowCostBruteForceTest, GeneralInstancesAreFeasibleAndCostedConsistently) {
  Tally t = run(Shape::kGeneral, 503, 150);
  report("general", t);
  EXPECT_GE(t.feasible, 150);
}

}  // namespace
}  // namespace morpheus::planner
