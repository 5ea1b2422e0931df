#include "sim/phoenix/phoenix_sim.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <functional>
#include <optional>
#include <queue>
#include <utility>

#include "scheduler/scheduler.h"
#include "sim/workloads/workload_rng.h"

namespace morpheus::sim {

namespace {

using sched::ConstraintOp;
using sched::PlacementConstraint;

// Per-job draw names (workload_rng.h): values depend only on (seed, job, name).
constexpr uint64_t kNodeStream = 1ULL << 40;  // node index offset: nodes never collide with jobs

PlacementConstraint hard(std::string key, std::string value, ConstraintOp op) {
  PlacementConstraint c;
  c.key = std::move(key);
  c.values = {std::move(value)};
  c.hard = true;
  c.op = op;
  return c;
}

template <typename T>
const T& pick(double u, const std::vector<std::pair<double, T>>& table) {
  for (const auto& [p, v] : table) {
    if (u < p) return v;
    u -= p;
  }
  return table.back().second;
}

}  // namespace

bool inShortPartition(int32_t i, double p) { return std::floor((i + 1) * p) > std::floor(i * p); }

std::vector<sched::NodeAttributes> phoenixClusterAttributes(const PhoenixSimOptions& o) {
  std::vector<sched::NodeAttributes> out(static_cast<size_t>(o.nodes));
  if (o.mix == PhoenixMix::kSynthetic) {
    for (int32_t i = 0; i < o.nodes; i++) {
      rng::Stream s(o.seed, kNodeStream + static_cast<uint64_t>(i), -1, "node");
      out[static_cast<size_t>(i)] = {
          {"isa", s.uniform(0) < 0.15 ? "aarch64" : "x86_64"},
          {"cores", pick<std::string>(s.uniform(1), {{0.6, "16"}, {0.3, "32"}, {0.1, "64"}})},
          {"network_gbps",
           pick<std::string>(s.uniform(2), {{0.7, "10"}, {0.2, "25"}, {0.1, "40"}})},
          {"kernel", pick<std::string>(s.uniform(3), {{0.4, "5.4"}, {0.4, "5.10"}, {0.2, "6.1"}})},
      };
    }
    return out;
  }
  // Per kind and pool (short partition, general nodes): the round(share x n)
  // nodes of lowest draw have it.
  std::vector<int32_t> pools[2];
  for (int32_t i = 0; i < o.nodes; i++)
    pools[inShortPartition(i, o.short_partition) ? 0 : 1].push_back(i);
  for (size_t k = 0; k < o.kinds.size(); k++) {
    const ConstraintKind& kind = o.kinds[k];
    for (int pool = 0; pool < 2; pool++) {
      std::vector<std::pair<double, int32_t>> draws;
      for (int32_t i : pools[pool]) {
        rng::Stream s(o.seed, kNodeStream + static_cast<uint64_t>(i), -1, "node");
        draws.emplace_back(s.uniform(10 + k), i);
      }
      std::sort(draws.begin(), draws.end());
      size_t have = draws.size();
      if (pool == 0 && kind.short_nodes >= 0) {
        have = std::min(static_cast<size_t>(kind.short_nodes), draws.size());
      } else if (pool == 1 || !kind.short_partition_first) {
        have =
            static_cast<size_t>(std::llround(kind.node_share * static_cast<double>(draws.size())));
        have = std::min(have, draws.size());
      }
      for (size_t r = 0; r < draws.size(); r++)
        out[static_cast<size_t>(draws[r].second)][kind.name] = r < have ? "yes" : "no";
    }
  }
  return out;
}

namespace {

// Mean vcore-seconds of a job (for the arrival rate): E[tasks] x E[duration]
// of each class (log-uniform mean (hi - lo) / ln(hi / lo)).
double logMean(double lo, double hi) { return (hi - lo) / std::log(hi / lo); }

double meanJobWork(const PhoenixSimOptions& o) {
  if (o.mix != PhoenixMix::kSynthetic) {
    const TraceMixShape& m = traceMixShape(o.mix);
    const double shorts = (1.0 + m.short_tasks_max) / 2.0 * logMean(m.short_task_lo_s, m.cutoff_s);
    const double longs =
        (m.long_tasks_lo + m.long_tasks_hi) / 2.0 * logMean(m.cutoff_s, m.long_task_hi_s);
    return (1 - m.long_job_share) * shorts + m.long_job_share * longs;
  }
  double shorts = 5.5 * logMean(5, 60);
  double longs = 60.0 * logMean(300, 1200);
  return o.short_fraction * shorts + (1 - o.short_fraction) * longs;
}

// A trace-mix job (phoenix_sim.h): class, tasks, declared duration and at
// most one constraint kind.
void drawTraceJob(const PhoenixSimOptions& o, const rng::Stream& s, PhoenixJob& job) {
  const TraceMixShape& m = traceMixShape(o.mix);
  job.is_short = s.uniform(1) >= m.long_job_share;
  if (job.is_short) {
    job.tasks = 1 + static_cast<int32_t>(s.below(2, m.short_tasks_max));
    job.duration =
        Millis(static_cast<int64_t>(s.logUniform(3, m.short_task_lo_s, m.cutoff_s) * 1000));
  } else {
    job.tasks =
        m.long_tasks_lo + static_cast<int32_t>(s.below(2, m.long_tasks_hi - m.long_tasks_lo + 1));
    job.duration =
        Millis(static_cast<int64_t>(s.logUniform(3, m.cutoff_s, m.long_task_hi_s) * 1000));
  }
  double u = s.uniform(4);
  for (size_t k = 0; k < o.kinds.size(); k++) {
    if (u < o.kinds[k].job_share) {
      job.kind = static_cast<int32_t>(k);
      job.constraints.push_back(hard(o.kinds[k].name, "yes", ConstraintOp::kIn));
      break;
    }
    u -= o.kinds[k].job_share;
  }
}

}  // namespace

std::vector<PhoenixJob> makePhoenixJobs(const PhoenixSimOptions& o, TimePoint t0) {
  const int64_t capacity_vcores = o.node_size.vcores() * o.nodes;
  const double rate = o.load * static_cast<double>(capacity_vcores) / meanJobWork(o);  // jobs/s
  std::vector<PhoenixJob> jobs;
  double t = 0;
  for (uint64_t j = 0;; j++) {
    rng::Stream s(o.seed, j, -1, "phoenix-job");
    t += -std::log(1.0 - s.uniform(0)) / rate;
    if (t * 1000 >= static_cast<double>(o.arrivals.count())) break;
    PhoenixJob job;
    job.submit = t0 + Millis(static_cast<int64_t>(t * 1000));
    if (o.mix != PhoenixMix::kSynthetic) {
      drawTraceJob(o, s, job);
      jobs.push_back(std::move(job));
      continue;
    }
    job.is_short = s.uniform(1) < o.short_fraction;
    if (job.is_short) {
      job.tasks = 1 + static_cast<int32_t>(s.below(2, 10));
      job.duration = Millis(static_cast<int64_t>(s.logUniform(3, 5, 60) * 1000));
      if (s.uniform(4) < o.isa_rate)
        job.constraints.push_back(hard("isa", "aarch64", ConstraintOp::kIn));
      if (s.uniform(5) < o.cores_rate)
        job.constraints.push_back(hard("cores", "32", ConstraintOp::kAtLeast));
      if (s.uniform(6) < o.network_rate)
        job.constraints.push_back(hard("network_gbps", "25", ConstraintOp::kAtLeast));
      if (s.uniform(7) < o.kernel_rate)
        job.constraints.push_back(hard("kernel", "5.10", ConstraintOp::kVersionAtLeast));
    } else {
      job.tasks = 20 + static_cast<int32_t>(s.below(2, 81));
      job.duration = Millis(static_cast<int64_t>(s.logUniform(3, 300, 1200) * 1000));
    }
    jobs.push_back(std::move(job));
  }
  return jobs;
}

Millis phoenixTaskRunTime(uint64_t seed, size_t job, int32_t k, Millis duration) {
  const double jitter = rng::Stream(seed, job, k, "task").uniform(0, 0.8, 1.2);
  return Millis(static_cast<int64_t>(static_cast<double>(duration.count()) * jitter));
}

TimePoint firstTickAtOrAfter(TimePoint t0, TimePoint t) {
  const int64_t ms = (t - t0).count();
  return t0 + Millis((ms + 999) / 1000 * 1000);
}

Result<std::optional<TimePoint>> nextEventTick(const char* sim, TimePoint t0, TimePoint now,
                                               std::optional<TimePoint> next_submit,
                                               std::optional<TimePoint> next_end, size_t finished,
                                               size_t jobs) {
  std::optional<TimePoint> at = next_submit;
  if (next_end) at = at ? std::min(*at, *next_end) : *next_end;
  if (!at) {
    if (finished < jobs) {
      return internalError(std::string(sim) + ": jobs pending with nothing running or arriving");
    }
    return std::optional<TimePoint>();
  }
  return std::optional<TimePoint>(std::max(now + Seconds(1), firstTickAtOrAfter(t0, *at)));
}

PhoenixProgress::PhoenixProgress(bool enabled, std::string name, size_t jobs)
    : enabled_(enabled),
      name_(std::move(name)),
      jobs_(jobs),
      wall0_(std::chrono::steady_clock::now()) {}

void PhoenixProgress::at(Millis simulated, size_t finished) {
  if (!enabled_ || simulated.count() < next_hour_ * 3600 * 1000) return;
  next_hour_ = simulated.count() / (3600 * 1000) + 1;
  const double wall =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - wall0_).count();
  std::fprintf(stderr, "  %s: %lld h simulated, %zu/%zu jobs done, %.1f s\n", name_.c_str(),
               static_cast<long long>(next_hour_ - 1), finished, jobs_, wall);
}

