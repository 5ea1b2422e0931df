// Planner benchmarks. A plain main that prints figures; not a timed test.
//  1. Latency to place one daily reservation whose skyline is a quarter of
//     its window (so LowCost searches) into a plan holding 900 such daily
//     reservations plus 50 hourly ones on a ~100k-container cluster
//     (Morpheus §8: ~900 reservations, submission latency target).
//  2. Packing quality (max plan height) of LowCost vs greedy on online
//     sequences: (2a) 8-16 large gang jobs against the offline MILP optimum
//     (GLPK); (2c) 200 random periodic jobs on a 48-step day,
//     against the exact min-peak MILP (GLPK: proven lower bound, incumbent);
//     (2b) 200 random periodic jobs on the 1440-step day, against a proven
//     lower bound (min-peak model, checked against GLPK on 2a's instances;
//     Lagrangian bound, as GLPK cannot solve that model).
#include <glpk.h>

#include <algorithm>
#include <cfloat>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <deque>
#include <nlohmann/json.hpp>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "planner/planner.h"
#include "report/bench_report.h"

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

// A daily (or hourly, `period` 60) reservation whose skyline fills a quarter
// of its window, so LowCost has 3/4 of the window to search over (an
// earlier figure timed a 1440-step skyline in a 1440-step window, which has
// exactly one position). The window lies inside one period.
ReservationDefinition quarterWindowDef(std::mt19937_64& rng, int64_t period, int64_t min_window,
                                       int64_t step_ms) {
  auto uni = [&](int64_t a, int64_t b) {
    return std::uniform_int_distribution<int64_t>(a, b)(rng);
  };
  int64_t window = uni(min_window, period);
  int64_t arrival = uni(0, period - window);
  std::vector<int64_t> sky;
  int64_t base = uni(10, 150);
  for (int64_t k = 0; k < window / 4; ++k) sky.push_back(std::max<int64_t>(1, base + uni(-10, 10)));
  ReservationDefinition d;
  d.arrival = at(arrival, step_ms);
  d.deadline = at(arrival + window, step_ms);
  d.period = Millis(period * step_ms);
  d.stages = skylineStages(sky, kOne, Millis(step_ms), SkylineSteps::kStretchable);
  d.interpreter = Interpreter::kOrderNoGap;
  return d;
}

// Bench 1's plan: 900 daily quarter-window reservations plus `hourly` hourly
// ones, admitted by LowCost on a ~100k-container cluster (Morpheus §8).
std::unique_ptr<Planner> latencyPlan(std::mt19937_64& rng, int hourly, int64_t cap, int64_t step_ms,
                                     nlohmann::json& fig) {
  auto planner = makePlanner("lowcost", cap, Millis(step_ms));
  int daily = 0, hours = 0;
  auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; (daily < 900 || hours < hourly) && i < 5000; ++i) {
    bool is_hourly = hours < hourly && (daily >= 900 || i % 10 == 0);
    ReservationDefinition d = is_hourly ? quarterWindowDef(rng, 60, 20, step_ms)
                                        : quarterWindowDef(rng, 1440, 120, step_ms);
    d.user = UserId(label("u", i % 50));
    if (planner->submit(ReservationId(label("p", i)), d, at(0, step_ms)).isOk()) {
      ++(is_hourly ? hours : daily);
    }
  }
  double fill_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf(
      "plan: %d daily + %d hourly reservations admitted in %.2f s, capacity %lld containers, "
      "peak load %lld\n",
      daily, hours, fill_s, static_cast<long long>(cap),
      static_cast<long long>(peak(*planner, 1440, step_ms)));
  fig["plan"] = {{"daily", daily}, {"hourly", hours}, {"fill_seconds", fill_s}};
  return planner;
}

// CPU time of the calling thread in ms: on the shared 2-core machine the
// wall-clock latency mostly measures the load of other processes, so the
// bench reports both.
double threadCpuMs() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) * 1e3 + static_cast<double>(ts.tv_nsec) * 1e-6;
}

// Times `n` placements of daily quarter-window reservations into a copy of
// `plan` made for `agent`; each accepted one is removed again.
void timePlacements(const Planner& plan, const std::string& agent, int n, std::mt19937_64& rng,
                    int64_t cap, int64_t step_ms, nlohmann::json& fig) {
  auto p = makePlanner(agent, cap, Millis(step_ms));
  for (const auto& s : plan.placements()) {
    if (!p->restore(s.id, *s.def, *s.placement).isOk()) std::exit(1);
  }
  std::vector<double> lat, cpu;
  int ok = 0;
  for (int i = 0; i < n; ++i) {
    ReservationDefinition d = quarterWindowDef(rng, 1440, 120, step_ms);
    d.user = UserId("bench");
    ReservationId id(label("bench", i));
    auto s = std::chrono::steady_clock::now();
    double c0 = threadCpuMs();
    auto r = p->submit(id, d, at(0, step_ms));
    cpu.push_back(threadCpuMs() - c0);
    lat.push_back(
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - s).count());
    if (r.isOk()) {
      ++ok;
      (void)p->remove(id);
    }
  }
  double p50 = percentile(lat, 0.5), p99 = percentile(lat, 0.99);
  double mx = *std::max_element(lat.begin(), lat.end());
  double cpu50 = percentile(cpu, 0.5), cpu99 = percentile(cpu, 0.99);
  std::printf(
      "%-8s placements=%zu accepted=%d p50=%.2f ms p99=%.2f ms max=%.2f ms "
      "(target p50<=10 ms, p99<=50 ms); thread CPU p50=%.2f ms p99=%.2f ms\n",
      agent.c_str(), lat.size(), ok, p50, p99, mx, cpu50, cpu99);
  fig[agent] = {{"placements", lat.size()},
                {"accepted", ok},
                {"p50_ms", p50},
                {"p99_ms", p99},
                {"max_ms", mx},
                {"cpu_p50_ms", cpu50},
                {"cpu_p99_ms", cpu99}};
}

// Large one-off requests (many gangs): LowCost batching must stay fast
// (batches reproduce one-gang-at-a-time placement).
void largeOneOffs(Planner& planner, int64_t step_ms, nlohmann::json& fig) {
  std::printf("-- large one-off requests on the same plan (LowCost, gangs of 1, window 1440) --\n");
  for (int64_t n : {1'000LL, 10'000LL, 100'000LL}) {
    for (int64_t dur : {1LL, 30LL}) {
      ReservationDefinition d;
      d.user = UserId("bench");
      d.arrival = at(0, step_ms);
      d.deadline = at(1440, step_ms);
      d.stages = {ReservationStage{kOne, n, 1, Millis(dur * step_ms)}};
      auto s = std::chrono::steady_clock::now();
      auto r = planner.submit(ReservationId("large"), d, at(0, step_ms));
      double ms =
          std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - s).count();
      std::printf("n=%-7lld x %2lld steps: %s in %.1f ms\n", static_cast<long long>(n),
                  static_cast<long long>(dur), r.isOk() ? "placed" : "infeasible", ms);
      fig[label("n", n) + "x" + std::to_string(dur) + "_ms"] = ms;
      if (r.isOk()) (void)planner.remove(ReservationId("large"));
    }
  }
}

void latencyBench(nlohmann::json& fig) {
  const int64_t kStepMs = 60'000, kCap = 100'000;  // 2,700 nodes x 37 containers of 1 GiB / 1 vcore
  std::mt19937_64 rng(42);
  std::printf(
      "== 1. placement latency (daily reservations, skyline = 1/4 of a 120-1440-step window) ==\n");
  nlohmann::json& lat = fig["latency"];
  auto plan = latencyPlan(rng, 50, kCap, kStepMs, lat);
  for (const std::string agent : {"lowcost", "greedy"}) {
    timePlacements(*plan, agent, 200, rng, kCap, kStepMs, lat);
  }
  largeOneOffs(*plan, kStepMs, lat["large_one_off"]);
}

