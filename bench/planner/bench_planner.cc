// Planner benchmarks (issue #2). A plain main that prints figures; not a timed test.
//  1. Latency to place one daily reservation with a 1440-step skyline into a
//     plan holding 900 periodic reservations on a ~100k-container cluster
//     (Morpheus §8: ~900 reservations, submission latency target).
//  2. Packing quality (max plan height) of LowCost vs greedy on online
//     sequences: small instances against the offline MILP optimum (GLPK), and
//     200 random periodic jobs LowCost vs greedy.
#include <glpk.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "planner/planner.h"

using namespace morpheus;           // NOLINT
using namespace morpheus::planner;  // NOLINT

namespace {

const Resource kOne(1024, 1);
// "p" + to_string(i) without GCC 12's -Wrestrict false positive on operator+.
std::string label(const char* prefix, int64_t i) {
  std::string s(prefix);
  s += std::to_string(i);
  return s;
}
Resource containers(int64_t n) { return Resource(1024 * n, n); }
TimePoint at(int64_t step, int64_t step_ms) { return fromEpochMs(step * step_ms); }

std::unique_ptr<Planner> makePlanner(const std::string& agent, int64_t cap, Millis step) {
  PlannerOptions o;
  o.agent = agent;
  o.step = step;
  auto r = Planner::create(o, containers(cap));
  if (!r.isOk()) {
    std::fprintf(stderr, "%s\n", r.status().toString().c_str());
    std::exit(1);
  }
  return std::move(r).value();
}

double percentile(std::vector<double> v, double q) {
  std::sort(v.begin(), v.end());
  size_t i = static_cast<size_t>(q * static_cast<double>(v.size() - 1) + 0.5);
  return v[std::min(i, v.size() - 1)];
}

int64_t peak(const Planner& p, int64_t steps, int64_t step_ms) {
  int64_t m = 0;
  for (const auto& a : p.planLoad(at(0, step_ms), at(steps, step_ms))) {
    m = std::max(m, a.resource.vcores());
  }
  return m;
}

void latencyBench() {
  const int64_t kStepMs = 60'000, kCap = 100'000;  // 2,700 nodes x 37 containers of 1 GiB / 1 vcore
  std::mt19937_64 rng(42);
  auto uni = [&](int64_t a, int64_t b) { return std::uniform_int_distribution<int64_t>(a, b)(rng); };
  auto planner = makePlanner("lowcost", kCap, Millis(kStepMs));
  int admitted = 0;
  auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; admitted < 900 && i < 5000; ++i) {
    // Periodic production jobs: skylines of 30-240 steps, 10-150 containers per step.
    int64_t period = uni(0, 9) == 0 ? 360 : 1440;
    int64_t len = uni(30, std::min<int64_t>(240, period / 2));
    int64_t window = std::min(period, len + uni(0, 3 * len));
    int64_t arrival = uni(0, 1440 - window);
    std::vector<int64_t> sky;
    int64_t base = uni(10, 150);
    for (int64_t k = 0; k < len; ++k) sky.push_back(std::max<int64_t>(1, base + uni(-10, 10)));
    ReservationDefinition d;
    d.user = UserId(label("u", i % 50));
    d.arrival = at(arrival, kStepMs);
    d.deadline = at(arrival + window, kStepMs);
    d.period = Millis(period * kStepMs);
    d.stages = skylineStages(sky, kOne, Millis(kStepMs));
    d.interpreter = Interpreter::kOrderNoGap;
    if (planner->submit(ReservationId(label("p", i)), d, at(0, kStepMs)).isOk()) {
      ++admitted;
    }
  }
  double fill_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf("== 1. placement latency (LowCost, 1440-step daily skyline) ==\n");
  std::printf("plan: %d periodic reservations admitted in %.2f s, capacity %lld containers, "
              "peak load %lld\n",
              admitted, fill_s, static_cast<long long>(kCap),
              static_cast<long long>(peak(*planner, 1440, kStepMs)));
  for (const std::string agent : {"lowcost", "greedy"}) {
    // Same plan for both agents: restore the LowCost plan into a fresh planner.
    auto p = makePlanner(agent, kCap, Millis(kStepMs));
    for (const auto& s : planner->placements()) {
      if (!p->restore(s.id, *s.def, *s.placement).isOk()) std::exit(1);
    }
    std::vector<double> lat;
    int ok = 0;
    for (int i = 0; i < 60; ++i) {
      std::vector<int64_t> sky;
      for (int64_t k = 0; k < 1440; ++k) sky.push_back(uni(1, 40));
      ReservationDefinition d;
      d.user = UserId("bench");
      d.arrival = at(0, kStepMs);
      d.deadline = at(1440, kStepMs);
      d.period = Millis(1440 * kStepMs);
      d.stages = skylineStages(sky, kOne, Millis(kStepMs));
      d.interpreter = Interpreter::kOrderNoGap;
      ReservationId id(label("bench", i));
      auto s = std::chrono::steady_clock::now();
      auto r = p->submit(id, d, at(0, kStepMs));
      lat.push_back(
          std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - s).count());
      if (r.isOk()) {
        ++ok;
        (void)p->remove(id);
      }
    }
    std::printf("%-8s placements=%zu accepted=%d p50=%.2f ms p99=%.2f ms max=%.2f ms "
                "(target p50<=10 ms, p99<=50 ms)\n",
                agent.c_str(), lat.size(), ok, percentile(lat, 0.5), percentile(lat, 0.99),
                *std::max_element(lat.begin(), lat.end()));
  }
}

