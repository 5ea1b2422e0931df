// Periodic-job generator and instance realisation, following the
// Morpheus trace findings (Jyothi et al., OSDI'16 §2, Fig. 2a, 3, 9a).
//
// Every number below is a stated modelling choice, drawn per job from the
// counter-based streams of sim/workloads/workload_rng.h (key: seed, job index, k = -1,
// draw name), so the same options give the same Workload byte for byte.
//
// Definitions used by the generator and by its tests:
// - nominal skyline: the day-0 DAG with every stage running all its tasks at
//   once, each for its nominal task_duration (no noise, no stragglers);
// - average need A = nominal work (sum of tasks x task_duration over stages)
//   / nominal critical path (longest dependency chain of stage durations): the
//   average number of containers the job keeps busy while it runs;
// - provisioning ratio = user_containers / A (Fig. 2a "provisioned / used");
//   > 1.1 is over-provisioned, < 0.9 under-provisioned, between is right-sized;
// - typical runtime T = median, over instances 0..4, of the realised run
//   list-scheduled on the user's provisioning (user_containers containers;
//   ready stages in order, each task on the first free container): the
//   runtime the trace observes under the status quo, which Fig. 9a's slack
//   is measured on — not the unconstrained critical path, which an
//   under-provisioned job never achieves;
// - slack = (deadline - submit) / T; deadline - input_available is longer by
//   the input lead (Fig. 9a: "could run twice" means
//   deadline - input_available >= 2 T).
#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <functional>
#include <queue>
#include <set>

#include "sim/workloads/workload.h"
#include "sim/workloads/workload_rng.h"