struct Job {
  int64_t a, d, n, dur;  // window [a, d) in steps, n containers (one gang) for dur steps
};

// Bench 2a's instances: 30-minute steps, one-day LCM, 8-16 one-gang jobs.
const int64_t kSmallStepMs = 30 * 60'000, kSmallSteps = 48;

std::vector<Job> smallJobs(uint64_t seed) {
  std::mt19937_64 rng(seed);
  auto uni = [&](int64_t a, int64_t b) {
    return std::uniform_int_distribution<int64_t>(a, b)(rng);
  };
  std::vector<Job> jobs;
  int njobs = static_cast<int>(uni(8, 16));
  for (int i = 0; i < njobs; ++i) {
    int64_t dur = uni(2, 10);
    int64_t a = uni(0, kSmallSteps - dur);
    int64_t d = std::min(kSmallSteps, a + dur + uni(0, 16));
    jobs.push_back({a, d, uni(5, 50), dur});
  }
  return jobs;
}

// 2a's jobs as the daily definitions the planner gets: one stage, one gang.
std::vector<ReservationDefinition> smallDefs(const std::vector<Job>& jobs) {
  std::vector<ReservationDefinition> defs;
  for (const auto& j : jobs) {
    ReservationDefinition d;
    d.user = UserId("u");
    d.arrival = at(j.a, kSmallStepMs);
    d.deadline = at(j.d, kSmallStepMs);
    d.period = Millis(kSmallSteps * kSmallStepMs);
    d.stages = {ReservationStage{kOne, j.n, j.n, Millis(j.dur * kSmallStepMs)}};
    defs.push_back(std::move(d));
  }
  return defs;
}

// 2b's and 2c's random periodic definition without stages: a window of len
// to 4 x len steps (at most the period) at a random offset in the period.
template <typename Uni>
ReservationDefinition periodicWindow(Uni& uni, int64_t period, int64_t len, int64_t step_ms) {
  int64_t window = std::min(period, len + uni(0, 3 * len));
  int64_t arrival = uni(0, period - window);
  ReservationDefinition d;
  d.user = UserId("u");
  d.arrival = at(arrival, step_ms);
  d.deadline = at(arrival + window, step_ms);
  d.period = Millis(period * step_ms);
  return d;
}

// Bench 2b's instances: 200 periodic jobs (daily, 6-hourly, hourly) on a
// 1440-step day; half R_ORDER_NO_GAP skylines, half one-stage gang jobs.
// `area` (optional) receives the load summed over the LCM, in containers x steps.
const int64_t kLargeStepMs = 60'000, kLargeSteps = 1440;

std::vector<ReservationDefinition> largeDefs(uint64_t seed, double* area) {
  std::mt19937_64 rng(seed);
  auto uni = [&](int64_t a, int64_t b) {
    return std::uniform_int_distribution<int64_t>(a, b)(rng);
  };
  std::vector<ReservationDefinition> defs;
  double total = 0;
  for (int i = 0; i < 200; ++i) {
    const int64_t periods[] = {1440, 1440, 1440, 360, 60};
    int64_t period = periods[uni(0, 4)];
    int64_t len = uni(std::min<int64_t>(5, period / 4), period / 4);
    ReservationDefinition d = periodicWindow(uni, period, len, kLargeStepMs);
    if (uni(0, 1) == 0) {
      std::vector<int64_t> sky;
      for (int64_t k = 0; k < len; ++k) sky.push_back(uni(10, 100));
      d.stages = skylineStages(sky, kOne, Millis(kLargeStepMs), SkylineSteps::kStretchable);
      d.interpreter = Interpreter::kOrderNoGap;
    } else {
      int64_t n = uni(10, 100);
      d.stages = {ReservationStage{kOne, n, uni(1, n), Millis(len * kLargeStepMs)}};
    }
    for (const auto& s : d.stages) {
      total += static_cast<double>(s.num_containers * (s.duration.count() / kLargeStepMs)) *
               static_cast<double>(kLargeSteps / period);
    }
    defs.push_back(std::move(d));
  }
  if (area != nullptr) *area = total;
  return defs;
}

// Submits defs[i] as "j<i>", in order, to a fresh planner running `agent`.
std::unique_ptr<Planner> submitAll(const std::string& agent, int64_t cap, int64_t step_ms,
                                   const std::vector<ReservationDefinition>& defs) {
  auto p = makePlanner(agent, cap, Millis(step_ms));
  for (size_t i = 0; i < defs.size(); ++i) {
    if (!p->submit(ReservationId(label("j", static_cast<int64_t>(i))), defs[i], at(0, step_ms))
             .isOk()) {
      std::printf("unexpected rejection\n");
    }
  }
  return p;
}

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

// ---------------------------------------------------------------------------
// Offline min-peak model for bench 2b (and, as a check, 2a's instances).
//
// It mirrors what the planner sees (Plan::problemFor): a periodic definition's
// first instance has the window [ceil(arrival), floor(deadline)) in plan steps,
// stage durations are rounded up to whole steps, and instance k holds the same
// allocation shifted by k*period, wrapped modulo the LCM. Loads are in vcores,
// what peak() measures.
//
// Every definition becomes block families. A family is `count` identical
// blocks of `height` vcores x `dur` steps, each starting at its own position p
// in [first, last] (steps of instance 0). Its integer columns are the
// cumulative counts Y_p = blocks starting at or before p: non-decreasing,
// lo[p] <= Y_p <= hi[p], Y_last = count. The load on step t of instance 0 is
// height * (Y_min(t,last) - Y_(t-dur)) (Y below `first` is 0): two matrix
// entries per step and instance whatever the block length, so 200 jobs with
// windows of up to 1440 steps stay a few hundred thousand non-zeros.
//  - One-stage definitions (2a's jobs; 2b's gang jobs) are modelled exactly:
//    n containers with gang g are floor(n/g) gangs of g plus one gang of
//    n mod g, each anywhere in the window (ReservationStage contract; the
//    agents place gangs exactly so).
//  - R_ORDER / R_ORDER_NO_GAP definitions whose stages are all one step with
//    min concurrency 1 (2b's skylines, skylineStages) are RELAXED. The agents
//    may stretch a stage over several steps, so a placement is any split of
//    the L ordered stages into consecutive non-empty step blocks inside the
//    window [a, a+w). Every such placement sends containers out in stage order
//    and stage k only in steps [a+k, a+k+w-L], so one family of unit blocks
//    (height 1 container, dur 1) with N(max(0, p+1-a-(w-L))) <= Y_p <= N(p+1-a),
//    N(m) = containers of the first m stages, contains all of them. Hence the
//    model optimum is a LOWER bound on the true optimum over the definitions,
//    but an integer solution of the model need not be a placement: the
//    model's incumbent is not an upper bound on the true optimum (LowCost's
//    and greedy's peaks are).
// Anything else is reported as unsupported (the bench exits).
struct Family {
  int64_t height = 0, dur = 0, first = 0, last = 0, count = 0, period = 0;
  std::vector<int64_t> lo, hi;  // bounds of Y_p, index p - first
  int col0 = 0;                 // GLPK column of Y_first
};

struct JobModel {
  int64_t a = 0, w = 0, vc = 1;  // window [a, a+w) of instance 0; vcores per container
  bool fluid = false;            // relaxed skyline (one family) or one-stage gang job
  int full = -1, rem = -1;       // families: full gangs / remainder gang (fluid: `full` only)
  int64_t gang = 0;              // one-stage: containers of a full gang
};