struct Job {
  int64_t a, d, n, dur;  // window [a, d) in steps, n containers (one gang) for dur steps
};

// Offline optimum: choose each job's start to minimise the peak (MILP, GLPK).
double milpPeak(const std::vector<Job>& jobs, int64_t steps, bool* optimal) {
  glp_prob* lp = glp_create_prob();
  glp_set_obj_dir(lp, GLP_MIN);
  glp_add_cols(lp, 1);
  glp_set_col_bnds(lp, 1, GLP_LO, 0, 0);
  glp_set_obj_coef(lp, 1, 1.0);
  std::vector<int> ia{0}, ja{0};
  std::vector<double> ar{0};
  int rows = 0;
  glp_add_rows(lp, static_cast<int>(jobs.size() + static_cast<size_t>(steps)));
  // Load rows first (rows 1..steps): sum n x - H <= 0.
  for (int64_t t = 0; t < steps; ++t) {
    glp_set_row_bnds(lp, ++rows, GLP_UP, 0, 0);
    ia.push_back(rows);
    ja.push_back(1);
    ar.push_back(-1.0);
  }
  for (const auto& j : jobs) {
    int row = ++rows;
    glp_set_row_bnds(lp, row, GLP_FX, 1, 1);
    for (int64_t s = j.a; s + j.dur <= j.d; ++s) {
      int col = glp_add_cols(lp, 1);
      glp_set_col_kind(lp, col, GLP_BV);
      ia.push_back(row);
      ja.push_back(col);
      ar.push_back(1.0);
      for (int64_t t = s; t < s + j.dur; ++t) {
        ia.push_back(static_cast<int>(t + 1));
        ja.push_back(col);
        ar.push_back(static_cast<double>(j.n));
      }
    }
  }
  glp_load_matrix(lp, static_cast<int>(ia.size() - 1), ia.data(), ja.data(), ar.data());
  glp_iocp parm;
  glp_init_iocp(&parm);
  parm.presolve = GLP_ON;
  parm.msg_lev = GLP_MSG_OFF;
  parm.tm_lim = 20000;
  int rc = glp_intopt(lp, &parm);
  double v = glp_mip_obj_val(lp);
  *optimal = rc == 0 && glp_mip_status(lp) == GLP_OPT;
  glp_delete_prob(lp);
  return v;
}