KindLongOccupancy::KindLongOccupancy(const PhoenixSimOptions& opts, TimePoint t0)
    : start_(t0), end_(t0 + opts.arrivals), last_(t0) {
  const size_t kinds = opts.mix == PhoenixMix::kSynthetic ? 0 : opts.kinds.size();
  capacity_.assign(kinds, 0);
  held_.assign(kinds, 0);
  nodes_.assign(kinds, 0);
  area_.assign(kinds, 0);
  t90_.assign(kinds, 0);
  tfull_.assign(kinds, 0);
  if (kinds == 0) return;
  const std::vector<sched::NodeAttributes> node_attrs = phoenixClusterAttributes(opts);
  for (int32_t i = 0; i < opts.nodes; i++) {
    const auto& attrs = node_attrs[static_cast<size_t>(i)];
    std::vector<size_t> has;
    for (size_t k = 0; k < kinds; k++) {
      auto it = attrs.find(opts.kinds[k].name);
      if (it == attrs.end() || it->second != "yes") continue;
      has.push_back(k);
      capacity_[k] += opts.node_size.vcores();
      nodes_[k]++;
    }
    node_kinds_.push_back(std::move(has));
  }
}

void KindLongOccupancy::advance(TimePoint now) {
  const TimePoint to = std::min(now, end_);
  if (to <= last_) return;
  const auto dt = static_cast<double>((to - last_).count());
  for (size_t k = 0; k < held_.size(); k++) {
    area_[k] += dt * static_cast<double>(held_[k]);
    if (capacity_[k] > 0 && held_[k] * 10 >= capacity_[k] * 9) t90_[k] += dt;
    if (capacity_[k] > 0 && held_[k] >= capacity_[k]) tfull_[k] += dt;
  }
  last_ = to;
}