struct PeakModel {
  int64_t lcm = 0;  // plan steps
  std::vector<Family> fams;
  std::vector<JobModel> jobs;
  int64_t trivial = 0;     // max(least single-job peak, ceil(total load / lcm))
  glp_prob* lp = nullptr;  // column 1 = peak H (integer), then the families' Y
  int rows = 0, cols = 0, nnz = 0;

  PeakModel() = default;
  PeakModel(const PeakModel&) = delete;
  PeakModel& operator=(const PeakModel&) = delete;
  ~PeakModel() {
    if (lp != nullptr) glp_delete_prob(lp);
  }
};

int64_t ceilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }
int64_t floorModSteps(int64_t a, int64_t m) { return ((a % m) + m) % m; }

// Builds the model of `defs` (all periodic, period dividing the LCM).
// Exits with a message on a definition shape the model does not cover.
void buildPeakModel(const std::vector<ReservationDefinition>& defs, int64_t step_ms,
                    int64_t lcm_steps, PeakModel& m) {
  auto fail = [](size_t i, const char* why) {
    std::fprintf(stderr, "min-peak model: definition %zu: %s\n", i, why);
    std::exit(1);
  };
  m.lcm = lcm_steps;
  double area = 0;
  for (size_t i = 0; i < defs.size(); ++i) {
    const ReservationDefinition& d = defs[i];
    int64_t period = d.period.count() / step_ms;
    if (d.period.count() % step_ms != 0 || period <= 0 || lcm_steps % period != 0) {
      fail(i, "period is not a whole number of steps dividing the LCM");
    }
    JobModel j;
    j.a = ceilDiv(toEpochMs(d.arrival), step_ms);
    j.w = toEpochMs(d.deadline) / step_ms - j.a;
    if (j.w <= 0 || j.w > period) fail(i, "window empty or longer than the period");
    if (d.stages.empty()) fail(i, "no stages");
    j.vc = d.stages[0].capability.vcores();
    int64_t instances = lcm_steps / period;
    auto addFamily = [&](int64_t height, int64_t dur, int64_t count) {
      Family f;
      f.height = height;
      f.dur = dur;
      f.first = j.a;
      f.last = j.a + j.w - dur;
      f.count = count;
      f.period = period;
      f.lo.assign(static_cast<size_t>(f.last - f.first + 1), 0);
      f.hi.assign(f.lo.size(), count);
      f.lo.back() = count;
      m.fams.push_back(std::move(f));
      area += static_cast<double>(height * dur * count * instances);
      return static_cast<int>(m.fams.size() - 1);
    };
    bool unit_stages = true;
    for (const auto& s : d.stages) {
      if (s.capability.vcores() != j.vc) fail(i, "stages of different vcores");
      unit_stages = unit_stages && s.duration.count() == step_ms && s.min_concurrency == 1;
    }
    bool ordered =
        d.interpreter == Interpreter::kOrder || d.interpreter == Interpreter::kOrderNoGap;
    int64_t least = 0;  // the smallest peak this job alone can have
    if (d.stages.size() == 1) {
      const ReservationStage& s = d.stages[0];
      int64_t dur = ceilDiv(s.duration.count(), step_ms);
      if (dur > j.w || s.min_concurrency < 1 || s.num_containers < 1) fail(i, "bad stage");
      j.gang = std::min(s.min_concurrency, s.num_containers);
      int64_t full = s.num_containers / j.gang, rem = s.num_containers % j.gang;
      if (full > 0) j.full = addFamily(j.gang * j.vc, dur, full);
      if (rem > 0) j.rem = addFamily(rem * j.vc, dur, 1);
      least = std::max(j.gang * j.vc, ceilDiv(s.num_containers * dur, j.w) * j.vc);
    } else if (ordered && unit_stages) {
      int64_t L = static_cast<int64_t>(d.stages.size()), slack = j.w - L;
      if (slack < 0) fail(i, "more stages than window steps");
      std::vector<int64_t> cum{0};  // N(m)
      for (const auto& s : d.stages) cum.push_back(cum.back() + s.num_containers);
      j.fluid = true;
      int f = addFamily(j.vc, 1, cum.back());
      j.full = f;
      Family& fam = m.fams[static_cast<size_t>(f)];
      for (int64_t p = fam.first; p <= fam.last; ++p) {
        size_t q = static_cast<size_t>(p - fam.first);
        fam.lo[q] = cum[static_cast<size_t>(std::clamp<int64_t>(p + 1 - j.a - slack, 0, L))];
        fam.hi[q] = cum[static_cast<size_t>(std::clamp<int64_t>(p + 1 - j.a, 0, L))];
      }
      for (const auto& s : d.stages) least = std::max(least, ceilDiv(s.num_containers, slack + 1));
      least = std::max(least, ceilDiv(cum.back(), j.w)) * j.vc;
    } else {
      fail(i, "neither one stage nor ordered one-step stages with min concurrency 1");
    }
    m.trivial = std::max(m.trivial, least);
    m.jobs.push_back(j);
  }
  m.trivial = std::max(m.trivial, static_cast<int64_t>(std::ceil(area / lcm_steps - 1e-9)));

  // Columns: H, then each family's Y_first..Y_last.
  glp_prob* lp = glp_create_prob();
  m.lp = lp;
  glp_set_obj_dir(lp, GLP_MIN);
  glp_add_cols(lp, 1);
  glp_set_col_kind(lp, 1, GLP_IV);
  glp_set_col_bnds(lp, 1, GLP_LO, 0, 0);
  glp_set_obj_coef(lp, 1, 1.0);
  for (auto& f : m.fams) {
    int n = static_cast<int>(f.lo.size());
    f.col0 = glp_add_cols(lp, n);
    for (int q = 0; q < n; ++q) {
      int c = f.col0 + q;
      glp_set_col_kind(lp, c, GLP_IV);
      double lo = static_cast<double>(f.lo[static_cast<size_t>(q)]);
      double hi = static_cast<double>(f.hi[static_cast<size_t>(q)]);
      if (lo > hi) {
        std::fprintf(stderr, "min-peak model: empty bounds\n");
        std::exit(1);
      }
      glp_set_col_bnds(lp, c, lo == hi ? GLP_FX : GLP_DB, lo, hi);
    }
  }
  std::vector<int> ia{0}, ja{0};
  std::vector<double> ar{0};
  // Monotonicity: Y_p - Y_(p-1) >= 0.
  for (const auto& f : m.fams) {
    int n = static_cast<int>(f.lo.size());
    if (n <= 1) continue;
    int r0 = glp_add_rows(lp, n - 1);
    for (int q = 1; q < n; ++q) {
      int r = r0 + q - 1;
      glp_set_row_bnds(lp, r, GLP_LO, 0, 0);
      ia.insert(ia.end(), {r, r});
      ja.insert(ja.end(), {f.col0 + q, f.col0 + q - 1});
      ar.insert(ar.end(), {1.0, -1.0});
    }
  }
  // Load rows, only on LCM steps some family can reach: sum(...) - H <= 0.
  std::vector<std::vector<std::pair<int, double>>> terms(static_cast<size_t>(lcm_steps));
  for (const auto& f : m.fams) {
    double h = static_cast<double>(f.height);
    for (int64_t k = 0; k < lcm_steps / f.period; ++k) {
      for (int64_t t = f.first; t <= f.last + f.dur - 1; ++t) {
        auto& row = terms[static_cast<size_t>(floorModSteps(t + k * f.period, lcm_steps))];
        row.emplace_back(f.col0 + static_cast<int>(std::min(t, f.last) - f.first), h);
        if (t - f.dur >= f.first) {
          row.emplace_back(f.col0 + static_cast<int>(t - f.dur - f.first), -h);
        }
      }
    }
  }
  for (auto& row : terms) {
    if (row.empty()) continue;
    std::sort(row.begin(), row.end());
    int r = glp_add_rows(lp, 1);
    glp_set_row_bnds(lp, r, GLP_UP, 0, 0);
    ia.push_back(r);
    ja.push_back(1);
    ar.push_back(-1.0);
    for (size_t i = 0; i < row.size(); ++i) {
      if (i + 1 < row.size() && row[i + 1].first == row[i].first) {  // same column: merge
        row[i + 1].second += row[i].second;
        continue;
      }
      if (row[i].second == 0) continue;
      ia.push_back(r);
      ja.push_back(row[i].first);
      ar.push_back(row[i].second);
    }
  }
  glp_load_matrix(lp, static_cast<int>(ia.size() - 1), ia.data(), ja.data(), ar.data());
  m.rows = glp_get_num_rows(lp);
  m.cols = glp_get_num_cols(lp);
  m.nnz = glp_get_num_nz(lp);
}

