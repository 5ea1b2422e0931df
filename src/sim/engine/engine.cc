#include "sim/engine/engine.h"

#include <algorithm>
#include <cmath>
#include <condition_variable>
#include <functional>
#include <future>
#include <iterator>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <thread>

#include <glpk.h>

#include "inference/model/skyline_fit.h"
#include "inference/model/skyline_reshape.h"
#include "inference/model/slo_inference.h"
#include "planner/reservation.h"
#include "scheduler/policies/policy_factory.h"
#include "sim/engine/cluster_sim.h"

namespace morpheus::sim {

namespace {

constexpr Millis kDay{86'400'000};

TimePoint stepFloor(Millis offset, Millis step) {
  return fromEpochMs(offset.count() / step.count() * step.count());
}

// What the training phase taught: inferred SLOs (one per job, or why not).
struct Learned {
  History history;
  std::vector<inference::SloVerdict> verdicts;  // parallel to workload.periodic
};

// The inference's input, one per periodic job: each job's runs and own file
// events moved out of `history` (inferTrainingSlos copies them instead).
std::vector<inference::JobHistory> takeJobHistories(const Workload& w, History& history) {
  std::vector<inference::JobHistory> jobs(w.periodic.size());
  for (size_t j = 0; j < w.periodic.size(); j++) {
    jobs[j].job = w.periodic[j].key;
    jobs[j].runs = std::move(history.runs[j]);
    jobs[j].events = std::move(history.own_events[j]);
  }
  return jobs;
}

// SLO inference on the training's history, as inferTrainingSlos, without a
// second copy of its runs and events (millions at 10,000 jobs). What is kept
// afterwards is what the strategies read (runs for the skyline fits,
// runtimes, last task counts); the file events and the consumers' runs,
// read by the inference only, are freed before any evaluation allocates.
Learned learn(const Workload& w, History history) {
  Learned l;
  std::vector<inference::JobHistory> jobs = takeJobHistories(w, history);
  l.verdicts = inference::inferSlos(jobs, history.path_events, inference::SloParams{},
                                    history.consumer_runs);
  for (size_t j = 0; j < jobs.size(); j++) history.runs[j] = std::move(jobs[j].runs);
  jobs.clear();
  jobs.shrink_to_fit();
  history.own_events = {};
  history.path_events = {};
  history.consumer_runs = {};
  l.history = std::move(history);
  return l;
}

// The LP skyline of job j (Morpheus §5) from its most recent runs.
std::optional<std::vector<int64_t>> fitSkyline(const Learned& l, size_t j, double alpha,
                                               const ExperimentOptions& o) {
  const auto& runs = l.history.runs[j];
  size_t first = runs.size() > static_cast<size_t>(o.history_runs)
                     ? runs.size() - static_cast<size_t>(o.history_runs)
                     : 0;
  std::vector<store::RunRecord> recent(runs.begin() + static_cast<std::ptrdiff_t>(first),
                                       runs.end());
  inference::FitParams fp;
  fp.step = o.step;
  fp.alpha = alpha;
  auto fit = inference::fitRuns(recent, fp);
  if (!fit.isOk()) return std::nullopt;
  std::vector<int64_t> s = fit->skyline;
  while (!s.empty() && s.back() == 0) s.pop_back();
  if (s.empty()) return std::nullopt;
  return s;
}

// The whole plan steps inside the window [a, d): the planner places a
// reservation only there (planner::Plan::problemFor rounds the arrival up and
// the deadline down to the step grid; run starts are day multiples, which
// the step divides). A window off the grid holds one step fewer than
// (d - a) / step: a skyline sized to that quotient was refused.
int64_t planSteps(const inference::InferredSlo& slo, Millis step) {
  const int64_t s = step.count();
  const int64_t first = (slo.start_offset.count() + s - 1) / s;  // a >= 0
  const int64_t last = slo.deadline_offset.count() / s;
  return std::max<int64_t>(0, last - first);
}

// The window [a, d) of one period, if its whole plan steps can hold `need`.
// Like morpheus-inference, a window too short for the skyline is never
// widened (the planner could not place it): the job stays unreserved.
std::optional<std::pair<Millis, Millis>> windowFor(const inference::InferredSlo& slo, Millis need,
                                                   Millis step) {
  if (step * planSteps(slo, step) < need) return std::nullopt;
  return std::make_pair(slo.start_offset, slo.deadline_offset);
}

planner::ReservationDefinition baseDef(const PeriodicJob& job, Millis period) {
  planner::ReservationDefinition def;
  def.user = job.owner;
  def.queue = job.queue;
  def.name = job.key.value();
  def.recurrence_key = job.key;
  def.period = period;
  return def;
}

// The user's own request as a periodic reservation: user_containers (one
// gang) over every whole plan step of the window [submit, deadline) of each
// period (at least one step).
planner::ReservationDefinition userDef(const PeriodicJob& job, TimePoint from,
                                       const ExperimentOptions& o) {
  planner::ReservationDefinition def = baseDef(job, job.period);
  def.arrival = from + job.submit_offset;
  def.deadline = from + job.deadline;
  const int64_t first = (job.submit_offset.count() + o.step.count() - 1) / o.step.count();
  const int64_t last = job.deadline.count() / o.step.count();
  def.stages.push_back(planner::ReservationStage{job.user_container_resource, job.user_containers,
                                                 job.user_containers,
                                                 o.step * std::max<int64_t>(1, last - first)});
  def.interpreter = planner::Interpreter::kAll;
  return def;
}

// The baseline (Morpheus §9, "user provisioning" of Fig. 2a): the user's
// request goes through the reservation system, which admits it only if the
// plan can hold it — a guarantee beyond the cluster's capacity is no
// guarantee. Admitted requests are isolated reservations for the whole
// window; a refused one leaves the job in its ad-hoc queue (fair share). No
// DRA budget: users provision statically.
JobProvision userReservation(const PeriodicJob& job, TimePoint from, const ExperimentOptions& o) {
  JobProvision p;
  p.kind = JobProvision::Kind::kPlanned;
  p.def = userDef(job, from, o);
  return p;
}

// Why a planned strategy derived no reservation of its own for a job (it then
// falls back to the user's request): counted per strategy in
// StrategyResult::extra so a report shows what keeps jobs unreserved.
constexpr const char* kNoSlo = "unplanned_no_slo_jobs";             // SLO not actionable
constexpr const char* kNoSkyline = "unplanned_no_skyline_jobs";     // no successful run to fit
constexpr const char* kWindow = "unplanned_window_too_short_jobs";  // the need outlasts a..d
// A period not dividing the day: Morpheus gives each instance a one-off
// reservation (§6; JobProvision::kPerInstance); counted here only for
// strategies that cannot (packed user requests), which leave such a job
// unplanned.
constexpr const char* kOffKilter = "unplanned_off_kilter_jobs";
// Not a fallback: jobs whose skyline was reshaped to fit their window.
constexpr const char* kReshaped = "skyline_reshaped_jobs";

// The most containers (in the job's unit, as its skyline counts them) the
// job can use at once: the largest total over stages that can run side by
// side, i.e. no dependency path between any two of them — not the widest
// single stage, which undercounts a join whose map stages run together. Task
// counts are those of the job's last successful run as its AM reported them
// (`last_tasks`, input growth included; the declared ones before any run):
// the declared day-0 counts are not something Morpheus could know, and a
// grown job was capped below its width. The cap when a skyline
// is reshaped to its window. Exact up to
// kMaxParallelismStages stages (every set of stages is tried); a larger DAG
// (user traces) is capped at all its tasks at once.
constexpr size_t kMaxParallelismStages = 16;

int64_t maxParallelism(const PeriodicJob& job, const std::vector<int64_t>& last_tasks) {
  const Resource unit = jobUnit(job.stages);
  const size_t n = job.stages.size();
  std::vector<int64_t> width(n);
  int64_t all = 0;
  for (size_t s = 0; s < n; s++) {
    const auto& st = job.stages[s];
    const int64_t tasks = s < last_tasks.size() ? last_tasks[s] : st.tasks;
    width[s] = std::max<int64_t>(0, tasks) *
               std::max<int64_t>(1, unit.isZero() ? 1 : st.task_resource.countCovering(unit));
    all += width[s];
  }
  if (n > kMaxParallelismStages) return std::max<int64_t>(1, all);
  // ancestors[s]: the stages s transitively depends on (they are earlier).
  std::vector<uint32_t> ancestors(n, 0);
  for (size_t s = 0; s < n; s++) {
    for (int d : job.stages[s].depends_on) {
      ancestors[s] |= ancestors[static_cast<size_t>(d)] | (1u << static_cast<unsigned>(d));
    }
  }
  int64_t most = 1;
  for (uint32_t set = 1; set < (1u << n); set++) {
    int64_t total = 0;
    bool side_by_side = true;
    for (size_t s = 0; s < n && side_by_side; s++) {
      if ((set >> s & 1u) == 0) continue;
      side_by_side = (ancestors[s] & set) == 0;
      total += width[s];
    }
    if (side_by_side) most = std::max(most, total);
  }
  return most;
}

// The LP skyline placed in the inferred window [a, d). A skyline longer than
// the window is reshaped to it (same area, higher and shorter, up to the
// job's parallelism, front-loaded, with its in-order compression as the
// alternative the planner gets when it refuses the front-loaded one:
// inference/model/skyline_reshape.h) and counted in `why` under kReshaped; only one
// whose area cannot fit the window even at full parallelism leaves the job
// unreserved.
JobProvision packedSkyline(const PeriodicJob& job, const inference::InferredSlo& slo,
                           const std::vector<int64_t>& last_tasks, std::vector<int64_t> skyline,
                           TimePoint from, const ExperimentOptions& o,
                           std::map<std::string, double>& why) {
  JobProvision p;
  const int64_t window_steps = planSteps(slo, o.step);
  std::vector<int64_t> in_order;
  if (static_cast<int64_t>(skyline.size()) > window_steps) {
    if (window_steps < 1) return p;
    auto ordered =
        inference::compressSkylineToWindow(skyline, window_steps, maxParallelism(job, last_tasks));
    if (!ordered.isOk()) return p;
    skyline = inference::frontLoaded(*ordered);
    in_order = std::move(*ordered);
    why[kReshaped]++;
  }
  auto win = windowFor(slo, o.step * static_cast<int64_t>(skyline.size()), o.step);
  if (!win) return p;
  const Resource unit = jobUnit(job.stages);
  planner::ReservationDefinition def = baseDef(job, slo.period);
  // An off-kilter job's template is instance 0's window (its period starts
  // are multiples of the period since the epoch, not of the day).
  const TimePoint base = slo.one_off_instances ? fromEpochMs(0) : from;
  def.arrival = base + win->first;
  def.deadline = base + win->second;
  def.stages = planner::skylineStages(skyline, unit, o.step, o.skyline_steps);
  def.interpreter = planner::Interpreter::kOrderNoGap;
  def.problematic = slo.problematic;
  if (!in_order.empty() && in_order != skyline) {
    p.in_order = def;
    p.in_order->stages = planner::skylineStages(in_order, unit, o.step, o.skyline_steps);
  }
  int64_t area = 0;
  for (int64_t c : skyline) area += c;
  p.kind = slo.one_off_instances ? JobProvision::Kind::kPerInstance : JobProvision::Kind::kPlanned;
  p.def = std::move(def);
  p.budget_container_ms = static_cast<int64_t>(std::llround(
      o.dra_budget_fraction * static_cast<double>(area) * static_cast<double>(o.step.count())));
  return p;
}

JobProvision packedUser(const PeriodicJob& job, const inference::InferredSlo& slo,
                        const std::vector<Millis>& runtimes, TimePoint from,
                        const ExperimentOptions& o) {
  JobProvision p;
  if (runtimes.empty() || slo.one_off_instances) return p;
  std::vector<Millis> sorted = runtimes;
  std::sort(sorted.begin(), sorted.end());
  Millis median = sorted[sorted.size() / 2];
  Millis dur = Millis((median.count() + o.step.count() - 1) / o.step.count() * o.step.count());
  dur = std::max(dur, o.step);
  auto win = windowFor(slo, dur, o.step);
  if (!win) return p;
  planner::ReservationDefinition def = baseDef(job, slo.period);
  def.arrival = from + win->first;
  def.deadline = from + win->second;
  def.stages.push_back(planner::ReservationStage{job.user_container_resource, job.user_containers,
                                                 job.user_containers, dur});
  def.interpreter = planner::Interpreter::kAll;
  def.problematic = slo.problematic;
  p.kind = JobProvision::Kind::kPlanned;
  p.def = std::move(def);
  return p;
}

JobProvision skylineAtSubmit(const PeriodicJob& job, const std::vector<int64_t>& skyline,
                             TimePoint from, const ExperimentOptions& o) {
  JobProvision p;
  const Millis need = o.step * static_cast<int64_t>(skyline.size());
  if (need > job.period) return p;
  planner::ReservationDefinition def = baseDef(job, job.period);
  def.arrival = from + (stepFloor(job.submit_offset, o.step) - fromEpochMs(0));
  def.deadline = def.arrival + need;
  def.stages = planner::skylineStages(skyline, jobUnit(job.stages), o.step, o.skyline_steps);
  def.interpreter = planner::Interpreter::kOrderNoGap;
  p.kind = JobProvision::Kind::kPlanned;
  p.def = std::move(def);
  return p;
}

const std::vector<int64_t>& lastStageTasks(const History& h, size_t j) {
  static const std::vector<int64_t> kNone;
  return j < h.last_stage_tasks.size() ? h.last_stage_tasks[j] : kNone;
}

JobProvision derivedProvision(const StrategySpec& spec, const PeriodicJob& job, size_t j,
                              const Learned& l, TimePoint from, const ExperimentOptions& o,
                              std::map<std::string, double>& why) {
  const auto& slo = l.verdicts[j].slo;
  if (spec.provisioning == Provisioning::kPackedUser) {
    if (!slo || slo->one_off_instances) {
      why[slo ? kOffKilter : kNoSlo]++;
      return {};
    }
    JobProvision p = packedUser(job, *slo, l.history.runtimes[j], from, o);
    if (p.kind == JobProvision::Kind::kNone) why[kWindow]++;
    return p;
  }
  auto skyline = fitSkyline(l, j, spec.alpha, o);
  if (!skyline) {
    why[kNoSkyline]++;
    return {};
  }
  if (spec.provisioning == Provisioning::kSkylineAtSubmit) {
    JobProvision p = skylineAtSubmit(job, *skyline, from, o);
    if (p.kind == JobProvision::Kind::kNone) why[kWindow]++;
    return p;
  }
  if (!slo) {
    why[kNoSlo]++;
    return {};
  }
  JobProvision p = packedSkyline(job, *slo, lastStageTasks(l.history, j), *skyline, from, o, why);
  if (p.kind == JobProvision::Kind::kNone) why[kWindow]++;
  return p;
}

// Calls `item(i)` for every i < count on up to `threads` threads (this one
// included), each taking the next index not started; returns when all ended.
// `item` stops early by returning false (no further index is started). Each
// thread it starts frees its GLPK environment (one per thread: GLPK keeps it
// in thread-local storage) before it ends, so skyline fits on those threads
// leave nothing behind.
void forEachOnThreads(size_t count, int threads, const std::function<bool(size_t)>& item) {
  std::atomic<size_t> next{0};
  std::atomic<bool> stopped{false};
  auto work = [&] {
    for (size_t i = next++; i < count && !stopped.load(); i = next++) {
      if (!item(i)) stopped = true;
    }
  };
  const size_t n = std::min(count, static_cast<size_t>(std::max(1, threads)));
  std::vector<std::thread> pool;
  for (size_t t = 1; t < n; t++) {
    pool.emplace_back([&] {
      work();
      glp_free_env();
    });
  }
  work();
  for (auto& t : pool) t.join();
}

// Every job's provision, on up to `threads` threads for a learned strategy:
// each job's skyline fit reads only its own runs (GLPK keeps one environment
// per thread), and each job's reasons are counted apart and summed in job
// order afterwards, so the result is the same on any thread count.
std::vector<JobProvision> provisionsFor(const StrategySpec& spec, const Workload& w,
                                        const Learned& l, TimePoint from,
                                        const ExperimentOptions& o,
                                        std::map<std::string, double>& why, int threads) {
  std::vector<JobProvision> out(w.periodic.size());
  if (spec.provisioning == Provisioning::kUserReservation) {
    for (size_t j = 0; j < w.periodic.size(); j++) out[j] = userReservation(w.periodic[j], from, o);
    return out;
  }
  for (const char* k : {kNoSlo, kNoSkyline, kWindow, kOffKilter, kReshaped}) why[k] = 0;
  std::vector<std::map<std::string, double>> why_of(w.periodic.size());
  forEachOnThreads(w.periodic.size(), threads, [&](size_t j) {
    const PeriodicJob& job = w.periodic[j];
    out[j] = derivedProvision(spec, job, j, l, from, o, why_of[j]);
    out[j].fallback = userDef(job, from, o);
    return true;
  });
  for (const auto& mine : why_of) {
    for (const auto& [k, n] : mine) why[k] += n;
  }
  return out;
}

double percentileOf(std::vector<double> v, double q) {
  return v.empty() ? 0 : inference::percentile(std::move(v), q);
}

void summarise(StrategyResult& r) {
  r.periodic_instances = 0;
  r.deadline_violations = 0;
  r.worst_case_violations = 0;
  for (const auto& i : r.instances) {
    if (i.failed) continue;
    r.periodic_instances++;
    r.deadline_violations += i.met ? 0 : 1;
    r.worst_case_violations += i.worst_case_met ? 0 : 1;
  }
  const double n = static_cast<double>(r.periodic_instances);
  r.violation_rate = n > 0 ? static_cast<double>(r.deadline_violations) / n : 0;
  r.worst_case_violation_rate = n > 0 ? static_cast<double>(r.worst_case_violations) / n : 0;
  std::vector<double> jct;
  for (const auto& a : r.adhoc) {
    if (a.completion >= Millis(0))
      jct.push_back(static_cast<double>(a.completion.count()) / 1000.0);
  }
  r.adhoc_jct_median_s = percentileOf(jct, 0.5);
  r.adhoc_jct_p95_s = percentileOf(std::move(jct), 0.95);
  int64_t grants = 0;
  int64_t withheld = 0, withheld_instances = 0, withheld_missed = 0, withheld_missed_worst = 0;
  for (const auto& i : r.instances) {
    grants += i.dra_grants;
    if (i.failed) continue;
    withheld += i.dra_withheld_ahead;
    if (i.dra_withheld_ahead == 0) continue;
    withheld_instances++;
    withheld_missed += i.met ? 0 : 1;
    withheld_missed_worst += i.worst_case_met ? 0 : 1;
  }
  r.extra["dra_grants"] = static_cast<double>(grants);
  // What morpheus-dra's "not ahead of its plan" rule withheld: reviews, the
  // instances it withheld from at least once, and how many of those missed
  // their deadline (with the ad-hoc load, and in the worst case).
  if (withheld > 0) {
    r.extra["dra_withheld_ahead_reviews"] = static_cast<double>(withheld);
    r.extra["dra_withheld_ahead_instances"] = static_cast<double>(withheld_instances);
    r.extra["dra_withheld_ahead_missed"] = static_cast<double>(withheld_missed);
    r.extra["dra_withheld_ahead_worst_case_missed"] = static_cast<double>(withheld_missed_worst);
  }
  r.extra["adhoc_unfinished"] =
      static_cast<double>(r.adhoc.size()) -
      static_cast<double>(std::count_if(r.adhoc.begin(), r.adhoc.end(), [](const AdhocOutcome& a) {
        return a.completion >= Millis(0);
      }));
}

// The paper's population (Morpheus §9): a deadline exists only where an SLO
// was inferred, so its violation figures are over jobs with an actionable
// SLO. The same figures over the instances of those jobs (the set is fixed by
// training, hence common to every strategy), judged against the true
// deadline: extra "slo_jobs", "slo_jobs_instances", "slo_jobs_violations",
// "slo_jobs_violation_rate".
void summariseSloJobs(StrategyResult& r, const Workload& w, const Learned& l) {
  std::set<std::string> with_slo;
  for (size_t j = 0; j < w.periodic.size(); j++) {
    if (l.verdicts[j].slo) with_slo.insert(w.periodic[j].key.value());
  }
  int64_t instances = 0, violations = 0;
  for (const auto& i : r.instances) {
    if (i.failed || !with_slo.count(i.job)) continue;
    instances++;
    violations += i.met ? 0 : 1;
  }
  r.extra["slo_jobs"] = static_cast<double>(with_slo.size());
  r.extra["slo_jobs_instances"] = static_cast<double>(instances);
  r.extra["slo_jobs_violations"] = static_cast<double>(violations);
  r.extra["slo_jobs_violation_rate"] =
      instances > 0 ? static_cast<double>(violations) / static_cast<double>(instances) : 0;
}

// Fig. 9a on observed runtimes (Morpheus §9: "about 70% of jobs could run
// twice before their deadline"): the share of jobs whose window from input
// availability to deadline is at least twice their median observed runtime
// (end - start) in this strategy's evaluation days, over jobs with a
// successful run. Extra "could_run_twice_job_share".
void summariseSlack(StrategyResult& r, const Workload& w) {
  std::map<std::string, std::vector<int64_t>> runtimes;
  for (const auto& i : r.instances) {
    if (!i.failed && i.runtime > Millis(0)) runtimes[i.job].push_back(i.runtime.count());
  }
  int64_t jobs = 0, twice = 0;
  for (const auto& job : w.periodic) {
    auto it = runtimes.find(job.key.value());
    if (it == runtimes.end()) continue;
    std::vector<int64_t>& v = it->second;
    std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(v.size() / 2), v.end());
    const int64_t median = v[v.size() / 2];
    jobs++;
    twice += (job.deadline - job.input_available).count() >= 2 * median ? 1 : 0;
  }
  r.extra["could_run_twice_job_share"] =
      jobs > 0 ? static_cast<double>(twice) / static_cast<double>(jobs) : 0;
}

// "training" progress over every segment of the training: the plan steps
// the segments simulated over the sum of their spans; a segment that ended
// before its `to` (its drain) counts whole once it ended. Calls `progress`
// under `mu`, one call at a time.
class TrainingProgress {
 public:
  TrainingProgress(const std::vector<DaySegment>& segs, Millis step, ProgressFn progress,
                   std::mutex* mu)
      : done_(segs.size(), 0), total_(segs.size(), 0), out_(std::move(progress)), mu_(mu) {
    for (size_t s = 0; s < segs.size(); s++) total_[s] = (segs[s].to - segs[s].from) / step;
  }