void KindLongOccupancy::change(int32_t node, int64_t delta, TimePoint now) {
  if (node_kinds_.empty()) return;
  advance(now);
  for (size_t k : node_kinds_[static_cast<size_t>(node)]) held_[k] += delta;
}

void KindLongOccupancy::finish(TimePoint now, PhoenixSimResult& out) {
  advance(now);
  const auto window = static_cast<double>((last_ - start_).count());
  out.kind_nodes = nodes_;
  out.kind_long_share.assign(held_.size(), 0);
  out.kind_long_90_time.assign(held_.size(), 0);
  out.kind_long_full_time.assign(held_.size(), 0);
  if (window <= 0) return;
  for (size_t k = 0; k < held_.size(); k++) {
    if (capacity_[k] > 0)
      out.kind_long_share[k] = area_[k] / window / static_cast<double>(capacity_[k]);
    out.kind_long_90_time[k] = t90_[k] / window;
    out.kind_long_full_time[k] = tfull_[k] / window;
  }
}

Percentiles percentilesOf(std::vector<double> v) {
  Percentiles p;
  p.count = static_cast<int64_t>(v.size());
  if (v.empty()) return p;
  std::sort(v.begin(), v.end());
  auto at = [&v](double q) {
    size_t i = static_cast<size_t>(std::ceil(q * static_cast<double>(v.size()))) - 1;
    return v[std::min(i, v.size() - 1)];
  };
  p.p50 = at(0.5);
  p.p90 = at(0.9);
  p.p99 = at(0.99);
  double sum = 0;
  for (double x : v) sum += x;
  p.mean = sum / static_cast<double>(v.size());
  return p;
}