// Per-step load (vcores) of a plan over [0, steps).
std::vector<int64_t> stepLoad(const Planner& p, int64_t steps, int64_t step_ms) {
  std::vector<int64_t> load(static_cast<size_t>(steps), 0);
  for (const auto& a : p.planLoad(at(0, step_ms), at(steps, step_ms))) {
    for (int64_t s = toEpochMs(a.start) / step_ms; s < toEpochMs(a.end) / step_ms; ++s) {
      load[static_cast<size_t>(s)] = a.resource.vcores();
    }
  }
  return load;
}

// The model's column vector (x[0] unused, x[1] = H) of the plan of a planner
// holding defs[i] as "j<i>": a skyline's family from its per-step total, a
// gang job's families by decoding its per-step container count into gang
// starts (count = gang * active full gangs + remainder gang, remainder < gang).
// Then checks that the point reproduces the plan's load at every LCM step
// (`plan_load`), sets H to its peak and checks every column and row bound of
// the GLPK problem. Returns "" when the plan is a feasible point of the model,
// else why not.
std::string modelPoint(const PeakModel& m, const Planner& planner, int64_t step_ms,
                       const std::vector<int64_t>& plan_load, std::vector<double>& x) {
  x.assign(static_cast<size_t>(m.cols) + 1, 0.0);
  auto placements = planner.placements();
  if (placements.size() != m.jobs.size()) return "planner and model differ in job count";
  for (const auto& ps : placements) {
    size_t i = std::stoul(ps.id.value().substr(1));
    const JobModel& j = m.jobs[i];
    std::string job = label("job ", static_cast<int64_t>(i));
    std::vector<int64_t> c(static_cast<size_t>(j.w), 0);  // containers per window step
    for (const auto& al : ps.placement->allocations) {
      int64_t s0 = toEpochMs(al.start) / step_ms, s1 = toEpochMs(al.end) / step_ms;
      if (s0 < j.a || s1 > j.a + j.w || al.resource.vcores() % j.vc != 0) {
        return job + ": allocation outside its window";
      }
      for (int64_t s = s0; s < s1; ++s) {
        c[static_cast<size_t>(s - j.a)] += al.resource.vcores() / j.vc;
      }
    }
    // Writes Y of family fi from block starts per window step.
    auto setY = [&](int fi, const std::vector<int64_t>& starts) {
      const Family& f = m.fams[static_cast<size_t>(fi)];
      int64_t y = 0;
      for (int64_t p = j.a; p < j.a + j.w; ++p) {
        int64_t st = starts[static_cast<size_t>(p - j.a)];
        if (st < 0 || (st > 0 && p > f.last)) return false;
        y += st;
        if (p <= f.last) x[static_cast<size_t>(f.col0 + (p - f.first))] = static_cast<double>(y);
      }
      return y == f.count;
    };
    // Block starts from the number of active blocks of `dur` steps.
    auto starts = [&](const std::vector<int64_t>& active, int64_t dur) {
      std::vector<int64_t> st(active.size(), 0);
      for (size_t t = 0; t < active.size(); ++t) {
        st[t] = active[t] - (t > 0 ? active[t - 1] : 0) +
                (t >= static_cast<size_t>(dur) ? st[t - static_cast<size_t>(dur)] : 0);
      }
      return st;
    };
    if (j.fluid) {
      if (!setY(j.full, c)) return job + ": skyline placement outside the model";
      continue;
    }
    const Family& full = m.fams[static_cast<size_t>(j.full)];
    int64_t remc = j.rem >= 0 ? m.fams[static_cast<size_t>(j.rem)].height / j.vc : 0;
    std::vector<int64_t> af(c.size()), ar(c.size());
    for (size_t t = 0; t < c.size(); ++t) {
      af[t] = c[t] / j.gang;
      int64_t r = c[t] % j.gang;
      if (r != 0 && r != remc) return job + ": per-step count is not gangs plus the remainder";
      ar[t] = r == 0 ? 0 : 1;
    }
    if (!setY(j.full, starts(af, full.dur))) return job + ": full gangs outside the model";
    if (j.rem >= 0 && !setY(j.rem, starts(ar, full.dur))) {
      return job + ": remainder gang outside the model";
    }
  }
  // The point's load must be the plan's load at every LCM step.
  auto y = [&](const Family& f, int64_t p) {
    return p < f.first ? 0.0 : x[static_cast<size_t>(f.col0 + (std::min(p, f.last) - f.first))];
  };
  std::vector<double> load(static_cast<size_t>(m.lcm), 0.0);
  for (const auto& f : m.fams) {
    for (int64_t k = 0; k < m.lcm / f.period; ++k) {
      for (int64_t t = f.first; t <= f.last + f.dur - 1; ++t) {
        load[static_cast<size_t>(floorModSteps(t + k * f.period, m.lcm))] +=
            static_cast<double>(f.height) * (y(f, t) - y(f, t - f.dur));
      }
    }
  }
  for (int64_t s = 0; s < m.lcm; ++s) {
    if (load[static_cast<size_t>(s)] != static_cast<double>(plan_load[static_cast<size_t>(s)])) {
      return label("model load differs from the plan at step ", s);
    }
  }
  x[1] = *std::max_element(load.begin(), load.end());
  // Every bound of the GLPK problem.
  const double tol = 1e-6;
  for (int c = 1; c <= m.cols; ++c) {
    double v = x[static_cast<size_t>(c)];
    if (v < glp_get_col_lb(m.lp, c) - tol ||
        (glp_get_col_type(m.lp, c) != GLP_LO && v > glp_get_col_ub(m.lp, c) + tol) ||
        v != std::round(v)) {
      return label("column bound violated: ", c);
    }
  }
  std::vector<int> ind(static_cast<size_t>(m.cols) + 1);
  std::vector<double> val(static_cast<size_t>(m.cols) + 1);
  for (int r = 1; r <= m.rows; ++r) {
    int len = glp_get_mat_row(m.lp, r, ind.data(), val.data());
    double act = 0;
    for (int k = 1; k <= len; ++k) {
      act += val[static_cast<size_t>(k)] * x[static_cast<size_t>(ind[static_cast<size_t>(k)])];
    }
    int type = glp_get_row_type(m.lp, r);
    if (((type == GLP_LO || type == GLP_DB || type == GLP_FX) &&
         act < glp_get_row_lb(m.lp, r) - tol) ||
        ((type == GLP_UP || type == GLP_DB || type == GLP_FX) &&
         act > glp_get_row_ub(m.lp, r) + tol)) {
      return label("row bound violated: ", r);
    }
  }
  return "";
}