  // Segment s's progress callback (null when no progress is reported).
  ProgressFn of(size_t s) {
    if (!out_) return nullptr;
    return [this, s](const std::string&, int64_t d, int64_t) { report(s, d); };
  }

  void ended(size_t s) {
    if (out_) report(s, total_[s]);
  }

 private:
  void report(size_t s, int64_t d) {
    std::lock_guard<std::mutex> lk(*mu_);
    if (d == done_[s] && d == total_[s]) return;  // its end, reported already
    done_[s] = d;
    int64_t done = 0, total = 0;
    for (size_t k = 0; k < done_.size(); k++) {
      done += done_[k];
      total += total_[k];
    }
    out_("training", done, total);
  }

  std::vector<int64_t> done_, total_;
  ProgressFn out_;
  std::mutex* mu_;
};

// Segment s of the status quo's training days simulated: the baseline's
// provisioning and agent, user reservations from the segment's start.
Result<RunOutput> simulateSegment(const Workload& w, const ExperimentOptions& o,
                                  const std::vector<DaySegment>& segs, size_t s,
                                  const ProgressFn& progress, const std::atomic<bool>* stop) {
  const DaySegment& seg = segs[s];
  RunSetup setup;
  setup.from = seg.from;
  setup.to = seg.to;
  setup.record_history = true;
  if (segs.size() > 1) {
    setup.record_from = seg.record_from;
    if (s + 1 < segs.size()) setup.record_until = seg.record_until;
  }
  // Training runs under the status quo: the baseline's provisioning and agent.
  const StrategySpec baseline = *parseStrategies({"baseline"}, {}, 0.5)->begin();
  setup.agent = baseline.agent;
  for (const auto& job : w.periodic) {
    setup.provisions.push_back(userReservation(job, setup.from, o));
  }
  ExperimentOptions training = o;
  if (o.training_aggregate_adhoc_step) {
    training.aggregate_adhoc_step = *o.training_aggregate_adhoc_step;
  }
  return simulateRun(w, training, setup, "training", progress, stop);
}

// The segments' runs as one history (the one run's as it is when the
// training is not segmented). `interrupted` is set when any was.
Result<History> mergedHistory(std::vector<std::optional<Result<RunOutput>>>& outs,
                              const ExperimentOptions& o, bool* interrupted) {
  std::vector<History> histories;
  for (auto& out : outs) {
    if (!out) {  // not started: the stop came first
      *interrupted = true;
      continue;
    }
    MORPHEUS_RETURN_IF_ERROR(out->status());
    *interrupted = *interrupted || (*out)->interrupted;
    histories.push_back(std::move((*out)->history));
  }
  if (*interrupted) return History{};
  if (histories.size() == 1) return std::move(histories.front());
  return mergeSegments(std::move(histories), fromEpochMs(0) + kDay * trainDays(o), o);
}

// The status quo's training days simulated (its segments one after the
// other), then what they teach (learn: SLO inference and skyline fits,
// GLPK, under `glpk` when given).
Result<Learned> train(const Workload& w, const ExperimentOptions& o, const ProgressFn& progress,
                      const std::atomic<bool>* stop, bool* interrupted,
                      std::mutex* glpk = nullptr) {
  const std::vector<DaySegment> segs = trainSegments(o);
  std::mutex mu;
  TrainingProgress tp(segs, o.step, progress, &mu);
  std::vector<std::optional<Result<RunOutput>>> outs(segs.size());
  for (size_t s = 0; s < segs.size(); s++) {
    outs[s] = simulateSegment(w, o, segs, s, tp.of(s), stop);
    if (!outs[s]->isOk() || (*outs[s])->interrupted) break;
    tp.ended(s);
  }
  *interrupted = false;
  MORPHEUS_ASSIGN_OR_RETURN(History history, mergedHistory(outs, o, interrupted));
  // Interrupted: no strategy runs, so the SLO inference and skyline fits of
  // every job (minutes at 10,000 jobs) would only delay the stop.
  if (*interrupted) return Learned{};
  std::unique_lock<std::mutex> lk;
  if (glpk != nullptr) lk = std::unique_lock<std::mutex>(*glpk);
  return learn(w, std::move(history));
}

// One strategy's evaluation days, provisioned from what training learned
// (its skyline LP fits on up to `threads` threads: provisionsFor).
struct Evaluation {
  const StrategySpec* spec = nullptr;
  RunSetup setup;
  std::map<std::string, double> why;
};

Evaluation prepare(const Workload& w, const ExperimentOptions& o, const StrategySpec& spec,
                   const Learned& l, int threads = 1) {
  Evaluation e;
  e.spec = &spec;
  e.setup.from = fromEpochMs(0) + kDay * trainDays(o);
  e.setup.to = fromEpochMs(0) + kDay * o.days;
  e.setup.agent = spec.agent;
  e.setup.dra = spec.dra;
  e.setup.admit_smallest_first = spec.provisioning != Provisioning::kUserReservation;
  e.setup.admit_per_instance = e.setup.admit_smallest_first;
  e.setup.provisions = provisionsFor(spec, w, l, e.setup.from, o, e.why, threads);
  return e;
}

// Segment s of an evaluation (ExperimentOptions::eval_segments): the whole
// evaluation's setup over the segment's span, recording its days. The
// reservations are those derived for the evaluation's start, their windows
// moved by the whole days from there to the segment's start, as if derived
// at it (a planned window and the user's request are placed from the start
// they are derived at; an off-kilter job's template counts from the epoch
// and stays). The first segment starts with the evaluation: its setup is the
// whole one's but for its end.
RunSetup segmentSetup(const RunSetup& whole, const std::vector<DaySegment>& segs, size_t s) {
  RunSetup setup = whole;
  if (segs.size() == 1) return setup;
  const DaySegment& seg = segs[s];
  setup.from = seg.from;
  setup.to = seg.to;
  if (s > 0) setup.record_from = seg.record_from;
  if (s + 1 < segs.size()) setup.record_until = seg.record_until;
  const Millis shift = seg.from - whole.from;
  auto move = [shift](planner::ReservationDefinition& def) {
    def.arrival += shift;
    def.deadline += shift;
  };
  for (JobProvision& p : setup.provisions) {
    if (p.kind == JobProvision::Kind::kPlanned) {
      move(p.def);
      if (p.in_order) move(*p.in_order);
    }
    if (p.fallback) move(*p.fallback);
  }
  return setup;
}

// The segments' outputs (in segment order) as one evaluation's: the judged
// instances in workload order (job, then instance index) as one Sim gives
// them, the ad-hoc jobs by submit (then name), the plan steps in time order
// and the utilisation over them, the counted events summed; the counts of
// jobs by how the run's start admitted them are the first segment's, whose
// start is the evaluation's.
RunOutput mergeEvaluation(std::vector<RunOutput> parts, const Workload& w) {
  if (parts.size() == 1) return std::move(parts.front());
  static const std::set<std::string> kAtStart = {"unreserved_jobs", "user_reservation_jobs",
                                                 "off_kilter_jobs", "per_instance_jobs"};
  std::map<std::string, size_t> job_index;
  for (size_t j = 0; j < w.periodic.size(); j++) job_index[w.periodic[j].key.value()] = j;
  RunOutput out;
  StrategyResult& r = out.result;
  for (size_t s = 0; s < parts.size(); s++) {
    RunOutput& part = parts[s];
    StrategyResult& p = part.result;
    out.events += part.events;
    out.interrupted = out.interrupted || part.interrupted;
    std::move(p.instances.begin(), p.instances.end(), std::back_inserter(r.instances));
    std::move(p.adhoc.begin(), p.adhoc.end(), std::back_inserter(r.adhoc));
    r.utilisation_series.insert(r.utilisation_series.end(), p.utilisation_series.begin(),
                                p.utilisation_series.end());
    for (const auto& [key, value] : p.extra) {
      if (kAtStart.count(key) == 0) {
        r.extra[key] += value;
      } else if (s == 0) {
        r.extra[key] = value;
      }
    }
  }
  std::stable_sort(r.instances.begin(), r.instances.end(),
                   [&](const InstanceOutcome& a, const InstanceOutcome& b) {
                     const size_t ja = job_index[a.job], jb = job_index[b.job];
                     return ja != jb ? ja < jb : a.index < b.index;
                   });
  std::stable_sort(r.adhoc.begin(), r.adhoc.end(), adhocBefore);
  double sum = 0;
  for (double u : r.utilisation_series) sum += u;
  r.utilisation =
      r.utilisation_series.empty() ? 0 : sum / static_cast<double>(r.utilisation_series.size());
  return out;
}

StrategyResult finish(const Workload& w, const Evaluation& e, const Learned& l, RunOutput out) {
  StrategyResult r = std::move(out.result);
  r.name = e.spec->name;
  if (e.spec->provisioning != Provisioning::kUserReservation) r.extra["alpha"] = e.spec->alpha;
  r.extra["events"] = static_cast<double>(out.events);
  r.extra.insert(e.why.begin(), e.why.end());
  summarise(r);
  summariseSloJobs(r, w, l);
  summariseSlack(r, w);
  return r;
}

SimSummary header(const ExperimentOptions& o, const std::string& command) {
  SimSummary s;
  s.seed = o.seed;
  s.nodes = o.nodes;
  s.days = o.days;
  s.train_days = trainDays(o);
  s.train_segments = o.train_segments;
  s.train_warmup_days = o.train_segments > 1 ? o.train_warmup_days : 0;
  s.eval_segments = o.eval_segments;  // min-cluster refuses any but 1
  s.eval_warmup_days = o.eval_segments > 1 ? o.eval_warmup_days : 0;
  s.command = command;
  return s;
}

}  // namespace