Status validatePhoenixOptions(const PhoenixSimOptions& o) {
  if (o.nodes <= 0) return invalidArgument("nodes", "must be > 0");
  if (o.node_size.vcores() <= 0 || o.node_size.memoryMib() < 2048)
    return invalidArgument("node_size", "needs >= 1 vcore and >= 2048 MiB for one task");
  if (o.arrivals.count() <= 0) return invalidArgument("arrivals", "must be > 0");
  if (!(o.load > 0 && o.load <= 1.5)) return invalidArgument("load", "must be in (0, 1.5]");
  if (!(o.short_fraction >= 0 && o.short_fraction <= 1))
    return invalidArgument("short_fraction", "must be in [0, 1]");
  for (auto [name, r] : {std::pair{"isa_rate", o.isa_rate},
                         {"cores_rate", o.cores_rate},
                         {"network_rate", o.network_rate},
                         {"kernel_rate", o.kernel_rate}}) {
    if (!(r >= 0 && r <= 1)) return invalidArgument(name, "must be in [0, 1]");
  }
  if (!(o.short_partition >= 0 && o.short_partition < 1))
    return invalidArgument("short_partition", "must be in [0, 1)");
  if (o.mix != PhoenixMix::kSynthetic) {
    if (o.kinds.empty()) return invalidArgument("kinds", "a trace mix needs constraint kinds");
    MORPHEUS_RETURN_IF_ERROR(validateConstraintKinds(o.kinds));
  }
  return Status::ok();
}