// What GLPK proves about the model's optimum. All bounds in vcores; -1 when
// not obtained. `lb` is the best valid lower bound on the model optimum (and
// hence on the true optimum): max(trivial, ceil(LP), B&B global bound).
struct PeakBounds {
  int64_t trivial = 0, lp = -1, bb = -1, lb = 0;
  int64_t incumbent = -1;  // best integer solution of the model GLPK found
  bool optimal = false;    // incumbent proved optimal for the model
  double lp_s = 0, mip_s = 0;
};

// Smallest integer >= v, allowing for the solver's relative tolerance: a
// bound rounded this way is never above the true value it approximates.
int64_t safeCeil(double v) {
  return static_cast<int64_t>(std::ceil(v - 1e-6 * std::max(1.0, std::abs(v))));
}

// Tracks the branch-and-bound global lower bound: min(incumbent, best local
// bound of the active subproblems), the largest value seen.
struct BbTrack {
  double bound = -DBL_MAX;
  double incumbent = DBL_MAX;
  const std::vector<double>* start = nullptr;  // offered once as a first incumbent
};

void bbCallback(glp_tree* tree, void* info) {
  auto* b = static_cast<BbTrack*>(info);
  if (glp_ios_reason(tree) == GLP_IHEUR && b->start != nullptr) {
    glp_ios_heur_sol(tree, b->start->data());
    b->start = nullptr;
  }
  if (glp_ios_reason(tree) == GLP_IBINGO) {
    b->incumbent = std::min(b->incumbent, glp_mip_obj_val(glp_ios_get_prob(tree)));
  }
  int p = glp_ios_best_node(tree);
  if (p != 0) b->bound = std::max(b->bound, std::min(glp_ios_node_bound(tree, p), b->incumbent));
}

// LP relaxation (dual simplex, `seconds`), then branch and bound from its
// basis (`seconds`, best-bound node selection so the global bound rises).
// `start` (optional): a feasible point (modelPoint) offered as the first
// incumbent, which branch and bound then tries to improve on.
PeakBounds solvePeakModel(PeakModel& m, double seconds,
                          const std::vector<double>* start = nullptr) {
  PeakBounds b;
  b.trivial = m.trivial;
  b.lb = m.trivial;
  glp_smcp sp;
  glp_init_smcp(&sp);
  sp.msg_lev = GLP_MSG_OFF;
  sp.meth = GLP_DUALP;
  sp.tm_lim = static_cast<int>(seconds * 1000);
  auto t0 = std::chrono::steady_clock::now();
  int rc = glp_simplex(m.lp, &sp);
  b.lp_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (rc != 0 || glp_get_status(m.lp) != GLP_OPT) return b;
  b.lp = safeCeil(glp_get_obj_val(m.lp));
  b.lb = std::max(b.lb, b.lp);
  glp_iocp ip;
  glp_init_iocp(&ip);
  ip.msg_lev = GLP_MSG_OFF;
  ip.presolve = GLP_OFF;
  ip.bt_tech = GLP_BT_BLB;
  ip.tm_lim = static_cast<int>(seconds * 1000);
  BbTrack track;
  track.start = start;
  ip.cb_func = bbCallback;
  ip.cb_info = &track;
  t0 = std::chrono::steady_clock::now();
  rc = glp_intopt(m.lp, &ip);
  b.mip_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  int st = glp_mip_status(m.lp);
  if (st == GLP_OPT || st == GLP_FEAS) b.incumbent = std::llround(glp_mip_obj_val(m.lp));
  b.optimal = rc == 0 && st == GLP_OPT;
  if (b.optimal) {
    b.bb = b.incumbent;
  } else if (track.bound > -DBL_MAX) {
    b.bb = safeCeil(track.bound);
  }
  b.lb = std::max(b.lb, b.bb);
  return b;
}

void packingSmall(nlohmann::json& fig) {
  const int64_t kStepMs = kSmallStepMs, kSteps = kSmallSteps;
  std::printf("\n== 2a. packing vs MILP optimum (48-step plan, online daily gang jobs) ==\n");
  std::vector<double> rl, rg;
  for (uint64_t seed = 1; seed <= 9; ++seed) {
    std::vector<Job> jobs = smallJobs(seed);
    int njobs = static_cast<int>(jobs.size());
    bool optimal = false;
    double opt = milpPeak(jobs, kSteps, &optimal);
    int64_t pk[2];
    int idx = 0;
    for (const std::string agent : {"lowcost", "greedy"}) {
      auto p = submitAll(agent, 1'000'000, kSmallStepMs, smallDefs(jobs));
      pk[idx++] = peak(*p, kSteps, kStepMs);
    }
    rl.push_back(static_cast<double>(pk[0]) / opt);
    rg.push_back(static_cast<double>(pk[1]) / opt);
    std::printf("seed %llu jobs=%d MILP=%.0f%s lowcost=%lld (%.3fx) greedy=%lld (%.3fx)\n",
                static_cast<unsigned long long>(seed), njobs, opt, optimal ? "" : " (time limit)",
                static_cast<long long>(pk[0]), rl.back(), static_cast<long long>(pk[1]), rg.back());
  }
  std::printf("median ratio to optimum: lowcost %.3fx greedy %.3fx (target lowcost <= 1.2x)\n",
              percentile(rl, 0.5), percentile(rg, 0.5));
  fig = {{"lowcost_to_optimum_median", percentile(rl, 0.5)},
         {"greedy_to_optimum_median", percentile(rg, 0.5)}};
}

// LP bound of the model by column generation (Dantzig-Wolfe over the
// families), for models whose compact LP GLPK's simplex cannot solve in the
// time limit (2b's has ~60k rows and columns). The master LP (GLPK) is
//   min H  s.t.  sum_c load_c(t) lambda_c <= H  for every LCM step t,
//                sum_{c of f} lambda_c = 1     for every family f,
// over generated columns c, each a whole integral placement of one family.
// For any step weights mu >= 0 summing to 1, every point of the model has
//   H >= sum_t mu_t load(t) = sum_f mu . load_f >= sum_f min_c mu . load_c,
// the minimum taken over ALL placements of f (pricing, below), so that sum
// is a valid lower bound whatever mu is; mu = the master's load-row duals,
// normalised, makes it converge to the LP optimum. Pricing a family is exact
// and cheap: gang blocks are independent, so all go to the cheapest start;
// a fluid skyline's stage k goes to the cheapest step of [a+k, a+k+w-L]
// (stage ranges are monotone, so per-stage choices can be taken in order).
// Used to check the pricing against GLPK's compact LP on 2a's instances; on
// 2b's its master converges too slowly (lagrangianBound is used there).
struct CgResult {
  int64_t lb = -1;         // safeCeil of the best Lagrangian bound
  double master = 0;       // last master LP value (>= LP optimum)
  bool converged = false;  // lb reached ceil(master): lb is the rounded LP optimum
  int iterations = 0, columns = 0;
  double cg_s = 0;
};

struct Column {
  int fam = 0;
  std::vector<std::pair<int, double>> load;  // (LCM step, vcores)
};