std::vector<inference::SloVerdict> inferTrainingSlos(const Workload& w, const History& history) {
  std::vector<inference::JobHistory> jobs;
  for (size_t j = 0; j < w.periodic.size(); j++) {
    inference::JobHistory h;
    h.job = w.periodic[j].key;
    h.runs = history.runs[j];
    h.events = history.own_events[j];
    jobs.push_back(std::move(h));
  }
  return inference::inferSlos(jobs, history.path_events, inference::SloParams{},
                              history.consumer_runs);
}

int64_t trainDays(const ExperimentOptions& o) {
  auto t = static_cast<int64_t>(std::floor(static_cast<double>(o.days) * o.train_fraction));
  return std::clamp<int64_t>(t, 1, std::max<int64_t>(1, o.days - 1));
}

namespace {

// Days [first_day, end_day) in `segments` consecutive segments (DaySegment),
// each but the first warmed up by `warmup_days`, not before first_day.
std::vector<DaySegment> daySegments(int64_t first_day, int64_t end_day, int64_t segments,
                                    int64_t warmup_days) {
  const int64_t days = end_day - first_day;
  const int64_t k = std::clamp<int64_t>(segments, 1, days);
  const TimePoint end = fromEpochMs(0) + kDay * end_day;
  std::vector<DaySegment> segs;
  int64_t first = first_day;  // the segment's first recorded day
  for (int64_t s = 0; s < k; s++) {
    const int64_t len = days / k + (s < days % k ? 1 : 0);
    const int64_t warmup = s > 0 ? std::max<int64_t>(0, warmup_days) : 0;
    DaySegment seg;
    seg.record_from = fromEpochMs(0) + kDay * first;
    seg.record_until = seg.record_from + kDay * len;
    seg.from = fromEpochMs(0) + kDay * std::max<int64_t>(first_day, first - warmup);
    seg.to = s + 1 < k ? std::min(seg.record_until + kDay, end) : end;
    segs.push_back(seg);
    first += len;
  }
  return segs;
}

}  // namespace