void summarisePhoenixJobs(const std::vector<PhoenixJob>& jobs, size_t kinds,
                          PhoenixSimResult& out) {
  std::vector<double> shorts, constrained, longs;
  std::vector<double> kind_sum(kinds, 0);
  out.kind_short_count.assign(kinds, 0);
  double free_sum = 0;
  int64_t free_count = 0, tasks = 0, constrained_tasks = 0;
  TimePoint last = jobs.empty() ? TimePoint{} : jobs[0].submit;
  uint64_t digest = 14695981039346656037ULL;
  auto mix = [&digest](uint64_t v) {
    for (int b = 0; b < 8; b++) {
      digest ^= (v >> (8 * b)) & 0xff;
      digest *= 1099511628211ULL;
    }
  };
  for (size_t ji = 0; ji < jobs.size(); ji++) {
    const PhoenixJob& j = jobs[ji];
    mix(ji);
    mix(j.rejected ? 1 : 0);
    mix(static_cast<uint64_t>((j.finish - j.submit).count()));
  }
  out.finish_digest = digest;
  for (const PhoenixJob& j : jobs) {
    if (j.rejected) continue;
    double r = std::chrono::duration<double>(j.finish - j.submit).count();
    last = std::max(last, j.finish);
    tasks += j.tasks;
    if (!j.constraints.empty()) constrained_tasks += j.tasks;
    if (j.is_short) {
      shorts.push_back(r);
      if (!j.constraints.empty()) constrained.push_back(r);
      if (j.kind >= 0 && static_cast<size_t>(j.kind) < kinds) {
        kind_sum[static_cast<size_t>(j.kind)] += r;
        out.kind_short_count[static_cast<size_t>(j.kind)]++;
      } else if (j.constraints.empty()) {
        free_sum += r;
        free_count++;
      }
    } else {
      longs.push_back(r);
    }
  }
  out.kind_short_mean_s.assign(kinds, 0);
  for (size_t k = 0; k < kinds; k++) {
    if (out.kind_short_count[k] > 0)
      out.kind_short_mean_s[k] = kind_sum[k] / static_cast<double>(out.kind_short_count[k]);
  }
  out.unconstrained_short_mean_s = free_count > 0 ? free_sum / static_cast<double>(free_count) : 0;
  out.constrained_task_share =
      tasks > 0 ? static_cast<double>(constrained_tasks) / static_cast<double>(tasks) : 0;
  out.short_jobs = percentilesOf(std::move(shorts));
  out.short_constrained = percentilesOf(std::move(constrained));
  out.long_unconstrained = percentilesOf(std::move(longs));
  out.makespan_s = jobs.empty() ? 0 : std::chrono::duration<double>(last - jobs[0].submit).count();
}

Result<PhoenixSimResult> runPhoenixFloor(const PhoenixSimOptions& opts) {
  MORPHEUS_RETURN_IF_ERROR(validatePhoenixOptions(opts));
  const auto wall0 = std::chrono::steady_clock::now();
  PhoenixSimResult out;
  out.policy = "floor";
  const std::vector<sched::NodeAttributes> nodes = phoenixClusterAttributes(opts);
  const TimePoint t0 = fromEpochMs(0);
  std::vector<PhoenixJob> jobs = makePhoenixJobs(opts, t0);
  out.jobs = static_cast<int64_t>(jobs.size());
  auto tick = [t0](TimePoint t) { return firstTickAtOrAfter(t0, t); };
  for (size_t ji = 0; ji < jobs.size(); ji++) {
    PhoenixJob& j = jobs[ji];
    j.rejected = std::none_of(nodes.begin(), nodes.end(), [&j](const sched::NodeAttributes& a) {
      return std::all_of(j.constraints.begin(), j.constraints.end(),
                         [&a](const auto& c) { return !c.hard || sched::constraintMatches(c, a); });
    });
    if (j.rejected) {
      out.rejected++;
      continue;
    }
    const TimePoint start = tick(j.submit);
    TimePoint end = start;
    for (int32_t k = 0; k < j.tasks; k++)
      end = std::max(end, start + phoenixTaskRunTime(opts.seed, ji, k, j.duration));
    j.finish = tick(end);
  }
  summarisePhoenixJobs(jobs, opts.kinds.size(), out);
  out.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall0).count();
  return out;
}