namespace morpheus::sim {

namespace {

constexpr int64_t kSecondMs = 1000;
constexpr int64_t kMinuteMs = 60 * kSecondMs;
constexpr int64_t kHourMs = 60 * kMinuteMs;
constexpr int64_t kDayMs = 24 * kHourMs;

// Periods (Morpheus §2, Fig. 3: "most jobs run hourly or daily"): 60% hourly,
// 30% daily, 10% spread evenly over the other periods that divide a day.
constexpr double kHourlyShare = 0.6;
constexpr double kDailyShare = 0.3;
constexpr std::array<int64_t, 6> kOtherPeriodsMs = {30 * kMinuteMs, 2 * kHourMs, 3 * kHourMs,
                                                    4 * kHourMs,    6 * kHourMs, 12 * kHourMs};

// Submissions cluster just after the start of the hour (Fig. 3): 85% of jobs
// submit within the first 5 minutes of their hour, the rest anywhere in it.
// Jobs with periods longer than an hour pick a whole hour inside the period.
constexpr double kEarlySubmitShare = 0.85;
constexpr int64_t kEarlySubmitWindowMs = 5 * kMinuteMs;
// The producer writes the input up to 2 minutes before the submission.
constexpr int64_t kInputLeadMaxMs = 2 * kMinuteMs;

// DAG shape: 2-5 stages; 30% of jobs with >= 3 stages join two map stages.
// Typical runtime target: log-uniform in [3 min, min(30% of the period,
// 90 min)], split over the critical path; tasks run 20 s to 30 min.
constexpr double kJoinShare = 0.3;
constexpr int64_t kRuntimeMinMs = 3 * kMinuteMs;
constexpr int64_t kRuntimeMaxMs = 90 * kMinuteMs;
constexpr double kRuntimeMaxPeriodShare = 0.3;
constexpr int64_t kTaskMinMs = 20 * kSecondMs;
constexpr int64_t kTaskMaxMs = 30 * kMinuteMs;
// Width of the first map stage before load scaling (heavy-tailed); each later
// stage keeps 10%-60% of the tasks of the narrowest stage it depends on.
constexpr double kWidthMin = 1.0;
constexpr double kWidthMax = 100.0;
// No stage is wider than a quarter of the containers of its size the cluster
// holds (counted per node, so 2x-memory containers count half as many).
constexpr double kMaxJobClusterShare = 0.25;

// Run-to-run variance (§2 "runtimes vary"): noise cv 5%-25%; stragglers per
// task 0.05%-0.5%, 1.5x-2.5x longer; failures 0.5%-2.5% of runs (mean 1.5%);
// half the jobs grow their input by up to 1% a day; 10% change code once,
// making tasks 0.75x-1.3x as long.
constexpr double kGrowingShare = 0.5;
constexpr double kGrowthMax = 0.01;
// drawInstance never multiplies task counts by more than this.
constexpr double kMaxGrowth = 1000.0;
constexpr double kCodeChangeShare = 0.1;

// Deadline slack (Fig. 9a): 70% of jobs have slack in [2.05, 6] (could run
// twice before the deadline), 30% in [1.3, 1.95]. The deadline is set from
// the submission (deadline - submit = slack x T), so even a tight job can
// make it with enough capacity in a typical run; deadline - input_available
// is longer by the input lead. The window never exceeds the period, so an
// instance's deadline is at most the next one's input.
constexpr double kLooseSlackShare = 0.7;
constexpr double kTightSlackMin = 1.3;

// User provisioning (Fig. 2a), ratio to the average need A: 15% under
// (0.3-0.85), 10% about right (0.95-1.05), 55% over by 1.15-10x, 20% over by
// 10.5-40x; at least one container, at most the cluster's containers of
// the job's size.
constexpr double kUnderShare = 0.15;
constexpr double kRightShare = 0.10;
constexpr double kBigOverShare = 0.20;

struct DraftJob {
  PeriodicJob job;
  std::vector<double> raw_width;  // per stage, before load scaling
};

Status validate(const GeneratorOptions& o) {
  if (o.periodic_jobs < 0) return invalidArgument("periodic_jobs", "must be >= 0");
  if (o.days < 1) return invalidArgument("days", "must be >= 1");
  if (o.nodes < 1) return invalidArgument("nodes", "must be >= 1");
  if (!(o.periodic_load >= 0.0 && o.periodic_load <= 1.0)) {
    return invalidArgument("periodic_load", "must be in [0, 1]");
  }
  if (o.node_size.memoryMib() < 1 || o.node_size.vcores() < 1) {
    return invalidArgument("node_size", "needs memory >= 1 MiB and vcores >= 1");
  }
  return Status::ok();
}

Millis drawPeriod(const rng::Stream& s) {
  double u = s.uniform(0);
  if (u < kHourlyShare) return Millis(kHourMs);
  if (u < kHourlyShare + kDailyShare) return Millis(kDayMs);
  return Millis(kOtherPeriodsMs[static_cast<size_t>(s.below(1, kOtherPeriodsMs.size()))]);
}

int64_t roundToSecond(double ms) { return static_cast<int64_t>(std::llround(ms / 1000.0)) * 1000; }

Millis drawSubmitOffset(Millis period, const rng::Stream& s) {
  const int64_t hours = period.count() / kHourMs;
  const int64_t hour_start = hours > 1 ? s.below(0, hours) * kHourMs : 0;
  const int64_t window = std::min<int64_t>(period.count(), kHourMs);
  const int64_t spread = s.uniform(1) < kEarlySubmitShare ? kEarlySubmitWindowMs : window;
  const int64_t within = std::min(window - kSecondMs, roundToSecond(s.uniform(2) * spread));
  return Millis(hour_start + within);
}

// Containers: 1 vcore and 1/2, 1 or 2 node memory-per-vcore shares (10%, 60%,
// 30%), never more than the node.
Resource drawContainer(const Resource& node, const rng::Stream& s) {
  const int64_t per_vcore = std::max<int64_t>(1, node.memoryMib() / node.vcores());
  double u = s.uniform(0);
  int64_t memory = u < 0.1   ? std::max<int64_t>(1, per_vcore / 2)
                   : u < 0.7 ? per_vcore
                             : 2 * per_vcore;
  return Resource(std::min(memory, node.memoryMib()), 1);
}

void drawVariance(PeriodicJob& job, int64_t days, const rng::Stream& s) {
  job.duration_noise_cv = s.uniform(0, 0.05, 0.25);
  job.straggler_probability = s.uniform(1, 0.0005, 0.005);
  job.straggler_factor = s.uniform(2, 1.5, 2.5);
  job.failure_probability = s.uniform(3, 0.005, 0.025);
  job.input_growth_per_day = s.uniform(4) < kGrowingShare ? s.uniform(5, 0.0, kGrowthMax) : 0.0;
  if (days > 1 && s.uniform(6) < kCodeChangeShare) {
    job.code_change_day = 1 + s.below(7, days - 1);
    job.code_change_factor = s.logUniform(8, 0.75, 1.3);
  }
}

// The DAG's stage list with durations and unscaled widths (tasks set later).
void drawStages(DraftJob& d, const Resource& container, const rng::Stream& s) {
  const int64_t n = 2 + s.below(0, 4);
  const bool join = n >= 3 && s.uniform(1) < kJoinShare;
  const double hi = std::min<double>(kRuntimeMaxMs, kRuntimeMaxPeriodShare * d.job.period.count());
  const double runtime = s.logUniform(2, kRuntimeMinMs, std::max<double>(hi, kRuntimeMinMs));
  std::vector<double> weight(static_cast<size_t>(n));
  double path_weight = 0;
  for (int64_t i = 0; i < n; i++) {
    weight[i] = s.uniform(10 + i, 0.5, 1.5);
    if (!(join && i == 1)) path_weight += weight[i];
  }
  for (int64_t i = 0; i < n; i++) {
    SimStage st;
    double ms = runtime * weight[i] / path_weight;
    double width = 0;
    if (i == 0) {
      st.name = "map";
      width = s.logUniform(20, kWidthMin, kWidthMax);
    } else if (join && i == 1) {
      st.name = "map-join";
      ms = std::min(ms, runtime * weight[0] / path_weight);
      width = d.raw_width[0] * s.uniform(21, 0.3, 1.0);
    } else {
      st.name = "reduce" + std::to_string(i);
      const size_t from = static_cast<size_t>(i - 1);  // after a join: the narrower map
      width = d.raw_width[from] * s.uniform(30 + i, 0.1, 0.6);
      if (join && i == 2) {
        st.depends_on = {0, 1};
      } else {
        st.depends_on = {static_cast<int>(i - 1)};
      }
    }
    st.task_duration = Millis(std::clamp(roundToSecond(ms), kTaskMinMs, kTaskMaxMs));
    st.task_resource = container;
    d.job.stages.push_back(std::move(st));
    d.raw_width.push_back(width);
  }
}

// Mean over days 0..days-1 of x(day).
template <typename F>
double meanOverDays(int64_t days, F x) {
  double sum = 0;
  for (int64_t day = 0; day < days; day++) sum += x(day);
  return sum / static_cast<double>(days);
}

// Expected cluster share of one task of each stage, summed over stages with
// width w: demand = sum_s w_s * unit[s]. Includes stragglers, input growth and
// code changes averaged over the simulated days; noise has mean 1.
std::vector<double> stageUnitDemand(const PeriodicJob& job, int64_t days,
                                    const Resource& capacity) {
  const double share = job.stages.front().task_resource.dominantShare(capacity);
  const double straggle = 1.0 + job.straggler_probability * (job.straggler_factor - 1.0);
  const double growth = meanOverDays(
      days, [&](int64_t day) { return std::pow(1.0 + job.input_growth_per_day, day); });
  const double code = meanOverDays(days, [&](int64_t day) {
    return job.code_change_day >= 0 && day >= job.code_change_day ? job.code_change_factor : 1.0;
  });
  std::vector<double> unit;
  for (const auto& st : job.stages) {
    unit.push_back(growth * code * straggle * static_cast<double>(st.task_duration.count()) *
                   share / static_cast<double>(job.period.count()));
  }
  return unit;
}

// Scales every job's widths by one factor so the expected total periodic
// demand is `target` (a share of the cluster). Tasks are integers >= 1 and at
// most `max_tasks[j]`, so the factor is refined a few times on the rounded
// counts. Returns the expected demand reached.
double scaleToLoad(std::vector<DraftJob>& drafts, const std::vector<std::vector<double>>& unit,
                   double target, const std::vector<int64_t>& max_tasks) {
  double raw = 0;
  for (size_t j = 0; j < drafts.size(); j++) {
    for (size_t s = 0; s < unit[j].size(); s++) raw += drafts[j].raw_width[s] * unit[j][s];
  }
  double factor = raw > 0 ? target / raw : 0;
  double got = 0;
  for (int round = 0; round < 4; round++) {
    got = 0;
    for (size_t j = 0; j < drafts.size(); j++) {
      for (size_t s = 0; s < unit[j].size(); s++) {
        auto tasks = static_cast<int64_t>(std::llround(drafts[j].raw_width[s] * factor));
        tasks = std::clamp<int64_t>(tasks, 1, max_tasks[j]);
        drafts[j].job.stages[s].tasks = tasks;
        got += static_cast<double>(tasks) * unit[j][s];
      }
    }
    if (got <= 0) break;
    factor *= target / got;
  }
  return got;
}

// The scaled demand may miss periodic_load when the jobs cannot be made
// narrow enough (one task per stage) or wide enough (half the cluster); the
// generator refuses rather than run a different experiment than asked.
constexpr double kLoadTolerance = 0.25;

Status checkReachedLoad(const GeneratorOptions& o, double reached) {
  auto pct = [](double x) { return std::to_string(static_cast<int>(std::lround(100 * x))) + "%"; };
  const std::string setup =
      std::to_string(o.periodic_jobs) + " jobs on " + std::to_string(o.nodes) + " nodes";
  if (reached > o.periodic_load * (1 + kLoadTolerance)) {
    return invalidArgument("periodic_jobs", setup + " need " + pct(reached) +
                                                " of the cluster with one task per stage, more "
                                                "than periodic_load " +
                                                pct(o.periodic_load) +
                                                "; use fewer jobs or more nodes");
  }
  if (reached < o.periodic_load * (1 - kLoadTolerance)) {
    return invalidArgument("periodic_load",
                           pct(o.periodic_load) + " is out of reach for " + setup + " (at most " +
                               pct(reached) +
                               ", a stage is at most a quarter of the cluster wide); use "
                               "more jobs");
  }
  return Status::ok();
}

// Longest dependency chain through `stage_ms` (stages are in topological
// order: depends_on names earlier stages only).
double criticalPath(const PeriodicJob& job, const std::vector<double>& stage_ms) {
  std::vector<double> finish(stage_ms.size(), 0);
  double end = 0;
  for (size_t s = 0; s < stage_ms.size(); s++) {
    double start = 0;
    for (int dep : job.stages[s].depends_on) start = std::max(start, finish[dep]);
    finish[s] = start + stage_ms[s];
    end = std::max(end, finish[s]);
  }
  return end;
}

// Runtime of one realised instance on `slots` containers: event-driven list
// scheduling, ready stages in index order, each task on the first free slot.
double provisionedRuntimeMs(const PeriodicJob& job, const RealizedInstance& r, int64_t slots) {
  const size_t n = r.stages.size();
  std::vector<size_t> next(n, 0), unfinished(n), deps_left(n, 0);
  std::vector<std::vector<size_t>> dependents(n);
  std::set<size_t> ready;
  for (size_t s = 0; s < n; s++) {
    unfinished[s] = r.stages[s].task_durations.size();
    deps_left[s] = job.stages[s].depends_on.size();
    for (int d : job.stages[s].depends_on) dependents[static_cast<size_t>(d)].push_back(s);
    if (deps_left[s] == 0) ready.insert(s);
  }
  using End = std::pair<int64_t, size_t>;  // (end ms, stage)
  std::priority_queue<End, std::vector<End>, std::greater<>> running;
  int64_t now = 0;
  for (;;) {
    while (!ready.empty() && static_cast<int64_t>(running.size()) < slots) {
      const size_t s = *ready.begin();
      running.push({now + r.stages[s].task_durations[next[s]].count(), s});
      if (++next[s] == r.stages[s].task_durations.size()) ready.erase(ready.begin());
    }
    if (running.empty()) break;
    const auto [t, s] = running.top();
    running.pop();
    now = t;
    if (--unfinished[s] > 0) continue;
    for (size_t u : dependents[s]) {
      if (--deps_left[u] == 0) ready.insert(u);
    }
  }
  return static_cast<double>(now);
}

double typicalRuntimeMs(const PeriodicJob& job, size_t index, uint64_t seed) {
  std::array<double, 5> runs{};
  for (int64_t k = 0; k < 5; k++) {
    runs[static_cast<size_t>(k)] =
        provisionedRuntimeMs(job, drawInstance(job, index, k, seed), job.user_containers);
  }
  std::sort(runs.begin(), runs.end());
  return runs[2];
}

double averageNeed(const PeriodicJob& job) {
  double work = 0;
  std::vector<double> stage_ms;
  for (const auto& st : job.stages) {
    work += static_cast<double>(st.tasks) * static_cast<double>(st.task_duration.count());
    stage_ms.push_back(static_cast<double>(st.task_duration.count()));
  }
  return work / criticalPath(job, stage_ms);
}

void drawSlo(PeriodicJob& job, double typical_ms, const rng::Stream& s) {
  const int64_t hour_start = job.submit_offset.count() / kHourMs * kHourMs;
  const int64_t lead = roundToSecond(s.uniform(0) * kInputLeadMaxMs);
  job.input_available = Millis(std::max(hour_start, job.submit_offset.count() - lead));
  const double slack = s.uniform(1) < kLooseSlackShare ? s.logUniform(2, 2.05, 6.0)
                                                       : s.uniform(3, kTightSlackMin, 1.95);
  const Millis lead_ms = job.submit_offset - job.input_available;
  const int64_t window = std::clamp<int64_t>(roundToSecond(slack * typical_ms), kSecondMs,
                                             (job.period - lead_ms).count());
  job.deadline = job.submit_offset + Millis(window);
}

void drawProvisioning(PeriodicJob& job, int64_t max_containers, const rng::Stream& s) {
  const double u = s.uniform(0);
  double ratio = 0;
  if (u < kUnderShare) {
    ratio = s.logUniform(1, 0.3, 0.85);
  } else if (u < kUnderShare + kRightShare) {
    ratio = s.uniform(1, 0.95, 1.05);
  } else if (u < 1.0 - kBigOverShare) {
    ratio = s.logUniform(1, 1.15, 10.0);
  } else {
    ratio = s.logUniform(1, 10.5, 40.0);
  }
  const auto containers = static_cast<int64_t>(std::llround(ratio * averageNeed(job)));
  job.user_containers = std::clamp<int64_t>(containers, 1, max_containers);
  job.user_container_resource = job.stages.front().task_resource;
}

DraftJob draftJob(const GeneratorOptions& o, size_t i, int64_t users) {
  auto stream = [&](const char* name) { return rng::Stream(o.seed, i, -1, name); };
  DraftJob d;
  PeriodicJob& job = d.job;
  char key[32];
  std::snprintf(key, sizeof key, "periodic-%05zu", i);
  job.key = JobKey(key);
  job.owner = UserId("user-" + std::to_string(stream("owner").below(0, users)));
  job.period = drawPeriod(stream("period"));
  job.submit_offset = drawSubmitOffset(job.period, stream("submit"));
  job.input_path = "/warehouse/" + job.key.value() + "/input";
  job.output_path = "/warehouse/" + job.key.value() + "/output";
  drawVariance(job, o.days, stream("variance"));
  drawStages(d, drawContainer(o.node_size, stream("container")), stream("stages"));
  return d;
}

}  // namespace

namespace {

// The draws of one instance (drawInstance): its header, and each task's
// duration before rounding, as a function of its stage and index.
struct InstanceDraws {
  InstanceDraws(const PeriodicJob& job, size_t job_index, int64_t k, uint64_t seed)
      : job(job), noise(seed, job_index, k, "noise"), straggler(seed, job_index, k, "straggler") {
    r.index = k;
    const int64_t start = k * job.period.count();
    r.submit = fromEpochMs(start + job.submit_offset.count());
    r.input_available = fromEpochMs(start + job.input_available.count());
    r.deadline = fromEpochMs(start + job.deadline.count());
    const int64_t day = (start + job.submit_offset.count()) / kDayMs;
    r.fails = rng::Stream(seed, job_index, k, "fail").uniform(0) < job.failure_probability;
    // A code change scales durations from its day.
    // Input growth compounds daily, bounded at 1000x so a long run of a fast-
    // growing job stays finite.
    growth =
        std::min(kMaxGrowth, std::pow(1.0 + job.input_growth_per_day, static_cast<double>(day)));
    code = job.code_change_day >= 0 && day >= job.code_change_day ? job.code_change_factor : 1.0;
    // Lognormal with mean 1 and coefficient of variation cv.
    sigma = std::sqrt(std::log1p(job.duration_noise_cv * job.duration_noise_cv));
    mu = -0.5 * sigma * sigma;
    r.stages.resize(job.stages.size());
  }
  int64_t tasks(size_t s) const {
    return std::max<int64_t>(
        1, static_cast<int64_t>(std::llround(static_cast<double>(job.stages[s].tasks) * growth)));
  }
  double base(size_t s) const {
    return static_cast<double>(job.stages[s].task_duration.count()) * code;
  }
  static uint64_t draw(size_t s, int64_t t) {
    return (static_cast<uint64_t>(s) << 40) | static_cast<uint64_t>(t);
  }
  bool straggles(uint64_t i) const { return straggler.uniform(i) < job.straggler_probability; }
  // Task i's duration from its noise exponent x (mu + sigma x a standard normal).
  double fromExponent(double base, double x, bool straggles) const {
    double ms = base * std::exp(x);
    if (straggles) ms *= job.straggler_factor;
    return ms;
  }
  double ms(double base, uint64_t i) const {
    double ms = sigma > 0 ? base * std::exp(mu + sigma * noise.normal(i)) : base;
    if (straggles(i)) ms *= job.straggler_factor;
    return ms;
  }
  static Millis rounded(double ms) { return Millis(std::max<int64_t>(1, std::llround(ms))); }