std::vector<DaySegment> trainSegments(const ExperimentOptions& o) {
  return daySegments(0, trainDays(o), o.train_segments, o.train_warmup_days);
}

std::vector<DaySegment> evalSegments(const ExperimentOptions& o) {
  return daySegments(trainDays(o), o.days, o.eval_segments, o.eval_warmup_days);
}

History mergeSegments(std::vector<History> segments, TimePoint end, const ExperimentOptions& o) {
  History h;
  if (segments.empty()) return h;
  const size_t jobs = segments.front().runs.size();
  h.runs.resize(jobs);
  h.runtimes.resize(jobs);
  h.own_events.resize(jobs);
  h.last_stage_tasks.resize(jobs);
  auto append = [](auto& to, auto& from) {
    to.insert(to.end(), std::make_move_iterator(from.begin()), std::make_move_iterator(from.end()));
    std::remove_reference_t<decltype(from)>().swap(from);
  };
  for (History& seg : segments) {
    for (size_t j = 0; j < jobs; j++) {
      append(h.runs[j], seg.runs[j]);
      append(h.runtimes[j], seg.runtimes[j]);
      append(h.own_events[j], seg.own_events[j]);
      if (j < seg.last_stage_tasks.size() && !seg.last_stage_tasks[j].empty())
        h.last_stage_tasks[j] = std::move(seg.last_stage_tasks[j]);
    }
    append(h.path_events, seg.path_events);
    append(h.consumer_runs, seg.consumer_runs);
  }
  std::stable_sort(h.path_events.begin(), h.path_events.end(),
                   [](const auto& a, const auto& b) { return a.time < b.time; });
  std::stable_sort(h.consumer_runs.begin(), h.consumer_runs.end(),
                   [](const auto& a, const auto& b) { return a.submit < b.submit; });
  // The window, as one Sim trims at the end of training: each job's runs
  // submitted at or after the cutoff, but at least min_runs; with a dropped
  // run go the own events recorded before the first kept run's (its own
  // events are the first with its run id: one Sim records a run's events
  // together, in the order it records the runs).
  const TimePoint cutoff = end - o.history_window;
  const auto floor_runs =
      static_cast<size_t>(std::max<int64_t>(0, inference::SloParams{}.min_runs));
  for (size_t j = 0; j < jobs; j++) {
    auto& runs = h.runs[j];
    size_t first = runs.size();
    while (first > 0 && runs[first - 1].submit >= cutoff) first--;
    if (runs.size() - first < floor_runs)
      first = runs.size() > floor_runs ? runs.size() - floor_runs : 0;
    if (first == 0) continue;
    auto& own = h.own_events[j];
    const RunId& kept = runs[first].run;
    const auto mark = std::find_if(own.begin(), own.end(),
                                   [&](const store::FileEvent& e) { return e.run == kept; });
    if (mark != own.end()) own.erase(own.begin(), mark);
    const auto n = static_cast<std::ptrdiff_t>(first);
    runs.erase(runs.begin(), runs.begin() + n);
    h.runtimes[j].erase(h.runtimes[j].begin(), h.runtimes[j].begin() + n);
  }
  return h;
}