// Load on LCM steps of family f with per-window-step block starts `starts`.
Column familyColumn(const PeakModel& m, int fi, const std::vector<int64_t>& starts) {
  const Family& f = m.fams[static_cast<size_t>(fi)];
  std::vector<int64_t> active(static_cast<size_t>(f.last + f.dur - f.first), 0);
  for (size_t q = 0; q < starts.size(); ++q) {
    if (starts[q] == 0) continue;
    for (int64_t i = 0; i < f.dur; ++i) active[q + static_cast<size_t>(i)] += starts[q];
  }
  Column c;
  c.fam = fi;
  for (int64_t k = 0; k < m.lcm / f.period; ++k) {
    for (size_t q = 0; q < active.size(); ++q) {
      if (active[q] == 0) continue;
      int64_t s = floorModSteps(f.first + static_cast<int64_t>(q) + k * f.period, m.lcm);
      c.load.emplace_back(static_cast<int>(s), static_cast<double>(active[q] * f.height));
    }
  }
  return c;
}

// Cheapest placement of family fi under step weights mu (per LCM step):
// returns its cost mu . load and sets `starts` (blocks per position). Unit u
// (the (u+1)-th block in start order) may start at p in [E_u, D_u], E_u =
// first p with hi[p] > u, D_u = first p with lo[p] > u; both rise with u, so
// any choice within the ranges can be sorted into a feasible Y (and every
// feasible Y is such a choice): units are priced independently, runs of units
// with the same range together, with a sliding-window minimum.
double priceFamily(const PeakModel& m, int fi, const std::vector<double>& mu,
                   std::vector<int64_t>& starts) {
  const Family& f = m.fams[static_cast<size_t>(fi)];
  size_t npos = f.lo.size(), span = npos + static_cast<size_t>(f.dur) - 1;
  std::vector<double> prefix(span + 1, 0.0);
  for (size_t q = 0; q < span; ++q) {
    double w = 0;
    for (int64_t k = 0; k < m.lcm / f.period; ++k) {
      w += mu[static_cast<size_t>(
          floorModSteps(f.first + static_cast<int64_t>(q) + k * f.period, m.lcm))];
    }
    prefix[q + 1] = prefix[q] + w;
  }
  auto unitCost = [&](size_t p) { return prefix[p + static_cast<size_t>(f.dur)] - prefix[p]; };
  starts.assign(npos, 0);
  double cost = 0;
  size_t e = 0, d = 0, next = 0;  // range [e, d]; positions < next are in the deque
  std::deque<size_t> dq;          // increasing positions, increasing cost
  for (int64_t u = 0; u < f.count;) {
    while (f.hi[e] <= u) ++e;
    while (f.lo[d] <= u) ++d;
    for (; next <= d; ++next) {
      while (!dq.empty() && unitCost(dq.back()) >= unitCost(next)) dq.pop_back();
      dq.push_back(next);
    }
    while (dq.front() < e) dq.pop_front();
    int64_t v = std::min({f.hi[e], f.lo[d], f.count});  // units u..v-1 share [e, d]
    starts[dq.front()] += v - u;
    cost += static_cast<double>(v - u) * unitCost(dq.front()) * static_cast<double>(f.height);
    u = v;
  }
  return cost;
}

// Column generation for at most `seconds`. `seed_plans`: model points (modelPoint) whose family
// placements start the master, so it is feasible from the first iteration.
CgResult columnGeneration(const PeakModel& m, const std::vector<std::vector<double>>& seed_plans,
                          double seconds) {
  CgResult res;
  auto t0 = std::chrono::steady_clock::now();
  auto elapsed = [&] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  };
  int nf = static_cast<int>(m.fams.size());
  int lcm = static_cast<int>(m.lcm);
  glp_prob* lp = glp_create_prob();
  glp_set_obj_dir(lp, GLP_MIN);
  glp_add_rows(lp, lcm + nf);
  for (int r = 1; r <= lcm; ++r) glp_set_row_bnds(lp, r, GLP_UP, 0, 0);
  for (int r = lcm + 1; r <= lcm + nf; ++r) glp_set_row_bnds(lp, r, GLP_FX, 1, 1);
  glp_add_cols(lp, 1);
  glp_set_col_bnds(lp, 1, GLP_LO, 0, 0);
  glp_set_obj_coef(lp, 1, 1.0);
  {
    std::vector<int> ind{0};
    std::vector<double> val{0};
    for (int r = 1; r <= lcm; ++r) {
      ind.push_back(r);
      val.push_back(-1.0);
    }
    glp_set_mat_col(lp, 1, lcm, ind.data(), val.data());
  }
  auto addColumn = [&](const Column& c) {
    int j = glp_add_cols(lp, 1);
    glp_set_col_bnds(lp, j, GLP_LO, 0, 0);
    std::vector<int> ind{0};
    std::vector<double> val{0};
    for (const auto& [s, v] : c.load) {
      ind.push_back(s + 1);
      val.push_back(v);
    }
    ind.push_back(lcm + 1 + c.fam);
    val.push_back(1.0);
    glp_set_mat_col(lp, j, static_cast<int>(ind.size() - 1), ind.data(), val.data());
    ++res.columns;
  };
  // Seed columns: each family's part of the given plans.
  for (const auto& x : seed_plans) {
    for (int fi = 0; fi < nf; ++fi) {
      const Family& f = m.fams[static_cast<size_t>(fi)];
      std::vector<int64_t> starts(f.lo.size(), 0);
      double prev = 0;
      for (size_t q = 0; q < starts.size(); ++q) {
        double y = x[static_cast<size_t>(f.col0) + q];
        starts[q] = std::llround(y - prev);
        prev = y;
      }
      addColumn(familyColumn(m, fi, starts));
    }
  }
  glp_smcp sp;
  glp_init_smcp(&sp);
  sp.msg_lev = GLP_MSG_OFF;
  double best_lb = -DBL_MAX;
  std::vector<double> mu(static_cast<size_t>(lcm));
  std::vector<int64_t> starts;
  while (elapsed() < seconds) {
    sp.tm_lim = std::max(1, static_cast<int>((seconds - elapsed()) * 1000));
    glp_scale_prob(lp, GLP_SF_AUTO);  // unscaled, primal simplex stalls on the first master
    if (glp_simplex(lp, &sp) != 0 || glp_get_status(lp) != GLP_OPT) break;
    ++res.iterations;
    res.master = glp_get_obj_val(lp);
    double total = 0;
    for (int t = 0; t < lcm; ++t) {
      mu[static_cast<size_t>(t)] = std::max(0.0, -glp_get_row_dual(lp, t + 1));
      total += mu[static_cast<size_t>(t)];
    }
    if (total <= 0) break;
    double lag = 0;
    int added = 0;
    for (int fi = 0; fi < nf; ++fi) {
      double v = priceFamily(m, fi, mu, starts);
      lag += v;
      if (v - glp_get_row_dual(lp, lcm + 1 + fi) < -1e-9 * std::max(1.0, res.master)) {
        addColumn(familyColumn(m, fi, starts));
        ++added;
      }
    }
    best_lb = std::max(best_lb, lag / total);
    res.lb = safeCeil(best_lb);
    if (res.lb >= safeCeil(res.master) || added == 0) {
      res.converged = true;
      break;
    }
  }
  res.cg_s = elapsed();
  glp_delete_prob(lp);
  return res;
}