  const PeriodicJob& job;
  const rng::Stream noise, straggler;
  RealizedInstance r;
  double growth = 1, code = 1, sigma = 0, mu = 0;
};

}  // namespace

RealizedInstance drawInstance(const PeriodicJob& job, size_t job_index, int64_t k, uint64_t seed) {
  InstanceDraws d(job, job_index, k, seed);
  for (size_t s = 0; s < job.stages.size(); s++) {
    const int64_t tasks = d.tasks(s);
    const double base = d.base(s);
    auto& out = d.r.stages[s].task_durations;
    out.reserve(static_cast<size_t>(tasks));
    for (int64_t t = 0; t < tasks; t++) out.push_back(d.rounded(d.ms(base, d.draw(s, t))));
  }
  return std::move(d.r);
}

// The longest of a run is found without completing every draw: rounding is
// monotone, so the run's longest is the rounding of its largest unrounded
// duration, and within stragglers or non-stragglers that duration grows
// with the noise exponent x = mu + sigma z, z = sqrt(-2 ln u1) cos(2 pi u2)
// (normal's Box-Muller; every step is a monotone rounding: base >= 0,
// straggler_factor >= 0, sigma > 0). A task is completed only when an upper
// bound of its x (0 for z while cos(2 pi u2) < 0, at u2 in [0.26, 0.74];
// else sqrt(-2 ln u1), as cos <= 1) is within a margin of the best x of its
// class so far; the margin (1e-9 relative) is far beyond exp's error (about
// one ulp), so a skipped task's computed duration is below the best's.
RealizedInstance drawGroupedInstance(const PeriodicJob& job, size_t job_index, int64_t k,
                                     uint64_t seed, int64_t group) {
  InstanceDraws d(job, job_index, k, seed);
  const auto g = std::max<int64_t>(1, group);
  const bool bounded = d.sigma > 0 && std::isfinite(d.sigma) && std::isfinite(d.mu) &&
                       job.straggler_factor >= 0 && std::isfinite(job.straggler_factor);
  for (size_t s = 0; s < job.stages.size(); s++) {
    const int64_t tasks = d.tasks(s);
    const double base = d.base(s);
    auto& out = d.r.stages[s].task_durations;
    out.reserve(static_cast<size_t>((tasks + g - 1) / g));
    const bool fast = bounded && base >= 0 && std::isfinite(base);
    for (int64_t t0 = 0; t0 < tasks; t0 += g) {
      const int64_t t1 = std::min(tasks, t0 + g);
      double best = 0;
      bool any = false;
      if (!fast) {
        for (int64_t t = t0; t < t1; t++) {
          const double ms = d.ms(base, d.draw(s, t));
          if (!any || ms > best) best = ms;
          any = true;
        }
        out.push_back(d.rounded(best));
        continue;
      }
      // Per class (0: no straggler, 1: straggler): the best x and duration.
      double best_x[2] = {0, 0}, best_ms[2] = {0, 0};
      bool seen[2] = {false, false};
      for (int64_t t = t0; t < t1; t++) {
        const uint64_t i = d.draw(s, t);
        const int c = d.straggles(i) ? 1 : 0;
        // normal(i)'s two uniforms.
        const double u1 = 1.0 - d.noise.uniform(2 * i);
        const double u2 = d.noise.uniform(2 * i + 1);
        double radius = -1;  // sqrt(-2 ln u1), once computed
        if (seen[c]) {
          const double floor = best_x[c] - 1e-9 * std::max(1.0, std::abs(best_x[c]));
          double z_bound = 0;
          if (u2 < 0.26 || u2 > 0.74) {
            radius = std::sqrt(-2.0 * std::log(u1));
            z_bound = radius;
          }
          if (d.mu + d.sigma * z_bound < floor) continue;
        }
        if (radius < 0) radius = std::sqrt(-2.0 * std::log(u1));
        const double x = d.mu + d.sigma * (radius * std::cos(6.283185307179586 * u2));
        const double ms = d.fromExponent(base, x, c == 1);
        if (!seen[c] || ms > best_ms[c]) {
          best_ms[c] = ms;
          best_x[c] = x;
        }
        seen[c] = true;
      }
      for (int c = 0; c < 2; c++) {
        if (seen[c] && (!any || best_ms[c] > best)) best = best_ms[c];
        any = any || seen[c];
      }
      out.push_back(d.rounded(best));
    }
  }
  return std::move(d.r);
}

std::optional<ConsumerRun> consumerRun(const PeriodicJob& job, const RealizedInstance& inst,
                                       TimePoint output_written) {
  if (job.output_path.empty()) return std::nullopt;
  const JobKey who("consumer:" + job.output_path);
  ConsumerRun c;
  c.run.job = who;
  c.run.run = RunId(who.value() + "#" + std::to_string(inst.index));
  c.run.user = job.owner.value();
  c.run.submit = inst.deadline;
  c.run.start = inst.deadline;
  c.run.end = std::max(inst.deadline, output_written);
  c.read = store::FileEvent{who, c.run.run, job.output_path, store::FileAccess::kRead, c.run.end};
  return c;
}

// Jobs are drafted independently, scaled together to periodic_load, then get
// their provisioning from the scaled DAG and their SLO from the runtime on
// that provisioning. periodic_load 0 (like
// periodic_jobs 0) yields no periodic jobs: a job cannot have zero tasks.
Result<Workload> generatePeriodic(const GeneratorOptions& options) {
  MORPHEUS_RETURN_IF_ERROR(validate(options));
  Workload w;
  if (options.periodic_jobs == 0 || options.periodic_load == 0.0) return w;

  const Resource capacity = options.node_size * options.nodes;
  const int64_t users = std::max<int64_t>(1, (options.periodic_jobs + 7) / 8);
  std::vector<DraftJob> drafts;
  std::vector<std::vector<double>> unit;
  std::vector<int64_t> cluster_containers;  // per job: containers of its size in the cluster
  std::vector<int64_t> max_tasks;
  drafts.reserve(static_cast<size_t>(options.periodic_jobs));
  for (int64_t i = 0; i < options.periodic_jobs; i++) {
    drafts.push_back(draftJob(options, static_cast<size_t>(i), users));
    const PeriodicJob& job = drafts.back().job;
    unit.push_back(stageUnitDemand(job, options.days, capacity));
    cluster_containers.push_back(options.node_size.countFitting(job.stages.front().task_resource) *
                                 options.nodes);
    max_tasks.push_back(
        std::max<int64_t>(1, static_cast<int64_t>(kMaxJobClusterShare *
                                                  static_cast<double>(cluster_containers.back()))));
  }
  MORPHEUS_RETURN_IF_ERROR(
      checkReachedLoad(options, scaleToLoad(drafts, unit, options.periodic_load, max_tasks)));

  w.periodic.reserve(drafts.size());
  for (size_t i = 0; i < drafts.size(); i++) {
    PeriodicJob& job = drafts[i].job;
    drawProvisioning(job, cluster_containers[i], rng::Stream(options.seed, i, -1, "provisioning"));
    drawSlo(job, typicalRuntimeMs(job, i, options.seed), rng::Stream(options.seed, i, -1, "slo"));
    w.periodic.push_back(std::move(job));
  }
  return w;
}

}  // namespace morpheus::sim