Result<History> trainingHistory(const Workload& w, const ExperimentOptions& o, bool* interrupted) {
  MORPHEUS_RETURN_IF_ERROR(validateExperiment(w, o));
  const std::vector<DaySegment> segs = trainSegments(o);
  std::vector<std::optional<Result<RunOutput>>> outs(segs.size());
  forEachOnThreads(segs.size(), o.threads, [&](size_t s) {
    outs[s] = simulateSegment(w, o, segs, s, nullptr, nullptr);
    return true;
  });
  *interrupted = false;
  return mergedHistory(outs, o, interrupted);
}

namespace {

// A job's DAG: every task fits one node, dependencies name earlier stages.
// Errors name `field`.stages[i].
Status validateStages(const std::vector<SimStage>& stages, const std::string& field,
                      const Resource& node_size) {
  for (size_t s = 0; s < stages.size(); s++) {
    const auto& st = stages[s];
    const std::string fs = field + ".stages[" + std::to_string(s) + "]";
    if (!st.task_resource.fitsIn(node_size) || st.task_resource.isZero()) {
      return invalidArgument(fs + ".task_resource", "must be non-zero and fit one node");
    }
    for (int d : st.depends_on) {
      if (d < 0 || static_cast<size_t>(d) >= s) {
        return invalidArgument(fs + ".depends_on", "must name earlier stages");
      }
    }
  }
  return Status::ok();
}

}  // namespace