void packingSmall() {
  const int64_t kStepMs = 30 * 60'000, kSteps = 48;  // 30-minute steps, one-day LCM
  std::printf("\n== 2a. packing vs MILP optimum (48-step plan, online daily gang jobs) ==\n");
  std::vector<double> rl, rg;
  for (uint64_t seed = 1; seed <= 9; ++seed) {
    std::mt19937_64 rng(seed);
    auto uni = [&](int64_t a, int64_t b) { return std::uniform_int_distribution<int64_t>(a, b)(rng); };
    std::vector<Job> jobs;
    int njobs = static_cast<int>(uni(8, 16));
    for (int i = 0; i < njobs; ++i) {
      int64_t dur = uni(2, 10);
      int64_t a = uni(0, kSteps - dur);
      int64_t d = std::min(kSteps, a + dur + uni(0, 16));
      jobs.push_back({a, d, uni(5, 50), dur});
    }
    bool optimal = false;
    double opt = milpPeak(jobs, kSteps, &optimal);
    int64_t pk[2];
    int idx = 0;
    for (const std::string agent : {"lowcost", "greedy"}) {
      auto p = makePlanner(agent, 1'000'000, Millis(kStepMs));
      for (size_t i = 0; i < jobs.size(); ++i) {
        const auto& j = jobs[i];
        ReservationDefinition d;
        d.user = UserId("u");
        d.arrival = at(j.a, kStepMs);
        d.deadline = at(j.d, kStepMs);
        d.period = Millis(kSteps * kStepMs);
        d.stages = {ReservationStage{kOne, j.n, j.n, Millis(j.dur * kStepMs)}};
        if (!p->submit(ReservationId(label("j", i)), d, at(0, kStepMs)).isOk()) {
          std::printf("unexpected rejection\n");
        }
      }
      pk[idx++] = peak(*p, kSteps, kStepMs);
    }
    rl.push_back(static_cast<double>(pk[0]) / opt);
    rg.push_back(static_cast<double>(pk[1]) / opt);
    std::printf("seed %llu jobs=%d MILP=%.0f%s lowcost=%lld (%.3fx) greedy=%lld (%.3fx)\n",
                static_cast<unsigned long long>(seed), njobs, opt, optimal ? "" : " (time limit)",
                static_cast<long long>(pk[0]), rl.back(), static_cast<long long>(pk[1]),
                rg.back());
  }
  std::printf("median ratio to optimum: lowcost %.3fx greedy %.3fx (target lowcost <= 1.2x)\n",
              percentile(rl, 0.5), percentile(rg, 0.5));
}

void packingLarge() {
  const int64_t kStepMs = 60'000, kSteps = 1440;
  std::printf("\n== 2b. packing, 200 online random periodic jobs (1440-step plan) ==\n");
  std::vector<double> ratio;
  for (uint64_t seed = 1; seed <= 5; ++seed) {
    int64_t pk[2];
    double area = 0;
    int idx = 0;
    for (const std::string agent : {"lowcost", "greedy"}) {
      std::mt19937_64 rng(seed);
      auto uni = [&](int64_t a, int64_t b) { return std::uniform_int_distribution<int64_t>(a, b)(rng); };
      auto p = makePlanner(agent, 10'000'000, Millis(kStepMs));
      area = 0;
      for (int i = 0; i < 200; ++i) {
        const int64_t periods[] = {1440, 1440, 1440, 360, 60};
        int64_t period = periods[uni(0, 4)];
        int64_t len = uni(std::min<int64_t>(5, period / 4), period / 4);
        int64_t window = std::min(period, len + uni(0, 3 * len));
        int64_t arrival = uni(0, period - window);
        ReservationDefinition d;
        d.user = UserId("u");
        d.arrival = at(arrival, kStepMs);
        d.deadline = at(arrival + window, kStepMs);
        d.period = Millis(period * kStepMs);
        if (uni(0, 1) == 0) {
          std::vector<int64_t> sky;
          for (int64_t k = 0; k < len; ++k) sky.push_back(uni(10, 100));
          d.stages = skylineStages(sky, kOne, Millis(kStepMs));
          d.interpreter = Interpreter::kOrderNoGap;
        } else {
          int64_t n = uni(10, 100);
          d.stages = {ReservationStage{kOne, n, uni(1, n), Millis(len * kStepMs)}};
        }
        for (const auto& s : d.stages) {
          area += static_cast<double>(s.num_containers * (s.duration.count() / kStepMs)) *
                  static_cast<double>(kSteps / period);
        }
        if (!p->submit(ReservationId(label("j", i)), d, at(0, kStepMs)).isOk()) {
          std::printf("unexpected rejection\n");
        }
      }
      pk[idx++] = peak(*p, kSteps, kStepMs);
    }
    ratio.push_back(static_cast<double>(pk[0]) / static_cast<double>(pk[1]));
    std::printf("seed %llu lowcost peak=%lld greedy peak=%lld lowcost/greedy=%.3f "
                "(average load %.0f)\n",
                static_cast<unsigned long long>(seed), static_cast<long long>(pk[0]),
                static_cast<long long>(pk[1]), ratio.back(), area / kSteps);
  }
  std::printf("median lowcost/greedy peak ratio: %.3f (target < 1)\n", percentile(ratio, 0.5));
}

}  // namespace

int main() {
  latencyBench();
  packingSmall();
  packingLarge();
  return 0;
}