Result<PhoenixSimResult> runPhoenixSim(const PhoenixSimOptions& opts,
                                       std::shared_ptr<const sched::QueueOrderingPolicy> policy) {
  MORPHEUS_RETURN_IF_ERROR(validatePhoenixOptions(opts));
  const auto wall0 = std::chrono::steady_clock::now();
  PhoenixSimResult out;
  out.policy = std::string(policy->name());
  // As the RM configures it: scheduler.policy {root.default: <policy>}.
  sched::SchedulerOptions so;
  so.adhoc_queues.push_back({"root.default", 1.0, policy});
  MORPHEUS_ASSIGN_OR_RETURN(auto s, sched::Scheduler::create(std::move(so)));
  const std::vector<sched::NodeAttributes> node_attrs = phoenixClusterAttributes(opts);
  for (int32_t i = 0; i < opts.nodes; i++) {
    MORPHEUS_RETURN_IF_ERROR(s->addNode(NodeId("n" + std::to_string(i)), opts.node_size,
                                        node_attrs[static_cast<size_t>(i)]));
  }
  const TimePoint t0 = fromEpochMs(0);
  std::vector<PhoenixJob> jobs = makePhoenixJobs(opts, t0);
  out.jobs = static_cast<int64_t>(jobs.size());
  struct End {
    TimePoint at;
    size_t job;
    ContainerId container;
    int32_t node;
    bool operator>(const End& o) const { return at > o.at; }
  };
  std::priority_queue<End, std::vector<End>, std::greater<>> ends;
  size_t next = 0, finished = 0;
  TimePoint now = t0;
  PhoenixProgress progress(opts.progress, out.policy, jobs.size());
  const Resource task(2048, 1);
  KindLongOccupancy occupancy(opts, t0);
  bool dirty = true;  // state changed since the last pass, or it allocated
  while (finished < jobs.size()) {
    for (; next < jobs.size() && jobs[next].submit <= now; next++) {
      dirty = true;
      const PhoenixJob& j = jobs[next];
      AppId app("job" + std::to_string(next));
      MORPHEUS_RETURN_IF_ERROR(s->addApp(app, UserId("u"), sched::QueueRef::adhoc("root.default")));
      sched::ResourceRequest r;
      r.priority = 1;
      r.capability = task;
      r.count = j.tasks;
      r.expected_duration = j.duration;
      r.constraints = j.constraints;
      MORPHEUS_RETURN_IF_ERROR(s->updateAsks(app, {r}));
      // Admission control: a job no node can ever serve is turned away with
      // its pending reason instead of waiting forever (and is not measured).
      MORPHEUS_ASSIGN_OR_RETURN(auto reasons, s->pendingReasons(app));
      if (!reasons.empty()) {
        MORPHEUS_RETURN_IF_ERROR(s->removeApp(app).status());
        jobs[next].rejected = true;
        out.rejected++;
        finished++;
      }
    }
    while (!ends.empty() && ends.top().at <= now) {
      dirty = true;
      const End e = ends.top();
      ends.pop();
      MORPHEUS_RETURN_IF_ERROR(s->containerCompleted(e.container).status());
      PhoenixJob& j = jobs[e.job];
      if (!j.is_short) occupancy.change(e.node, -task.vcores(), now);
      if (++j.done == j.tasks) {
        j.finish = now;
        finished++;
        MORPHEUS_RETURN_IF_ERROR(s->removeApp(AppId("job" + std::to_string(e.job))).status());
      }
    }
    if (dirty) {
      const auto allocations = s->schedulePass(now).allocations;
      dirty = !allocations.empty();
      for (const auto& a : allocations) {
        const size_t ji = std::stoul(a.app.value().substr(3));
        PhoenixJob& j = jobs[ji];
        const auto node = static_cast<int32_t>(std::stol(a.node.value().substr(1)));
        if (!j.is_short) occupancy.change(node, task.vcores(), now);
        ends.push(End{now + phoenixTaskRunTime(opts.seed, ji, j.started++, j.duration), ji,
                      a.container, node});
      }
    }
    progress.at(now - t0, finished);
    if (dirty) {
      now += Seconds(1);
      continue;
    }
    // Nothing changes before the next arrival or task end: jump to its tick.
    MORPHEUS_ASSIGN_OR_RETURN(
        std::optional<TimePoint> tick,
        nextEventTick("phoenix sim", t0, now,
                      next < jobs.size() ? std::optional(jobs[next].submit) : std::nullopt,
                      ends.empty() ? std::nullopt : std::optional(ends.top().at), finished,
                      jobs.size()));
    if (!tick) break;
    now = *tick;
  }
  summarisePhoenixJobs(jobs, opts.kinds.size(), out);
  occupancy.finish(now, out);
  out.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall0).count();
  return out;
}

}  // namespace morpheus::sim