Status validateExperiment(const Workload& w, const ExperimentOptions& o) {
  if (o.nodes <= 0) return invalidArgument("nodes", "must be > 0");
  if (o.days < 2) return invalidArgument("days", "must be >= 2 (training and evaluation days)");
  if (o.node_size.anyNegative() || o.node_size.memoryMib() <= 0 || o.node_size.vcores() <= 0) {
    return invalidArgument("node_size", "memory and vcores must be > 0");
  }
  if (!(o.train_fraction > 0 && o.train_fraction < 1)) {
    return invalidArgument("train_fraction", "must be in (0, 1)");
  }
  if (o.step <= Millis(0) || kDay.count() % o.step.count() != 0) {
    return invalidArgument("step", "must be > 0 and divide a day");
  }
  if (!o.realize) return invalidArgument("realize", "required");
  if (o.history_window <= Millis(0)) return invalidArgument("history_window", "must be > 0");
  if (o.threads < 1) return invalidArgument("threads", "must be >= 1");
  if (o.train_segments < 1 || o.train_segments > trainDays(o)) {
    return invalidArgument("train_segments",
                           "must be in [1, training days = " + std::to_string(trainDays(o)) +
                               "], got " + std::to_string(o.train_segments));
  }
  if (o.train_warmup_days < 0) {
    return invalidArgument("train_warmup_days",
                           "must be >= 0, got " + std::to_string(o.train_warmup_days));
  }
  const int64_t eval_days = o.days - trainDays(o);
  if (o.eval_segments < 1 || o.eval_segments > eval_days) {
    return invalidArgument("eval_segments",
                           "must be in [1, evaluation days = " + std::to_string(eval_days) +
                               "], got " + std::to_string(o.eval_segments));
  }
  if (o.eval_warmup_days < 0) {
    return invalidArgument("eval_warmup_days",
                           "must be >= 0, got " + std::to_string(o.eval_warmup_days));
  }
  for (size_t i = 0; i < o.min_cluster_sizes.size(); i++) {
    const int64_t n = o.min_cluster_sizes[i];
    if (n < 1 || n > o.nodes) {
      return invalidArgument("min_cluster_sizes", std::to_string(n) + " is not in [1, nodes = " +
                                                      std::to_string(o.nodes) + "]");
    }
    if (std::find(o.min_cluster_sizes.begin(), o.min_cluster_sizes.begin() + i, n) !=
        o.min_cluster_sizes.begin() + i) {
      return invalidArgument("min_cluster_sizes", std::to_string(n) + " is given twice");
    }
  }
  if (o.training_aggregate_adhoc_step) {
    ExperimentOptions training = o;
    training.aggregate_adhoc_step = *o.training_aggregate_adhoc_step;
    training.training_aggregate_adhoc_step.reset();
    if (Status st = validateExperiment(w, training); !st.isOk()) {
      return invalidArgument("training_adhoc_model", st.message());
    }
  }
  if (o.aggregate_adhoc_step > Millis(0) && o.aggregate_adhoc_step < Millis(1000)) {
    return invalidArgument("adhoc_step", "must be >= 1 s");
  }
  if (o.aggregate_adhoc_step > Millis(0) && o.fluid_adhoc_step > Millis(0)) {
    return invalidArgument("adhoc_model",
                           "aggregate replaces the fluid ad-hoc pools: use it with the task or "
                           "grouped task model, not fluid");
  }
  if (o.aggregate_adhoc_step > Millis(0) && o.adhoc_policy != "drf") {
    return invalidArgument("adhoc_policy",
                           "the aggregate ad-hoc model shares capacity max-min fairly (drf); '" +
                               o.adhoc_policy + "' needs the task model");
  }
  MORPHEUS_RETURN_IF_ERROR(sched::makeOrderingPolicy(o.adhoc_policy, "adhoc_policy").status());
  if (!(o.altruistic_share >= 0 && o.altruistic_share <= 1))
    return invalidArgument("altruistic_share", "must be in [0, 1]");
  if (!(o.estimate_noise >= 0 && o.estimate_noise < 1))
    return invalidArgument("estimate_noise", "must be in [0, 1)");
  for (size_t j = 0; j < w.periodic.size(); j++) {
    const auto& job = w.periodic[j];
    const std::string f = "workload.periodic[" + std::to_string(j) + "]";
    if (job.period <= Millis(0)) return invalidArgument(f + ".period", "must be > 0");
    MORPHEUS_RETURN_IF_ERROR(validateStages(job.stages, f, o.node_size));
  }
  for (size_t i = 0; i < w.adhoc.size(); i++) {
    const auto& job = w.adhoc[i];
    const std::string f = "workload.adhoc[" + std::to_string(i) + "]";
    if (i > 0 && job.submit < w.adhoc[i - 1].submit) {
      return invalidArgument(f + ".submit", "ad-hoc jobs must be sorted by submit");
    }
    MORPHEUS_RETURN_IF_ERROR(validateStages(job.stages, f, o.node_size));
  }
  return Status::ok();
}