// Lagrangian lower bound for 2b: the bound of columnGeneration's comment,
// sum_f min_c mu . load_c for step weights mu >= 0 summing to 1, maximised
// over mu by exponentiated-gradient ascent (the supergradient at mu is the
// per-step load of the cheapest placements) for `seconds`. Every iterate's
// value is a valid lower bound on the model optimum; the best is returned,
// rounded with safeCeil. Uniform mu (the start) gives the average load.
int64_t lagrangianBound(const PeakModel& m, double seconds, int* iterations) {
  auto t0 = std::chrono::steady_clock::now();
  size_t lcm = static_cast<size_t>(m.lcm);
  std::vector<double> mu(lcm, 1.0 / static_cast<double>(lcm)), g(lcm);
  std::vector<int64_t> starts;
  double best = -DBL_MAX;
  int k = 0;
  while (std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() < seconds) {
    ++k;
    std::fill(g.begin(), g.end(), 0.0);
    double value = 0;
    for (int fi = 0; fi < static_cast<int>(m.fams.size()); ++fi) {
      value += priceFamily(m, fi, mu, starts);
      for (const auto& [s, v] : familyColumn(m, fi, starts).load) g[static_cast<size_t>(s)] += v;
    }
    double total = std::accumulate(mu.begin(), mu.end(), 0.0);
    best = std::max(best, value / total);
    // mu_t *= exp(eta * (g_t - max g) / max g): steps above the peak gain weight.
    double gmax = *std::max_element(g.begin(), g.end());
    if (gmax <= 0) break;
    double eta = 2.0 / std::sqrt(static_cast<double>(k));
    double sum = 0;
    for (size_t t = 0; t < lcm; ++t) {
      mu[t] *= std::exp(eta * (g[t] - gmax) / gmax);
      sum += mu[t];
    }
    for (auto& v : mu) v /= sum;
  }
  *iterations = k;
  return best > -DBL_MAX ? safeCeil(best) : -1;
}

// Checks the min-peak model on 2a's instances through the same code path as
// 2b: its optimum must equal 2a's MILP (milpPeak) and the LowCost and greedy
// plans must be feasible points of it. Exits on any disagreement.
void checkModelOnSmall() {
  std::string optima, lps;
  for (uint64_t seed = 1; seed <= 9; ++seed) {
    std::vector<Job> jobs = smallJobs(seed);
    std::vector<ReservationDefinition> defs = smallDefs(jobs);
    PeakModel m;
    buildPeakModel(defs, kSmallStepMs, kSmallSteps, m);
    std::vector<std::vector<double>> points;
    for (const std::string agent : {"lowcost", "greedy"}) {
      auto p = submitAll(agent, 1'000'000, kSmallStepMs, defs);
      std::vector<double>& x = points.emplace_back();
      std::string why = modelPoint(m, *p, kSmallStepMs, stepLoad(*p, kSmallSteps, kSmallStepMs), x);
      if (!why.empty()) {
        std::printf("MODEL CHECK FAILED: 2a seed %llu, %s plan: %s\n",
                    static_cast<unsigned long long>(seed), agent.c_str(), why.c_str());
        std::exit(1);
      }
    }
    bool optimal = false;
    double opt = milpPeak(jobs, kSmallSteps, &optimal);
    PeakBounds b = solvePeakModel(m, 20);
    if (!optimal || !b.optimal || static_cast<double>(b.incumbent) != opt) {
      std::printf("MODEL CHECK FAILED: 2a seed %llu: MILP %.0f%s, model %lld%s (LB %lld)\n",
                  static_cast<unsigned long long>(seed), opt, optimal ? "" : " (time limit)",
                  static_cast<long long>(b.incumbent), b.optimal ? "" : " (not proved)",
                  static_cast<long long>(b.lb));
      std::exit(1);
    }
    CgResult cg = columnGeneration(m, points, 20);
    if (!cg.converged || cg.lb != b.lp) {
      std::printf(
          "MODEL CHECK FAILED: 2a seed %llu: column generation bound %lld%s, compact LP "
          "bound %lld\n",
          static_cast<unsigned long long>(seed), static_cast<long long>(cg.lb),
          cg.converged ? "" : " (not converged)", static_cast<long long>(b.lp));
      std::exit(1);
    }
    optima += " " + std::to_string(b.incumbent);
    lps += " " + std::to_string(b.lp);
  }
  std::printf(
      "model check on 2a's 9 instances: optima%s = 2a's MILP; LP bounds%s equal by "
      "compact LP and column generation; LowCost and greedy plans are feasible points "
      "with the plans' loads\n",
      optima.c_str(), lps.c_str());
}

// 2b: LowCost and greedy on 200 online periodic jobs, against a lower bound
// on the offline optimum from the min-peak model (`milp_seconds` per seed).
// Exits if either plan is not a point of the model or lies below the bound.
void packingLarge(double milp_seconds, nlohmann::json& fig) {
  const int64_t kStepMs = kLargeStepMs, kSteps = kLargeSteps;
  std::printf("\n== 2b. packing, 200 online random periodic jobs (1440-step plan) ==\n");
  checkModelOnSmall();
  std::printf(
      "offline optimum OPT: min-peak model (gang jobs exact, skylines relaxed to ordered "
      "fluid, so model OPT <= OPT). Its compact MILP (~60k columns and rows) is beyond "
      "GLPK\n(root LP unsolved in 120 s); LB = max(trivial, Lagrangian bound, %.0f s). No "
      "MILP incumbent: the best known plan is LowCost's.\n",
      milp_seconds);
  std::printf("%4s %7s %6s %6s %18s %10s %9s %14s  %s\n", "seed", "lowcost", "greedy", "avg",
              "LB (trivial/Lagr)", "lowcost/LB", "greedy/LB", "lowcost/greedy",
              "model cols/rows/nz, Lagrangian iterations, s");
  std::vector<double> ratio, r_lb, rg_lb;
  for (uint64_t seed = 1; seed <= 5; ++seed) {
    double area = 0;
    std::vector<ReservationDefinition> defs = largeDefs(seed, &area);
    int64_t pk[2];
    int idx = 0;
    PeakModel m;
    buildPeakModel(defs, kStepMs, kSteps, m);
    std::vector<std::vector<double>> points;
    for (const std::string agent : {"lowcost", "greedy"}) {
      auto p = submitAll(agent, 10'000'000, kStepMs, defs);
      pk[idx++] = peak(*p, kSteps, kStepMs);
      std::vector<double>& x = points.emplace_back();
      std::string why = modelPoint(m, *p, kStepMs, stepLoad(*p, kSteps, kStepMs), x);
      if (!why.empty() || x[1] != static_cast<double>(pk[idx - 1])) {
        std::printf("MODEL CHECK FAILED: seed %llu, %s plan is not a point of the model: %s\n",
                    static_cast<unsigned long long>(seed), agent.c_str(), why.c_str());
        std::exit(1);
      }
    }
    int iters = 0;
    auto t0 = std::chrono::steady_clock::now();
    int64_t lag = lagrangianBound(m, milp_seconds, &iters);
    double lag_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    int64_t lb = std::max(m.trivial, lag);
    if (pk[0] < lb || pk[1] < lb) {
      std::printf("MODEL WRONG: seed %llu lower bound %lld above a plan (%lld, %lld)\n",
                  static_cast<unsigned long long>(seed), static_cast<long long>(lb),
                  static_cast<long long>(pk[0]), static_cast<long long>(pk[1]));
      std::exit(1);
    }
    ratio.push_back(static_cast<double>(pk[0]) / static_cast<double>(pk[1]));
    r_lb.push_back(static_cast<double>(pk[0]) / static_cast<double>(lb));
    rg_lb.push_back(static_cast<double>(pk[1]) / static_cast<double>(lb));
    std::string lbs = std::to_string(lb) + " (" + std::to_string(m.trivial) + "/" +
                      (lag < 0 ? std::string("-") : std::to_string(lag)) + ")";
    std::printf("%4llu %7lld %6lld %6.0f %18s %10.3f %9.3f %14.3f  %d/%d/%d, %d, %.1f\n",
                static_cast<unsigned long long>(seed), static_cast<long long>(pk[0]),
                static_cast<long long>(pk[1]), area / kSteps, lbs.c_str(), r_lb.back(),
                rg_lb.back(), ratio.back(), m.cols, m.rows, m.nnz, iters, lag_s);
  }
  std::printf("median lowcost/greedy peak ratio: %.3f (target < 1)\n", percentile(ratio, 0.5));
  std::printf(
      "median lowcost/LB: %.3f (>= lowcost/OPT; target lowcost <= 1.2x OPT), "
      "median greedy/LB: %.3f\n",
      percentile(r_lb, 0.5), percentile(rg_lb, 0.5));
  fig = {{"lowcost_to_greedy_median", percentile(ratio, 0.5)},
         {"lowcost_to_lower_bound_median", percentile(r_lb, 0.5)},
         {"greedy_to_lower_bound_median", percentile(rg_lb, 0.5)}};
}

// Bench 2c's instances: 200 periodic one-stage gang jobs (daily, 6-hourly,
// 2-hourly) on a 48-step day (30-minute steps), the shape of 2b's gang jobs at
// a granularity where GLPK solves the exact min-peak MILP.
std::vector<ReservationDefinition> mediumDefs(uint64_t seed) {
  std::mt19937_64 rng(seed);
  auto uni = [&](int64_t a, int64_t b) {
    return std::uniform_int_distribution<int64_t>(a, b)(rng);
  };
  std::vector<ReservationDefinition> defs;
  for (int i = 0; i < 200; ++i) {
    const int64_t periods[] = {48, 48, 48, 12, 4};
    int64_t period = periods[uni(0, 4)];
    int64_t len = uni(1, period / 4);
    ReservationDefinition d = periodicWindow(uni, period, len, kSmallStepMs);
    int64_t n = uni(10, 100);
    d.stages = {ReservationStage{kOne, n, uni(1, n), Millis(len * kSmallStepMs)}};
    defs.push_back(std::move(d));
  }
  return defs;
}

// 2c: 200 online periodic jobs against the offline optimum of the
// exact min-peak MILP (GLPK, `seconds` for its LP and as much for branch and
// bound). Ratios are taken against the MILP's proven lower bound, so they
// are upper bounds on the ratios to the true optimum.
void packingMedium(double seconds, nlohmann::json& fig) {
  std::printf(
      "\n== 2c. packing, 200 online random periodic gang jobs vs the MILP optimum (48-step "
      "plan) ==\n");
  std::printf("%4s %7s %6s %9s %8s %11s %10s %9s %14s  %s\n", "seed", "lowcost", "greedy",
              "MILP inc", "MILP LB", "lowcost/inc", "lowcost/LB", "greedy/LB", "lowcost/greedy",
              "cols/rows, LP+B&B s");
  std::vector<double> rl, ri, rg, ratio;
  for (uint64_t seed = 1; seed <= 5; ++seed) {
    std::vector<ReservationDefinition> defs = mediumDefs(seed);
    PeakModel m;
    buildPeakModel(defs, kSmallStepMs, kSmallSteps, m);
    int64_t pk[2];
    int idx = 0;
    std::vector<double> points[2];
    for (const std::string agent : {"lowcost", "greedy"}) {
      auto p = submitAll(agent, 10'000'000, kSmallStepMs, defs);
      pk[idx] = peak(*p, kSmallSteps, kSmallStepMs);
      std::vector<double>& x = points[idx];
      std::string why = modelPoint(m, *p, kSmallStepMs, stepLoad(*p, kSmallSteps, kSmallStepMs), x);
      if (!why.empty() || x[1] != static_cast<double>(pk[idx])) {
        std::printf("MODEL CHECK FAILED: 2c seed %llu, %s plan: %s\n",
                    static_cast<unsigned long long>(seed), agent.c_str(), why.c_str());
        std::exit(1);
      }
      ++idx;
    }
    PeakBounds b = solvePeakModel(m, seconds, &points[0]);
    if (b.lb > pk[0] || b.lb > pk[1]) {
      std::printf("MODEL WRONG: 2c seed %llu lower bound %lld above a plan\n",
                  static_cast<unsigned long long>(seed), static_cast<long long>(b.lb));
      std::exit(1);
    }
    rl.push_back(static_cast<double>(pk[0]) / static_cast<double>(b.lb));
    // The incumbent is never above LowCost's peak (offered as the start).
    ri.push_back(static_cast<double>(pk[0]) /
                 static_cast<double>(std::max<int64_t>(1, b.incumbent)));
    rg.push_back(static_cast<double>(pk[1]) / static_cast<double>(b.lb));
    ratio.push_back(static_cast<double>(pk[0]) / static_cast<double>(pk[1]));
    std::string inc = b.incumbent < 0 ? std::string("-") : std::to_string(b.incumbent);
    if (b.optimal) inc += " opt";
    std::printf("%4llu %7lld %6lld %9s %8lld %11.3f %10.3f %9.3f %14.3f  %d/%d, %.1f+%.1f\n",
                static_cast<unsigned long long>(seed), static_cast<long long>(pk[0]),
                static_cast<long long>(pk[1]), inc.c_str(), static_cast<long long>(b.lb), ri.back(),
                rl.back(), rg.back(), ratio.back(), m.cols, m.rows, b.lp_s, b.mip_s);
  }
  std::printf(
      "median lowcost/MILP-LB: %.3f (>= lowcost/OPT; target <= 1.2), lowcost/MILP-incumbent: "
      "%.3f (<= lowcost/OPT), greedy/MILP-LB: %.3f, lowcost/greedy: %.3f (target < 1)\n",
      percentile(rl, 0.5), percentile(ri, 0.5), percentile(rg, 0.5), percentile(ratio, 0.5));
  fig = {{"lowcost_to_milp_lower_bound_median", percentile(rl, 0.5)},
         {"lowcost_to_milp_incumbent_median", percentile(ri, 0.5)},
         {"greedy_to_milp_lower_bound_median", percentile(rg, 0.5)},
         {"lowcost_to_greedy_median", percentile(ratio, 0.5)}};
}

}  // namespace

// Usage: bench_planner [--milp-seconds=S] [--latency-only] [--json]
// S (default 60, or env MORPHEUS_BENCH_MILP_SECONDS) is the time 2c's branch
// and bound and 2b's lower bound each get per seed (5 seeds each; whole bench
// ~11 minutes by default). --latency-only runs bench 1 only. The last line is
// the JSON report (bench/report/bench_report.h); --json prints only it.
int main(int argc, char** argv) {
  bench::BenchReport report("planner", &argc, argv);
  double milp_seconds = 60;
  bool latency_only = false;
  if (const char* env = std::getenv("MORPHEUS_BENCH_MILP_SECONDS")) milp_seconds = std::atof(env);
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    const std::string flag = "--milp-seconds=";
    if (a.rfind(flag, 0) == 0) {
      milp_seconds = std::atof(a.c_str() + flag.size());
    } else if (a == "--latency-only") {
      latency_only = true;
    } else {
      std::fprintf(stderr, "usage: %s [--milp-seconds=S] [--json] [--latency-only]\n", argv[0]);
      return 2;
    }
  }
  if (!(milp_seconds > 0)) {
    std::fprintf(stderr, "--milp-seconds must be > 0\n");
    return 2;
  }
  glp_term_out(GLP_OFF);
  nlohmann::json& fig = report.figures();
  latencyBench(fig);
  if (!latency_only) {
    packingSmall(fig["packing_2a"]);
    packingMedium(milp_seconds, fig["packing_2c"]);
    packingLarge(milp_seconds, fig["packing_2b"]);
  }
  report.targets() = {{"latency_p50_ms_max", 10},
                      {"latency_p99_ms_max", 50},
                      {"lowcost_to_optimum_max", 1.2},
                      {"lowcost_to_greedy_max", 1.0}};
  report.emit();
  return 0;
}