Result<SimSummary> runExperiment(const Workload& workload, const ExperimentOptions& options,
                                 const std::vector<StrategySpec>& strategies,
                                 const ProgressFn& progress, const std::atomic<bool>* stop) {
  MORPHEUS_RETURN_IF_ERROR(validateExperiment(workload, options));
  SimSummary summary = header(options, "run");
  // One pool of options.threads threads takes, in this order, the
  // training's segments (the one that ends last then merges their histories
  // and runs the SLO inference and every learned strategy's fits), the
  // evaluation segments of the strategies provisioned from the users'
  // requests alone (the baseline: nothing of the training reaches their
  // evaluation, so they run beside it), then those of the learned
  // strategies, which wait for the training. Every simulation is its own
  // Sim, so the results do not depend on the order or the thread count.
  // Progress is serialised under one lock.
  std::mutex progress_mu;
  const Learned none;
  std::vector<Evaluation> evals(strategies.size());
  std::vector<size_t> order;  // strategy indexes, users' requests first
  for (size_t i = 0; i < strategies.size(); i++) {
    if (strategies[i].provisioning == Provisioning::kUserReservation) {
      evals[i] = prepare(workload, options, strategies[i], none);
      order.push_back(i);
    }
  }
  for (size_t i = 0; i < strategies.size(); i++) {
    if (strategies[i].provisioning != Provisioning::kUserReservation) order.push_back(i);
  }
  const std::vector<DaySegment> esegs = evalSegments(options);
  const size_t ne = esegs.size();
  // Per strategy and evaluation segment: its output, its simulated plan
  // steps and their total (the segment's span, warm-up included).
  std::vector<std::vector<std::optional<Result<RunOutput>>>> outs(
      strategies.size(), std::vector<std::optional<Result<RunOutput>>>(ne));
  std::vector<std::vector<int64_t>> done(strategies.size(), std::vector<int64_t>(ne, 0));
  std::vector<int64_t> seg_steps(ne);
  int64_t all_steps = 0;  // of every strategy's evaluation segments
  for (size_t e = 0; e < ne; e++) {
    seg_steps[e] = (esegs[e].to - esegs[e].from) / options.step;
    all_steps += seg_steps[e] * static_cast<int64_t>(strategies.size());
  }
  Result<Learned> learned = Learned{};
  bool interrupted = false;
  // Set once the training and the learned strategies' preparation ended
  // (successfully or not); the learned strategies' simulations wait for it.
  std::mutex trained_mu;
  std::condition_variable trained_cv;
  bool trained = false;
  const std::vector<DaySegment> segs = trainSegments(options);
  TrainingProgress training_progress(segs, options.step, progress, &progress_mu);
  std::vector<std::optional<Result<RunOutput>>> seg_outs(segs.size());
  std::atomic<size_t> segments_left{segs.size()};
  forEachOnThreads(segs.size() + order.size() * ne, options.threads, [&](size_t k) {
    if (k < segs.size()) {
      // A segment the stop came before is left unset (mergedHistory: interrupted).
      if (stop == nullptr || !stop->load()) {
        seg_outs[k] = simulateSegment(workload, options, segs, k, training_progress.of(k), stop);
        if (seg_outs[k]->isOk() && !(*seg_outs[k])->interrupted) training_progress.ended(k);
      }
      if (--segments_left > 0) return true;
      auto history = mergedHistory(seg_outs, options, &interrupted);
      seg_outs.clear();
      if (!history.isOk()) {
        learned = history.status();
      } else if (!interrupted) {
        learned = learn(workload, std::move(*history));
        for (size_t i = 0; i < strategies.size(); i++) {
          if (strategies[i].provisioning != Provisioning::kUserReservation)
            evals[i] = prepare(workload, options, strategies[i], *learned, options.threads);
        }
      }
      std::lock_guard<std::mutex> lk(trained_mu);
      trained = true;
      trained_cv.notify_all();
      return true;
    }
    const size_t i = order[(k - segs.size()) / ne], e = (k - segs.size()) % ne;
    if (strategies[i].provisioning != Provisioning::kUserReservation) {
      std::unique_lock<std::mutex> lk(trained_mu);
      trained_cv.wait(lk, [&] { return trained; });
      if (!learned.isOk() || interrupted) return false;
    }
    if (stop != nullptr && stop->load()) return false;
    auto report = [&, i, e](int64_t d) {
      std::lock_guard<std::mutex> lk(progress_mu);
      done[i][e] = d;
      int64_t mine = 0, all_done = 0;
      for (int64_t n : done[i]) mine += n;
      for (const auto& of : done) {
        for (int64_t n : of) all_done += n;
      }
      if (options.strategy_progress) {
        options.strategy_progress(strategies[i].name, mine,
                                  all_steps / static_cast<int64_t>(strategies.size()));
      }
      if (progress) progress("evaluation", all_done, all_steps);
    };
    ProgressFn mine = [&report](const std::string&, int64_t d, int64_t) { report(d); };
    outs[i][e] = simulateRun(workload, options, segmentSetup(evals[i].setup, esegs, e),
                             strategies[i].name, mine, stop);
    // A segment that drained before its end counts whole once it ended.
    if (ne > 1 && outs[i][e]->isOk() && !(*outs[i][e])->interrupted) report(seg_steps[e]);
    return true;
  });
  MORPHEUS_RETURN_IF_ERROR(learned.status());
  // An interrupted training leaves no strategy: nothing was learned to
  // summarise them against (the baseline's SLO-job figures need the SLOs).
  if (!interrupted) {
    for (size_t i = 0; i < strategies.size(); i++) {
      std::vector<RunOutput> parts;
      for (auto& out : outs[i]) {
        if (!out) {
          interrupted = true;
          break;
        }
        MORPHEUS_RETURN_IF_ERROR(out->status());
        interrupted = interrupted || (*out)->interrupted;
        parts.push_back(std::move(**out));
      }
      if (parts.size() < ne) continue;
      summary.strategies.push_back(
          finish(workload, evals[i], *learned, mergeEvaluation(std::move(parts), workload)));
    }
  }
  summary.interrupted = interrupted;
  return summary;
}

namespace {

// What the strategies' min-cluster searches share: one training per cluster
// size (the first search to need a size trains it, the others wait for it),
// one lock around what calls GLPK (learn, prepare: never on two threads at
// once), one lock around the progress callback, and the interruption.
class MinClusterSearch {
 public:
  MinClusterSearch(const Workload& w, const ExperimentOptions& o, const ProgressFn& progress,
                   const std::atomic<bool>* stop)
      : w_(w), o_(o), stop_(stop) {
    if (progress) {
      progress_ = [this, progress](const std::string& phase, int64_t done, int64_t total) {
        std::lock_guard<std::mutex> lk(progress_mu_);
        progress(phase, done, total);
      };
    }
  }

  // `spec` evaluated on a cluster of `nodes`; nullopt when interrupted
  // before that size's training was complete (nothing to derive from).
  Result<std::optional<StrategyResult>> at(const StrategySpec& spec, int64_t nodes) {
    ExperimentOptions o = o_;
    o.nodes = nodes;
    MORPHEUS_ASSIGN_OR_RETURN(const Learned* l, trained(o_.min_cluster_retrain ? o : o_));
    if (l == nullptr) return std::optional<StrategyResult>();
    Evaluation e;
    {
      std::lock_guard<std::mutex> lk(glpk_mu_);
      e = prepare(w_, o, spec, *l);
    }
    // The progress phase names the size: a search evaluates one after another.
    MORPHEUS_ASSIGN_OR_RETURN(
        RunOutput out,
        simulateRun(w_, o, e.setup, spec.name + "@" + std::to_string(nodes), progress_, stop_));
    if (out.interrupted) interrupted_ = true;
    return std::optional<StrategyResult>(finish(w_, e, *l, std::move(out)));
  }

  // The rate min-cluster matches (ExperimentOptions::min_cluster_worst_case).
  double rateOf(const StrategyResult& r) const {
    return o_.min_cluster_worst_case ? r.worst_case_violation_rate : r.violation_rate;
  }

  // The smallest node count up to o.nodes at which `spec`'s violation rate
  // is at most `target`, by bisection (rates assumed to fall as nodes grow);
  // the strategy's figures at that size, or at o.nodes when none matches.
  // Interrupted: the smallest size found so far (nullopt before any).
  // Every size evaluated is kept, in order, in the result's
  // min_cluster_search.
  Result<std::optional<StrategyResult>> smallest(const StrategySpec& spec, double target) {
    std::vector<SearchStep> trail;
    const auto visit = [&](int64_t nodes) -> Result<std::optional<StrategyResult>> {
      MORPHEUS_ASSIGN_OR_RETURN(std::optional<StrategyResult> r, at(spec, nodes));
      if (r) trail.push_back({nodes, rateOf(*r), rateOf(*r) <= target});
      return r;
    };
    MORPHEUS_ASSIGN_OR_RETURN(std::optional<StrategyResult> best, visit(o_.nodes));
    if (!best) return best;
    if (rateOf(*best) > target) {  // none up to --nodes matches
      best->min_cluster_search = std::move(trail);
      return best;
    }
    int64_t lo = 0, hi = o_.nodes;  // rate(hi) <= target; lo fails (or is 0)
    while (hi - lo > 1 && !interrupted()) {
      int64_t mid = lo + (hi - lo) / 2;
      MORPHEUS_ASSIGN_OR_RETURN(std::optional<StrategyResult> r, visit(mid));
      if (!r) break;
      if (rateOf(*r) <= target) {
        hi = mid;
        best = std::move(r);
      } else {
        lo = mid;
      }
    }
    best->min_cluster_search = std::move(trail);
    best->min_nodes_at_baseline_rate = hi;
    best->extra["nodes"] = static_cast<double>(hi);
    best->extra["min_cluster_worst_case"] = o_.min_cluster_worst_case ? 1 : 0;
    best->extra["min_cluster_retrain"] = o_.min_cluster_retrain ? 1 : 0;
    return best;
  }

  bool interrupted() const { return interrupted_.load(); }

 private:
  // The training at o.nodes (nullptr when it was interrupted).
  Result<const Learned*> trained(const ExperimentOptions& o) {
    std::shared_future<Result<Trained>> f;
    std::promise<Result<Trained>> mine;
    bool trains = false;
    {
      std::lock_guard<std::mutex> lk(sizes_mu_);
      auto it = sizes_.find(o.nodes);
      if (it == sizes_.end()) {
        it = sizes_.emplace(o.nodes, mine.get_future().share()).first;
        trains = true;
      }
      f = it->second;
    }
    if (trains) mine.set_value(trainAt(o));
    const Result<Trained>& t = f.get();
    if (!t.isOk()) return t.status();
    return t->interrupted ? nullptr : &t->learned;
  }

  struct Trained {
    Learned learned;
    bool interrupted = false;
  };

  Result<Trained> trainAt(const ExperimentOptions& o) {
    Trained t;
    MORPHEUS_ASSIGN_OR_RETURN(t.learned, train(w_, o, progress_, stop_, &t.interrupted, &glpk_mu_));
    if (t.interrupted) interrupted_ = true;
    return t;
  }

  const Workload& w_;
  const ExperimentOptions& o_;
  const std::atomic<bool>* stop_;
  ProgressFn progress_;
  std::mutex progress_mu_, glpk_mu_, sizes_mu_;
  std::map<int64_t, std::shared_future<Result<Trained>>> sizes_;
  std::atomic<bool> interrupted_{false};
};

}  // namespace

Result<SimSummary> runMinCluster(const Workload& workload, const ExperimentOptions& options,
                                 const std::vector<StrategySpec>& strategies,
                                 const ProgressFn& progress, const std::atomic<bool>* stop) {
  MORPHEUS_RETURN_IF_ERROR(validateExperiment(workload, options));
  if (options.eval_segments != 1) {
    return invalidArgument("eval_segments",
                           "min-cluster evaluates each size in one simulation; got " +
                               std::to_string(options.eval_segments));
  }
  SimSummary summary = header(options, "min-cluster");
  MinClusterSearch search(workload, options, progress, stop);
  const StrategySpec baseline = *parseStrategies({"baseline"}, {}, 0.5)->begin();
  MORPHEUS_ASSIGN_OR_RETURN(std::optional<StrategyResult> base, search.at(baseline, options.nodes));
  if (!base || search.interrupted()) {
    summary.interrupted = true;  // nothing to compare with
    return summary;
  }
  const double target =
      (options.min_cluster_worst_case ? base->worst_case_violation_rate : base->violation_rate) +
      1e-12;
  const auto is_baseline = [&](const StrategySpec& spec) {
    return spec.provisioning == Provisioning::kUserReservation && spec.agent == baseline.agent &&
           spec.dra.empty();
  };
  const auto baseline_row = [&] {
    StrategyResult b = *base;
    b.min_nodes_at_baseline_rate = options.nodes;
    b.extra["min_cluster_worst_case"] = options.min_cluster_worst_case ? 1 : 0;
    b.extra["min_cluster_retrain"] = options.min_cluster_retrain ? 1 : 0;
    return b;
  };
  if (!options.min_cluster_sizes.empty()) {
    std::vector<int64_t> sizes = options.min_cluster_sizes;
    std::sort(sizes.begin(), sizes.end());
    // One run per (strategy, size), side by side on up to options.threads
    // threads; results by index, so they do not depend on the thread count.
    std::vector<std::pair<size_t, int64_t>> runs;
    for (size_t i = 0; i < strategies.size(); i++) {
      if (is_baseline(strategies[i])) continue;
      for (int64_t n : sizes) runs.emplace_back(i, n);
    }
    std::vector<std::optional<Result<std::optional<StrategyResult>>>> at(runs.size());
    forEachOnThreads(runs.size(), options.threads, [&](size_t k) {
      if (search.interrupted()) return false;
      at[k] = search.at(strategies[runs[k].first], runs[k].second);
      return true;
    });
    size_t k = 0;
    for (size_t i = 0; i < strategies.size(); i++) {
      if (is_baseline(strategies[i])) {
        summary.strategies.push_back(baseline_row());
        continue;
      }
      for (; k < runs.size() && runs[k].first == i; k++) {
        if (!at[k]) continue;  // not started: interrupted
        MORPHEUS_RETURN_IF_ERROR(at[k]->status());
        if (!**at[k]) continue;  // interrupted before that size's training was complete
        StrategyResult r = std::move(***at[k]);
        r.name += "@" + std::to_string(runs[k].second);
        r.extra["nodes"] = static_cast<double>(runs[k].second);
        r.extra["matches_baseline_rate"] = search.rateOf(r) <= target ? 1 : 0;
        r.extra["min_cluster_worst_case"] = options.min_cluster_worst_case ? 1 : 0;
        r.extra["min_cluster_retrain"] = options.min_cluster_retrain ? 1 : 0;
        summary.strategies.push_back(std::move(r));
      }
    }
    summary.interrupted = search.interrupted();
    return summary;
  }
  // The searches of the strategies run side by side on up to
  // options.threads threads, each taking the next strategy not started;
  // results by index, so they do not depend on the thread count.
  std::vector<std::optional<Result<std::optional<StrategyResult>>>> found(strategies.size());
  forEachOnThreads(strategies.size(), options.threads, [&](size_t i) {
    const StrategySpec& spec = strategies[i];
    if (search.interrupted()) return false;
    if (is_baseline(spec)) {
      found[i] = std::optional<StrategyResult>(baseline_row());
    } else {
      found[i] = search.smallest(spec, target);
    }
    return true;
  });
  for (auto& f : found) {
    if (!f) continue;  // not started: interrupted
    MORPHEUS_RETURN_IF_ERROR(f->status());
    if (**f) summary.strategies.push_back(std::move(***f));  // else interrupted before any size
  }
  summary.interrupted = search.interrupted();
  return summary;
}

}  // namespace morpheus::sim
